#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Integrity on a regular file through the direct (io_uring, O_DIRECT)
# path: random mixed I/O, >= 64 in flight over 4 connections, checked
# against a model; then the file itself is compared with the model.
source "$(dirname "$0")/functions.sh"
set -e
requires_filter
requires test -x ./integrity

disk=$tmpdir/disk.img
sock=$tmpdir/sock
truncate -s 64M "$disk"
# Some non-zero data to start from.
dd if=/dev/urandom of="$disk" bs=1M count=8 seek=4 conv=notrunc status=none

run=
if [ "${DEADLINE_VALGRIND:-0}" = 1 ]; then
    requires valgrind --version
    run="valgrind --error-exitcode=99 --leak-check=full --show-leak-kinds=definite --trace-children=no"
    NBDKIT="$run $NBDKIT -f"
fi

if [ -n "$run" ]; then
    # valgrind needs nbdkit in the foreground.
    rm -f "$sock"
    $NBDKIT -v -U "$sock" -P "$sock.pid" --filter="$FILTER" file "$disk" \
        2>"$sock.log" &
    cleanup_fn "_stop_pidfile $sock.pid"
    for i in $(seq 300); do [ -S "$sock" ] && break; sleep 0.1; done
    ops=3000
else
    start_nbdkit "$sock" --filter="$FILTER" file "$disk" deadline-depth=4
    ops=20000
fi
expect_dispatch "$sock" direct || exit 1

./integrity -c 4 -d 16 -n $ops -s 1 -m "$tmpdir/model" "$sock"
stop_nbdkit "$sock"
if [ -n "$run" ]; then
    wait
    grep -E "ERROR SUMMARY|definitely lost" "$sock.log" || :
    grep -q "ERROR SUMMARY: 0 errors" "$sock.log" || { echo "$0: FAIL: valgrind"; exit 1; }
fi
grep 'deadline stats' "$sock.log" || :
./integrity --compare "$disk" "$tmpdir/model"
[ "$(stat -c %s "$disk")" = $((64*1024*1024)) ] || { echo "$0: FAIL: size changed"; exit 1; }
echo "$0: PASS"
