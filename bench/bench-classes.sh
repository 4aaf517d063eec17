#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nbd-deadline: two exports on one slow disk (issue 19): a write flood
# on export a, the AMIW cat on export b, with one scheduler for the
# disk or one per export, and with priority classes.
#
#   sudo bench/bench-classes.sh [-r RUNS] [-n FILES] [-c "ROW ..."] [-x "k=v ..."] [-o FILE]
#
# The disk: bench/slowdisk (its default model: one spindle, 8 ms seeks),
# data in a tmpfs file; nbdfuse over it; two loop devices at two offsets
# of nbdfuse's file: the disk's two partitions, a (the flood's, raw) and
# b (ext4 with FILES small files of /usr/include).  The server serves
# both from a directory of links to them, with file dir=:
#
#   apart      one nbdkit with the filter per export: a scheduler each
#              (what every NBD server gives, and this one before)
#   shared     one nbdkit, one scheduler for the disk, both be
#   a-idle     shared, a in class idle
#   b-rt       shared, b in class rt
#   plain      nbdkit file dir= cache=none, no scheduler at all
#
# b's client: nbdfuse of export b, a loop device over it (direct I/O),
# ext4 mounted.  a's flood: fio (nbd engine) sequential 256 KiB writes
# at depth 16, until the cat ends.  For each run and row (interleaved),
# each phase on a fresh server and client: the idle cat (b alone, caches
# dropped); the flood cat (the flood started 2 s before); and for the
# writer's share the flood alone for 8 s.  Prints medians over the runs
# side by side: cat idle and under the flood and their ratio, the
# reader's share (idle / flood cat), the writer's share (flood MiB/s
# during the cat, from fio's bandwidth log, / alone), their sum, b's read p99 inside the filter
# (idle and under the flood), and the longest wait of a's writes (fio's
# max completion latency), under the command and the commit.
set -euo pipefail
BENCH=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/slowstack.sh
source "$BENCH/slowstack.sh"
ss_find_built "$BENCH"
NBDKIT=${NBDKIT:-nbdkit}
RUNS=3 NFILES=1000 OUT= ROWS="apart shared a-idle b-rt plain" CAT_TIMEOUT=120
EXTRA=
while getopts "r:n:c:o:x:" o; do
    case $o in
        r) RUNS=$OPTARG ;; n) NFILES=$OPTARG ;; c) ROWS=$OPTARG ;; o) OUT=$OPTARG ;;
        x) EXTRA=$OPTARG ;;
        *) sed -n '2,/^set /p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
