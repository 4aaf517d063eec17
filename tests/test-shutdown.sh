#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Stopping nbdkit under load: requests are queued in the scheduler and in
# flight at a slow layer below when SIGTERM arrives.  nbdkit must exit
# promptly with status 0 (every queued request completed or failed, the
# threads joined) and log its counters; the client must account for
# every request it sent (completed or failed: none left hanging), and
# every write it saw acknowledged must be in the file.
source "$(dirname "$0")/functions.sh"
requires_filter
requires test -x ./integrity
requires $NBDKIT --version
# nbdkit 1.32 with libasan preloaded hangs in exit (p11-kit's destructor
# waits for glibc's setlocale lock) after SIGTERM under load, with or
# without this filter: nothing to learn here in a sanitizer build.
if [ -n "${SANITIZER_PRELOAD:-}" ]; then
    echo "$0: SKIP: nbdkit itself hangs at exit under ASan preload"
    exit 77
fi

disk=$tmpdir/disk.img
truncate -s 64M "$disk"
sock=$tmpdir/sock
# In the foreground (-f), as our child, so that its exit status is ours
# to read.  The delay filter below: slow writes, so requests queue.
$NBDKIT -f -v -U "$sock" -P "$sock.pid" -t 64 --filter="$FILTER" --filter=delay \
    file "$disk" delay-write=50ms 2>"$sock.log" &
nbd=$!
cleanup_fn "kill $nbd 2>/dev/null"
for (( i=0; i<100; i++ )); do [ -S "$sock" ] && [ -s "$sock.pid" ] && break; sleep 0.1; done
[ -S "$sock" ] || { echo "$0: FAIL: nbdkit did not start"; tail "$sock.log"; exit 1; }
expect_dispatch "$sock" next || exit 1

# Crash mode: the client expects the server to go; it accounts for each
# request and writes what was acknowledged (exit 0), or exits non-zero
# (a request never answered, a mismatch, the server gone before the
# workload started).
timeout 60 ./integrity -C "$tmpdir/state" -c 4 -d 16 -n 1000000 -s 7 "$sock" \
    >"$tmpdir/client.log" 2>&1 &
client=$!
cleanup_fn "kill $client 2>/dev/null"
wait_started "$tmpdir/client.log" $client || {
    echo "$0: FAIL: the client did not start"; cat "$tmpdir/client.log"; exit 1; }
sleep 2

kill "$nbd"
for (( i=0; i<100; i++ )); do
    kill -0 "$nbd" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$nbd" 2>/dev/null; then
    echo "$0: FAIL: nbdkit still running 10 s after SIGTERM"
    exit 1
fi
rc=0; wait "$nbd" || rc=$?
[ $rc = 0 ] || { echo "$0: FAIL: nbdkit exited $rc after SIGTERM"; grep -v debug: "$sock.log" | tail; exit 1; }
crc=0; wait "$client" || crc=$?
grep -v 'workload started' "$tmpdir/client.log" | tail -3
[ $crc = 0 ] || { echo "$0: FAIL: the client exited $crc (requests not accounted for)"; exit 1; }
grep -q 'crash state' "$tmpdir/client.log" || { echo "$0: FAIL: the client wrote no state"; exit 1; }
./integrity --compare "$disk" "$tmpdir/state" || {
    echo "$0: FAIL: acknowledged writes missing after SIGTERM"; exit 1; }
grep 'deadline stats (exit)' "$sock.log" | cut -c1-200 || {
    echo "$0: FAIL: no exit statistics"; tail "$sock.log"; exit 1; }
echo "$0: PASS"
