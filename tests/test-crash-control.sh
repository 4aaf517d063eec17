#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The crash test's negative control (issue 16): proof that
# test-crash.sh can see the loss it looks for.  The early-ack filter
# (tests/amiw/early-ack.c, built by make check as .libs/early-ack.so)
# sits above ours and answers writes without FUA as soon as it has
# copied them, performing them later; a kill -9 then loses writes the
# client saw acknowledged.  The crash test's own workload, kill and
# verification (the same script, CRASH_EXPECT_LOSS=1) must report
# acknowledged bytes lost in at least one cycle; it fails if none does.
#   CRASH_CYCLES (default 4 here)
source "$(dirname "$0")/functions.sh"
requires_filter

so=$PWD/.libs/early-ack.so
if [ ! -f "$so" ]; then
    # make check builds it: missing is a build failure, not a skip.
    echo "$0: FAIL: the early-ack fixture is not built: $so"
    exit 1
fi

CRASH_PRE_FILTERS="--filter=$so" CRASH_EXPECT_LOSS=1 CRASH_CYCLES=${CRASH_CYCLES:-4} \
    "$(dirname "$0")/test-crash.sh"
