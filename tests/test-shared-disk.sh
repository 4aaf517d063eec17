#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Two exports on one disk share one queue (issue 19): with file dir=,
# the exports' requests go through one scheduler and one ring, so the
# disk never holds more than deadline-depth units of both together (one
# flush may go beside them: pump in engine.c).  The disk is the slowdisk
# plugin, which counts how many requests were already at it when each
# arrived; under it nbdfuse, and two loop devices at two offsets of
# nbdfuse's file: two partitions of one disk, with no partition table
# to probe.  Each export is a symbolic link to one of them.
#
#   shared   one nbdkit, dir= with both: at most depth units + a flush;
#            the data of each export lands on its own partition, and
#            each sorts at its offset on the disk;
#   apart    one nbdkit per export (what one scheduler per export
#            gives): more at once; the premise that the count can see it;
#   two      exports of two disks in one nbdkit: a warning.
#
# Requests of at most 64 KiB, aligned (integrity -M), no readahead and
# no merging beyond 64 KiB: one unit is then one request at the disk
# (FUSE splits what is larger).
source "$(dirname "$0")/functions.sh"
set -e
requires_filter
requires_slow_device
requires test -x ./integrity
SLOWDISK=$abs_top_builddir/bench/slowdisk/.libs/nbdkit-slowdisk-plugin.so
[ -f "$SLOWDISK" ] || { echo "$0: FAIL: no $SLOWDISK"; exit 1; }

part=$((64 << 20))                      # each partition
gap=$((1 << 20))                        # between them
args=(deadline-depth=1 deadline-max-merge=64k deadline-readahead=0)
fail=0

