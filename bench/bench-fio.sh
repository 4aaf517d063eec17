#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nbd-deadline: fio benchmark of the filter against plain nbdkit file.
#
#   bench/bench-fio.sh [--check] [BACKING]
#
# Serves the same backing several ways: the baselines plain `nbdkit
# file` (page cache), the same with cache=none, and qemu-nbd
# --cache=none --aio=io_uring (O_DIRECT; when qemu-nbd is installed,
# package qemu-utils), and the filter with noop and with deadline; drives
# each with fio's nbd engine: 64 KiB sequential read and write (MiB/s,
# depth 8), 4 KiB random read and write IOPS at depth 32, and 4 KiB
# random read latency at depth 1 (median µs), each with one connection
# and with four (fio jobs, each on its own quarter of the backing, at
# the same depth each); beside every figure the server's CPU time per
# request (user + system, from /proc, over the run).  The last row of each table is fio on
# the backing itself with O_DIRECT and io_uring, no NBD at all (the
# device's ceiling).  Each figure is the median of RUNS runs (at least
# 3 for a result: fewer marks the tables NOT A RESULT) with the spread
# (min-max) beside it; runs are interleaved across the servers so that
# drift hits all alike, and the page cache is dropped before each run
# (the script stops if it cannot be: a run on a warm cache is not the
# run it claims to be).  Writes end with a flush that counts in the time
# (fio's end_fsync): what reached the disk, not what reached the page
# cache.  Ratios are true ratios, this server's median over the
# baseline's (for latency, above 1 is slower).  The first lines name
# the command, the commit and the settings.
#
# Two regimes, because plain nbdkit file reads through the page cache
# and the filter (O_DIRECT) never does:
#   cold  a backing larger than any run reads (COLD_SIZE, default 12 GiB
#         of random data in /var/tmp, made once): every read reaches the
#         device, as on a disk much larger than memory.  A read run that
#         read more than the backing (and so re-read cached data) is
#         marked with '*'.
#   warm  a 1 GiB backing that a run reads several times: after the
#         first pass plain serves from memory.  This is the price of
#         O_DIRECT when the working set fits in the page cache.
# Under each regime's tables, the verdict on issue 17's targets for the
# filter with deadline: over qemu-nbd >= 1.0, over cache=none >= 0.95
# (for latency, the baseline's over the filter's), and CPU per request
# at most 1.1x cache=none's; with --check the script exits 1 when one
# is missed.
# With BACKING (a file or block device) only that backing is measured.
# The backing's device gets queue/scheduler=none for the run (restored
# after), so that the scheduler under test is the only one.
# Env: REGIMES ("cold warm"), COLD_SIZE (GiB, 12), RUNTIME (s, 4), RUNS
# (3), DEPTH (deadline-depth for both filter rows; default: none given,
# the filter's own default, as a user runs it), THREADS (nbdkit -t, 64),
# CONNS (connections per job, "1 4"), JOBS (which jobs, default all:
# seqread seqwrite randread randwrite lat1), FILTER (the .so), CTL
# (nbd-deadline-ctl: each table says what depth the filter rows ended
# at, which with deadline-depth=auto is what they chose), INLINE_ROW (1:
# a row of the filter with deadline-inline=off beside the default one;
# 0: none).
set -euo pipefail
shopt -s inherit_errexit
cmdline="$0${*:+ $*}"
check=
if [ "${1:-}" = --check ]; then check=1; shift; fi

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/slowstack.sh
. "$here/slowstack.sh"          # for ss_find_built only
bench_name=bench-fio
# shellcheck source=bench/benchlib.sh
. "$here/benchlib.sh"
: "${RUNTIME:=4}" "${RUNS:=3}" "${DEPTH:=}" "${THREADS:=64}" "${CONNS:=1 4}" "${INLINE_ROW:=1}"
: "${JOBS:=seqread seqwrite randread randwrite lat1}"
: "${REGIMES:=cold warm}" "${COLD_SIZE:=12}"
ss_find_built "$here"
[ -f "$FILTER" ] || { echo "bench-fio: filter not built (set FILTER=)" >&2; exit 1; }
command -v "$CTL" >/dev/null || { echo "bench-fio: nbd-deadline-ctl not built (set CTL=)" >&2; exit 1; }
command -v fio >/dev/null || { echo "bench-fio: fio not installed" >&2; exit 1; }
[ -w /proc/sys/vm/drop_caches ] ||
    { echo "bench-fio: cannot drop the page cache (needs root): every run would be invalid" >&2; exit 1; }
