#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fault injection through the "next" path: nbdkit's error filter below
# the deadline filter fails a share of reads, writes, trims and zeroes
# with EIO while the integrity tester runs 64 requests in flight over 4
# connections.  Every injected error must reach a client as an error
# (with merging off, one to one: the count of failed requests equals
# the count the error filter injected), every other request succeeds and
# reads back what the model says, nothing hangs, and once the errors
# stop the same server serves a clean verified run.
#
#   FAULT_OPS (default 12000 per run; make check-long: 200000)
source "$(dirname "$0")/functions.sh"
requires_filter
requires test -x ./integrity
requires $NBDKIT --version     # installed but broken: a failure, not a skip
requires test -f "$($NBDKIT --dump-config | sed -n 's/^filterdir=//p')/nbdkit-error-filter.so"

ops=${FAULT_OPS:-12000}
[ -z "${SANITIZER_PRELOAD:-}" ] || ops=${FAULT_OPS:-5000}
# make check-valgrind: nbdkit with the filter under memcheck (the error
# paths too); every run's log must end with 0 errors.
vg=
if [ "${DEADLINE_VALGRIND:-0}" = 1 ]; then
    requires valgrind --version
    vg=1
    NBDKIT="valgrind --error-exitcode=99 --leak-check=full --show-leak-kinds=definite --suppressions=${abs_top_srcdir:-$(dirname "$0")/..}/tests/valgrind.supp $NBDKIT"
fi
errfile=$tmpdir/errors-on
fails=0


# run NAME RATE [FILTER-ARGS...]
run ()
{
    local name=$1 rate=$2 sock=$tmpdir/$1 client rc injected failed finalfail
    shift 2
    rm -f "$errfile"
    # Readahead off: its reads are the filter's own, which no client
    # sees fail, and the counts below pair injected errors with clients'
    # requests.
    start_nbdkit "$sock" --log=stderr --filter="$FILTER" --filter=error memory 64M \
        error-rate="$rate" error-file="$errfile" deadline-readahead=0 "$@" || return 1
    expect_dispatch "$sock" next || { echo "FAIL: $name: not the next path"; return 1; }
    local pid
    pid=$(cat "$sock.pid")

    rc=0; faulted_run "$tmpdir/$name.out" "$errfile" "$sock" "$ops" 11 || rc=$?
    cat "$tmpdir/$name.out"
    [ $rc = 0 ] || { echo "FAIL: $name: client rc $rc (mismatch, hang or lost server)"; return 1; }

    injected=$(grep -c 'error: injecting EIO error' "$sock.log")
    failed=$(sed -n 's/.*failed requests: \([0-9]*\).*/\1/p' "$tmpdir/$name.out")
    finalfail=$(sed -n 's/.*final pass: \([0-9]*\) reads.*/\1/p' "$tmpdir/$name.out")
    failed=$(( ${failed:-0} + ${finalfail:-0} ))
    echo "$name: injected $injected errors below the filter; $failed requests failed at the client"
    [ "$injected" -gt 0 ] || { echo "FAIL: $name: no error was injected"; return 1; }
    if [ "$name" = nomerge ]; then
        [ "$failed" = "$injected" ] || { echo "FAIL: $name: $injected injected but $failed failed"; return 1; }
    else
        # A merged unit that fails fails every request in it.
        [ "$failed" -ge "$injected" ] || { echo "FAIL: $name: $injected injected but only $failed failed"; return 1; }
    fi

    # The server keeps serving: what was acknowledged is there, and a
    # clean run passes.
    ./integrity -V "$tmpdir/model" "$sock" || { echo "FAIL: $name: acknowledged data lost"; return 1; }
    local out
    out=$(./integrity -c 4 -d 16 -n 5000 -s 12 "$sock" 2>&1) ||
        { printf '%s\n' "$out" | tail -5; echo "FAIL: $name: clean run after the errors"; return 1; }
    printf '%s\n' "$out" | tail -1
    if [ -z "$vg" ]; then
        stop_nbdkit "$sock"
        return 0
    fi
    # Under valgrind: the server is the process that wrote the pidfile
    # (nbdkit forks; the parent's summary, which valgrind writes as it
    # exits at once, says nothing about the server).  Stop it and wait
    # as long as memcheck needs for its leak check, then read the
    # summary of that pid.
    rm -f "$sock.pid"
    kill "$pid"
    for (( i=0; i<1200; i++ )); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        kill -9 "$pid"; echo "FAIL: $name: nbdkit under valgrind did not exit in 120 s"; return 1
    fi
    grep -E "^==$pid== (ERROR SUMMARY|   definitely lost)" "$sock.log"
    grep -q "^==$pid== ERROR SUMMARY: 0 errors" "$sock.log" &&
        ! grep -q 'ERROR SUMMARY: [1-9]' "$sock.log" || { echo "FAIL: $name: valgrind"; return 1; }
}

run nomerge 5% deadline-max-merge=0 || fails=$((fails+1))
[ -n "$vg" ] || run merged 3% || fails=$((fails+1))
# Reads only, and a high rate with a deep device queue.
[ -n "$vg" ] || run reads 10% error-pwrite-rate=0 error-trim-rate=0 error-zero-rate=0 deadline-depth=8 || fails=$((fails+1))
run heavy 30% deadline-depth=16 || fails=$((fails+1))

[ $fails = 0 ] || exit 1
echo "$0: PASS"
