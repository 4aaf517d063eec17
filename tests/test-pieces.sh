#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Writes in pieces beside a dependent reader (src/core/piece.c), end to
# end on both dispatch paths.  ./pieces keeps 256 KiB writes in flight
# on one connection beside cat's one-at-a-time 4 KiB reads on another,
# then reads every slot back.  With deadline-write-piece=1us the pieces
# are the smallest the filter sends: 16 KiB, or what the layer below
# writes in a microsecond when that is more (tens of KiB from memory).
# nbdkit's log filter below the filter shows what the layer below was
# actually sent:
#
#   next    the memory plugin with the log filter right below ours:
#           writes of less than 256 KiB must reach it, every FUA write
#           must be the last piece of its 256 KiB write (it ends on a
#           256 KiB boundary), no data may differ, and the filter must
#           count pieced units; with deadline-write-piece=0 (the
#           control) every write reaches it whole;
#   direct  io_uring on a block device whose requests are logged
#           (make_slow_device: the log filter over the slow-disk model
#           shaped as a throttled volume, 20 MiB/s with short seeks, so
#           that the pieces stay small whatever the machine): writes
#           below 128 KiB (what FUSE splits writes into) must reach it,
#           some pieces must have waited for the reader's read
#           (piece_wait), and no data may differ.
source "$(dirname "$0")/functions.sh"
requires_filter
requires test -x ./pieces
requires test -f "$($NBDKIT --dump-config | sed -n 's/^filterdir=//p')/nbdkit-log-filter.so"

fails=0
fail () { echo "$0: FAIL: $*"; fails=$((fails + 1)); }

# pieced SOCK: the filter's count of units sent in pieces, at exit;
# piece_waits SOCK: of pieces kept back for the reader
pieced () { sed -n 's/.*deadline stats (exit):.* pieced=\([0-9]*\).*/\1/p' "$1.log" | tail -1; }
piece_waits () { sed -n 's/.*deadline stats (exit):.* pieced=[0-9]*\/\([0-9]*\).*/\1/p' "$1.log" | tail -1; }
# writes LOG LO HI: how many writes of LO to HI bytes the log shows
writes ()
{
    sed -n 's/.* Write id=[0-9]* offset=0x[0-9a-f]* count=\(0x[0-9a-f]*\) .*/\1/p' "$1" |
        while read -r len; do (( len >= $2 && len <= $3 )) && echo; done | wc -l
}
# fua_not_last LOG: FUA writes that do not end on a 256 KiB boundary
fua_not_last ()
{
    sed -n 's/.* Write id=[0-9]* offset=\(0x[0-9a-f]*\) count=\(0x[0-9a-f]*\) fua=1 .*/\1 \2/p' "$1" |
        while read -r off len; do
            (( (off + len) % 262144 != 0 )) && echo "$off+$len"
        done | wc -l
}
# fua_writes LOG
fua_writes () { grep -c " Write id=[0-9]* offset=0x[0-9a-f]* count=0x[0-9a-f]* fua=1 " "$1"; }

# run LABEL SOCK: the client; its summary, or a failure
run ()
{
    local out
    out=$(timeout 120 ./pieces -t 2 "$2") || fail "$1: the client failed: $out"
    echo "$1: $out"
}

# next, pieces of 16 KiB
sock=$tmpdir/next
start_nbdkit "$sock" --filter="$FILTER" --filter=log memory 128M logfile="$tmpdir/below-next.log" \
    deadline-dispatch=next deadline-write-piece=1us || exit 1
expect_dispatch "$sock" next || fail "next: not the next path"
run next "$sock"
stop_nbdkit "$sock"
np=$(writes "$tmpdir/below-next.log" 16384 262143) n256=$(writes "$tmpdir/below-next.log" 262144 262144)
nf=$(fua_writes "$tmpdir/below-next.log") bad=$(fua_not_last "$tmpdir/below-next.log")
echo "next: below the filter: $np writes of 16 KiB to 256 KiB less 1, $n256 of 256 KiB, $nf with FUA ($bad not a last piece); pieced=$(pieced "$sock")"
[ "$np" -ge 32 ] || fail "next: $np writes below 256 KiB below the filter: writes were not sent in pieces"
[ "$nf" -ge 4 ] || fail "next: only $nf FUA writes below the filter"
[ "$bad" = 0 ] || fail "next: $bad FUA writes below the filter were not the last piece of their write"
[ "$(pieced "$sock")" -ge 4 ] 2>/dev/null || fail "next: the filter counted $(pieced "$sock") pieced units"

# next, pieces off: the control
sock=$tmpdir/whole
start_nbdkit "$sock" --filter="$FILTER" --filter=log memory 128M logfile="$tmpdir/below-whole.log" \
    deadline-dispatch=next deadline-write-piece=0 || exit 1
run whole "$sock"
stop_nbdkit "$sock"
np=$(writes "$tmpdir/below-whole.log" 0 262143) n256=$(writes "$tmpdir/below-whole.log" 262144 262144)
echo "whole: below the filter: $np writes below 256 KiB, $n256 of 256 KiB; pieced=$(pieced "$sock")"
[ "$np" = 0 ] || fail "whole: $np writes below 256 KiB with deadline-write-piece=0"
[ "$n256" -ge 32 ] || fail "whole: only $n256 writes of 256 KiB below the filter"

# direct: needs a block device whose requests can be logged.
rest_needs_slow_device "$fails" "the direct part needs"
SLOWDISK=$abs_top_builddir/bench/slowdisk/.libs/nbdkit-slowdisk-plugin.so
[ -f "$SLOWDISK" ] || { echo "$0: FAIL: no $SLOWDISK"; exit 1; }
make_slow_device "$tmpdir/slow" --filter=log "$SLOWDISK" size=128M rate=20M seek-ms=0.3 \
    settle=0.1 rpm=0 logfile="$tmpdir/below-direct.log" || {
    echo "$0: FAIL: cannot set up the logged block device"; exit 1; }
sock=$tmpdir/direct
start_nbdkit "$sock" --filter="$FILTER" file "$slowdev" \
    deadline-dispatch=direct deadline-write-piece=1us deadline-piece-wait=2ms || exit 1
expect_dispatch "$sock" direct || fail "direct: not the direct path"
skip=$(wc -l < "$tmpdir/below-direct.log")   # the set-up's requests
run direct "$sock"
stop_nbdkit "$sock"
tail -n +"$((skip + 1))" "$tmpdir/below-direct.log" > "$tmpdir/direct.run.log"
np=$(writes "$tmpdir/direct.run.log" 4096 131071)
echo "direct: below the device: $np writes below 128 KiB; pieced=$(pieced "$sock"), pieces kept back for the reader $(piece_waits "$sock")"
[ "$np" -ge 32 ] || fail "direct: $np writes below 128 KiB below the device: writes were not sent in pieces"
[ "$(pieced "$sock")" -ge 4 ] 2>/dev/null || fail "direct: the filter counted $(pieced "$sock") pieced units"
# Between two pieces the next waits for cat's read (piece_wait, off by
# default, 2ms here): the run, whose data the client checks, must have
# had such waits.
[ "$(piece_waits "$sock")" -ge 1 ] 2>/dev/null ||
    fail "direct: no piece waited for the reader ($(piece_waits "$sock"))"

[ $fails = 0 ] || exit 1
echo "$0: ok"
