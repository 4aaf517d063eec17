#!/usr/bin/env bash
# Stopping nbdkit under load: requests are queued in the scheduler and in
# flight at a slow layer below when SIGTERM arrives.  nbdkit must exit
# promptly (every queued request completed or failed, the threads
# joined) and log its counters.
source "$(dirname "$0")/functions.sh"
requires_filter
requires test -x ./integrity
# nbdkit 1.32 with libasan preloaded hangs in exit (p11-kit's destructor
# waits for glibc's setlocale lock) after SIGTERM under load, with or
# without this filter: nothing to learn here in a sanitizer build.
if [ -n "${SANITIZER_PRELOAD:-}" ]; then
    echo "$0: SKIP: nbdkit itself hangs at exit under ASan preload"
    exit 77
fi

sock=$tmpdir/sock
start_nbdkit "$sock" -t 64 --filter="$FILTER" --filter=delay memory 64M delay-write=50ms || exit 1
pid=$(cat "$sock.pid")

./integrity -c 4 -d 16 -n 1000000 "$sock" >"$tmpdir/client.log" 2>&1 &
client=$!
cleanup_fn "kill $client 2>/dev/null"
sleep 2

kill "$pid"
for i in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
    echo "$0: FAIL: nbdkit still running 10 s after SIGTERM"
    exit 1
fi
rm -f "$sock.pid"
wait "$client" 2>/dev/null || :     # it sees the server go: expected
grep 'deadline stats (exit)' "$sock.log" || {
    echo "$0: FAIL: no exit statistics"; tail "$sock.log"; exit 1; }
echo "$0: PASS"
