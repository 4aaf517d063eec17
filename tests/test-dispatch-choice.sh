#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Which path the filter takes, and that "direct" is refused wherever the
# filter cannot show that it sits directly above the file plugin.
source "$(dirname "$0")/functions.sh"
requires_filter

disk=$tmpdir/disk.img
truncate -s 1M "$disk"
fails=0

# expect WANT ARGS...: WANT is direct, next or refused.
expect ()
{
    local want=$1 out rc got
    shift
    out=$($NBDKIT -v -U - "$@" --run true 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then
        got=refused
    else
        # The path the engine was made for (after any fallback), which
        # must also be the one the decision line announced.
        printf '%s\n' "$out" > "$tmpdir/run.log"
        got=$(dispatch_path "$tmpdir/run")
        said=$(printf '%s\n' "$out" | sed -n 's/.*deadline: dispatch=[a-z]* -> \([a-z]*\).*/\1/p')
        [ "$said" = "$got" ] || got="$got (announced '$said')"
    fi
    if [ "$got" = "$want" ]; then
        echo "ok: $want: $*"
    else
        echo "FAIL: wanted $want, got '$got': $*"
        printf '%s\n' "$out" | grep -E 'error|deadline: dispatch' | head -3
        fails=$((fails+1))
    fi
}

expect direct  --filter="$FILTER" file "$disk"
expect direct  --filter="$FILTER" file file="$disk"
expect direct  --filter="$FILTER" file "$disk" deadline-dispatch=direct
expect next    --filter="$FILTER" file "$disk" deadline-dispatch=next
# A filter above us does not matter; one below does.
expect direct  --filter=nofilter --filter="$FILTER" file "$disk"
expect next    --filter="$FILTER" --filter=nofilter file "$disk"
expect refused --filter="$FILTER" --filter=nofilter file "$disk" deadline-dispatch=direct
expect next    --filter="$FILTER" --filter=delay file "$disk" delay-read=0
# Other plugins.
expect next    --filter="$FILTER" memory 1M
expect refused --filter="$FILTER" memory 1M deadline-dispatch=direct
# The file plugin in directory mode: each export's file O_DIRECT, one
# scheduler for all; where the files cannot be opened so (tmpfs), the
# layer below, and direct is refused.
expect direct  --filter="$FILTER" file dir="$tmpdir"
expect direct  --filter="$FILTER" file dir="$tmpdir" deadline-dispatch=direct
expect next    --filter="$FILTER" file dir="$tmpdir" deadline-dispatch=next
if shm=$(mktemp -d /dev/shm/test-dispatch-choice.XXXXXX); then
    cleanup_fn rm -rf "$shm"
    truncate -s 1M "$shm/img"
    if [ "$(stat -f -c %T "$shm")" = tmpfs ] &&
       ! dd if="$shm/img" of=/dev/null bs=4096 count=1 iflag=direct 2>/dev/null; then
        expect next    --filter="$FILTER" file dir="$shm"
        expect refused --filter="$FILTER" file dir="$shm" deadline-dispatch=direct
    fi
fi

[ $fails -eq 0 ] || exit 1
echo "$0: PASS"
