#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nbd-deadline: the engine alone against fio io_uring on the same file
# (issue 17: "in-process, no NBD: >= 0.85x fio's IOPS at depth 32").
#
#   bench/bench-engine.sh [--check] [BACKING]
#
# bench-engine (bench-engine.c) serves BACKING through the engine as
# the filter does (its parameters and defaults, the direct path), from
# as many threads as the job's depth, each keeping one request
# outstanding as nbdkit's threads do; fio --ioengine=io_uring
# --direct=1, one job at the same depth, is the baseline on the same
# file.  bench-fio.sh's jobs (benchlib.sh): 64 KiB sequential read and
# write at depth 8 (MiB/s), 4 KiB random read and write at depth 32
# (IOPS), 4 KiB random reads at depth 1 (median latency, submission to
# completion, in us).  Writes end with a flush inside the timing.  Four
# rows: fio, the engine at the filter's defaults, the same with
# deadline-depth=32 (what auto depth costs or gains) and with
# deadline-scheduler=noop (what the deadline policy costs).  Each run
# is a new process (fio's or bench-engine's), RUNTIME s timed after a
# 0.5 s ramp, the page cache dropped before it, the runs interleaved
# across the rows; each figure is the median of RUNS with the spread
# (min-max), then the ratio to fio's median, the CPU time per request
# (the process's user + system: bench-engine's getrusage over the timed
# part; fio's usr_cpu + sys_cpu over its runtime), the share of units
# that their own thread took to the device (deadline-inline) and the
# depth each engine run ended at (with auto, the depth it chose).
#
# Without BACKING: bench-fio.sh's cold file (COLD_SIZE GiB of random
# data in /var/tmp, made once), so that every read reaches the device.
# The backing's disk gets queue/scheduler none for the run (restored).
# The last lines are the verdict on the target, engine (defaults) >=
# 0.85x fio's IOPS at 4 KiB random reads at depth 32, and the same
# ratio for random writes at depth 32; with --check the script exits 1
# when the target is missed (or was not measured as a result).
# Env: RUNTIME (s, 4), RUNS (3; fewer marks the tables NOT A RESULT),
# JOBS (default all: seqread seqwrite randread randwrite lat1),
# COLD_SIZE (GiB, 12), BENCH_ENGINE (the program; default the built
# one).
set -euo pipefail
shopt -s inherit_errexit
cmdline="$0${*:+ $*}"

