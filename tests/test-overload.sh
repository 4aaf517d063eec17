#!/usr/bin/env bash
# Overload: hundreds of connections and thousands of requests in flight
# (integrity: 256 connections x 16 = 4096 requests, verified against the
# model), through the direct and the next path.  nbdkit gives each
# connection its own worker threads (16 by default), and the filter
# holds each request on its worker's stack until it completes, so what
# the process holds is bounded by connections x threads x (request
# size + a thread stack's touched pages), plus the filter's bounce
# buffers (deadline-max-inflight, 8 MiB by default).  The test prints
# nbdkit's peak RSS and checks it against that bound computed for the
# largest request the tester sends (1 MiB, but most are far smaller),
# and that no request waited longer than OVERLOAD_MAX_MS (default
# 20000): nothing starves behind the crowd.
#
#   OVERLOAD_CONNS (256), OVERLOAD_DEPTH (16), OVERLOAD_OPS (10000)
source "$(dirname "$0")/functions.sh"
requires_filter
requires test -x ./integrity

conns=${OVERLOAD_CONNS:-256}
depth=${OVERLOAD_DEPTH:-16}
ops=${OVERLOAD_OPS:-10000}
maxms=${OVERLOAD_MAX_MS:-20000}
# A sanitized filter is several times slower: half the crowd, more time.
if [ -n "${SANITIZER_PRELOAD:-}" ]; then
    conns=${OVERLOAD_CONNS:-128}
    maxms=${OVERLOAD_MAX_MS:-60000}
fi
threads=16
fails=0
# Enough descriptors for the client's connections.
ulimit -n 4096 2>/dev/null || :

disk=$tmpdir/disk.img
truncate -s 256M "$disk"

run ()
{
    local name=$1 sock=$tmpdir/$1 pid out hwm peak_thr bound base
    shift
    start_nbdkit "$sock" -t $threads "$@" || return 1
    pid=$(cat "$sock.pid")
    base=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$pid/status)
    peak_thr=0
    ( while [ -d /proc/$pid ]; do
          sed -n 's/^Threads:[[:space:]]*//p' /proc/$pid/status 2>/dev/null
          sleep 0.5
      done ) >"$tmpdir/$name.threads" &
    local sampler=$!
    out=$(timeout 600 ./integrity -c $conns -d $depth -n $ops -s 51 -L $maxms "$sock" 2>&1)
    rc=$?
    hwm=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$pid/status)
    stop_nbdkit "$sock"
    wait $sampler 2>/dev/null
    peak_thr=$(sort -n "$tmpdir/$name.threads" | tail -1)
    echo "$out" | grep -v '^integrity: SLOW'
    [ $rc = 0 ] || { echo "FAIL: $name: integrity rc $rc"; echo "$out" | grep SLOW; return 1; }
    # Bound, KiB: per request in flight the payload (<= 1 MiB) and a
    # worker stack's touched pages (64 KiB), the filter's bounce buffers,
    # and the process at rest.
    bound=$(( base + conns * threads * (1024 + 64) + 8192 ))
    echo "$name: $conns connections x $depth in flight; peak $peak_thr threads;" \
         "peak RSS $((hwm / 1024)) MiB (at rest $((base / 1024)) MiB; bound $((bound / 1024)) MiB)"
    [ "$hwm" -le "$bound" ] || { echo "FAIL: $name: peak RSS over the bound"; return 1; }
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
