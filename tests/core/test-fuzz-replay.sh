#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The fuzz target's operation streams, random, without libFuzzer: runs
# wherever gcc does.  FUZZ_REPLAY_RUNS overrides the count.
exec ./fuzz-replay -r "${FUZZ_REPLAY_RUNS:-20000}" 1
