#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A short libFuzzer run of fuzz-core in make check; skipped (77) when
# clang's libFuzzer was not found by configure.  FUZZ_RUNS overrides
# the number of runs and FUZZ_TIME the time cap in seconds (make fuzz
# uses 10^7 runs and no cap, FUZZ_TIME=0).  A violation the fuzzer finds
# must fail the test: libFuzzer's own exit status for it is 77, which
# automake reads as a skip, so it is set to 1 here (and a timeout's
# too).
fuzzer=./fuzz-core
test -x "$fuzzer" || { echo "fuzz-core not built (no libFuzzer): skip"; exit 77; }
corpus=fuzz-corpus
mkdir -p "$corpus"
exec "$fuzzer" -runs="${FUZZ_RUNS:-200000}" -max_total_time="${FUZZ_TIME:-20}" -max_len=512 -seed=1 \
  -error_exitcode=1 -timeout_exitcode=1 \
  -print_final_stats=1 "$corpus"
