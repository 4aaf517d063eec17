#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nbd-deadline: a dependent reader under a write flood, on the slow disk.
#
#   bench/bench-antic.sh [SECONDS]
#
# The filter (next path) over bench/slowdisk (one modelled spindle),
# driven by fio's nbd engine with two jobs on two connections: a 1 MiB
# sequential writer at depth 16 and a reader at depth 1 (sequential
# 16 KiB reads, the "cat" pattern, whose next read depends on the last).
# One row per configuration, all in the same run: reads/s, read p50 and
# p99, and the writer's MiB/s.  Then the same with a random reader at
# depth 32 (no dependent reads: anticipation must change nothing).
#
# Then a random 4 KiB reader at depth 1: dependent, but far apart, so
# anticipation rarely pays and must learn so.
#
# Configurations: the seed (deadline-profile=seed: the 2002 patch),
# the defaults with both extensions off (anticipate=0 preempt=off: not
# the seed, it keeps the write deadline and the size cost), each mechanism
# alone, the defaults (both), the defaults before 256 KiB units and
# preempt-min 16, elevator, and the baseline: the slow disk served
# without the filter (nbdkit slowdisk alone, no scheduler).  Every
# figure is the median of RUNS runs (env, default 3; fewer marks the
# tables NOT A RESULT) with its spread [min-max] beside it; the runs
# are interleaved across the configurations, so that drift hits all
# alike.  The first lines name the command and the commit (one build
# for every row).  Run from the top of a built tree (run-tests or
# run-export build in build/).  SLOWDISK_ARGS changes the disk (default
# "size=4G"; see slowdisk.pod), e.g.
# SLOWDISK_ARGS="size=4G rate=150M seek-ms=12 wcache=32M".
set -euo pipefail
shopt -s inherit_errexit

cmdline="$0${*:+ $*}"
secs=${1:-15}
runs=${RUNS:-3}
disk=${SLOWDISK_ARGS:-size=4G}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/slowstack.sh
. "$here/slowstack.sh"          # for ss_find_built only (FILTER, SLOWDISK)
ss_find_built "$here"
filter=$FILTER slowdisk=$SLOWDISK
for f in "$filter" "$slowdisk"; do
    [ -f "$f" ] || { echo "bench-antic: not built: ${f:-the filter or slowdisk plugin} (set FILTER=, SLOWDISK=)" >&2; exit 1; }
done
command -v fio >/dev/null || { echo "bench-antic: fio is not installed" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench-antic: needs python3" >&2; exit 1; }

tmp=$(mktemp -d /tmp/bench-antic.XXXXXX)
pid=
cleanup () {
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || :; wait "$pid" 2>/dev/null || :; fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

jobfile () {                    # $1: reader rw, $2: bs, $3: depth
    cat > "$tmp/job.fio" <<EOT
[global]
ioengine=nbd
uri=nbd+unix:///?socket=$tmp/sock
runtime=$secs
time_based=1
[writer]
rw=write
bs=1M
iodepth=16
offset=2g
size=1g
[reader]
rw=$1
bs=$2
iodepth=$3
offset=0
size=512m
EOT
}

# one_run OUT PARAMS...: nbdkit with PARAMS (the filter's, or "nofilter"
# for the slow disk alone), fio's JSON into OUT; a failure stops us
one_run () {
    local out=$1; shift
    local args=(--filter="$filter")
    [ "${1:-}" = nofilter ] && { args=(); shift; }
    rm -f "$tmp/sock"
    # shellcheck disable=SC2086 # $disk is a list of plugin parameters
    nbdkit -f -U "$tmp/sock" "${args[@]}" "$slowdisk" $disk "$@" \
        2>"$tmp/nbdkit.log" &
    pid=$!
    for _ in $(seq 50); do [ -S "$tmp/sock" ] && break; sleep 0.1; done
    [ -S "$tmp/sock" ] || { echo "bench-antic: nbdkit did not start: $(cat "$tmp/nbdkit.log")" >&2; exit 1; }
    fio --output-format=json --output="$out" "$tmp/job.fio" > "$tmp/fio.out" 2>&1 ||
        { echo "bench-antic: fio failed: $(tail -3 "$tmp/fio.out")" >&2; exit 1; }
    kill "$pid"; wait "$pid" 2>/dev/null || :; pid=
}

# section TITLE READER_RW BS DEPTH ROW...: ROW is "label|params"; every
# row RUNS times, interleaved, then the table of medians and spreads
section () {
    local title=$1 rw=$2 bs=$3 depth=$4 r i row label params
    shift 4
    jobfile "$rw" "$bs" "$depth"
    echo "== $title"
    for (( r = 1; r <= runs; r++ )); do
        i=0
        for row in "$@"; do
            i=$((i + 1))
            IFS='|' read -r label params <<< "$row"
            # shellcheck disable=SC2086 # params is a list of filter parameters
            one_run "$tmp/row$i.run$r.json" $params
            echo "bench-antic: $title: run $r: $label" >&2
        done
    done
    python3 - "$tmp" "$runs" "$@" <<'PY'
import json, sys
tmp, runs, rows = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def med(v):
    v = sorted(v); n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
def cell(v):
    return "%9.1f %-15s" % (med(v), "[%.1f-%.1f]" % (min(v), max(v)))
print("%-34s %s" % ("configuration", " ".join("%9s %-15s" % (n, "[min-max]")
                   for n in ("reads/s", "p50 ms", "p99 ms", "write MiB/s"))))
for i, row in enumerate(rows, 1):
    figs = [[], [], [], []]
    for r in range(1, runs + 1):
        jobs = {j['jobname']: j for j in json.load(open("%s/row%d.run%d.json" % (tmp, i, r)))['jobs']}
        rd, wr = jobs['reader']['read'], jobs['writer']['write']
        p = rd['clat_ns']['percentile']
        for f, x in zip(figs, (rd['iops'], p['50.000000'] / 1e6, p['99.000000'] / 1e6, wr['bw'] / 1024)):
            f.append(x)
    print("%-34s %s" % (row.split('|')[0], " ".join(cell(f) for f in figs)))
PY
    echo
}

seed="seed (profile=seed)|deadline-profile=seed"
noext="no extensions (anticipate=0 preempt=off)|deadline-anticipate=0 deadline-preempt=off"
defaults="defaults (both)|"
echo "bench-antic: command: $cmdline"
echo "commit: $(git -C "$here/.." describe --always --dirty --abbrev=10 2>/dev/null || echo '?') (one build for every row); $(date -u '+%F %T') UTC; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "slow disk: $disk (filter defaults unless named); ${secs} s per load; median [min-max] of $runs runs"
[ "$runs" -ge 3 ] || echo "NOT A RESULT: $runs run(s) per configuration (a result needs RUNS >= 3); a format check only"
echo
section "dependent reader: sequential 16 KiB at depth 1" read 16k 1 \
    "$seed" \
    "$noext" \
    "anticipation alone|deadline-preempt=off" \
    "preemption alone|deadline-anticipate=0" \
    "$defaults" \
    "both, 1M units, preempt-min 32|deadline-max-merge=1M deadline-preempt-min=32" \
    "elevator|deadline-scheduler=elevator" \
    "no filter (slowdisk alone)|nofilter"
section "no dependent reads: random 4 KiB at depth 32" randread 4k 32 \
    "$seed" "$defaults" "no filter (slowdisk alone)|nofilter"
section "dependent but random: random 4 KiB at depth 1" randread 4k 1 \
    "$seed" "$defaults" "no filter (slowdisk alone)|nofilter"
