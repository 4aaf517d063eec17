#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Scheduling observed end to end, on both dispatch paths:
#
#   next    the memory plugin under nbdkit's log and delay filters
#           (another filter below ours, so dispatch goes through "next");
#   direct  the file plugin on a slow block device (make_slow_device:
#           the same log and delay filters below nbdfuse and a loop
#           device), through the filter's io_uring.
#
# Below the filter every write takes 100 ms, a read 30 ms, a zero 1 s.
#
# 1. order-probe's flood: 64 writes are queued, then a read above all of
#    them: the deadline policy serves it after a few writes; noop (FIFO)
#    and elevator (one ascending sweep) serve it last.  A flush covers
#    completed writes only, so it must not queue behind them.
# 2. The order at the device, traced by the log filter at the bottom:
#    with deadline-depth=1 a zero at slot 0 (1 MiB slots) holds the
#    device while the rest of SEQ queues behind it (order-probe -S sends
#    each request once the control socket shows the previous arrived,
#    and fails if anything completed before the last arrived).  The
#    order in which they then reach the device must be the policy's,
#    derived by hand below (anticipation and preemption off, expiries
#    out of reach, the default fifo_batch 64, seek_cost 16,
#    writes_starved 2).
source "$(dirname "$0")/functions.sh"
requires_filter
requires test -x ./order-probe
filterdir=$($NBDKIT --dump-config | sed -n 's/^filterdir=//p')
requires test -f "$filterdir/nbdkit-delay-filter.so"
requires test -f "$filterdir/nbdkit-log-filter.so"
requires_slow_device

delays=(delay-write=100ms delay-read=30ms delay-zero=1000ms)
fails=0
fail () { echo "$0: FAIL: $*"; fails=$((fails+1)); }

# The trace of both paths' devices (the log filter's file).
devlog_next=$tmpdir/next-device.log
make_slow_device "$tmpdir/slow" --filter=log --filter=delay memory 128M \
    logfile="$tmpdir/direct-device.log" "${delays[@]}" || {
    echo "$0: FAIL: cannot set up the slow device"; exit 1; }
devlog_direct=$tmpdir/direct-device.log

# start_target PATH SOCK DEADLINE-ARGS...
start_target ()
{
    local path=$1 sock=$2
    shift 2
    if [ "$path" = next ]; then
        start_nbdkit "$sock" -t 128 --filter="$FILTER" --filter=log --filter=delay \
            memory 128M logfile="$devlog_next" logappend=true "${delays[@]}" \
            deadline-dispatch=next deadline-control="$sock.ctl" "$@" || return 1
    else
        start_nbdkit "$sock" -t 128 --filter="$FILTER" file "$slowdev" \
            deadline-dispatch=direct deadline-control="$sock.ctl" "$@" || return 1
    fi
    expect_dispatch "$sock" "$path"
}

# 1. The flood.
probe ()                        # PATH SCHED
{
    local path=$1 sched=$2 sock=$tmpdir/$1-$2 out rc=0
    n=-1
    start_target "$path" "$sock" deadline-scheduler="$sched" || { fail "$path: nbdkit"; return; }
    # -t 150, and then until the control socket counts all 64 writes
    # in the filter (under a sanitizer on a loaded machine 150 ms was
    # not always enough), while only a few of the 100 ms writes complete.
    out=$(./order-probe -w 64 -t 150 -c "$sock.ctl" "$sock") || rc=$?
    stop_nbdkit "$sock"
    echo "$path $sched: ${out:-no result}"
    if [ $rc != 0 ]; then
        fail "$path $sched: order-probe failed (rc $rc)"; return
    fi
    n=$(sed -n 's/.*writes_before_read=\([0-9]*\).*/\1/p' <<<"$out")
    n=${n:--1}
}

