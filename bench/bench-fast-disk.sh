#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nbd-deadline: what the scheduler costs on a disk that keeps up
# (issue 17), as one command and one report.
#
#   bench/bench-fast-disk.sh [--check]
#
# Runs, one after the other on the same build:
#   1. bench-core: one request's cost to the core at 1k, 10k and 100k
#      queued (target: <= 300 ns at 100k, growth <= 1.5x);
#   2. bench-engine.sh: the engine alone, no NBD, against fio io_uring
#      O_DIRECT on the same file (target: >= 0.85x IOPS, random reads
#      at depth 32);
#   3. bench-fio.sh, cold regime: the filter at its defaults against
#      plain nbdkit file (page cache and cache=none), qemu-nbd
#      --cache=none --aio=io_uring and fio on the backing, over one and
#      four connections, every job (targets: >= 1.0x qemu-nbd and
#      >= 0.95x cache=none, CPU per request <= 1.1x cache=none's).
# Each part prints its tables with the baselines measured in the same
# run and its verdict lines; the last lines gather the verdicts.  With
# --check the script exits 1 when any target was missed.
# Env: RUNS (5, passed to the fio benchmarks), RUNTIME (4), BUILD (the
# build directory, default build/ beside bench/), and what bench-fio.sh
# and bench-engine.sh take (COLD_SIZE, CONNS, JOBS, ...).  Needs root
# (it drops the page cache) and tens of minutes on a quiet machine.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
check=
if [ "${1:-}" = --check ]; then check=1; shift; fi
[ $# -eq 0 ] || { echo "usage: $0 [--check]" >&2; exit 2; }
: "${BUILD:=$here/../build}"
export RUNS=${RUNS:-5} RUNTIME=${RUNTIME:-4}
export BENCH_ENGINE=${BENCH_ENGINE:-$BUILD/bench/bench-engine}
export FILTER=${FILTER:-$BUILD/src/filter/.libs/nbdkit-deadline-filter.so}
export CTL=${CTL:-$BUILD/src/ctl/nbd-deadline-ctl}
core=$BUILD/bench/bench-core
[ -x "$core" ] || make -C "$BUILD/bench" bench-core >/dev/null ||
    { echo "bench-fast-disk: cannot build bench-core in $BUILD" >&2; exit 2; }

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# part NAME COMMAND...: run one benchmark, its output shown and kept;
# its status in $log/NAME.rc.
part ()
{
    local name=$1; shift
    printf '\n==== %s: %s\n' "$name" "$*"
    "$@" 2>"$log/$name.err" | tee "$log/$name.out"
    echo "${PIPESTATUS[0]}" > "$log/$name.rc"
    [ "$(cat "$log/$name.rc")" -eq 0 ] || tail -3 "$log/$name.err"
}

echo "nbd-deadline: the scheduler on a fast disk, $(date -u '+%F %T') UTC"
echo "commit: $(git -C "$here/.." describe --always --dirty --abbrev=10 2>/dev/null || echo '?')"
echo "settings: RUNS=$RUNS RUNTIME=$RUNTIME; load average at start: $(cat /proc/loadavg)"
part core "$core" --check
part engine "$here/bench-engine.sh" --check
REGIMES=cold part fio "$here/bench-fio.sh" --check

printf '\n==== verdicts\n'
misses=0
for name in core engine fio; do
    rc=$(cat "$log/$name.rc" 2>/dev/null || echo 2)
    case $rc in
        0) what="every target met" ;;
        1) what="target(s) missed"; misses=$((misses + 1)) ;;
        *) what="did not run (exit $rc)"; misses=$((misses + 1)) ;;
    esac
    printf '  %-7s %s\n' "$name" "$what"
    grep -E 'MISSED|NOT met|NOT CHECKED|target\(s\) missed' "$log/$name.out" | sed 's/^/          /'
done
[ -z "$check" ] || [ "$misses" -eq 0 ] || exit 1
