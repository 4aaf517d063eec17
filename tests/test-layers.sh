#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The layers inside src/core and src/engine run one way (issue 20).
#
# Each directory's private header lists its files bottom up, in a
# comment that starts "The files of the ..., bottom up" (sched-internal.h,
# internal.h): a file may call only files listed above it.  The calls
# are read from the built objects themselves (nm: what each object
# defines and what it needs), so a call added anywhere is seen, however
# it is spelled; what goes through a function pointer given by the
# caller is not a call, which is the point.  Every object must be in
# the list, so a new file has to take its place.
set -euo pipefail

: "${abs_top_builddir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${abs_top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
command -v nm >/dev/null || { echo "test-layers: nm (binutils) not installed" >&2; exit 77; }

fail=0

# The bottom-up list of a header: "rank file" lines, files on one line
# sharing a rank.
ranks ()
{
    awk '
        /files of the [a-z]+, bottom up/ { on = 1; next }
        on && /\*\// { exit }
        on {
            line = $0
            sub(/^[ \t]*\*[ \t]*/, "", line)
            if (line !~ /^[a-z_]+\.c/) next
            r++
            while (match(line, /^[a-z_]+\.c(, )?/)) {
                f = substr(line, 1, RLENGTH)
                sub(/, $/, "", f)
                print r, f
                line = substr(line, RLENGTH + 1)
            }
        }' "$1"
}

check_dir ()
{
    local name=$1 header=$2 objdir=$3
    local -A rank=() def=()
    local o f s r t n_edges=0

    while read -r r f; do rank[$f]=$r; done < <(ranks "$header")
    if [ ${#rank[@]} -lt 3 ]; then
        echo "test-layers: $name: no bottom-up file list in $header" >&2
        fail=1
        return
    fi
    shopt -s nullglob
    local objs=("$objdir"/.libs/*.o)
    [ ${#objs[@]} -gt 0 ] || objs=("$objdir"/*.o)
    if [ ${#objs[@]} -eq 0 ]; then
        echo "test-layers: $name: no objects in $objdir (build first)" >&2
        fail=1
        return
    fi
    for o in "${objs[@]}"; do
        f=$(basename "$o" .o); f=${f#*-}.c
        if [ -z "${rank[$f]:-}" ]; then
            echo "test-layers: $name: $f is not in the list of $header" >&2
            fail=1
        fi
        while read -r s; do def[$s]=$f; done < <(nm --defined-only "$o" | awk '$2 ~ /^[TDBRC]$/ {print $3}')
    done
    for o in "${objs[@]}"; do
        f=$(basename "$o" .o); f=${f#*-}.c
        while read -r s; do
            t=${def[$s]:-}
            [ -n "$t" ] && [ "$t" != "$f" ] || continue
            n_edges=$((n_edges + 1))
            if [ "${rank[$t]:-0}" -ge "${rank[$f]:-0}" ]; then
                echo "test-layers: $name: $f calls $s in $t, which is not below it" >&2
                fail=1
            fi
        done < <(nm -u "$o" | awk '{print $2}')
    done
    if [ "$n_edges" -eq 0 ]; then
        echo "test-layers: $name: no calls between files seen" >&2
        fail=1
    fi
    echo "test-layers: $name: ${#objs[@]} files, $n_edges calls between them checked"
}

check_dir core "$abs_top_srcdir/src/core/sched-internal.h" "$abs_top_builddir/src/core"
check_dir engine "$abs_top_srcdir/src/engine/internal.h" "$abs_top_builddir/src/engine"

if [ $fail -ne 0 ]; then
    echo "test-layers: FAIL: a call goes up or sideways between layers" >&2
    exit 1
fi
echo "test-layers: ok: every call inside src/core and src/engine goes down"