die () { echo "bench-classes: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (loop devices, mount, drop_caches)"
for p in nbdfuse fusermount3 losetup mkfs.ext4 fio timeout; do
    command -v $p >/dev/null || die "$p not installed (build-aux/setup-deps --bench)"
done
[ -f "$FILTER" ] && [ -f "$SLOWDISK" ] || die "build first (no filter or slowdisk plugin)"

tmp=$(mktemp -d /dev/shm/bench-classes.XXXXXX)
PART=$((480 << 20)) GAP=$((16 << 20))
S1= F1= LA= LB= SRV=() F2= L2= MOUNTED= FIO=
down ()
{
    [ -n "$FIO" ] && { kill "$FIO" 2>/dev/null || true; wait "$FIO" 2>/dev/null || true; FIO=; }
    [ -n "$MOUNTED" ] && { umount "$tmp/m3" || umount -l "$tmp/m3"; MOUNTED=; }
    [ -n "$L2" ] && { losetup -d "$L2" 2>/dev/null || true; L2=; }
    if [ -n "$F2" ]; then
        fusermount3 -u "$tmp/m2" 2>/dev/null || umount -l "$tmp/m2" 2>/dev/null || true
        ss_kill_wait "$F2"; F2=
    fi
    local p
    for p in "${SRV[@]}"; do ss_kill_wait "$p"; done
    SRV=()
}
disk_down ()
{
    down
    [ -n "$LA" ] && { losetup -d "$LA" "$LB" 2>/dev/null || true; LA= LB=; }
    if [ -n "$F1" ]; then
        fusermount3 -u "$tmp/m1" 2>/dev/null || umount -l "$tmp/m1" 2>/dev/null || true
        ss_kill_wait "$F1"; F1=
    fi
    ss_kill_wait "$S1"; S1=
}
trap 'disk_down; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/m1" "$tmp/m2" "$tmp/m3" "$tmp/dir" "$tmp/dir-a" "$tmp/dir-b"

disk_up ()
{
    rm -f "$tmp/s1.sock" "$tmp/f1.pid"
    # shellcheck disable=SC2086
    $NBDKIT -f --unix "$tmp/s1.sock" "$SLOWDISK" size=1G file="$tmp/disk.data" \
        ${SLOWDISK_ARGS:-} 2>"$tmp/s1.log" &
    S1=$!
    ss_wait_for "$tmp/s1.sock" 10
    nbdfuse -P "$tmp/f1.pid" "$tmp/m1/disk" --unix "$tmp/s1.sock" 2>>"$tmp/fuse.log" &
    F1=$!
    ss_wait_for "$tmp/f1.pid" 10
    LA=$(losetup --direct-io=on -f --show --offset 0 --sizelimit $PART "$tmp/m1/disk")
    LB=$(losetup --direct-io=on -f --show --offset $((PART + GAP)) --sizelimit $PART "$tmp/m1/disk")
    local d
    for d in "$LA" "$LB"; do echo none > /sys/block/"${d#/dev/}"/queue/scheduler; done
    ln -sfn "$LA" "$tmp/dir/a"; ln -sfn "$LB" "$tmp/dir/b"
    ln -sfn "$LA" "$tmp/dir-a/a"; ln -sfn "$LB" "$tmp/dir-b/b"
}

# serve ROW: the server(s) of a row; b's client, ext4 mounted on m3.
serve ()
{
    local row=$1 f=(--filter="$FILTER") tag x=()
    # shellcheck disable=SC2206
    [ -n "$EXTRA" ] && x=($EXTRA)
    rm -f "$tmp"/*.sock.srv "$tmp/f2.pid" "$tmp/ctl"
    case $row in
        apart)
            $NBDKIT -f -t 64 --unix "$tmp/a.sock.srv" "${f[@]}" file dir="$tmp/dir-a" "${x[@]}" 2>"$tmp/a.log" &
            SRV+=($!)
            $NBDKIT -f -t 64 --unix "$tmp/b.sock.srv" "${f[@]}" file dir="$tmp/dir-b" "${x[@]}" \
                deadline-control="$tmp/ctl" 2>"$tmp/b.log" &
            SRV+=($!) ;;
        plain)
            $NBDKIT -f -t 64 --unix "$tmp/ab.sock.srv" file dir="$tmp/dir" cache=none 2>"$tmp/ab.log" &
            SRV+=($!) ;;
        *)
            local cls=()
            [ "$row" = a-idle ] && cls=(deadline-class=a:idle)
            [ "$row" = b-rt ] && cls=(deadline-class=b:rt)
            $NBDKIT -f -t 64 --unix "$tmp/ab.sock.srv" "${f[@]}" file dir="$tmp/dir" "${x[@]}" \
                deadline-control="$tmp/ctl" "${cls[@]}" 2>"$tmp/ab.log" &
            SRV+=($!) ;;
    esac
    if [ "$row" = apart ]; then SA=$tmp/a.sock.srv SB=$tmp/b.sock.srv
    else SA=$tmp/ab.sock.srv SB=$tmp/ab.sock.srv; fi
    ss_wait_for "$SA" 20; ss_wait_for "$SB" 20
    nbdfuse -P "$tmp/f2.pid" "$tmp/m2/disk" "nbd+unix:///b?socket=$SB" 2>>"$tmp/fuse.log" &
    F2=$!
    ss_wait_for "$tmp/f2.pid" 10
    L2=$(losetup --direct-io=on -f --show "$tmp/m2/disk")
    echo none > /sys/block/"${L2#/dev/}"/queue/scheduler
    mount -t ext4 "$L2" "$tmp/m3"
    MOUNTED=1
}

now () { date +%s.%N; }
drop_caches () { sync; echo 3 > /proc/sys/vm/drop_caches; }
time_cat ()
{
    local t0 rc=0
    t0=$(now)
    timeout "$CAT_TIMEOUT" sh -c 'find "$1" -type f -print0 | xargs -0 cat > /dev/null' \
        sh "$tmp/m3/tree" || rc=$?
    [ $rc = 0 ] || die "cat failed or timed out ($rc)"
    awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'
}
# flood_start OUT [SECONDS]: fio's sequential writes on a, until killed
# (INT: it still writes its JSON) or for SECONDS.
flood_start ()
{
    local rt=${2:-3600}
    rm -f "$1".bw*.log
    fio --name=flood --ioengine=nbd --uri="nbd+unix:///a?socket=$SA" --rw=write \
        --bs=256k --iodepth=16 --size=$((PART / 2)) --time_based --runtime="$rt" \
        --write_bw_log="$1.bw" --log_avg_msec=100 \
        --output-format=json --output="$1" >/dev/null 2>&1 &
    FIO=$!
    FIO_T0=$(now)
}
# window_bw JSON FROM TO: MiB/s written between two of our clock's
# times, from fio's bandwidth log (100 ms averages, ms since its start)
window_bw ()
{
    awk -F, -v a="$(awk -v x="$2" -v t="$FIO_T0" 'BEGIN { print (x - t) * 1000 }')" \
            -v b="$(awk -v x="$3" -v t="$FIO_T0" 'BEGIN { print (x - t) * 1000 }')" \
        '$1 >= a && $1 <= b { s += $2; n++ } END { printf "%.1f", n ? s / n / 1024 : 0 }' \
        "$1".bw_bw*.log
}
flood_stop () { kill -INT "$FIO" 2>/dev/null || true; wait "$FIO" 2>/dev/null || true; FIO=; }
# fio_field JSON bw|maxlat: MiB/s written, or the longest write (ms)
fio_field ()
{
    python3 - "$1" "$2" <<'EOF'
import json, sys
t = open(sys.argv[1]).read()
w = json.loads(t[t.index("\n{") + 1 if not t.startswith("{") else 0:])["jobs"][0]["write"]
print("%.1f" % (w["bw_bytes"] / 1048576 if sys.argv[2] == "bw" else w["clat_ns"]["max"] / 1e6))
EOF
}
# b's read p99 inside the filter (ms), "-" without a control socket
read_p99 ()
{
    local cls=be
    [ "$1" = b-rt ] && cls=rt
    [ -S "$tmp/ctl" ] || { echo -; return; }
    "$CTL" -s "$tmp/ctl" --raw stats |
        awk -v k="class_read_p99_us{class=\"$cls\"}" '$1 == k { printf "%.1f", $2 / 1000 }'
}

# ---- the fixture ---------------------------------------------------------
disk_up
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0,nodiscard "$LB"
mount -t ext4 "$LB" "$tmp/m3"
mkdir "$tmp/m3/tree"
(cd /usr/include && find . -type f | LC_ALL=C sort | awk -v n="$NFILES" 'NR <= n' > "$tmp/files")
tar -C /usr/include -cf - -T "$tmp/files" | tar -C "$tmp/m3/tree" -xf -
umount "$tmp/m3"
echo "bench-classes: $(wc -l < "$tmp/files") files; rows: $ROWS; runs $RUNS" >&2

declare -A R
for run in $(seq "$RUNS"); do
    for row in $ROWS; do
        serve "$row"; drop_caches
        idle=$(time_cat); p99i=$(read_p99 "$row"); down
        serve "$row"; drop_caches
        flood_start "$tmp/flood.json"; sleep 2
        t0=$(now); flood=$(time_cat); t1=$(now); p99f=$(read_p99 "$row")
        if [ -n "${VERBOSE:-}" ] && [ -S "$tmp/ctl" ]; then
            "$CTL" -s "$tmp/ctl" --raw stats | grep -E "^(depth_now|inflight_max|antic_|read_(queue|device)_latency_p(50|99)|preemptions|write_holds|prio_aged)|class_(read|waiting|inflight).*\"(rt|be)\"" | tr '\n' ' ' >&2
            echo >&2
        fi
        flood_stop; down
        bwd=$(window_bw "$tmp/flood.json" "$t0" "$t1"); maxw=$(fio_field "$tmp/flood.json" maxlat)
        serve "$row"
        flood_start "$tmp/alone.json" 8; wait "$FIO" 2>/dev/null || true; FIO=
        down
        bwa=$(fio_field "$tmp/alone.json" bw)
        R[$row.$run]="$idle $flood $p99i $p99f $bwd $bwa $maxw"
        echo "bench-classes: run $run $row: cat idle $idle s, flood $flood s;" \
             "b p99 $p99i / $p99f ms; a $bwd of $bwa MiB/s, longest write $maxw ms" >&2
    done
done

median () { tr ' ' '\n' | { grep -v '^-$' || true; } | sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "-"; exit } printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread () { tr ' ' '\n' | { grep -v '^-$' || true; } | sort -g | awk 'NF { v[++n] = $1 } END {
    if (n == 0) { print "-"; exit } printf "%g-%g", v[1], v[n] }'; }
col () { local row=$1 i=$2 run; for run in $(seq "$RUNS"); do echo "${R[$row.$run]}" | awk -v i="$i" '{ print $i }'; done | tr '\n' ' '; }
{
    echo "# bench/bench-classes.sh -r $RUNS -n $NFILES -c \"$ROWS\"${EXTRA:+ -x \"$EXTRA\"}"
    echo "# commit $(git -C "$BENCH/.." describe --always --dirty 2>/dev/null || echo unknown)," \
         "$(date -u +%Y-%m-%d), slowdisk ${SLOWDISK_ARGS:-defaults}, load $(cut -d' ' -f1-3 /proc/loadavg)"
    [ "$RUNS" -ge 3 ] || echo "# NOT A RESULT: fewer than 3 runs"
    echo "# medians of $RUNS runs; [min-max] over the runs; cat in s, p99 of b's reads in the"
    echo "# filter in ms, a's MiB/s during the cat (w) and alone (a-alone), a's longest write in ms"
    printf "%-7s %6s %-11s %6s %7s %7s %5s %6s %-12s %7s %-11s %6s\n" row cat-id cat-flood ratio \
        r-share w-share sum p99-id p99-flood a-alone "" a-max
    for row in $ROWS; do
        ci=$(col "$row" 1 | median); cf=$(col "$row" 2 | median); cfs=$(col "$row" 2 | spread)
        pi=$(col "$row" 3 | median); pf=$(col "$row" 4 | median); pfs=$(col "$row" 4 | spread)
        wd=$(col "$row" 5 | median); wa=$(col "$row" 6 | median); was=$(col "$row" 6 | spread)
        mx=$(col "$row" 7 | median)
        awk -v r="$row" -v ci="$ci" -v cf="$cf" -v cfs="[$cfs]" -v pi="$pi" -v pf="$pf" -v pfs="[$pfs]" \
            -v wd="$wd" -v wa="$wa" -v was="[$was]" -v mx="$mx" \
            'BEGIN { rs = ci / cf; ws = wa > 0 ? wd / wa : 0
                     printf "%-7s %6.2f %5.2f %-5s %6.2f %7.2f %7.2f %5.2f %6s %5s %-6s %7.1f %-11s %6.0f\n",
                            r, ci, cf, cfs, cf / ci, rs, ws, rs + ws, pi, pf, pfs, wa, was, mx }'
    done
} | tee ${OUT:+"$OUT"}
