#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The control socket and nbd-deadline-ctl against a real nbdkit with the
# filter: the socket is owner-only; stats reflect the I/O done; get/set
# round-trip, bad keys and values are refused with one line naming the
# key and change nothing; set changes behaviour measurably (a short
# read_expire shows in read expiries); the scheduler switches at run
# time; --json, --prometheus, --raw and top work.
source "$(dirname "$0")/functions.sh"
set -e
requires_filter
requires test -x ./integrity
CTL=$abs_top_builddir/src/ctl/nbd-deadline-ctl
requires test -x "$CTL"

disk=$tmpdir/disk.img
truncate -s 64M "$disk"
ctl_sock=$tmpdir/ctl
sock=$tmpdir/nbd
# The delay filter below makes the device slow (and dispatch "next"),
# so that requests wait in the scheduler long enough to expire.
start_nbdkit "$sock" --filter="$FILTER" --filter=delay file "$disk" \
    delay-read=2ms delay-write=2ms deadline-control="$ctl_sock"
ctl () { "$CTL" -s "$ctl_sock" "$@"; }
val () { ctl --raw stats | awk -v k="$1" '$1 == k { print $2 }'; }
fail () { echo "FAIL: $*"; exit 1; }

# Owner-only.
[ -S "$ctl_sock" ] || fail "no control socket"
mode=$(stat -c %a "$ctl_sock")
[ "$mode" = 600 ] || fail "control socket mode $mode, not 600"
ctl ping | grep -qx ok

# A second nbdkit may not take a live socket.
if $NBDKIT -U - --filter="$FILTER" memory 1M deadline-control="$ctl_sock" \
       --run true 2>"$tmpdir/err"; then
    fail "a second nbdkit took a live control socket"
fi
grep -q "deadline-control: $ctl_sock: in use by another process" "$tmpdir/err" ||
    { cat "$tmpdir/err"; fail "in-use message"; }

# Stats reflect I/O done.
[ "$(val completed_total)" = 0 ] || fail "completed_total not 0 before I/O"
ctl set read_expire=3600s >/dev/null
./integrity -c 2 -d 16 -n 1500 -s 11 "$sock" >/dev/null
reads=$(val reads_total); writes=$(val writes_total); done_=$(val completed_total)
echo "after the first run: reads=$reads writes=$writes completed=$done_"
[ "$reads" -gt 0 ] && [ "$writes" -gt 0 ] || fail "reads/writes not counted"
[ "$done_" -ge 1500 ] || fail "completed_total $done_ < 1500"
[ "$(val read_bytes_total)" -gt 0 ] || fail "read_bytes_total"
[ "$(val read_latency_count)" -gt 0 ] || fail "read latency count"
awk -v p50="$(val read_latency_p50_us)" 'BEGIN { exit !(p50 > 0) }' ||
    fail "read p50 is 0"
# A read's time split in the scheduler's wait and the device's: every
# read that went to the device counts once in each (the readahead hits
# count in neither, nor in read_latency), and no write in either.
rq=$(val read_queue_latency_count); rd=$(val read_device_latency_count)
echo "read split: queue $rq device $rd of $(val read_latency_count)"
[ "$rq" -gt 0 ] && [ "$rq" = "$rd" ] || fail "read_queue $rq, read_device $rd"
[ "$rq" = "$(val read_latency_count)" ] || fail "read split misses reads"
[ "$rq" -lt "$(val queue_latency_count)" ] || fail "writes counted as reads"
[ "$(val inflight)" = 0 ] || fail "inflight not 0 when idle"
exp1=$(val read_expired_total)
[ "$exp1" = 0 ] || fail "reads expired with read_expire=3600s ($exp1)"

# set changes behaviour: the same workload with read_expire=1ms.
ctl set read-expire=1ms | grep -qx 'read_expire *1ms' || fail "set output"
./integrity -c 2 -d 16 -n 1500 -s 12 "$sock" >/dev/null
exp2=$(val read_expired_total)
echo "read expiries: $exp1 with read_expire=3600s, $exp2 after read_expire=1ms"
[ "$exp2" -gt 0 ] || fail "read_expire=1ms caused no read expiries"

# get / set round trip, several keys at once, dashes or underscores.
ctl set fifo_batch=8 seek-cost=4 front_merges=off >/dev/null
[ "$(ctl --raw get fifo-batch seek_cost front_merges | tr '\n' ' ')" = \
  "fifo_batch 8 seek_cost 4 front_merges off " ] || fail "get after set"
ctl --raw get | grep -qx 'read_expire 1ms' || fail "get all"