for path in next direct; do
    probe $path deadline
    if [ "$n" -lt 0 ] || [ "$n" -gt 16 ]; then
        fail "$path deadline: the read waited for $n of 64 writes"
    fi
    for s in noop elevator; do
        probe $path $s
        if [ "$n" -lt 48 ]; then
            fail "$path $s: the read overtook writes ($n of 64 before it)"
        fi
    done
    # A flush covers completed writes only: it must not queue behind them.
    sock=$tmpdir/$path-flush
    start_target $path "$sock" || { fail "$path: nbdkit"; continue; }
    rc=0
    out=$(./order-probe -f -w 64 -t 150 -c "$sock.ctl" "$sock") || rc=$?
    stop_nbdkit "$sock"
    echo "$path flush: ${out:-no result}"
    n=$(sed -n 's/.*writes_before_flush=\([0-9]*\).*/\1/p' <<<"$out")
    if [ $rc != 0 ]; then
        fail "$path flush: order-probe failed (rc $rc)"
    elif [ "${n:--1}" -lt 0 ] || [ "$n" -gt 16 ]; then
        fail "$path: the flush waited for ${n:-?} of 64 queued writes"
    fi
done

# 2. The order at the device.
#
# SEQ: z0 holds the device; writes arrive at slots 7 3 9 5 11 2, then
# reads at 8 4 10 6.
#   noop      arrival order.
#   elevator  one ascending sweep over both directions from the end of
#             z0.
#   deadline  z0 starts a write batch (contiguous with the head at 0:
#             cost 1) that continues ascending: w2 w3 w5 w7 (each a seek,
#             16: 65 >= fifo_batch 64 ends it).  Reads are waiting and
#             writes not starved: a read batch, a new direction, so at
#             the oldest read, r8, then ascending r10; nothing above:
#             the batch ends.  Another read batch (writes starved once):
#             nothing at or after r10's end, so the oldest read, r4,
#             then r6.  No reads left: a write batch, a new direction,
#             at the oldest write left, w9, then w11.
seq=z0,w7,w3,w9,w5,w11,w2,r8,r4,r10,r6
declare -A expect=(
    [noop]=$seq
    [elevator]=z0,w2,w3,r4,w5,r6,w7,r8,w9,r10,w11
    [deadline]=z0,w2,w3,w5,w7,r8,r10,r4,r6,w9,w11
)

# device_order LOG FROM: the 4 KiB reads, writes and zeroes at 1 MiB
# slots that LOG shows from line FROM on, in the order they reached the
# device (the log filter's first line of each), as w7,r8,z0,...
device_order ()
{
    local op off list=()
    while read -r op off; do
        (( off % 1048576 == 0 )) || continue
        case $op in Write) op=w ;; Read) op=r ;; Zero) op=z ;; esac
        list+=("$op$(( off / 1048576 ))")
    done < <(tail -n +"$2" "$1" |
             sed -n 's/.* \(Read\|Write\|Zero\) id=[0-9]* offset=\(0x[0-9a-f]*\) count=0x1000 .*\.\.\.$/\1 \2/p')
    local IFS=,
    echo "${list[*]}"
}

for path in next direct; do
    devlog=devlog_$path
    devlog=${!devlog}
    for sched in deadline elevator noop; do
        sock=$tmpdir/$path-seq-$sched
        from=$(( $( (cat "$devlog" 2>/dev/null || :) | wc -l) + 1 ))
        start_target $path "$sock" deadline-scheduler=$sched deadline-depth=1 \
            deadline-anticipate=0 deadline-preempt=off \
            deadline-read-expire=60s deadline-write-expire=60s || { fail "$path: nbdkit"; continue; }
        rc=0
        out=$(./order-probe -c "$sock.ctl" -S $seq "$sock") || rc=$?
        stop_nbdkit "$sock"
        got=$(device_order "$devlog" "$from")
        echo "$path $sched: sent $seq; device $got; client: $out"
        if [ $rc != 0 ]; then
            fail "$path $sched: order-probe -S failed (rc $rc)"
        elif [ "$got" != "${expect[$sched]}" ]; then
            fail "$path $sched: the device saw $got, the policy's order is ${expect[$sched]}"
        fi
    done
done

[ $fails -eq 0 ] || exit 1
echo "$0: PASS"
