#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# No benchmark figures in the source or the man pages (issue 20).
#
# A comment says why the code is as it is and a man page what a
# parameter does and how to choose it; what a run measured belongs in
# bench/results/, with its commit and command, where it can be read as
# a result of its time (tuning.md holds those once quoted here).  This
# looks for what a quoted run leaves behind: rates, speedups, medians,
# single runs, "took N s".
set -euo pipefail

top=${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
figure='[0-9]+(\.[0-9]+)? ?(MiB/s|KiB/s|GiB/s|MB/s|KB/s|GB/s|reads/s|writes/s|IOPS|ops/s)\b'
figure+='|\b[0-9]+(\.[0-9]+)?x (its |the )?(idle|faster|slower|baseline)'
figure+='|\b(median|medians|one run|single run)\b'
figure+='|\btook [0-9]+(\.[0-9]+)? ?(s|ms|min)\b'

found=$(find "$top/src" "$top/man" -type f \
             \( -name '*.c' -o -name '*.h' -o -name '*.pod' -o -name README \
                -o \( -name '*.in' ! -name Makefile.in \) \) -print0 |
        xargs -0 grep -nEi "$figure" /dev/null || true)
if [ -n "$found" ]; then
    echo "test-no-figures: benchmark figures in the source or man pages" >&2
    echo "(move them to bench/results/ with their commit and command):" >&2
    echo "$found" | sed "s|^$top/|  |" >&2
    exit 1
fi
n=$(find "$top/src" "$top/man" -type f \( -name '*.c' -o -name '*.h' -o -name '*.pod' \) | wc -l)
[ "$n" -gt 20 ] || { echo "test-no-figures: only $n files found under $top" >&2; exit 1; }
echo "test-no-figures: ok: no figures in $n source files and man pages"
