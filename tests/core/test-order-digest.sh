#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The core's decisions, pinned: test-random --digest and
# test-beyond-random --digest (the extensions with readers known by
# stream) run the same seeds as ever and print a digest of every unit
# dispatched (and when), by kind of run; they must equal
# order-digest.expected.  A change meant
# to keep behaviour (a refactoring) keeps them.  A change meant to alter
# an order updates the file in the same commit and says which kinds
# moved and why:
#   (cd build/tests/core && make test-random test-beyond-random &&
#    { ./test-random --digest 1 1000 2000;
#      ./test-beyond-random --digest 1 300 4000; } | grep ^digest) \
#     > tests/core/order-digest.expected
set -euo pipefail

expected=${srcdir:-.}/order-digest.expected
got=$( { ./test-random --digest 1 1000 2000 && ./test-beyond-random --digest 1 300 4000; } 2>/dev/null | grep "^digest")
if ! diff -u "$expected" <(echo "$got"); then
  echo "test-order-digest: the core dispatches differently for the same seeds" >&2
  exit 1
fi
echo "test-order-digest: ok: $(echo "$got" | wc -l) digests as expected"