fio --enghelp=nbd >/dev/null 2>&1 || { echo "bench-fio: fio lacks the nbd engine" >&2; exit 1; }

tmp=$(mktemp -d /tmp/nbd-deadline-bench.XXXXXX)
pids=()
stop_servers ()
{
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || :; done
    for p in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    done
    pids=()
    restore_scheduler
}
cleanup () { stop_servers; rm -rf "$tmp"; }
trap cleanup EXIT

declare -A cfg_pid=()
start ()
{
    local name=$1 sock=$tmp/$1.sock
    shift
    rm -f "$sock"
    nbdkit -f -t "$THREADS" -U "$sock" "$@" 2>"$tmp/$name.log" &
    pids+=($!)
    cfg_pid[$name]=$!
    for _ in $(seq 100); do [ -S "$sock" ] && return 0; sleep 0.1; done
    echo "bench-fio: $name did not start:" >&2; cat "$tmp/$name.log" >&2; exit 1
}
# The servers, baselines first; qemu-nbd only where it is installed.
configs=(plain nocache)
if command -v qemu-nbd >/dev/null; then
    configs+=(qemu)
    qemu_note="qemu-nbd $(qemu-nbd --version | head -1 | awk '{print $2}')"
else
    qemu_note="qemu-nbd not installed (apt-get install qemu-utils): no qemu-nbd baseline"
fi
configs+=(noop deadline)
# The deadline row again with every request through the engine's thread
# (deadline-inline=off: no thread does its own I/O), unless INLINE_ROW=0.
[ "$INLINE_ROW" = 0 ] || configs+=(deadline_loop)
configs+=(device)
declare -A cfg_label=(
    [plain]="nbdkit file (page cache)"
    [nocache]="nbdkit file cache=none"
    [qemu]="qemu-nbd cache=none aio=io_uring"
    [noop]="filter noop"
    [deadline]="filter deadline"
    [deadline_loop]="filter deadline, inline=off"
    [device]="fio io_uring O_DIRECT on the backing"
)

# start_qemu_nbd BACKING: the O_DIRECT NBD server users would pick
# instead of the filter, on the same backing
start_qemu_nbd ()
{
    local sock=$tmp/qemu.sock
    rm -f "$sock"
    qemu-nbd --format=raw --cache=none --aio=io_uring --persistent --shared=8 \
        --socket="$sock" "$1" 2>"$tmp/qemu.log" &
    pids+=($!)
    cfg_pid[qemu]=$!
    for _ in $(seq 100); do [ -S "$sock" ] && return 0; sleep 0.1; done
    echo "bench-fio: qemu-nbd did not start:" >&2; cat "$tmp/qemu.log" >&2; exit 1
}

select_jobs "$JOBS"
for c in $CONNS; do
    case $c in [1-9]|[1-9][0-9]) ;; *) echo "bench-fio: CONNS: $c is not a count of connections (1-99)" >&2; exit 1 ;; esac
done
# The filter's depth as a user gets it, unless DEPTH says otherwise.
depth_args=()
[ -n "$DEPTH" ] && depth_args=(deadline-depth="$DEPTH")