# Bad keys and values: refused, one line naming the key, nothing changed.
refuse ()
{
    local expect=$1 out
    shift
    if out=$(ctl "$@" 2>&1); then
        fail "accepted: $*"
    fi
    [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "not one line: $out"
    case "$out" in
        *"$expect"*) echo "refused: $* -> $out" ;;
        *) fail "$*: '$out' does not name $expect" ;;
    esac
}
refuse "unknown tunable 'bogus'" set bogus=1
refuse "read_expire" set read_expire=1x
refuse "read_expire" set read_expire=0
refuse "fifo_batch" set fifo_batch=-3
refuse "max_merge" set max_merge=1T
refuse "scheduler" scheduler cfq
refuse "unknown tunable 'depth'" get depth
refuse "not KEY=VALUE" set fifo_batch
# One bad value among good ones changes none of them.
refuse "seek_cost" set fifo_batch=99 seek_cost=x
[ "$(ctl --raw get fifo_batch | cut -d' ' -f2)" = 8 ] || fail "partial set applied"
refuse "unknown command" frobnicate

# A profile is a preset: it applies before the keys set beside it,
# wherever it stands in the command; get profile names it.
ctl set fifo_batch=16 profile=seed >/dev/null
[ "$(ctl --raw get profile fifo_batch write_expire size_cost seed_batches | tr '\n' ' ')" = \
  "profile custom fifo_batch 16 write_expire 0s size_cost off seed_batches on " ] ||
    fail "set fifo_batch=16 profile=seed: $(ctl --raw get | tr '\n' ' ')"
