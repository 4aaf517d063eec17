#!/usr/bin/env bash
# Scheduling observed end to end.  Below the filter, nbdkit's delay
# filter makes every write take 100 ms (so dispatch goes through "next"
# and requests queue in the scheduler).  64 writes are queued, then a
# read above all of them: the deadline policy serves it after a few
# writes; noop (FIFO) and elevator (one ascending sweep) serve it last.
source "$(dirname "$0")/functions.sh"
requires_filter
requires test -x ./order-probe
requires test -f "$($NBDKIT --dump-config | sed -n 's/^filterdir=//p')/nbdkit-delay-filter.so"

fails=0
probe ()
{
    local sched=$1 sock=$tmpdir/$1 out
    n=-1
    # -t: enough worker threads per connection to hold all 64 writes.
    start_nbdkit "$sock" -t 128 --filter="$FILTER" --filter=delay \
        memory 1G delay-write=100ms deadline-scheduler="$sched" || return 1
    # -t 150: time for every write to reach the scheduler even under a
    # sanitizer on a loaded machine (30 ms was not), while only a few
    # of the 100 ms writes complete.
    out=$(./order-probe -w 64 -t 150 "$sock")
    stop_nbdkit "$sock"
    n=$(printf '%s\n' "$out" | sed -n 's/.*writes_before_read=\([0-9]*\).*/\1/p')
    n=${n:--1}
    echo "$sched: $out"
}

probe deadline
if [ "$n" -lt 0 ] || [ "$n" -gt 16 ]; then
    echo "FAIL: deadline: the read waited for $n of 64 writes"; fails=$((fails+1))
fi
for s in noop elevator; do
    probe $s
    if [ "$n" -lt 48 ]; then
        echo "FAIL: $s: the read overtook writes ($n of 64 before it)"; fails=$((fails+1))
    fi
done
# A flush covers completed writes only: it must not queue behind them.
sock=$tmpdir/flush
start_nbdkit "$sock" -t 128 --filter="$FILTER" --filter=delay \
    memory 1G delay-write=20ms || exit 1
out=$(./order-probe -f -w 64 -t 30 "$sock")
stop_nbdkit "$sock"
echo "flush: $out"
n=$(printf '%s\n' "$out" | sed -n 's/.*writes_before_flush=\([0-9]*\).*/\1/p')
if [ "${n:--1}" -lt 0 ] || [ "$n" -gt 16 ]; then
    echo "FAIL: the flush waited for ${n:-?} of 64 queued writes"; fails=$((fails+1))
fi

[ $fails -eq 0 ] || exit 1
echo "$0: PASS"