# cpu_ticks PID: user + system clock ticks the process has used so far
cpu_ticks () { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run_fio BACKING CONFIG CONNS ARGS WHAT: prints the figure, with a '*'
# if the run read more bytes than the backing holds and could have
# re-read them from the page cache (only plain nbdkit file can), then
# the server's CPU time per request in µs ("-" for the device row).
# With CONNS > 1, that many fio jobs (each its own NBD connection, or
# for the device its own file descriptor), each on its own slice of the
# backing at the full depth, reported as one group.
run_fio ()
{
    local backing=$1 cfg=$2 conns=$3 args=$4 what=$5 out=$tmp/out.json size part
    local pid=${cfg_pid[$cfg]:-} t0=0 t1=0
    size=$(blockdev --getsize64 "$backing" 2>/dev/null || stat -c %s "$backing")
    part=$(( size / conns / 1048576 * 1048576 ))
    args+=" --numjobs=$conns --group_reporting --size=$part --offset_increment=$part"
    [ -n "$pid" ] && t0=$(cpu_ticks "$pid")
    if [ "$cfg" = device ]; then
        # shellcheck disable=SC2086
        fio --name=b --ioengine=io_uring --direct=1 --filename="$backing" \
            $args --time_based --runtime="$RUNTIME" --ramp_time=0.5 \
            --output-format=json --output="$out" >/dev/null
    else
        # shellcheck disable=SC2086
        fio --name=b --ioengine=nbd --uri="nbd+unix:///?socket=$tmp/$cfg.sock" \
            $args --time_based --runtime="$RUNTIME" --ramp_time=0.5 \
            --output-format=json --output="$out" >/dev/null
    fi
    [ -n "$pid" ] && t1=$(cpu_ticks "$pid")
    case $cfg in plain|nocache) ;; *) size=-1 ;; esac
    python3 - "$out" "$what" "$size" "$pid" "$((t1 - t0))" "$(getconf CLK_TCK)" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
what, size = sys.argv[2], int(sys.argv[3])
pid, ticks, hz = sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
side = j["write"] if j["write"]["io_bytes"] > 0 else j["read"]
wrapped = "*" if 0 <= size < j["read"]["io_bytes"] else ""
if what == "bw":
    fig = "%.1f%s" % (side["bw_bytes"] / 1048576.0, wrapped)
elif what == "iops":
    fig = "%.0f%s" % (side["iops"], wrapped)
else:
    # median completion latency (fio's nbd engine submits inline, so
    # submission latency is small and the mean is swayed by rare stalls)
    fig = "%.1f%s" % (side["clat_ns"]["percentile"]["50.000000"] / 1000.0, wrapped)
# The server's CPU over the whole run (ramp included) per request of
# the whole run (fio's counts exclude the ramp: a slight overestimate,
# the same for every server).
ios = j["read"]["total_ios"] + j["write"]["total_ios"]
cpu = "%.1f" % (ticks * 1e6 / hz / ios) if pid and ios > 0 else "-"
print(fig, cpu)
PY
}

