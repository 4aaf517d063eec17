#!/usr/bin/env bash
# The write-back window (deadline-writeback=SIZE, src/engine/writeback.c):
# writes without FUA are answered once copied and reach the device
# later.  What a client may rely on must still hold:
#
#   1. integrity against the model, 64 requests in flight over 4
#      connections with flushes, FUA, trims, zeroes and unaligned I/O:
#      every read sees the last answered write;
#   2. on a slow device (nbdkit's delay filter below nbdfuse and a loop
#      device), writes are answered long before the device has them, and
#      stopping the server (SIGTERM, no flush from the client) still puts
#      every answered byte on the device;
#   3. on a device whose writes all fail, the writes are answered, and
#      the client's flush reports the error (as fsync does for the page
#      cache).
source "$(dirname "$0")/functions.sh"
set -e
requires_filter
requires test -x ./integrity
requires nbdcopy --version

fails=0
fail () { echo "$0: FAIL: $*"; fails=$((fails + 1)); }

answered ()
{
    sed -n 's/.*deadline stats (exit):.* wb_answered=\([0-9]*\).*/\1/p' "$1.log" | tail -1
}

# 1. Integrity on a file.
disk=$tmpdir/disk.img
truncate -s 64M "$disk"
start_nbdkit "$tmpdir/s1" --filter="$FILTER" file "$disk" \
    deadline-depth=4 deadline-writeback=4M
./integrity -c 4 -d 16 -n 10000 -s 3 -m "$tmpdir/model" "$tmpdir/s1" || fail "integrity"
stop_nbdkit "$tmpdir/s1"
n=$(answered "$tmpdir/s1")
echo "1: ${n:-?} writes answered early, 0 mismatches"
[ "${n:-0}" -gt 0 ] || fail "no write was answered early"

# 2 and 3 need a real block device below the filter.
if [ "$(id -u)" != 0 ] || [ ! -c /dev/fuse ] ||
   ! command -v nbdfuse >/dev/null || ! command -v losetup >/dev/null; then
    echo "$0: parts 2 and 3 skipped (need root, /dev/fuse, nbdfuse, losetup)"
    [ $fails = 0 ] || exit 1
    exit 0
fi

# below NAME NBDKIT-ARGS...: serve a RAM disk with plain nbdkit, make it
# a file with nbdfuse and a block device with a direct-I/O loop device
# ($loopdev).
below ()
{
    local name=$1
    shift
    start_nbdkit "$tmpdir/$name" "$@" || return 1
    mount_nbdfuse "$tmpdir/$name" "$tmpdir/$name.fuse" || return 1
    make_loop "$tmpdir/$name.fuse/nbd" --direct-io=on
}

# 2. A slow device: 20 ms a write.
src=$tmpdir/data
head -c 8M /dev/urandom > "$src"
if below slow --filter=delay memory 64M wdelay=20ms; then
    sock=$tmpdir/s2
    start_nbdkit "$sock" --filter="$FILTER" file "$loopdev" deadline-writeback=64M
    t0=$(date +%s%N)
    nbdcopy "$src" "nbd+unix:///?socket=$sock"
    t1=$(date +%s%N)
    stop_nbdkit "$sock"
    t2=$(date +%s%N)
    n=$(answered "$sock")
    echo "2: 8 MiB answered in $(( (t1 - t0) / 1000000 )) ms, on the device $(( (t2 - t0) / 1000000 )) ms after the start; ${n:-?} writes answered early"
    [ "${n:-0}" -gt 0 ] || fail "slow device: no write answered early"
    cmp -n 8388608 "$src" "$loopdev" || fail "slow device: answered writes lost at shutdown"
else
    fail "could not build the slow device"
fi

# 3. A device whose writes fail: the flush says so.
if below bad --filter=error memory 64M error-pwrite-rate=100%; then
    sock=$tmpdir/s3
    start_nbdkit "$sock" --filter="$FILTER" file "$loopdev" deadline-writeback=64M
    rc=0
    nbdcopy --flush "$src" "nbd+unix:///?socket=$sock" 2>"$tmpdir/copy3.err" || rc=$?
    stop_nbdkit "$sock"
    n=$(answered "$sock")
    echo "3: nbdcopy --flush exit $rc ($(head -1 "$tmpdir/copy3.err")); ${n:-?} writes answered early"
    [ "$rc" != 0 ] || fail "failing device: the client saw no error"
    [ "${n:-0}" -gt 0 ] || fail "failing device: no write answered early"
    grep -qi 'flush' "$tmpdir/copy3.err" || fail "failing device: the error did not come from the flush"
else
    fail "could not build the failing device"
fi

[ $fails = 0 ] || exit 1
echo "$0: PASS"
