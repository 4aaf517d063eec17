#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The man pages: built from POD, they render with man -l without a
# single warning (groff's and man's), at two widths; each has the
# sections a man page needs, and the filter's page documents every
# parameter --help lists.
source "$(dirname "$0")/functions.sh"
set -e
M=$abs_top_builddir/man
pages=("$M/nbdkit-deadline-filter.1" "$M/nbd-deadline.conf.5" "$M/nbd-deadline-ctl.8"
       "$M/nbd-deadline-start.8")
if [ ! -f "${pages[0]}" ]; then
    echo "$0: SKIP: man pages not built (pod2man missing)"; exit 77
fi
requires man --version
fail () { echo "FAIL: $*"; exit 1; }

for p in "${pages[@]}"; do
    for width in 80 60; do
        # --warnings: groff's warnings; anything on stderr is a failure.
        LC_ALL=C.UTF-8 MANWIDTH=$width man --warnings -l "$p" \
            > "$tmpdir/out" 2> "$tmpdir/err" || fail "man -l $p"
        if [ -s "$tmpdir/err" ]; then
            cat "$tmpdir/err"; fail "$(basename "$p") (width $width) has warnings"
        fi
    done
    for s in NAME SYNOPSIS DESCRIPTION "SEE ALSO"; do
        grep -q "^$s" "$tmpdir/out" || fail "$(basename "$p") has no $s"
    done
    echo "ok: $(basename "$p"), $(wc -l < "$tmpdir/out") lines, no warnings"
done

# Every parameter in the filter's --help has its own entry in its man
# page: an item heading, at the items' indent (7 columns), not only a
# mention in the synopsis or in another parameter's text.
if [ -f "$FILTER" ]; then
    LC_ALL=C MANWIDTH=200 man -l "${pages[0]}" 2>/dev/null > "$tmpdir/filter.txt"
    $NBDKIT --filter="$FILTER" memory --help 2>/dev/null |
        grep -o '^deadline-[a-z-]*' | sort -u > "$tmpdir/params"
    [ -s "$tmpdir/params" ] || fail "no parameters in --help"
    while read -r p; do
        grep -qE -- "^ {7}$p=" "$tmpdir/filter.txt" ||
            fail "$p has no entry of its own in nbdkit-deadline-filter(1)"
    done < "$tmpdir/params"
    echo "ok: the $(wc -l < "$tmpdir/params") parameters of --help are documented"
fi
# And every key of the example configuration is in nbd-deadline.conf(5).
# (Lines joined: a hyphenated key may be broken at its hyphen.)
LC_ALL=C MANWIDTH=200 man -l "${pages[1]}" 2>/dev/null | tr -s ' \n' ' ' |
    sed 's/- /-/g' > "$tmpdir/conf.txt"
for k in $(sed -n 's/^#\{0,1\}\([a-z-]*\) =.*/\1/p' "$abs_top_srcdir/etc/nbd-deadline/example.conf"); do
    grep -qw -- "$k" "$tmpdir/conf.txt" || fail "key $k is not in nbd-deadline.conf(5)"
done
echo "$0: PASS"