# measure TITLE BACKING: the four servers on BACKING, every job, a table.
measure ()
{
    local title=$1 backing=$2 job name args what r cfg v c cpu label better key
    local -A result samples range cpus cpu_med depth_end
    prepare_backing "$backing"
    start plain file "$backing"
    start nocache file "$backing" cache=none
    [[ " ${configs[*]} " = *" qemu "* ]] && start_qemu_nbd "$backing"
    start noop --filter="$FILTER" file "$backing" deadline-scheduler=noop "${depth_args[@]}" \
        deadline-control="$tmp/noop.ctl"
    start deadline --filter="$FILTER" file "$backing" deadline-scheduler=deadline "${depth_args[@]}" \
        deadline-control="$tmp/deadline.ctl"
    [[ " ${configs[*]} " = *" deadline_loop "* ]] &&
        start deadline_loop --filter="$FILTER" file "$backing" deadline-scheduler=deadline \
            "${depth_args[@]}" deadline-inline=off deadline-control="$tmp/deadline_loop.ctl"
    for job in "${jobs[@]}"; do
        IFS='|' read -r name args what <<<"$job"
        for c in $CONNS; do
            samples=() cpus=()
            for (( r=1; r<=RUNS; r++ )); do
                for cfg in "${configs[@]}"; do
                    drop_caches
                    read -r v cpu < <(run_fio "$backing" "$cfg" "$c" "$args" "$what")
                    samples[$cfg]="${samples[$cfg]:-} $v"
                    cpus[$cfg]="${cpus[$cfg]:-} $cpu"
                    echo "bench-fio: $title: $name x$c run $r $cfg: $v (cpu $cpu us/req)" >&2
                done
            done
            # the depth each filter row ended the job at (deadline-depth=auto)
            for cfg in noop deadline deadline_loop; do
                # (INLINE_ROW=0: no deadline_loop server to ask)
                [[ " ${configs[*]} " = *" $cfg "* ]] || continue
                depth_end[$name,$c,$cfg]=$("$CTL" -s "$tmp/$cfg.ctl" --raw stats 2>/dev/null |
                                         awk '$1 == "depth_now" { print $2 }')
            done
            for cfg in "${configs[@]}"; do
                key=$name,$c,$cfg
                # shellcheck disable=SC2086
                result[$key]=$(median ${samples[$cfg]})
                # shellcheck disable=SC2086
                range[$key]=$(spread ${samples[$cfg]})
                if [[ ${cpus[$cfg]} = *[0-9]* ]]; then
                    # shellcheck disable=SC2086
                    cpu_med[$key]=$(median ${cpus[$cfg]})
                else
                    cpu_med[$key]=-
                fi
            done
        done
    done
    stop_servers

    printf '\n%s\nbacking %s (%s), deadline-depth=%s, nbdkit -t %s, %s s x %s runs: median [min-max]\n' \
        "$title" "$backing" \
        "$(numfmt --to=iec "$(blockdev --getsize64 "$backing" 2>/dev/null || stat -c %s "$backing")")" \
        "${DEPTH:-default}" "$THREADS" "$RUNTIME" "$RUNS"
    [ "$RUNS" -ge 3 ] || echo "NOT A RESULT: $RUNS run(s) per configuration (a result needs RUNS >= 3); a format check only"
    for job in "${jobs[@]}"; do
        IFS='|' read -r name args what <<<"$job"
        label=$(job_label "$name")
        if [ "$what" = lat ]; then better="lower is better; a ratio above 1 is slower"
        else better="higher is better"; fi
        for c in $CONNS; do
            printf '\n%s, %s connection(s) (%s)\n' "$label" "$c" "$better"
            printf '  %-38s %10s %-21s %9s %14s %10s %8s\n' server median "[min-max]" \
                "/ plain" "/ cache=none" "/ qemu-nbd" "cpu us/req"
            for cfg in "${configs[@]}"; do
                key=$name,$c
                printf '  %-38s %10s %-21s %9s %14s %10s %8s\n' "${cfg_label[$cfg]}" \
                    "${result[$key,$cfg]}" "${range[$key,$cfg]}" \
                    "$(ratio "${result[$key,$cfg]}" "${result[$key,plain]}")" \
                    "$(ratio "${result[$key,$cfg]}" "${result[$key,nocache]}")" \
                    "$(ratio "${result[$key,$cfg]}" "${result[$key,qemu]:-}")" \
                    "${cpu_med[$key,$cfg]}"
            done
            printf '  (the filter rows ended at depth %s (noop), %s (deadline) and %s (inline=off))\n' \
                "${depth_end[$name,$c,noop]:-?}" "${depth_end[$name,$c,deadline]:-?}" \
                "${depth_end[$name,$c,deadline_loop]:--}"
        done
    done
    case "${result[*]}" in
        *'*'*) echo "(* a run read more than the backing holds: some of it came from the page cache)" ;;
    esac
    verdict
}

