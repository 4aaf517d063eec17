#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Integrity on a block device (a loop device with direct I/O and 4 KiB
# sectors, so that unaligned requests need read-modify-write and
# unaligned zero/trim cannot use fallocate) through the direct path.
source "$(dirname "$0")/functions.sh"
set -e
requires_filter
requires_root
requires test -x ./integrity
requires losetup --version

disk=$tmpdir/backing.img
sock=$tmpdir/sock
truncate -s 64M "$disk"
make_loop "$disk" --direct-io=on --sector-size 4096 || {
    echo "$0: FAIL: root, but cannot create a loop device"; exit 1; }
echo "$0: loop device $loopdev"

start_nbdkit "$sock" --filter="$FILTER" file "$loopdev"
expect_dispatch "$sock" direct
grep -q 'align 4096 (block device)' "$sock.log" || {
    echo "$0: FAIL: alignment not taken from the device"; grep deadline "$sock.log"; exit 1; }

./integrity -c 4 -d 16 -n 20000 -s 2 -m "$tmpdir/model" "$sock"
stop_nbdkit "$sock"
grep 'deadline stats' "$sock.log" || :
grep -q 'rmw=[1-9]' "$sock.log" || { echo "$0: FAIL: no read-modify-write was exercised"; exit 1; }
./integrity --compare "$loopdev" "$tmpdir/model"

# Through the layer below (the file plugin's own I/O), in scheduler
# order.  The file plugin itself fails zero requests on a block device
# that are not aligned to its sectors (EINVAL, with or without this
# filter; direct mode handles them), so zero/trim stay 4 KiB-aligned.
sock=$tmpdir/sock2
start_nbdkit "$sock" --filter="$FILTER" file "$loopdev" deadline-dispatch=next
grep -q 'dispatch=next -> next' "$sock.log"
expect_dispatch "$sock" next
./integrity -c 4 -d 16 -n 15000 -s 12 -Z 4096 -m "$tmpdir/model2" "$sock"
stop_nbdkit "$sock"
sync
./integrity --compare "$loopdev" "$tmpdir/model2"
echo "$0: PASS"
