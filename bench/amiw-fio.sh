#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nbd-deadline: synthetic AMIW with fio's nbd engine on the slow disk.
#
#   sudo bench/amiw-fio.sh [-c "CONFIG ..."] [-t SECONDS] [-r RUNS] [-d RESULTS_DIR] [-x]
#
# The stack of bench/slowstack.sh (the slowdisk plugin, one modelled
# spindle -> nbdfuse -> loop with direct I/O -> nbdkit -t 128 [the
# deadline filter's direct path] file /dev/loopA), a fresh empty disk
# for every configuration, driven by fio's nbd engine, one connection
# per job.  RUNS times (3), and in each run for every configuration in
# turn (interleaved, so that drift hits all alike; SECONDS each, 15):
#   write-only    a 1 MiB sequential writer at depth 32 (offset 2 GiB);
#   mixed-rand    the same writer + a 4 KiB random reader at depth 1
#                 (over the first GiB): read latency p50/p99/max, write MiB/s;
#   mixed-seq     the writer + a 16 KiB sequential reader at depth 1 (the
#                 `cat` pattern: each read depends on the last);
#   with -x also  mixed-deep: the writer + 4 KiB random reads at depth 32
#                 (no dependent reads: anticipation must change nothing).
# Prints one table, every figure the median of the runs with its spread
# [min-max] beside it (fewer than 3 runs: NOT A RESULT), under the
# command and the commit (one build for every row); keeps in RESULTS_DIR (default ./amiw-fio-results)
# fio's JSON output and per-I/O latency logs of the readers
# (CONFIG.KIND.RUN_clat.N.log; the plots draw run 1's), the table (table.txt), and PNG plots drawn
# with gnuplot:
#   latency-cdf-rand.png, latency-cdf-seq.png   distribution of read
#       latency per configuration (cumulative, log scale);
#   latency-time-rand.png, latency-time-seq.png  read latency over time
#       while the writer floods, one panel per configuration.
#
# -p: no runs, only the table and plots again from RESULTS_DIR (same -c, -t).
# CONFIG as in bench/amiw-vm.sh (deadline, elevator, noop, plain,
# plain:k=v, qemu-nbd, NAME:k=v,..., LABEL=CONFIG); default the issue 8
# set and the baselines (plain, plain cache=none, qemu-nbd if installed).  Env: FILTER,
# SLOWDISK, SLOWDISK_ARGS ("size=4G"), THREADS (128).  Needs root
# (loop device, FUSE), fio with the nbd engine, python3, gnuplot (the
# plots are skipped without it).  About 50 s a configuration.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cmdline="$0${*:+ $*}"
# shellcheck source=bench/slowstack.sh
. "$here/slowstack.sh"
CONFIGS='' SECS=15 RESULTS=$PWD/amiw-fio-results DEEP=0 PLOT_ONLY=0 RUNS=3
while getopts "c:t:r:d:xp" o; do
    case $o in
        c) CONFIGS=$OPTARG ;; t) SECS=$OPTARG ;; d) RESULTS=$OPTARG ;; x) DEEP=1 ;;
        r) RUNS=$OPTARG ;;
        p) PLOT_ONLY=1 ;;
        *) sed -n '2,/^set -euo/p' "$0" | grep '^#' >&2; exit 2 ;;
    esac
done
: "${CONFIGS:=$SS_CONFIGS_DEFAULT}" "${SLOWDISK_ARGS:=size=4G}" "${THREADS:=128}" "${NBDKIT:=nbdkit}"

ss_find_built "$here"
die () { echo "amiw-fio: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (loop device, FUSE)"
[ -f "$FILTER" ] || die "filter not built (set FILTER=)"
[ -f "$SLOWDISK" ] || die "slowdisk plugin not built (set SLOWDISK=)"
command -v fio >/dev/null && fio --enghelp=nbd >/dev/null 2>&1 || die "needs fio with the nbd engine"
command -v python3 >/dev/null || die "needs python3"
for p in nbdfuse fusermount3 losetup; do command -v $p >/dev/null || die "$p not found"; done
for c in $CONFIGS; do
    [ "$(ss_spec "$c")" = qemu-nbd ] && { command -v qemu-nbd >/dev/null || die "qemu-nbd not installed (apt-get install qemu-utils)"; }
done
commit=$(git -C "$here/.." describe --always --dirty --abbrev=10 2>/dev/null || echo '?')

mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
SS_DIR=$(mktemp -d /tmp/amiw-fio.XXXXXX)
data=$(mktemp /dev/shm/amiw-fio-disk.XXXXXX)
cleanup ()
{
    local rc=$?
    trap - EXIT INT TERM
    ss_down
    rm -f "$data"
    [ $rc = 0 ] && rm -rf "$SS_DIR" || echo "amiw-fio: logs kept in $SS_DIR" >&2
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

jobfile ()      # KIND LABEL RUN: the fio job for one kind of load
{
    local kind=$1 label=$2 run=$3
    cat <<EOF
[global]
ioengine=nbd
uri=nbd+unix:///?socket=$SS_DIR/s2.sock
runtime=$SECS
time_based=1
[writer]
rw=write
bs=1M
iodepth=32
offset=2g
size=1g
EOF
    case $kind in
        write-only) return ;;
        mixed-rand) printf '[reader]\nrw=randread\nbs=4k\niodepth=1\n' ;;
        mixed-seq) printf '[reader]\nrw=read\nbs=16k\niodepth=1\n' ;;
        mixed-deep) printf '[reader]\nrw=randread\nbs=4k\niodepth=32\n' ;;
    esac
    printf 'offset=0\nsize=1g\nwrite_lat_log=%s\nlog_avg_msec=0\n' "$RESULTS/$label.$kind.$run"
}

