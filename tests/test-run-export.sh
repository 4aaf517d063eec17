#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ./run-export, the README's first command, run as a newcomer would
# (with this build, RUN_EXPORT_BUILDDIR, instead of building its own):
# it serves the backing through the filter, with enough threads for a
# kernel client, and the commands it prints to watch the scheduler work
# as printed against its control socket.
source "$(dirname "$0")/functions.sh"
set -e
S=$abs_top_srcdir
fail () { echo "FAIL: $*"; exit 1; }
requires nbdinfo --version
requires test -x ./integrity

disk=$tmpdir/disk.img
truncate -s 64M "$disk"
sock=$tmpdir/export.sock
RUN_EXPORT_BUILDDIR=$abs_top_builddir "$S/run-export" --socket "$sock" "$disk" \
    > "$tmpdir/out" 2>&1 &
pid=$!
cleanup_fn "kill $pid 2>/dev/null; wait $pid 2>/dev/null"
wait_sockets $pid "$tmpdir/out" "$sock" "$tmpdir/export.ctl" ||
    fail "run-export does not serve the export and its control socket"
cat "$tmpdir/out"

# run-export execs nbdkit: the pid is the server's.
tr '\0' ' ' < "/proc/$pid/cmdline" > "$tmpdir/cmdline"
threads=$(sed -n 's/.*--threads \([0-9]*\).*/\1/p' "$tmpdir/cmdline")
[ -n "$threads" ] && [ "$threads" -ge 128 ] ||
    fail "nbdkit runs with --threads ${threads:-default}: $(cat "$tmpdir/cmdline")"
grep -q -- "--filter=$abs_top_builddir/src/filter/.libs/nbdkit-deadline-filter.so" \
    "$tmpdir/cmdline" || fail "nbdkit does not load this build's filter: $(cat "$tmpdir/cmdline")"

# The client commands it printed name this export.
uri="nbd+unix:///?socket=$sock"
grep -qF "nbdinfo '$uri'" "$tmpdir/out" || fail "no nbdinfo line for $uri"
nbdinfo "$uri" | grep -q 'export-size: 67108864' || fail "nbdinfo $uri"

# Some I/O, then each watch command exactly as printed.
./integrity -c 2 -d 8 -n 1000 -s 5 -m "$tmpdir/model" "$sock" >/dev/null ||
    fail "integrity through run-export's export"
stats_cmd=$(sed -n 's/^ *\(.*nbd-deadline-ctl -s [^ ]* stats\)\( .*\)\{0,1\}$/\1/p' "$tmpdir/out")
top_cmd=$(sed -n 's/^ *\(.*nbd-deadline-ctl -s [^ ]* top\)$/\1/p' "$tmpdir/out")
[ -n "$stats_cmd" ] || fail "run-export printed no stats command"
[ -n "$top_cmd" ] || fail "run-export printed no top command"
$stats_cmd > "$tmpdir/stats" || fail "the printed command failed: $stats_cmd"
grep -Eq 'completed|requests' "$tmpdir/stats" || { cat "$tmpdir/stats"; fail "stats show no requests"; }
${stats_cmd% stats} --raw stats > "$tmpdir/raw" || fail "raw stats"
awk '$1=="completed_total" && $2>=1000 {ok=1} END {exit !ok}' "$tmpdir/raw" ||
    fail "the scheduler saw fewer than 1000 requests: $(grep completed_total "$tmpdir/raw")"
$top_cmd -n 1 -d 1 > "$tmpdir/top" || fail "the printed command failed: $top_cmd -n 1"
[ -s "$tmpdir/top" ] || fail "top printed nothing"

# Ctrl-C (SIGINT) stops it cleanly.
kill -INT $pid
wait $pid || fail "exit status $? after SIGINT"
./integrity --compare "$disk" "$tmpdir/model" || fail "data on the backing"
echo "$0: PASS"
