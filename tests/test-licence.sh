#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Every source file says its licence: COPYING is there, and each C
# source and header, shell script, automake/autoconf input, systemd
# unit, man page and benchmark job carries the SPDX line naming it.
set -euo pipefail

top=${srcdir:-.}/..
tag='SPDX-License-Identifier: BSD-3-Clause'
missing=()

[ -s "$top/COPYING" ] || { echo "test-licence: no COPYING" >&2; exit 1; }
grep -q 'Redistribution and use in source and binary forms' "$top/COPYING" ||
  { echo "test-licence: COPYING is not the BSD licence" >&2; exit 1; }

while IFS= read -r -d '' f; do
  head -n 3 "$f" | grep -q "$tag" || missing+=("${f#"$top"/}")
done < <(find "$top/src" "$top/tests" "$top/bench" "$top/man" "$top/systemd" \
              "$top/build-aux" "$top/etc" \
              -path "$top/tests/breaks" -prune -o \
              -type f ! -name ltmain.sh \( -name '*.c' -o -name '*.h' -o -name '*.sh' -o \
                         -name '*.am' -o -name '*.pod' -o \( -name '*.in' ! -name Makefile.in ! -name config.h.in \) -o \
                         -name '*.fio' -o -name '*.service*' -o -name '*.socket' -o \
                         -name '*.conf' -o -name setup-deps \) -print0)
for f in configure.ac Makefile.am run-tests run-export; do
  head -n 3 "$top/$f" | grep -q "$tag" || missing+=("$f")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "test-licence: no '$tag' in the first lines of:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi
echo "test-licence: ok: COPYING and every source file's SPDX line"
