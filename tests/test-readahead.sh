#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Readahead for a dependent reader (src/core/ahead.c: how much, in
# device time; src/engine/racache.c: the extents that answer later
# reads), end to end on both dispatch paths, on the slow-disk model
# (bench/slowdisk: seeks cost milliseconds, so the filter learns that
# reading ahead pays).  ./ahead reads like cat over small files, with
# writes just ahead of the reader that must never be hidden by data
# read ahead before them; it checks every read.  The filter's exit line
# (ahead=EXTENDED/FILLED/HITS/DROPPED) must show reads answered from
# data read ahead and extents dropped by those writes:
#
#   next    the slowdisk plugin right below the filter;
#   direct  io_uring on a block device over the slowdisk plugin
#           (make_slow_device);
#   off     deadline-readahead=0 (the control): no read is answered
#           from the cache.
source "$(dirname "$0")/functions.sh"
requires_filter
requires test -x ./ahead
SLOWDISK=$abs_top_builddir/bench/slowdisk/.libs/nbdkit-slowdisk-plugin.so
requires test -f "$SLOWDISK"
disk=(size=64M seek-ms=4 rate=50M)

fails=0
fail () { echo "$0: FAIL: $*"; fails=$((fails + 1)); }

# ahead_counts SOCK: "extended filled hits dropped" from the exit line
ahead_counts ()
{
    sed -n 's/.*deadline stats (exit):.* ahead=\([0-9]*\)\/\([0-9]*\)\/\([0-9]*\)\/\([0-9]*\) .*/\1 \2 \3 \4/p' \
        "$1.log" | tail -1
}

# run LABEL SOCK: the client, then the filter's counts (after stopping it)
run ()
{
    local out
    out=$(timeout 300 ./ahead -n 1200 "$2" 2>&1) || fail "$1: the client failed: $out"
    stop_nbdkit "$2"
    read -r ext fill hits drop <<<"$(ahead_counts "$2")"
    echo "$1: $out; read ahead: ${ext:-?} units extended, ${fill:-?} extents kept, ${hits:-?} reads answered, ${drop:-?} extents dropped by writes"
}

sock=$tmpdir/next
start_nbdkit "$sock" --filter="$FILTER" "$SLOWDISK" "${disk[@]}" || exit 1
expect_dispatch "$sock" next || fail "next: not the next path"
run next "$sock"
[ "${hits:-0}" -ge 100 ] || fail "next: ${hits:-?} reads answered from data read ahead, fewer than 100"
[ "${drop:-0}" -ge 10 ] || fail "next: ${drop:-?} extents dropped by writes: the writes did not meet data read ahead"

sock=$tmpdir/off
start_nbdkit "$sock" --filter="$FILTER" "$SLOWDISK" "${disk[@]}" deadline-readahead=0 || exit 1
run off "$sock"
[ "${hits:-1}" = 0 ] && [ "${ext:-1}" = 0 ] || fail "off: read ahead with deadline-readahead=0"

rest_needs_slow_device "$fails" "the direct part needs"
make_slow_device "$tmpdir/slow" "$SLOWDISK" "${disk[@]}" || {
    echo "$0: FAIL: cannot set up the slow block device"; exit 1; }
sock=$tmpdir/direct
start_nbdkit "$sock" --filter="$FILTER" file "$slowdev" deadline-dispatch=direct || exit 1
expect_dispatch "$sock" direct || fail "direct: not the direct path"
run direct "$sock"
[ "${hits:-0}" -ge 100 ] || fail "direct: ${hits:-?} reads answered from data read ahead, fewer than 100"
[ "${drop:-0}" -ge 10 ] || fail "direct: ${drop:-?} extents dropped by writes"

[ $fails = 0 ] || exit 1
echo "$0: ok"
