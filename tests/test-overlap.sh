#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Overlapping requests from several connections in flight together,
# end to end on both dispatch paths (issue 16).  The filter promises
# (src/core/hazard.c; nbdkit-deadline-filter(1), THE SCHEDULER) that a
# request overlapping an earlier one not yet completed, where either is
# a write, waits for it, so that reordering never changes what a client
# reads or what ends up on disk: the result must be that of running the
# requests one by one in the order they reached the filter.  ./overlap
# sends rounds of reads, writes and zeroes into a few 64 KiB windows
# over 4 connections, each request only once the control socket shows
# the previous one arrived, and checks every read and the final
# contents against that serial order.
#
#   next    the memory plugin under nbdkit's delay filter (so the
#           filter cannot go direct): every request waits at the layer
#           below, writes longest, zeroes shortest, so that any request
#           let past an earlier conflicting one finishes first;
#   direct  the file plugin on a slow block device (make_slow_device:
#           the same delays below nbdfuse and a loop device), through
#           the filter's io_uring.
#
# Each run must also show that it exercised what it claims: conflicting
# pairs sent while the earlier was unanswered, reads sent behind
# unanswered writes, hazard holds counted by the filter, several units
# in flight at once.
#   OVERLAP_SEED (default: random, printed)
source "$(dirname "$0")/functions.sh"
requires_filter
requires test -x ./overlap
requires test -f "$($NBDKIT --dump-config | sed -n 's/^filterdir=//p')/nbdkit-delay-filter.so"
requires_slow_device

seed=${OVERLAP_SEED:-$((RANDOM * 32768 + RANDOM))}
echo "$0: seed $seed (OVERLAP_SEED to repeat)"
rounds=8
delays=(delay-write=120ms delay-read=60ms delay-zero=20ms)
fails=0

# run PATH SOCK: the client against SOCK (control socket SOCK.ctl),
# then the checks of what it exercised.
run ()
{
    local path=$1 sock=$2 out rc=0 v k
    out=$(./overlap -c 4 -r $rounds -n 24 -w 3 -s "$seed" "$sock.ctl" "$sock") || rc=$?
    echo "$path: ${out:-no summary}"
    if [ $rc != 0 ]; then
        echo "$0: FAIL: $path: the client failed (rc $rc)"; fails=$((fails+1)); return
    fi
    # The least a round of 24 requests over 3 windows must show when
    # the layer below holds each request 20-120 ms; without the delay
    # (or with answers before arrival) these stay near zero.
    for k in conflicts_in_flight:$((2 * rounds)) raw_in_flight:3 holds:$rounds \
             held_max:1 inflight_max:2; do
        v=$(sed -n "s/.* ${k%%:*}=\([0-9]*\).*/\1/p" <<<"$out")
        if [ "${v:--1}" -lt "${k#*:}" ]; then
            echo "$0: FAIL: $path: ${k%%:*}=${v:-?}, below ${k#*:}: overlaps were not in flight together"
            fails=$((fails+1))
        fi
    done
}

# next: another filter between ours and the plugin.
sock=$tmpdir/next
start_nbdkit "$sock" --filter="$FILTER" --filter=delay memory 64M "${delays[@]}" \
    deadline-dispatch=next deadline-depth=16 deadline-control="$sock.ctl" || exit 1
expect_dispatch "$sock" next || exit 1
run next "$sock"
stop_nbdkit "$sock"

# direct: io_uring on a slow block device.
make_slow_device "$tmpdir/slow" --filter=delay memory 64M "${delays[@]}" || {
    echo "$0: FAIL: cannot set up the slow device"; exit 1; }
sock=$tmpdir/direct
start_nbdkit "$sock" --filter="$FILTER" file "$slowdev" \
    deadline-dispatch=direct deadline-depth=16 deadline-control="$sock.ctl" || exit 1
expect_dispatch "$sock" direct && grep -q '(block device)' "$sock.log" || {
    echo "$0: FAIL: the direct path on the block device was not taken"
    grep deadline: "$sock.log"; exit 1; }
run direct "$sock"
stop_nbdkit "$sock"

[ $fails = 0 ] || exit 1
echo "$0: PASS"
