#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Integrity through the "next" path (requests performed by the layer
# below, in scheduler order): forced on the file plugin, chosen by auto
# over the memory plugin, and chosen by auto when a filter sits below.
source "$(dirname "$0")/functions.sh"
set -e
requires_filter
requires test -x ./integrity

disk=$tmpdir/disk.img
truncate -s 64M "$disk"

sock=$tmpdir/a
start_nbdkit "$sock" --filter="$FILTER" file "$disk" deadline-dispatch=next
grep -q 'dispatch=next -> next' "$sock.log"
expect_dispatch "$sock" next
./integrity -c 4 -d 16 -n 15000 -s 3 -m "$tmpdir/model" "$sock"
stop_nbdkit "$sock"
./integrity --compare "$disk" "$tmpdir/model"

sock=$tmpdir/b
start_nbdkit "$sock" --filter="$FILTER" memory 64M
grep -q 'dispatch=auto -> next' "$sock.log"
expect_dispatch "$sock" next
./integrity -c 4 -d 16 -n 15000 -s 4 "$sock"
stop_nbdkit "$sock"

sock=$tmpdir/c
start_nbdkit "$sock" --filter="$FILTER" --filter=nofilter file "$disk"
grep -q 'dispatch=auto -> next' "$sock.log"
expect_dispatch "$sock" next
./integrity -c 4 -d 16 -n 15000 -s 5 "$sock"
stop_nbdkit "$sock"
echo "$0: PASS"
