#!/usr/bin/env bash
# nbdkit -r: the export is read-only and reads through the direct path
# return the file's contents; also a file whose size is not a multiple
# of the alignment.
source "$(dirname "$0")/functions.sh"
set -e
requires_filter
requires nbdcopy --version
requires nbdinfo --version

disk=$tmpdir/disk.img
out=$tmpdir/out.img
sock=$tmpdir/sock
dd if=/dev/urandom of="$disk" bs=1000 count=3001 status=none   # 3001000 bytes
start_nbdkit "$sock" -r --filter="$FILTER" file "$disk"
grep -q 'dispatch=auto -> direct' "$sock.log"
uri="nbd+unix:///?socket=$sock"
nbdinfo --json "$uri" | grep -q '"is_read_only": true' || {
    echo "$0: FAIL: export is not read-only"; nbdinfo "$uri"; exit 1; }
nbdcopy "$uri" "$out"
cmp "$disk" "$out"
if nbdcopy "$out" "$uri" 2>/dev/null; then
    echo "$0: FAIL: writing to a read-only export succeeded"; exit 1
fi
cmp "$disk" "$out"
echo "$0: PASS"
