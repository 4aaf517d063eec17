#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Torture: verified random operations (reads, writes, trims, zeroes,
# flushes, FUA, unaligned) over 4 connections with 64 in flight, checked
# against the model and then the backing compared byte for byte, under
# several settings that drive different parts of the scheduler and the
# engine: the direct path on a file and (as root) on a 4 KiB-sector
# loop device (read-modify-write), the next path, tiny batches, no
# merging, no front merges, preemption, the comparison policies, a deep
# device queue and a tiny in-flight byte budget.
#
#   TORTURE_OPS (default 45000 in all, 18000 under a sanitizer;
#   make check-long: 1000000), TORTURE_DISK_MB (64)
source "$(dirname "$0")/functions.sh"
requires_filter
requires test -x ./integrity

total=${TORTURE_OPS:-45000}
# A sanitized filter is several times slower.
[ -z "${SANITIZER_PRELOAD:-}" ] || total=${TORTURE_OPS:-18000}
mb=${TORTURE_DISK_MB:-64}
disk=$tmpdir/disk.img
truncate -s ${mb}M "$disk"
dd if=/dev/urandom of="$disk" bs=1M count=$(( mb / 4 )) seek=$(( mb / 8 )) conv=notrunc status=none

configs=(
  "direct|file $disk"
  "direct-batch1-preempt|file $disk deadline-fifo-batch=1 deadline-seek-cost=1 deadline-preempt=on deadline-preempt-min=1 deadline-read-expire=1ms deadline-write-expire=2ms"
  "direct-nomerge-deep|file $disk deadline-max-merge=0 deadline-depth=64"
  "direct-nofront-small-budget|file $disk deadline-front-merges=off deadline-max-inflight=64k deadline-depth=8"
  "direct-noop|file $disk deadline-scheduler=noop deadline-depth=16"
  "direct-elevator|file $disk deadline-scheduler=elevator"
  "next|file $disk deadline-dispatch=next deadline-depth=4"
  "next-antic|file $disk deadline-dispatch=next deadline-anticipate=1s deadline-writes-starved=1"
)
# The loop case runs wherever loop devices can be made (root); where it
# cannot, the test is a skip as a whole, never a pass.
loop_skipped=
if [ "$(id -u)" = 0 ] && command -v losetup >/dev/null; then
    lfile=$tmpdir/loop.img
    truncate -s ${mb}M "$lfile"
    make_loop "$lfile" --direct-io=on --sector-size 4096 || {
        echo "$0: FAIL: root, but no loop device"; exit 1; }
    configs+=("loop-4k|file $loopdev deadline-depth=8")
else
    loop_skipped="not root or no losetup"
fi

per=$(( (total + ${#configs[@]} - 1) / ${#configs[@]} ))
[ $per -ge 1000 ] || per=1000
fails=0 done_ops=0 seed=100
for c in "${configs[@]}"; do
    name=${c%%|*}
    args=${c#*|}
    seed=$((seed + 1))
    sock=$tmpdir/$name
    # shellcheck disable=SC2086
    start_nbdkit "$sock" --filter="$FILTER" $args || { fails=$((fails+1)); continue; }
    # Each setting means a path: "next" in its name, else direct.
    case $name in next*) want=next ;; *) want=direct ;; esac
    expect_dispatch "$sock" $want || { fails=$((fails+1)); stop_nbdkit "$sock"; continue; }
    out=$(timeout 900 ./integrity -c 4 -d 16 -n $per -s $seed -m "$tmpdir/model" "$sock" 2>&1)
    rc=$?
    stop_nbdkit "$sock"
    back=${args#file }; back=${back%% *}
    if [ $rc = 0 ] && cmp_out=$(./integrity --compare "$back" "$tmpdir/model" 2>&1); then
        done_ops=$((done_ops + per))
        echo "ok: $name: $(grep -o '[0-9]* ops over.*' <<<"$out" | head -1)"
    else
        echo "FAIL: $name (seed $seed, rc $rc):"; echo "$out" | tail -8; echo "${cmp_out:-}"
        fails=$((fails+1))
    fi
done
echo "torture: $done_ops verified operations over ${#configs[@]} settings, $fails failures"
[ $fails = 0 ] || exit 1
[ -z "$loop_skipped" ] || { echo "$0: SKIP: the loop case did not run ($loop_skipped)"; exit 77; }
echo "$0: PASS"
