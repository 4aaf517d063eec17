#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fault injection through the direct path: real kernel I/O errors.  A
# RAM disk whose requests fail at random (nbdkit's error filter over
# the memory plugin) is made a file by nbdfuse and a block device by a
# loop device with direct I/O and 4 KiB sectors; the deadline filter
# serves that device with io_uring O_DIRECT, so its reads, writes,
# read-modify-writes and fallocates get EIO from the kernel.  While the
# integrity tester runs 64 requests in flight over 4 connections:
# errors reach the clients, every request that succeeds reads back what
# the model says (a failure reported as success would show as a
# mismatch, now or in the final pass), nothing hangs; once the errors
# stop, everything acknowledged is there and a clean run passes on the
# same server.
#
#   FAULT_OPS (default 8000 per run)
source "$(dirname "$0")/functions.sh"
requires_filter
requires_root
requires test -x ./integrity
requires test -c /dev/fuse
requires nbdfuse --version
requires losetup --version
requires $NBDKIT --version     # installed but broken: a failure, not a skip
requires test -f "$($NBDKIT --dump-config | sed -n 's/^filterdir=//p')/nbdkit-error-filter.so"

ops=${FAULT_OPS:-8000}
[ -z "${SANITIZER_PRELOAD:-}" ] || ops=${FAULT_OPS:-4000}
errfile=$tmpdir/errors-on
mnt=$tmpdir/fuse
below=$tmpdir/below

# The failing disk: plain nbdkit (not the filter), errors while $errfile exists.
start_nbdkit "$below" --log=stderr --filter=error memory 128M \
    error-rate=2% error-file="$errfile" || exit 1
# Root with /dev/fuse, nbdfuse and losetup: these must work.
mount_nbdfuse "$below" "$mnt" || { echo "$0: FAIL: nbdfuse did not mount"; exit 1; }
make_loop "$mnt/nbd" --direct-io=on --sector-size 4096 || {
    echo "$0: FAIL: cannot create a loop device over FUSE"; exit 1; }
echo "$0: $loopdev over $mnt/nbd over $below"

fails=0
# run NAME DEADLINE-ARGS...
run ()
{
    local name=$1 sock=$tmpdir/$1 client rc inj0 injected failed finalfail
    shift
    rm -f "$errfile"
    # Readahead off: its reads are the filter's own (one that fails is
    # read again without it), and the counts below pair injected errors
    # with clients' requests.
    start_nbdkit "$sock" --filter="$FILTER" file "$loopdev" deadline-readahead=0 "$@" || return 1
    expect_dispatch "$sock" direct || { echo "FAIL: $name: not the direct path"; return 1; }
    inj0=$(grep -c 'error: injecting' "$below.log")

    rc=0; faulted_run "$tmpdir/$name.out" "$errfile" "$sock" "$ops" 21 || rc=$?
    grep -v 'workload started' "$tmpdir/$name.out"
    [ $rc = 0 ] || { echo "FAIL: $name: client rc $rc (mismatch, hang or lost server)"; return 1; }
    injected=$(( $(grep -c 'error: injecting' "$below.log") - inj0 ))
    failed=$(sed -n 's/.*failed requests: \([0-9]*\).*/\1/p' "$tmpdir/$name.out")
    finalfail=$(sed -n 's/.*final pass: \([0-9]*\) reads.*/\1/p' "$tmpdir/$name.out")
    failed=$(( ${failed:-0} + ${finalfail:-0} ))
    echo "$name: $injected kernel-level requests failed below the loop device; $failed requests failed at the client"
    [ "$injected" -gt 0 ] && [ "$failed" -gt 0 ] || { echo "FAIL: $name: no error seen"; return 1; }

    # The server keeps serving: what was acknowledged is there, a clean
    # verified run passes, the device itself matches.
    ./integrity -V "$tmpdir/model" "$sock" || { echo "FAIL: $name: acknowledged data lost"; return 1; }
    local out
    out=$(./integrity -c 4 -d 16 -n 3000 -s 22 -m "$tmpdir/model2" "$sock" 2>&1) || {
        printf '%s\n' "$out" | tail -5; echo "FAIL: $name: clean run after the errors"; return 1; }
    printf '%s\n' "$out" | tail -1
    stop_nbdkit "$sock"
    grep 'deadline stats (exit)' "$sock.log" | sed 's/.*stats (exit): \(requests=[0-9]* failed=[0-9]*\).* rmw=\([0-9]*\).*/stats: \1 rmw=\2/' ||
        { echo "FAIL: $name: no exit statistics"; return 1; }
    ./integrity --compare "$loopdev" "$tmpdir/model2" || { echo "FAIL: $name: device differs"; return 1; }
}

run depth2 || fails=$((fails+1))
run depth16 deadline-depth=16 || fails=$((fails+1))

[ $fails = 0 ] || exit 1
echo "$0: PASS"