kinds="write-only mixed-rand mixed-seq"
[ "$DEEP" = 1 ] && kinds="$kinds mixed-deep"
labels=()
echo "amiw-fio: command: $cmdline; commit $commit" >&2
echo "amiw-fio: slowdisk $SLOWDISK_ARGS; ${SECS} s per load; $RUNS runs; nbdkit -t $THREADS; results in $RESULTS" >&2
for c in $CONFIGS; do labels+=("$(ss_label "$c")"); done
if [ "$PLOT_ONLY" = 0 ]; then
    rm -f "$RESULTS"/*.json "$RESULTS"/*_clat.*.log
    for run in $(seq "$RUNS"); do
        for c in $CONFIGS; do
            l=$(ss_label "$c"); s=$(ss_spec "$c")
            for k in $kinds; do
                t=$l.$k.$run
                rm -f "$data"; truncate -s 0 "$data"
                ss_up "$t" "$s" "$data" || die "$l: the stack did not come up"
                jobfile "$k" "$l" "$run" > "$RESULTS/$t.fio"
                fio --output-format=json --output="$RESULTS/$t.json" "$RESULTS/$t.fio" \
                    > "$SS_DIR/$t.fio.out" 2>&1 || die "$l $k: fio failed: $(tail -3 "$SS_DIR/$t.fio.out")"
                ss_down
                grep -h "deadline stats (exit)" "$SS_DIR/$t.s2.log" |
                    sed 's/.*deadline stats/deadline stats/' > "$RESULTS/$t.stats" || true
                echo "amiw-fio: run $run $l $k done" >&2
            done
        done
    done
    {
        echo "amiw-fio: command: $cmdline"
        echo "commit: $commit (one build for every row); $(date -u '+%F %T') UTC; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
        echo "configs: $(for c in $CONFIGS; do printf '%s=%s ' "$(ss_label "$c")" "$(ss_spec "$c")"; done)"
    } > "$RESULTS/header.txt"
fi

python3 - "$RESULTS" "$SECS" "$kinds" "$RUNS" "${labels[@]}" > "$RESULTS/table.txt" <<'PY'
import json, os, sys
res, secs, kinds, runs, labels = sys.argv[1], sys.argv[2], sys.argv[3].split(), int(sys.argv[4]), sys.argv[5:]
def load(l, k, r):
    d = json.load(open("%s/%s.%s.%d.json" % (res, l, k, r)))
    return {j['jobname']: j for j in d['jobs']}
def rd(j):
    r = j['reader']['read']; p = r['clat_ns'].get('percentile', {})
    return r['iops'], p.get('50.000000', 0) / 1e6, p.get('99.000000', 0) / 1e6, r['clat_ns']['max'] / 1e6
def wr(j): return j['writer']['write']['bw'] / 1024
def med(v):
    v = sorted(v); n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
def cell(v, w=17):
    # the median and [min-max] of one figure over the runs
    f = lambda x: "%.0f" % x if abs(x) >= 100 else "%.1f" % x
    return ("%s [%s-%s]" % (f(med(v)), f(min(v)), f(max(v)))).rjust(w)
if os.path.exists(res + "/header.txt"):
    print(open(res + "/header.txt").read().rstrip())
if runs < 3:
    print("NOT A RESULT: %d run(s) per configuration (a result needs -r 3 or more); a format check only" % runs)
print("fio nbd engine on the slow disk, %s s per load; median [min-max] of %d runs; latencies in ms, W = the 1 MiB depth-32 writer" % (secs, runs))
cols = ["rnd_p50", "rnd_p99", "rnd_max", "W_MiBs", "seq_r/s", "seq_p50", "seq_p99", "W_MiBs", "W_only", "Wmix/only%"]
print("%-15s | %s" % ("", "4 KiB random reader, depth 1 (rnd_*, W beside it); 16 KiB sequential reader, depth 1 (seq_*, W beside it); writer alone"))
print("%-15s |%s" % ("config", "".join(c.rjust(18) for c in cols)))
for l in labels:
    fig = [[] for _ in cols]
    for r in range(1, runs + 1):
        wo = wr(load(l, 'write-only', r))
        a = load(l, 'mixed-rand', r); b = load(l, 'mixed-seq', r)
        ri = rd(a); si = rd(b)
        for i, x in enumerate([ri[1], ri[2], ri[3], wr(a), si[0], si[1], si[2], wr(b), wo,
                               100 * wr(a) / wo if wo else 0]):
            fig[i].append(x)
    print("%-15s |%s" % (l, "".join(" " + cell(v) for v in fig)))
if 'mixed-deep' in kinds:
    print()
    print("%-15s | %s" % ("", "4 KiB random reads at depth 32 + the writer"))
    print("%-15s |%s" % ("config", "".join(c.rjust(18) for c in ["r_iops", "p50", "p99", "W_MiBs"])))
    for l in labels:
        fig = [[] for _ in range(4)]
        for r in range(1, runs + 1):
            c = load(l, 'mixed-deep', r); ri = rd(c)
            for i, x in enumerate([ri[0], ri[1], ri[2], wr(c)]):
                fig[i].append(x)
        print("%-15s |%s" % (l, "".join(" " + cell(v) for v in fig)))
PY
cat "$RESULTS/table.txt"

command -v gnuplot >/dev/null || { echo "amiw-fio: gnuplot not installed: no plots" >&2; exit 0; }
# Plot data: per configuration and reader, the sorted latencies (CDF)
# and the time series, in ms.
for l in "${labels[@]}"; do
    for k in rand seq; do
        f=$(ls "$RESULTS/$l.mixed-$k.1"_clat.*.log 2>/dev/null | head -1)
        [ -n "$f" ] || continue
        awk -F', *' '{ printf "%.3f %.3f\n", $1 / 1000, $2 / 1e6 }' "$f" > "$SS_DIR/$l.$k.ts"
        cut -d' ' -f2 "$SS_DIR/$l.$k.ts" | sort -g |
            awk '{ v[NR] = $1 } END { for (i = 1; i <= NR; i++) printf "%s %.5f\n", v[i], i / NR }' \
            > "$SS_DIR/$l.$k.cdf"
    done
done
for k in rand seq; do
    case $k in
        rand) what="4 KiB random reads at depth 1" ;;
        seq) what="16 KiB sequential (dependent) reads at depth 1" ;;
    esac
    {
        echo "set terminal pngcairo size 1000,650 font 'sans,10'"
        echo "set output '$RESULTS/latency-cdf-$k.png'"
        echo "set title 'Read latency under a 1 MiB depth-32 sequential writer: $what (slowdisk $SLOWDISK_ARGS)'"
        echo "set logscale x; set xlabel 'read latency (ms, log scale)'; set ylabel 'fraction of reads <= x'"
        echo "set grid; set key bottom right; set yrange [0:1]"
        printf "plot "
        sep=
        for l in "${labels[@]}"; do
            [ -s "$SS_DIR/$l.$k.cdf" ] || continue
            printf "%s'%s' using 1:2 with lines lw 2 title '%s'" "$sep" "$SS_DIR/$l.$k.cdf" "$l"
            sep=", "
        done
        echo
    } > "$SS_DIR/cdf-$k.gp"
    gnuplot "$SS_DIR/cdf-$k.gp"
    n=${#labels[@]}
    # one y scale for every panel; the x axis runs on to the last
    # completion (a starved read can complete after the run's end)
    ymax=$(cat "$SS_DIR"/*."$k".ts 2>/dev/null | awk '$2 > m { m = $2 } END { print (m > 1 ? m * 1.5 : 10) }')
    xmax=$(cat "$SS_DIR"/*."$k".ts 2>/dev/null | awk '$1 > m { m = $1 } END { print (m > 0 ? m : 1) }')
    {
        echo "set terminal pngcairo size 1000,$((170 * n + 60)) font 'sans,9'"
        echo "set output '$RESULTS/latency-time-$k.png'"
        echo "set multiplot layout $n,1 title 'Read latency over time while the writer floods: $what'"
        echo "set logscale y; set yrange [0.1:$ymax]; set grid; set ylabel 'ms'"
        echo "set xrange [0:$xmax]"
        i=0
        for l in "${labels[@]}"; do
            i=$((i + 1))
            [ $i = "$n" ] && echo "set xlabel 'time (s)'"
            if [ -s "$SS_DIR/$l.$k.ts" ]; then
                echo "plot '$SS_DIR/$l.$k.ts' using 1:(\$2 < 0.1 ? 0.1 : \$2) with points pt 7 ps 0.3 lc $i title '$l'"
            fi
        done
        echo "unset multiplot"
    } > "$SS_DIR/ts-$k.gp"
    gnuplot "$SS_DIR/ts-$k.gp"
done
echo "amiw-fio: plots: $(ls "$RESULTS"/*.png | tr '\n' ' ')"
