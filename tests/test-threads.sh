#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nbdkit's threads and a client that keeps many requests outstanding
# (src/filter/threads.h).  nbdkit reads a connection's next request only
# when one of its --threads is free; the requests beyond them wait in the
# socket, unseen by the scheduler.
#
# 1. The effect, end to end, on a slow block device (make_slow_device:
#    every write takes 100 ms): order-probe -1 sends 64 writes and then
#    a read on the same connection, as the kernel's nbd client does.
#    With nbdkit -t 16 the read reaches the filter only after 64 - 16
#    writes have completed (the control), and the filter counts the
#    requests that took the connection's last thread (conn_full);
#    started as the service starts an export whose configuration does
#    not set threads, the read must be served after a few writes, as the
#    scheduler orders it, and no request may take the last thread.
# 2. The filter's warning at start: when nbdkit's threads (read from its
#    command line, in each of nbdkit's spellings) are fewer than 128, and
#    not otherwise.
# 3. run-export starts nbdkit with at least 128 threads.
source "$(dirname "$0")/functions.sh"
requires_filter
requires test -x ./order-probe
filterdir=$($NBDKIT --dump-config | sed -n 's/^filterdir=//p')
requires test -f "$filterdir/nbdkit-delay-filter.so"
B=$abs_top_builddir
S=$abs_top_srcdir
START=$B/src/ctl/nbd-deadline-start
requires test -x "$START"

fails=0
fail () { echo "$0: FAIL: $*"; fails=$((fails + 1)); }
warning='deadline: warning: nbdkit --threads is'

# ---- 2. The warning (no device needed) --------------------------------
disk=$tmpdir/disk.img
truncate -s 64M "$disk"
# warns LABEL EXPECT NBDKIT-OPTIONS...: EXPECT is the thread count the
# warning must name, or "none".
warns ()
{
    local label=$1 expect=$2 sock=$tmpdir/w.sock got
    shift 2
    start_nbdkit "$sock" "$@" --filter="$FILTER" file "$disk" || {
        fail "$label: nbdkit did not start"; return; }
    stop_nbdkit "$sock"
    got=$(sed -n "s/.*$warning \([0-9]*\):.*/\1/p" "$sock.log")
    echo "warning with ${*:-no options}: ${got:-none}"
    [ "${got:-none}" = "$expect" ] || fail "$label: warning for ${got:-none} threads, expected $expect"
}
warns default 16
warns short 64 -t 64
warns bundled 8 -rt8
warns long 100 --threads=100
warns long-sep 127 --threads 127
warns enough none -t 128
warns enough-bundled none -rt 256
warns enough-long none --threads=1024
# A value that looks like -t but belongs to another option.
warns other-option 16 --exportname -t

# ---- 3. run-export ------------------------------------------------------
t=$(sed -n 's/^exec .*nbdkit.* --threads \([0-9]*\) .*/\1/p' "$S/run-export")
echo "run-export: --threads ${t:-none}"
[ -n "$t" ] && [ "$t" -ge 128 ] || fail "run-export starts nbdkit with --threads ${t:-default}"

# ---- 1. The effect ------------------------------------------------------
rest_needs_slow_device $fails "the end-to-end part needs"
make_slow_device "$tmpdir/slow" --filter=delay memory 128M delay-write=100ms delay-read=30ms || {
    echo "$0: FAIL: cannot set up the slow device"; exit 1; }

# probe LABEL SOCK: order-probe -1's writes_before_read into $n (-1 on failure)
probe ()
{
    local out rc=0
    n=-1
    out=$(timeout 120 ./order-probe -1 -w 64 -t 300 "$2") || rc=$?
    echo "$1: ${out:-no result}"
    [ $rc = 0 ] || { fail "$1: order-probe failed (rc $rc)"; return; }
    n=$(sed -n 's/.*writes_before_read=\([0-9]*\).*/\1/p' <<<"$out")
    n=${n:--1}
}

# The control: nbdkit's default 16 threads.
sock=$tmpdir/t16
start_nbdkit "$sock" -t 16 --filter="$FILTER" file "$slowdev" deadline-dispatch=direct || exit 1
probe "nbdkit -t 16" "$sock"
stop_nbdkit "$sock"
(( n >= 64 - 16 )) || fail "-t 16: the read was served after $n writes, not after 48 or more"
full=$(sed -n 's/.*deadline stats (exit):.* conn_full=\([0-9]*\).*/\1/p' "$sock.log" | tail -1)
echo "nbdkit -t 16: conn_full=${full:-none}"
(( ${full:-0} >= 1 )) || fail "-t 16: no request counted as taking the connection's last thread"

# The service's default, from a configuration without threads.
export NBD_DEADLINE_FILTER=$FILTER NBD_DEADLINE_CONFDIR=$tmpdir/etc NBDKIT
export NBD_DEADLINE_CTL=$B/src/ctl/nbd-deadline-ctl
mkdir -p "$NBD_DEADLINE_CONFDIR"
printf 'backing = %s\nlisten = unix:%s\ncontrol = %s\n' \
    "$slowdev" "$tmpdir/svc.sock" "$tmpdir/svc.ctl" > "$NBD_DEADLINE_CONFDIR/svc.conf"
"$START" --dry-run svc > "$tmpdir/dry" 2>&1 || { cat "$tmpdir/dry"; fail "service dry run"; }
grep -o -- '--threads [0-9]*' "$tmpdir/dry" | sed 's/^/service: /'
"$START" svc 2>"$tmpdir/svc.log" &
pid=$!
cleanup_fn "kill $pid 2>/dev/null; wait $pid 2>/dev/null"
for (( i=0; i<100; i++ )); do
    [ -S "$tmpdir/svc.sock" ] && break
    kill -0 $pid 2>/dev/null || { cat "$tmpdir/svc.log"; fail "the service exited"; break; }
    sleep 0.1
done
probe "service default" "$tmpdir/svc.sock"
full=$("$B/src/ctl/nbd-deadline-ctl" -s "$tmpdir/svc.ctl" --raw stats |
       sed -n 's/^connection_full_total //p')
echo "service default: connection_full_total=${full:-none}"
[ "$full" = 0 ] || fail "service default: connection_full_total is ${full:-missing}, not 0"
kill $pid; wait $pid || :
(( n >= 0 && n <= 16 )) || fail "service default: the read was served after $n writes, not 16 or fewer"
grep -q "$warning" "$tmpdir/svc.log" && fail "service default: nbdkit warned of too few threads"

[ $fails = 0 ] || exit 1
echo "$0: PASS"
