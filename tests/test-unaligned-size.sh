#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A file whose size is not a multiple of the O_DIRECT alignment: the
# partial last block is read and written correctly and the file never
# grows.
source "$(dirname "$0")/functions.sh"
set -e
requires_filter
requires test -x ./integrity

disk=$tmpdir/odd.img
sock=$tmpdir/sock
size=$((16*1024*1024 + 1234))
truncate -s $size "$disk"
start_nbdkit "$sock" --filter="$FILTER" file "$disk"
expect_dispatch "$sock" direct
./integrity -c 4 -d 16 -n 8000 -s 6 -m "$tmpdir/model" "$sock"
stop_nbdkit "$sock"
[ "$(stat -c %s "$disk")" = $size ] || { echo "$0: FAIL: size changed to $(stat -c %s "$disk")"; exit 1; }
./integrity --compare "$disk" "$tmpdir/model"
echo "$0: PASS"
