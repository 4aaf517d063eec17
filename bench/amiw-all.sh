#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nbd-deadline: the whole AMIW comparison in one command.
#
#   sudo bench/amiw-all.sh [-q] [-d RESULTS_DIR] [-r RUNS]
#
# On the slow-disk fixture, for the configurations of issue 8 (seed-exact
# deadline: anticipate=0 preempt=off; anticipation alone; preemption
# alone; both; elevator; noop) and the baselines (plain nbdkit file,
# plain cache=none, qemu-nbd --cache=none --aio=io_uring if installed),
# every part RUNS times (3; medians with their spread), in turn:
#   1. the kernel NBD client in a qemu guest (bench/amiw-vm.sh): cat of
#      small files idle, under a dd flood and under dbench, and the
#      write MiB/s of the flood alone and under the mixed load;
#   2. the nbdfuse client (bench/amiw.sh): the same cats, dd and dbench;
#   3. fio's nbd engine (bench/amiw-fio.sh): a deep writer with a depth-1
#      random reader and with a depth-1 sequential reader; JSON, latency
#      logs and PNG plots.
# Then prints every table again, together, and writes them to
# RESULTS_DIR/tables.txt (default ./amiw-results).  A part that cannot
# run here (no qemu, no FUSE...) is reported and skipped.  -q: one run,
# fewer files, shorter fio loads: a format check, whose tables say NOT A
# RESULT.  The command and the commit head tables.txt: one build.
# Env as for the parts (FILTER, SLOWDISK; the VM part's slow disk is
# "size=4G rate=20M", see tests/vm/README).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cmdline="$0${*:+ $*}"
. "$here/slowstack.sh"
QUICK=0 RESULTS=$PWD/amiw-results RUNS=3
while getopts "qd:r:" o; do
    case $o in
        q) QUICK=1 RUNS=1 ;; d) RESULTS=$OPTARG ;; r) RUNS=$OPTARG ;;
        *) sed -n '2,/^set -uo/p' "$0" | grep '^#' >&2; exit 2 ;;
    esac
done
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
{
    echo "amiw-all: command: $cmdline"
    echo "commit: $(git -C "$here/.." describe --always --dirty --abbrev=10 2>/dev/null || echo '?') (every part from this build); $(date -u '+%F %T') UTC"
    [ "$RUNS" -ge 3 ] || echo "NOT A RESULT: $RUNS run(s) per configuration (a result needs -r 3 or more)"
} > "$RESULTS/tables.txt"

# amiw.sh names a configuration by its spec (no LABEL=)
specs=$(for c in $SS_CONFIGS_DEFAULT; do ss_spec "$c"; done | tr '\n' ' ')
if [ "$QUICK" = 1 ]; then NF=200 FIOSECS=10; else NF=300 FIOSECS=15; fi

part ()         # TITLE COMMAND...: run one part, keep its table
{
    local title=$1 rc=0; shift
    echo "==== $title" | tee -a "$RESULTS/tables.txt"
    "$@" > "$RESULTS/part.out" 2> "$RESULTS/part.err" || rc=$?
    cat "$RESULTS/part.out" >> "$RESULTS/tables.txt"
    case $rc in
        0) ;;
        77) echo "(skipped: $(grep -i skip "$RESULTS/part.err" | tail -1))" | tee -a "$RESULTS/tables.txt" ;;
        *) echo "(failed, exit $rc: $(tail -2 "$RESULTS/part.err" | tr '\n' ' '))" | tee -a "$RESULTS/tables.txt" ;;
    esac
    cat "$RESULTS/part.out"
    echo | tee -a "$RESULTS/tables.txt"
}

part "kernel nbd client (qemu guest): AMIW under dd and dbench" \
    "$here/amiw-vm.sh" -W both -r "$RUNS" -n "$NF"
part "nbdfuse client: AMIW under dd" \
    "$here/amiw.sh" -W dd -r "$RUNS" -n "$NF" -s "$specs"
part "nbdfuse client: AMIW under dbench" \
    "$here/amiw.sh" -W dbench -r "$RUNS" -n "$NF" -s "$specs"
part "fio nbd engine: synthetic AMIW" \
    "$here/amiw-fio.sh" -t "$FIOSECS" -r "$RUNS" -d "$RESULTS/fio"

echo "======== all tables (also in $RESULTS/tables.txt)"
cat "$RESULTS/tables.txt"
