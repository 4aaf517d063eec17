#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nbdkit -r: the export is read-only and reads through the direct path
# return the file's contents; also a file whose size is not a multiple
# of the alignment.  Writes, trims and zeroes are refused as read-only
# (EPERM or EROFS, asked of the server with libnbd's own checks off),
# and the file is unchanged afterwards.
source "$(dirname "$0")/functions.sh"
set -e
requires_filter
requires test -x ./badreq
requires nbdcopy --version
requires nbdinfo --version

disk=$tmpdir/disk.img
out=$tmpdir/out.img
other=$tmpdir/other.img
sock=$tmpdir/sock
dd if=/dev/urandom of="$disk" bs=1000 count=3001 status=none   # 3001000 bytes
sum0=$(md5sum < "$disk")
start_nbdkit "$sock" -r --filter="$FILTER" file "$disk"
expect_dispatch "$sock" direct
uri="nbd+unix:///?socket=$sock"
nbdinfo --json "$uri" > "$tmpdir/info"
grep -q '"is_read_only": true' "$tmpdir/info" || {
    echo "$0: FAIL: export is not read-only"; cat "$tmpdir/info"; exit 1; }
nbdcopy "$uri" "$out"
cmp "$disk" "$out"

# The server refuses each kind of write as read-only.
./badreq --readonly "$sock"

# nbdcopy of different data is refused too, for being read-only.
dd if=/dev/urandom of="$other" bs=1000 count=3001 status=none
if nbdcopy "$other" "$uri" 2>"$tmpdir/copy.err"; then
    echo "$0: FAIL: writing to a read-only export succeeded"; exit 1
fi
grep -Eiq 'read.only|EROFS|EPERM|not permitted' "$tmpdir/copy.err" || {
    echo "$0: FAIL: nbdcopy failed, but not because the export is read-only:"
    cat "$tmpdir/copy.err"; exit 1; }
echo "nbdcopy refused: $(head -1 "$tmpdir/copy.err")"
stop_nbdkit "$sock"
[ "$(md5sum < "$disk")" = "$sum0" ] || { echo "$0: FAIL: the read-only file changed"; exit 1; }
echo "$0: PASS"