ctl set profile=seed >/dev/null
[ "$(ctl --raw get profile)" = "profile seed" ] || fail "get profile after set profile=seed"
refuse "profile" set profile=bogus
ctl set profile=default read_expire=1ms fifo_batch=8 seek_cost=4 front_merges=off >/dev/null
[ "$(ctl --raw get profile write_expire)" = "profile custom
write_expire 5s" ] || fail "set profile=default"


# Scheduler switch at run time, with I/O still correct.
ctl scheduler noop | grep -qx 'scheduler *noop' || fail "scheduler noop"
[ "$(val scheduler)" = noop ] || fail "stats scheduler after switch"
./integrity -c 2 -d 16 -n 500 -s 13 "$sock" >/dev/null
ctl scheduler elevator >/dev/null
./integrity -c 2 -d 16 -n 500 -s 14 "$sock" >/dev/null
ctl scheduler deadline >/dev/null
[ "$(val scheduler)" = deadline ] || fail "back to deadline"
[ "$(val failed_total)" = 0 ] || fail "failed requests"

# Switching while requests are queued drops and misorders nothing: the
# integrity tool checks every read against its model of the disk.
./integrity -c 4 -d 16 -n 4000 -s 15 "$sock" >/dev/null &
ipid=$!
cleanup_fn "kill $ipid 2>/dev/null"
for s in noop elevator deadline noop elevator deadline; do
    sleep 0.2
    ctl scheduler $s >/dev/null
    ctl set max_merge=64k read_expire=5ms fifo_batch=4 >/dev/null
    ctl set max_merge=1M read_expire=500ms fifo_batch=64 >/dev/null
done
wait $ipid || fail "integrity while switching scheduler and tunables"
[ "$(val failed_total)" = 0 ] || fail "failed requests while switching"
[ "$(val queued_reads) $(val queued_writes) $(val held)" = "0 0 0" ] ||
    fail "requests left queued after switching"
echo "switched 6 times under load: every read matched"

# Priority classes at run time: the export the integrity tool opened
# (the default, "") moves to rt, and its next requests are rt's; an
# export no client opened, or a class that does not exist, is refused.
[ "$(val 'export_class{export_name="",class="be"}')" = 1 ] || fail "export not listed in be"
rt_before=$(val 'class_reads_total{class="rt"}')
[ "$(ctl --raw class '' rt)" = "export_class rt" ] || fail "class '' rt"
[ "$(val 'export_class{export_name="",class="rt"}')" = 1 ] || fail "export not moved to rt"
./integrity -c 2 -d 8 -n 500 -s 16 "$sock" >/dev/null || fail "integrity in rt"
rt_after=$(val 'class_reads_total{class="rt"}')
[ "$rt_after" -gt "$rt_before" ] || fail "no reads counted in rt ($rt_before -> $rt_after)"
[ "$(val 'export_reads_total{export_name=""}')" -gt 0 ] || fail "export's reads not counted"
if ctl class nosuch rt 2>"$tmpdir/err"; then fail "class of an export never opened"; fi
grep -q "no export 'nosuch' has been opened" "$tmpdir/err" || { cat "$tmpdir/err"; fail "unknown export message"; }
if ctl class '' fast 2>"$tmpdir/err"; then fail "class fast accepted"; fi
grep -q "'fast' is not rt, be or idle" "$tmpdir/err" || { cat "$tmpdir/err"; fail "bad class message"; }
ctl class '' be >/dev/null || fail "class '' be"
echo "class moved at run time; unknown export and class refused"

# Formats.
if command -v jq >/dev/null 2>&1; then
    n=$(ctl --json stats | jq '.completed_total')
    [ "$n" -ge 3500 ] || fail "json completed_total $n"
    [ "$(ctl --json stats | jq -r '.scheduler')" = deadline ] || fail "json string"
    [ "$(ctl --json get | jq -r '.read_expire')" = 500ms ] || fail "json get"
else
    # Without jq the JSON is not checked: the test is then a skip (at
    # the end, once the rest has passed), never a pass.
    jq_missing=1
fi
prom=$(ctl --prometheus stats)
grep -q '^# TYPE nbd_deadline_reads_total counter$' <<<"$prom" || fail "prometheus counter"
grep -q '^nbd_deadline_reads_total{export="ctl"} [1-9]' <<<"$prom" || fail "prometheus value"
grep -q '^# TYPE nbd_deadline_read_latency_seconds summary$' <<<"$prom" || fail "summary"
grep -q '^nbd_deadline_read_latency_seconds{export="ctl",quantile="0.99"} ' <<<"$prom" ||
    fail "quantile"
grep -q '^nbd_deadline_info{export="ctl",backing=' <<<"$prom" || fail "info"
grep -q '^nbd_deadline_class_reads_total{export="ctl",class="rt"} [1-9]' <<<"$prom" ||
    fail "per-class label"
grep -q '^nbd_deadline_export_reads_total{export="ctl",export_name=""} [1-9]' <<<"$prom" ||
    fail "per-export label"
[ "$(grep -c '^# TYPE nbd_deadline_class_reads_total counter$' <<<"$prom")" = 1 ] ||
    fail "one TYPE line per labelled name"
# Every sample line is NAME{LABELS} NUMBER.
if grep -v '^#' <<<"$prom" | grep -Ev '^[a-z_][a-z0-9_]*\{[^}]*\} [0-9.e+-]+$'; then
    fail "malformed Prometheus lines above"
fi

# Human output and top.
ctl stats | grep -q '^latency ' || fail "stats text"
out=$(ctl top -n 2 -d 0.2)
[ "$(grep -c '^nbd-deadline-ctl top' <<<"$out")" = 2 ] || fail "top did not refresh twice"

# A dead socket is an error, not a hang.
stop_nbdkit "$sock"
[ ! -e "$ctl_sock" ] || fail "control socket left behind"
if ctl stats 2>"$tmpdir/err"; then fail "stats on a stopped export"; fi
grep -q "$ctl_sock" "$tmpdir/err" || fail "error does not name the socket"

# A socket left by a killed nbdkit is replaced; a file that is not a
# socket is never touched.
start_nbdkit "$tmpdir/nbd2" --filter="$FILTER" memory 1M deadline-control="$ctl_sock"
kill -9 "$(cat "$tmpdir/nbd2.pid")"
for (( i=0; i<50; i++ )); do kill -0 "$(cat "$tmpdir/nbd2.pid")" 2>/dev/null || break; sleep 0.1; done
rm -f "$tmpdir/nbd2.pid"         # gone: nothing for the cleanup to kill
[ -S "$ctl_sock" ] || fail "kill -9 did not leave the socket (test premise)"
start_nbdkit "$tmpdir/nbd3" --filter="$FILTER" memory 1M deadline-control="$ctl_sock"
ctl ping | grep -qx ok || fail "stale socket not replaced"
stop_nbdkit "$tmpdir/nbd3"
echo precious > "$tmpdir/file"
if $NBDKIT -U - --filter="$FILTER" memory 1M deadline-control="$tmpdir/file" \
       --run true 2>"$tmpdir/err"; then
    fail "started over a regular file"
fi
grep -q "deadline-control: $tmpdir/file: exists and is not a socket" "$tmpdir/err" ||
    { cat "$tmpdir/err"; fail "not-a-socket message"; }
[ "$(cat "$tmpdir/file")" = precious ] || fail "the file was touched"
echo "stale socket replaced; a regular file refused and left alone"
if [ -n "${jq_missing:-}" ]; then
    echo "$0: SKIP: jq not installed: --json not checked (apt-get install jq)"; exit 77
fi
echo "$0: PASS"
