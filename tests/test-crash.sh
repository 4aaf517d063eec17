#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Crash consistency: a verified write workload (writes, zeroes, trims,
# flushes and FUA, unaligned too) over 4 connections with 64 requests
# in flight, and nbdkit killed with SIGKILL at a random moment while
# requests are queued in the scheduler and in flight at the backing.
# After each kill nbdkit is restarted on the same file and every byte
# that a write or zero acknowledged must read back (a process kill loses
# nothing the kernel accepted, so this holds for every acknowledged
# write, not only those covered by a later flush or FUA: the filter must
# never acknowledge before the I/O completed); the file itself is
# compared too.  Cycles rotate over the direct path, the next path and
# the direct path with the write-back window (deadline-writeback: writes
# are answered once copied, so there only what a completed flush or a
# FUA write made durable must survive the kill, and the rest may be old
# or new).
#
#   CRASH_CYCLES (default 10; make check-long: 100)
#   CRASH_PRE_FILTERS  filters above ours (nbdkit options, e.g.
#       --filter=/path/early-ack.so)
#   CRASH_EXPECT_LOSS=1  the negative control (test-crash-control.sh):
#       the filters above answer writes before they are done, so the
#       same verification must find acknowledged bytes lost.  A cycle
#       that finds them is counted, not failed; the run fails unless at
#       least one cycle did, or on any other error.  Only direct and
#       next cycles then.
source "$(dirname "$0")/functions.sh"
requires_filter
requires test -x ./integrity

expect_loss=${CRASH_EXPECT_LOSS:-0}
detected=0

cycles=${CRASH_CYCLES:-10}
disk=$tmpdir/disk.img
state=$tmpdir/state
truncate -s 32M "$disk"
dd if=/dev/urandom of="$disk" bs=1M count=4 seek=8 conv=notrunc status=none

kills=0 early=0 verified=0 durable=0 lost=0 acked_writes=0 lost_conn=0 volatile=0
RANDOM=${CRASH_SEED:-$$}

for (( c=1; c<=cycles; c++ )); do
    wb=() vopt=()
    # The control skips the write-back cycles: they check only what a
    # flush or FUA made durable, which early-ack never loses (its flush
    # waits for every write it answered).
    case $(( expect_loss == 1 ? c % 2 + 1 : c % 3 )) in
        1) dispatch=direct ;;
        2) dispatch=next ;;
        0) dispatch=direct wb=(deadline-writeback=$(( 1 + RANDOM % 8 ))M) vopt=(-D) ;;
    esac
    sock=$tmpdir/sock$c
    # shellcheck disable=SC2086
    start_nbdkit "$sock" ${CRASH_PRE_FILTERS:-} --filter="$FILTER" file "$disk" "${wb[@]}" \
        deadline-dispatch=$dispatch deadline-depth=$(( 1 + RANDOM % 4 )) || exit 1
    pid=$(cat "$sock.pid")

    timeout 120 ./integrity -C "$state.new" -c 4 -d 16 -n 100000000 -s $((c * 7919 + RANDOM)) \
        "$sock" >"$tmpdir/client.log" 2>&1 &
    client=$!
    for (( i=0; i<200; i++ )); do
        grep -q 'workload started' "$tmpdir/client.log" && break
        kill -0 $client 2>/dev/null || break
        sleep 0.05
    done
    # 20 ms .. 1 s into the workload.
    sleep "$(printf '0.%03d' $(( 20 + RANDOM % 980 )))"
    kill -9 "$pid"
    kills=$((kills+1))
    rc=0
    wait $client || rc=$?
    rm -f "$sock.pid"
    if [ $rc = 3 ]; then
        early=$((early+1))
        echo "cycle $c ($dispatch${wb:+ ${wb[*]}}): killed before the workload started"
        continue
    fi
    if [ $rc != 0 ]; then
        echo "$0: FAIL: cycle $c ($dispatch${wb:+ ${wb[*]}}): the client failed (rc $rc):"
        cat "$tmpdir/client.log"
        exit 1
    fi
    mv "$state.new" "$state"
    mv "$state.new.mask" "$state.mask"
    line=$(grep 'crash state' "$tmpdir/client.log")
    n=$(sed -n 's/.*state: \([0-9]*\) acknowledged writes.*/\1/p' <<<"$line")
    acked_writes=$((acked_writes + ${n:-0}))
    n=$(sed -n 's/.* \([0-9]*\) requests lost with.*/\1/p' <<<"$line")
    lost_conn=$((lost_conn + ${n:-0}))

    # Restart on the same file and read everything back.
    sock=$tmpdir/verify$c
    start_nbdkit "$sock" --filter="$FILTER" file "$disk" || exit 1
    out=$(./integrity -V "$state" "${vopt[@]}" "$sock" 2>&1)
    rc=$?
    stop_nbdkit "$sock"
    echo "cycle $c ($dispatch${wb:+ ${wb[*]}}): $(grep -o '[0-9]* acknowledged writes' <<<"$line"), $(grep -o '[0-9]* requests lost' <<<"$line"); $(grep -o 'verified.*' <<<"$out")"
    if [ ${#wb[@]} != 0 ]; then
        grep -o '[0-9]* answered bytes that no flush.*' <<<"$out" | sed 's/^/    /'
        n=$(sed -n 's/.*integrity: \([0-9]*\) answered bytes that no flush.*/\1/p' <<<"$out")
        volatile=$((volatile + ${n:-0}))
    fi
    v=$(sed -n 's/.*verified \([0-9]*\) known bytes (\([0-9]*\) durable): \([0-9]*\) bytes lost.*/\1 \2 \3/p' <<<"$out")
    set -- ${v:-0 0 0}
    verified=$((verified + $1)); durable=$((durable + $2)); lost=$((lost + $3))
    if [ $rc != 0 ]; then
        if [ "$expect_loss" = 1 ] && [ "$3" -gt 0 ]; then
            echo "    loss detected: $3 acknowledged bytes read back old (expected in this control)"
            detected=$((detected+1))
            continue
        fi
        echo "$0: FAIL: cycle $c: acknowledged data lost"; echo "$out"; exit 1
    fi
    if [ ${#wb[@]} = 0 ]; then
        if ! ./integrity --compare "$disk" "$state" >/dev/null; then
            if [ "$expect_loss" = 1 ]; then
                echo "    loss detected: the file differs from what was acknowledged"
                detected=$((detected+1))
                continue
            fi
            echo "$0: FAIL: cycle $c: the file differs from what was acknowledged"; exit 1
        fi
    fi
done

echo "crash: $kills kills ($early before the workload started), $acked_writes acknowledged writes/zeroes, $lost_conn requests in flight at the kill; $verified known bytes verified (every acknowledged write and the untouched rest), $durable of them made durable by flush/FUA; bytes lost: $lost (write-back cycles: $volatile answered bytes that no flush covered were old after the kill, as allowed)"
[ $((kills - early)) -ge $(( cycles / 2 )) ] || { echo "$0: FAIL: too few kills during the workload"; exit 1; }
if [ "$expect_loss" = 1 ]; then
    if [ $detected = 0 ]; then
        echo "$0: FAIL: negative control: writes were answered before they were done (${CRASH_PRE_FILTERS:-no filter above}), and no cycle found acknowledged bytes lost"
        exit 1
    fi
    echo "$0: PASS (negative control: the loss was found in $detected of $((kills - early)) cycles)"
    exit 0
fi
[ $lost = 0 ] || exit 1
echo "$0: PASS"