# target NAME WHAT FIG BASE LIMIT: one line of the verdict: the filter's
# figure FIG against the baseline's BASE, met when FIG / BASE is at
# least LIMIT (for latency, WHAT lat: when BASE / FIG is).  Counts a
# miss in $misses.
target ()
{
    local name=$1 what=$2 fig=${3%\*} base=${4%\*} limit=$5 r ok
    if [ -z "$fig" ] || [ -z "$base" ] || [ "$fig" = - ] || [ "$base" = - ]; then
        printf '  %-46s %s\n' "$name" "no figure"
        return
    fi
    r=$(awk -v a="$fig" -v b="$base" -v w="$what" 'BEGIN{ printf "%.2f", (w == "lat") ? b/a : a/b }')
    ok=$(awk -v r="$r" -v l="$limit" 'BEGIN{ print (r >= l) ? "met" : "MISSED" }')
    [ "$ok" = met ] || misses=$((misses + 1))
    printf '  %-46s %5s (target >= %s) %s\n' "$name" "$r" "$limit" "$ok"
}

# verdict: issue 17's targets for the filter with deadline (as given:
# the defaults unless DEPTH), from the tables above: its throughput
# (for latency the inverse) over qemu-nbd's >= 1.0 and over cache=none's
# >= 0.95, and cache=none's CPU per request over its own >= 1/1.1.
verdict ()
{
    local job name args what c key misses=0
    printf '\nVerdict (issue 17, the filter with deadline; latency as speed, baseline / filter):\n'
    for job in "${jobs[@]}"; do
        IFS='|' read -r name args what <<<"$job"
        for c in $CONNS; do
            key=$name,$c
            [[ " ${configs[*]} " = *" qemu "* ]] &&
                target "$name x$c / qemu-nbd" "$what" "${result[$key,deadline]}" "${result[$key,qemu]}" 1.00
            target "$name x$c / cache=none" "$what" "${result[$key,deadline]}" "${result[$key,nocache]}" 0.95
            target "$name x$c cpu: cache=none's / the filter's" lat \
                "${cpu_med[$key,deadline]}" "${cpu_med[$key,nocache]}" 0.91
        done
    done
    printf '  %s target(s) missed\n' "$misses"
    total_misses=$((total_misses + misses))
}

total_misses=0
echo "nbd-deadline fio benchmark, $(date -u '+%F %T') UTC"
echo "command: $cmdline"
echo "commit: $(git -C "$here/.." describe --always --dirty --abbrev=10 2>/dev/null || echo '?') (filter: $FILTER)"
echo "settings: RUNS=$RUNS RUNTIME=$RUNTIME DEPTH=${DEPTH:-default} INLINE_ROW=$INLINE_ROW THREADS=$THREADS CONNS='$CONNS' JOBS='$JOBS' REGIMES='$REGIMES' COLD_SIZE=$COLD_SIZE; nbdkit $(nbdkit --version | awk '{print $2}'); $(fio --version); $qemu_note"
echo "load average at start: $(cat /proc/loadavg)"
if [ $# -gt 0 ]; then
    measure "given backing" "$1"
else
    for regime in $REGIMES; do
        case $regime in
            cold) make_backing /var/tmp/nbd-deadline-bench-cold.img "$COLD_SIZE"
                  measure "cold: every read reaches the device" /var/tmp/nbd-deadline-bench-cold.img ;;
            warm) make_backing /var/tmp/nbd-deadline-bench.img 1
                  measure "warm: the backing fits in the page cache, so plain serves repeat reads from memory" \
                          /var/tmp/nbd-deadline-bench.img ;;
            *) echo "bench-fio: unknown regime $regime (cold, warm)" >&2; exit 1 ;;
        esac
    done
fi
[ -z "$check" ] || [ "$total_misses" -eq 0 ] ||
    { echo "bench-fio: $total_misses target(s) missed"; exit 1; }