# stack TAG: the disk (its data in $tmpdir/TAG.data, its stats to
# $tmpdir/TAG.stats at its exit), nbdfuse,
# the two loop devices $p1 and $p2, and directories $tmpdir/TAG.{ab,a,b}
# of links to them.
stack ()
{
    local tag=$1 dir=$tmpdir/$1
    mkdir -p "$dir"
    start_nbdkit "$dir/disk.sock" "$SLOWDISK" size=256M seek-ms=1 rate=200M \
        file="$tmpdir/$tag.data" stats="$tmpdir/$tag.stats" || return 1
    mount_nbdfuse "$dir/disk.sock" "$dir/fuse" || { echo "$0: nbdfuse did not mount"; return 1; }
    make_loop "$dir/fuse/nbd" --direct-io=on --offset 0 --sizelimit $part || return 1
    p1=$loopdev
    make_loop "$dir/fuse/nbd" --direct-io=on --offset $((part + gap)) --sizelimit $part || return 1
    p2=$loopdev
    for d in $p1 $p2; do
        [ "$(cat "/sys/block/${d#/dev/}/loop/dio")" = 1 ] || { echo "$0: $d: no direct I/O"; return 1; }
        echo none > "/sys/block/${d#/dev/}/queue/scheduler"
    done
    mkdir -p "$dir/ab" "$dir/a" "$dir/b"
    ln -s "$p1" "$dir/ab/a"; ln -s "$p2" "$dir/ab/b"
    ln -s "$p1" "$dir/a/a"; ln -s "$p2" "$dir/b/b"
}

# unstack TAG: everything above the disk, then the disk, which writes
# its statistics; prints the most requests seen ahead of one arriving,
# and the per cent of requests that found any ahead.
unstack ()
{
    local dir=$tmpdir/$1 i
    losetup -d "$p1" "$p2" 2>/dev/null
    fusermount3 -u "$dir/fuse" 2>/dev/null || umount -l "$dir/fuse"
    stop_nbdkit "$dir/disk.sock"
    for (( i=0; i<50; i++ )); do [ -s "$tmpdir/$1.stats" ] && break; sleep 0.1; done
    awk '$1 == "queue_at_arrival" {
             for (i = 5; i <= NF; i++) { split($i, kv, ":"); n += kv[2]; if (kv[1] > 0) busy += kv[2] }
             printf "%d %d\n", $3, n ? 100 * busy / n : 0 }' "$tmpdir/$1.stats"
}

# load SOCK_A SOCK_B TAG: a deep random load on each export at once,
# each checked read by read and its model kept.
load ()
{
    local pid rc=0
    ./integrity -x a -c 2 -d 16 -n 1500 -s 1 -M 65536 -m "$tmpdir/$3.a.model" "$1" \
        >"$tmpdir/$3.a.out" 2>&1 &
    pid=$!
    ./integrity -x b -c 2 -d 16 -n 1500 -s 2 -M 65536 -m "$tmpdir/$3.b.model" "$2" \
        >"$tmpdir/$3.b.out" 2>&1 || rc=1
    wait $pid || rc=1
    [ $rc = 0 ] || { cat "$tmpdir/$3.a.out" "$tmpdir/$3.b.out"; echo "$0: FAIL: integrity ($3)"; }
    return $rc
}

# --- shared ---
stack shared
sock=$tmpdir/shared/nbd.sock
start_nbdkit "$sock" --filter="$FILTER" file dir="$tmpdir/shared/ab" "${args[@]}"
expect_dispatch "$sock" direct
load "$sock" "$sock" shared || fail=1
stop_nbdkit "$sock"
grep -q "export 'a' sorts at byte 0 " "$sock.log" || { echo "$0: FAIL: a's place"; fail=1; }
grep -q "export 'b' sorts at byte $((part + gap)) " "$sock.log" ||
    { grep 'sorts at' "$sock.log"; echo "$0: FAIL: b's place"; fail=1; }
read -r shared_max shared_busy < <(unstack shared)
# Each export's data on its own partition (read from the disk's file
# once the disk is gone: reading it through the stack would count).
make_loop "$tmpdir/shared.data" --offset 0 --sizelimit $part
./integrity --compare "$loopdev" "$tmpdir/shared.a.model" || { echo "$0: FAIL: a's data"; fail=1; }
make_loop "$tmpdir/shared.data" --offset $((part + gap)) --sizelimit $part
./integrity --compare "$loopdev" "$tmpdir/shared.b.model" || { echo "$0: FAIL: b's data"; fail=1; }
echo "$0: shared scheduler, depth 1: at most $shared_max request(s) ahead at the disk, any for $shared_busy% of them"
if [ -z "$shared_max" ] || [ "$shared_max" -gt 1 ]; then
    echo "$0: FAIL: the disk held more than one unit and a flush of both exports together"
    fail=1
fi

# --- apart: the same load, one nbdkit (one scheduler) per export ---
stack apart
sa=$tmpdir/apart/a.sock sb=$tmpdir/apart/b.sock
start_nbdkit "$sa" --filter="$FILTER" file dir="$tmpdir/apart/a" "${args[@]}"
start_nbdkit "$sb" --filter="$FILTER" file dir="$tmpdir/apart/b" "${args[@]}"
load "$sa" "$sb" apart || fail=1
stop_nbdkit "$sa"
stop_nbdkit "$sb"
read -r apart_max apart_busy < <(unstack apart)
echo "$0: one scheduler per export, depth 1 each: at most $apart_max request(s) ahead at the disk, any for $apart_busy% of them"
# The premise: the disk's count sees two schedulers' units side by
# side (each alone would find none ahead but a flush).
if [ -z "$apart_busy" ] || [ "$apart_busy" -lt 20 ] || [ "$apart_busy" -lt $((3 * shared_busy)) ]; then
    echo "$0: FAIL: two schedulers did not show at the disk: the count cannot tell (premise)"
    fail=1
fi
if grep -q 'are on different disks' "$tmpdir/shared/nbd.sock.log"; then
    echo "$0: FAIL: partitions of one disk called different disks"; fail=1
fi

# Writes answered early (deadline-writeback) keep their export's place
# on the disk: two image files of one directory, each checked.
mkdir -p "$tmpdir/wb"
truncate -s 32M "$tmpdir/wb/x" "$tmpdir/wb/y"
start_nbdkit "$tmpdir/wb.sock" --filter="$FILTER" file dir="$tmpdir/wb" deadline-writeback=4M
expect_dispatch "$tmpdir/wb.sock" direct
./integrity -x x -c 2 -d 16 -n 3000 -s 5 -m "$tmpdir/wb.x.model" "$tmpdir/wb.sock" >"$tmpdir/wb.x.out" 2>&1 &
pid=$!
./integrity -x y -c 2 -d 16 -n 3000 -s 6 -m "$tmpdir/wb.y.model" "$tmpdir/wb.sock" >"$tmpdir/wb.y.out" 2>&1 ||
    { cat "$tmpdir/wb.y.out"; echo "$0: FAIL: integrity on y with writeback"; fail=1; }
wait $pid || { cat "$tmpdir/wb.x.out"; echo "$0: FAIL: integrity on x with writeback"; fail=1; }
stop_nbdkit "$tmpdir/wb.sock"
grep -q 'wb_answered=[1-9]' "$tmpdir/wb.sock.log" ||
    { echo "$0: FAIL: no write was answered early (test premise)"; fail=1; }
./integrity --compare "$tmpdir/wb/x" "$tmpdir/wb.x.model" >/dev/null || { echo "$0: FAIL: x's data with writeback"; fail=1; }
./integrity --compare "$tmpdir/wb/y" "$tmpdir/wb.y.model" >/dev/null || { echo "$0: FAIL: y's data with writeback"; fail=1; }
echo "$0: writeback with two exports: every read and the files match"

# Exports of two disks in one nbdkit: a warning on the terminal (here
# a file on this test's file system and one on /dev/shm, a tmpfs).
if [ -d /dev/shm ] && [ "$(stat -c %d /dev/shm)" != "$(stat -c %d "$tmpdir")" ]; then
    mkdir -p "$tmpdir/two"
    truncate -s 1M "$tmpdir/two/here"
    shm=$(mktemp /dev/shm/test-shared-disk.XXXXXX)
    cleanup_fn rm -f "$shm"
    truncate -s 1M "$shm"
    ln -s "$shm" "$tmpdir/two/there"
    start_nbdkit "$tmpdir/two.sock" --filter="$FILTER" file dir="$tmpdir/two" deadline-dispatch=next
    stop_nbdkit "$tmpdir/two.sock"
    grep -q 'deadline: warning: exports .* are on different disks' "$tmpdir/two.sock.log" ||
        { echo "$0: FAIL: no warning for exports of two disks"; fail=1; }
fi
[ $fail = 0 ] || exit 1
echo "$0: PASS"
