#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Overload: hundreds of connections and thousands of requests in flight
# (integrity: 256 connections x 16 = 4096 requests, verified against the
# model), through the direct and the next path.  Two bounds, both taken
# from what the run itself does:
#
#   memory: nbdkit's peak RSS may exceed its RSS at rest by no more than
#     the payload the client had in flight at most (integrity counts it:
#     nbdkit holds each request's data once), the filter's bounce
#     buffers (deadline-max-inflight, 8 MiB), 64 KiB for each thread it
#     ran (stack pages, per-thread state and the allocator's keeping:
#     33-45 KiB measured at 256 x 16) and
#     32 MiB for the allocator.  Copies or leaks of the payload go over it.
#   waiting: no request may wait longer than three times the time the server
#     took to turn its whole queue over once (the run's duration x the
#     requests in flight / the requests done), plus a second: nothing
#     starves behind the crowd.  OVERLOAD_OPS is several times the
#     requests in flight, so that a starved request has time to show.
#
#   OVERLOAD_CONNS (256), OVERLOAD_DEPTH (16), OVERLOAD_OPS (20000)
source "$(dirname "$0")/functions.sh"
requires_filter
requires test -x ./integrity

conns=${OVERLOAD_CONNS:-256}
depth=${OVERLOAD_DEPTH:-16}
ops=${OVERLOAD_OPS:-20000}
# A sanitized filter is several times slower: half the crowd.
if [ -n "${SANITIZER_PRELOAD:-}" ]; then
    conns=${OVERLOAD_CONNS:-128}
fi
threads=16
fails=0
# Enough descriptors for the client's connections.
ulimit -n 4096 2>/dev/null || :

disk=$tmpdir/disk.img
truncate -s 256M "$disk"

run ()
{
    local name=$1 sock=$tmpdir/$1 pid out hwm peak_thr bound base payload t0 t1 lat turn limit
    shift
    start_nbdkit "$sock" -t $threads "$@" || return 1
    expect_dispatch "$sock" "$name" || return 1
    pid=$(cat "$sock.pid")
    base=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$pid/status)
    peak_thr=0
    ( while [ -d /proc/$pid ]; do
          sed -n 's/^Threads:[[:space:]]*//p' /proc/$pid/status 2>/dev/null
          sleep 0.5
      done ) >"$tmpdir/$name.threads" &
    local sampler=$!
    t0=$(date +%s%N)
    out=$(timeout 600 ./integrity -c $conns -d $depth -n $ops -s 51 "$sock" 2>&1)
    rc=$?
    t1=$(date +%s%N)
    hwm=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$pid/status)
    stop_nbdkit "$sock"
    wait $sampler 2>/dev/null
    peak_thr=$(sort -n "$tmpdir/$name.threads" | tail -1)
    echo "$out" | grep -v '^integrity: SLOW'
    [ $rc = 0 ] || { echo "FAIL: $name: integrity rc $rc"; return 1; }
    payload=$(sed -n 's/^integrity: max payload in flight: \([0-9]*\) bytes/\1/p' <<<"$out")
    lat=$(sed -n 's/^integrity: max latency ms: //p' <<<"$out" | tr ' ' '\n' | grep '^[0-9.]*$' | sort -g | tail -1)
    [ -n "$payload" ] && [ -n "$lat" ] || { echo "FAIL: $name: no payload or latency figures"; return 1; }
    # Memory, KiB.
    bound=$(( base + payload / 1024 + 8192 + peak_thr * 64 + 32768 ))
    echo "$name: $conns connections x $depth in flight; peak $peak_thr threads;" \
         "peak RSS $((hwm / 1024)) MiB (at rest $((base / 1024)) MiB;" \
         "payload in flight at most $((payload >> 20)) MiB; bound $((bound / 1024)) MiB)"
    # Under the sanitizers RSS is mostly theirs (shadow memory, the
    # allocator's quarantine, per-thread caches: ~1 GiB here), not the
    # filter's: the plain build checks the bound.
    if [ -n "${SANITIZER_PRELOAD:-}" ]; then
        echo "$name: RSS bound not checked in a sanitizer build"
    else
        [ "$hwm" -le "$bound" ] || { echo "FAIL: $name: peak RSS over the bound"; return 1; }
    fi
    # Waiting, ms: one turnover of the queue = run time x in flight / ops.
    turn=$(( (t1 - t0) / 1000000 * conns * depth / ops ))
    limit=$(( 3 * turn + 1000 ))
    echo "$name: run $(( (t1 - t0) / 1000000 )) ms; the queue turns over in $turn ms;" \
         "longest request $lat ms (limit $limit ms)"
    awk -v l="$lat" -v m="$limit" 'BEGIN { exit !(l <= m) }' ||
        { echo "FAIL: $name: a request waited $lat ms, over $limit ms"; echo "$out" | grep SLOW | head; return 1; }
    # In the server (submit -> complete, so without the client's and the
    # sockets' share): the queue and each direction's latency.
    grep 'deadline stats (exit)' "$sock.log" |
        grep -o 'inflight_max=[0-9]* waiting_max=[0-9]*\|expired=[0-9/]*\|read\[[^]]*\]\|write\[[^]]*\]' |
        tr '\n' ' '; echo
}

run direct --filter="$FILTER" file "$disk" || fails=$((fails+1))
run next --filter="$FILTER" file "$disk" deadline-dispatch=next || fails=$((fails+1))

[ $fails = 0 ] || exit 1
echo "$0: PASS"