here=$(cd "$(dirname "$0")" && pwd)
bench_name=bench-engine
# shellcheck source=bench/benchlib.sh
. "$here/benchlib.sh"
check=
if [ "${1:-}" = --check ]; then check=1; shift; fi
[ $# -le 1 ] || { echo "usage: $0 [--check] [BACKING]" >&2; exit 1; }
: "${RUNTIME:=4}" "${RUNS:=3}" "${COLD_SIZE:=12}"
: "${JOBS:=seqread seqwrite randread randwrite lat1}"
for f in "$here/bench-engine" "$here/../build/bench/bench-engine"; do
    [ -x "$f" ] && { : "${BENCH_ENGINE:=$f}"; break; }
done
[ -x "${BENCH_ENGINE:-}" ] || { echo "bench-engine: bench-engine not built (make, or set BENCH_ENGINE=)" >&2; exit 1; }
command -v fio >/dev/null || { echo "bench-engine: fio not installed" >&2; exit 1; }
fio --enghelp=io_uring >/dev/null 2>&1 || { echo "bench-engine: fio lacks the io_uring engine" >&2; exit 1; }
[ -w /proc/sys/vm/drop_caches ] ||
    { echo "bench-engine: cannot drop the page cache (needs root): every run would be invalid" >&2; exit 1; }
select_jobs "$JOBS"

tmp=$(mktemp -d /tmp/nbd-deadline-bench-engine.XXXXXX)
trap 'restore_scheduler; rm -rf "$tmp"' EXIT

if [ $# = 1 ]; then
    backing=$1
else
    backing=/var/tmp/nbd-deadline-bench-cold.img
    make_backing "$backing" "$COLD_SIZE"
fi

configs=(fio engine depth32 noop)
declare -A cfg_label=(
    [fio]="fio io_uring O_DIRECT, one job"
    [engine]="engine, the filter's defaults"
    [depth32]="engine, deadline-depth=32"
    [noop]="engine, deadline-scheduler=noop"
)
declare -A cfg_params=(
    [engine]=""
    [depth32]="deadline-depth=32"
    [noop]="deadline-scheduler=noop"
)

# run_fio ARGS WHAT: the figure and fio's CPU us per request
run_fio ()
{
    local out=$tmp/fio.json
    # shellcheck disable=SC2086
    fio --name=b --ioengine=io_uring --direct=1 --filename="$backing" $1 \
        --time_based --runtime="$RUNTIME" --ramp_time=0.5 --lat_percentiles=1 \
        --output-format=json --output="$out" >/dev/null
    python3 - "$out" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
side = j["write"] if j["write"]["io_bytes"] > 0 else j["read"]
what = sys.argv[2]
if what == "bw":
    fig = "%.1f" % (side["bw_bytes"] / 1048576.0)
elif what == "iops":
    fig = "%.0f" % side["iops"]
else:
    # submission to completion, as bench-engine times engine_submit()
    fig = "%.1f" % (side["lat_ns"]["percentile"]["50.000000"] / 1000.0)
ios = j["read"]["total_ios"] + j["write"]["total_ios"]
cpu = (j["usr_cpu"] + j["sys_cpu"]) / 100.0 * j["job_runtime"] / 1000.0
print(fig, "%.2f" % (cpu * 1e6 / ios) if ios else "-")
PY
}

# run_engine JOB WHAT CONFIG: the figure, CPU us per request, inline %,
# the depth at the end; the settings line in $tmp/CONFIG.settings
run_engine ()
{
    local out=$tmp/engine.out line
    # shellcheck disable=SC2086
    "$BENCH_ENGINE" -t "$RUNTIME" "$1" "$backing" ${cfg_params[$3]} >"$out"
    sed -n 's/^settings: .* bs=[0-9]* //p' "$out" > "$tmp/$3.settings"
    line=$(sed -n 's/^result: //p' "$out")
    [ -n "$line" ] || { echo "bench-engine: $3 $1: no result" >&2; exit 1; }
    awk -v what="$2" '{
        for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        fig = what == "bw" ? v["mibs"] : what == "iops" ? v["iops"] : v["p50_us"]
        printf "%s %s %.1f %s\n", fig, v["cpu_us"],
               v["units"] ? 100 * v["inline"] / v["units"] : 0, v["depth"]
    }' <<<"$line"
}

echo "nbd-deadline engine benchmark, $(date -u '+%F %T') UTC"
echo "command: $cmdline"
echo "commit: $(git -C "$here/.." describe --always --dirty --abbrev=10 2>/dev/null || echo '?') (bench-engine: $BENCH_ENGINE)"
echo "settings: RUNS=$RUNS RUNTIME=$RUNTIME JOBS='$JOBS' COLD_SIZE=$COLD_SIZE; $(fio --version); kernel $(uname -r); $(nproc) CPUs"
echo "load average at start: $(cat /proc/loadavg)"
prepare_backing "$backing"

declare -A result range cpu_med inl_med depths
for job in "${jobs[@]}"; do
    IFS='|' read -r name args what <<<"$job"
    declare -A samples=() cpus=() inl=()
    for (( r=1; r<=RUNS; r++ )); do
        for cfg in "${configs[@]}"; do
            drop_caches
            # (a failure inside $(...) stops the script; inside <(...) it would not)
            if [ "$cfg" = fio ]; then
                out=$(run_fio "$args" "$what")
                read -r v cpu <<<"$out"
                i=- d=-
            else
                out=$(run_engine "$name" "$what" "$cfg")
                read -r v cpu i d <<<"$out"
                depths[$name,$cfg]="${depths[$name,$cfg]:+${depths[$name,$cfg]},}$d"
            fi
            samples[$cfg]="${samples[$cfg]:-} $v"
            cpus[$cfg]="${cpus[$cfg]:-} $cpu"
            inl[$cfg]="${inl[$cfg]:-} $i"
            echo "bench-engine: $name run $r $cfg: $v (cpu $cpu us/req, inline $i%, depth $d)" >&2
        done
    done
    for cfg in "${configs[@]}"; do
        key=$name,$cfg
        # shellcheck disable=SC2086
        result[$key]=$(median ${samples[$cfg]})
        # shellcheck disable=SC2086
        range[$key]=$(spread ${samples[$cfg]})
        # shellcheck disable=SC2086
        cpu_med[$key]=$(median ${cpus[$cfg]})
        # shellcheck disable=SC2086
        if [ "$cfg" = fio ]; then inl_med[$key]=-; else inl_med[$key]=$(median ${inl[$cfg]}); fi
    done
    unset samples cpus inl
done
restore_scheduler

printf '\nbacking %s (%s), %s s x %s runs: median [min-max]\n' "$backing" \
    "$(numfmt --to=iec "$(blockdev --getsize64 "$backing" 2>/dev/null || stat -c %s "$backing")")" \
    "$RUNTIME" "$RUNS"
for cfg in engine depth32 noop; do
    printf '%s: %s\n' "${cfg_label[$cfg]}" "$(cat "$tmp/$cfg.settings")"
done
[ "$RUNS" -ge 3 ] || echo "NOT A RESULT: $RUNS run(s) per configuration (a result needs RUNS >= 3); a format check only"
for job in "${jobs[@]}"; do
    IFS='|' read -r name args what <<<"$job"
    if [ "$what" = lat ]; then better="lower is better; a ratio above 1 is slower"
    else better="higher is better"; fi
    printf '\n%s (%s)\n' "$(job_label "$name")" "$better"
    printf '  %-34s %10s %-19s %6s %10s %8s  %s\n' row median "[min-max]" "/ fio" \
        "cpu us/req" "inline %" "depth at the end of each run"
    for cfg in "${configs[@]}"; do
        key=$name,$cfg
        printf '  %-34s %10s %-19s %6s %10s %8s  %s\n' "${cfg_label[$cfg]}" \
            "${result[$key]}" "${range[$key]}" \
            "$(ratio "${result[$key]}" "${result[$name,fio]}")" \
            "${cpu_med[$key]}" "${inl_med[$key]}" "${depths[$key]:--}"
    done
done
echo "load average at the end: $(cat /proc/loadavg)"

# The verdict: the target for random reads, the same ratio stated for
# random writes.
echo
missed=
for name in randread randwrite; do
    if [ -z "${result[$name,engine]:-}" ]; then
        line="not measured (JOBS)"
        [ $name = randread ] && missed=1
    else
        x=$(ratio "${result[$name,engine]}" "${result[$name,fio]}")
        if awk -v x="$x" 'BEGIN { exit !(x >= 0.85) }'; then met=met; else met="NOT met"; fi
        line="engine (defaults) ${result[$name,engine]} / fio ${result[$name,fio]} = ${x}x: >= 0.85x $met"
        [ "$RUNS" -ge 3 ] || line="$line (NOT A RESULT: RUNS < 3)"
        [ $name = randread ] && { [ "$met" = met ] && [ "$RUNS" -ge 3 ] || missed=1; }
    fi
    if [ $name = randread ]; then
        echo "target: 4 KiB random read IOPS at depth 32: $line"
    else
        echo "also:   4 KiB random write IOPS at depth 32: $line (stated, not the target)"
    fi
done
[ -z "$check" ] || [ -z "$missed" ] || exit 1
