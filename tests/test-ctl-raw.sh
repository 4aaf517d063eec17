#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The control socket against a raw client: overlong and non-printable
# requests are refused, CRLF is accepted, a client that hangs up early
# or says nothing is dropped (within the 5 s timeout) and blocks
# neither other clients nor the I/O, and connections beyond 32 are
# turned away.
source "$(dirname "$0")/functions.sh"
set -e
requires_filter
requires test -x ./ctl-raw
requires test -x ./integrity
CTL=$abs_top_builddir/src/ctl/nbd-deadline-ctl
fail () { echo "FAIL: $*"; exit 1; }

truncate -s 32M "$tmpdir/disk"
c=$tmpdir/ctl
start_nbdkit "$tmpdir/nbd" --filter="$FILTER" file "$tmpdir/disk" deadline-control="$c"
[ -S "$c" ] || fail "no control socket at $c"

# expect WANT BYTES: the first line of the answer is WANT ("" = the
# server closed without a word).  ctl-raw must have connected and read
# to the end (exit 0): a client that could not connect is no answer.
expect ()
{
    local want=$1 out got rc=0
    out=$(./ctl-raw "$c" send "$2" 2>"$tmpdir/ctl-raw.err") || rc=$?
    [ $rc = 0 ] || fail "sent $(printf %q "$2"): ctl-raw exit $rc: $(cat "$tmpdir/ctl-raw.err")"
    got=${out%%$'\n'*}
    [ "$got" = "$want" ] || fail "sent $(printf %q "$2"): got '$got', want '$want'"
    echo "ok: $(printf %q "$2" | cut -c1-40) -> ${want:-(closed)}"
}
expect "error request longer than 1024 bytes" "$(head -c 2000 /dev/zero | tr '\0' a)"$'\n'
expect "error request has a non-printable byte" $'stats\x01\n'
expect "error request has a non-printable byte" $'get read_expire\xc3\xa9\n'
expect "error empty request" $'\n'
expect "error unknown request 'stats?' (ping, stats, get, set, scheduler, class)" $'stats?\n'
expect "error stats: takes no arguments" $'stats extra\n'
expect "ok" $'ping\r\n'
expect "ok" $'get  read_expire   scheduler\n'
expect "" "stats"                      # hung up before the newline
expect "error set: '=x' is not KEY=VALUE" $'set =x\n'
expect "error read_expire: '' is not a duration (e.g. 500ms, 5s, 250us)" $'set read_expire=\n'

# 40 silent clients while I/O runs: 8 are turned away at once, the 32
# others are dropped by the timeout; the I/O is not held up meanwhile.
./integrity -c 2 -d 8 -n 3000 -s 31 "$tmpdir/nbd" >/dev/null &
ipid=$!
cleanup_fn "kill $ipid 2>/dev/null"
t0=$(date +%s.%N)
out=$(./ctl-raw "$c" hold 40 8) || fail "ctl-raw hold: exit $?"
[ "$(printf '%s\n' "$out" | wc -l)" = 2 ] || fail "ctl-raw hold: $out"
t1=$(date +%s.%N)
wait $ipid || fail "integrity while the control socket was flooded"
echo "$out" | head -1 | grep -qx "closed 40 of 40" || fail "silent clients: $out"
echo "$out" | tail -1 | grep -qx "error too many control connections" || fail "turned away: $out"
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a >= 4.5 && b - a < 7.5) }' ||
    fail "silent clients dropped after $(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}') s, not ~5"
echo "ok: 40 silent clients: $(echo "$out" | head -1), first answer: $(echo "$out" | tail -1)"
"$CTL" -s "$c" --raw stats | grep -q '^completed_total [1-9]' || fail "stats after the flood"
echo "$0: PASS"
