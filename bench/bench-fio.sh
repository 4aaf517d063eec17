#!/usr/bin/env bash
# nbd-deadline: fio benchmark of the filter against plain nbdkit file.
#
#   bench/bench-fio.sh [BACKING]
#
# Serves the same backing four ways (plain `nbdkit file`, the same with
# cache=none, the filter with noop, the filter with deadline) and drives
# each with fio's nbd engine: 64 KiB sequential read and write (MiB/s, depth 8), 4 KiB random
# read IOPS at depth 32, and 4 KiB random read latency at depth 1 (median
# µs).  Each number is the median of RUNS runs; runs are interleaved
# across the servers so that drift hits all alike, and the page
# cache is dropped before each run (plain nbdkit file reads through it;
# the filter uses O_DIRECT).  Ratios are against plain.  For reference
# the last column is fio on the backing itself with O_DIRECT and
# io_uring, no NBD at all: what the filter's path could reach, where
# plain nbdkit file can also use the page cache.
#
# BACKING: a file or block device (default: a 1 GiB file of random data
# in /var/tmp, made once).  A block device gets queue/scheduler=none for
# the run (restored after).  Env: RUNTIME (s, default 4), RUNS (3),
# DEPTH (deadline-depth, default 32: the backing here is an SSD-like
# virtual disk), THREADS (nbdkit -t, default 64), FILTER (the .so).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/slowstack.sh
. "$here/slowstack.sh"          # for ss_find_built only
: "${RUNTIME:=4}" "${RUNS:=3}" "${DEPTH:=32}" "${THREADS:=64}"
ss_find_built "$here"
[ -f "$FILTER" ] || { echo "bench-fio: filter not built (set FILTER=)" >&2; exit 1; }
command -v fio >/dev/null || { echo "bench-fio: fio not installed" >&2; exit 1; }
fio --enghelp=nbd >/dev/null 2>&1 || { echo "bench-fio: fio lacks the nbd engine" >&2; exit 1; }

backing=${1:-/var/tmp/nbd-deadline-bench.img}
tmp=$(mktemp -d /tmp/nbd-deadline-bench.XXXXXX)
pids=()
sched_restore=
cleanup ()
{
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || :; done
    for p in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    done
    [ -n "$sched_restore" ] && echo "${sched_restore#*=}" > "${sched_restore%%=*}" 2>/dev/null || :
    rm -rf "$tmp"
}
trap cleanup EXIT

if [ ! -e "$backing" ]; then
    echo "bench-fio: making $backing (1 GiB of random data)" >&2
    dd if=/dev/urandom of="$backing" bs=1M count=1024 oflag=direct status=none
fi
if [ -b "$backing" ]; then
    dev=$(basename "$(readlink -f "$backing")")
    q=/sys/block/$dev/queue/scheduler
    if [ -w "$q" ]; then
        old=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$q")
        sched_restore="$q=$old"
        echo none > "$q" || :
        echo "bench-fio: $q: $old -> $(cat "$q")" >&2
    fi
else
    fs=$(df --output=source "$backing" | tail -1)
    echo "bench-fio: backing is a file on $fs ($(df --output=fstype "$backing" | tail -1 | tr -d ' '))" >&2
    d=$(basename "$(readlink -f "$fs" 2>/dev/null || echo "$fs")")
    [ -r "/sys/block/$d/queue/scheduler" ] &&
        echo "bench-fio: its device's scheduler: $(cat /sys/block/$d/queue/scheduler)" >&2
fi

start ()
{
    local name=$1 sock=$tmp/$1.sock
    shift
    nbdkit -f -t "$THREADS" -U "$sock" "$@" 2>"$tmp/$name.log" &
    pids+=($!)
    for _ in $(seq 100); do [ -S "$sock" ] && return 0; sleep 0.1; done
    echo "bench-fio: $name did not start:" >&2; cat "$tmp/$name.log" >&2; exit 1
}
start plain file "$backing"
start nocache file "$backing" cache=none
start noop --filter="$FILTER" file "$backing" deadline-scheduler=noop deadline-depth="$DEPTH"
start deadline --filter="$FILTER" file "$backing" deadline-scheduler=deadline deadline-depth="$DEPTH"
configs=(plain nocache noop deadline device)

# job name, fio arguments, what to extract
jobs=(
  "seqread|--rw=read --bs=64k --iodepth=8|bw"
  "seqwrite|--rw=write --bs=64k --iodepth=8|bw"
  "randread|--rw=randread --bs=4k --iodepth=32|iops"
  "lat1|--rw=randread --bs=4k --iodepth=1|lat"
)

run_fio ()
{
    local cfg=$1 args=$2 what=$3 out=$tmp/out.json
    sync
    echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || :
    if [ "$cfg" = device ]; then
        # shellcheck disable=SC2086
        fio --name=b --ioengine=io_uring --direct=1 --filename="$backing" \
            --size="$(blockdev --getsize64 "$backing" 2>/dev/null || stat -c %s "$backing")" \
            $args --time_based --runtime="$RUNTIME" --ramp_time=0.5 \
            --output-format=json --output="$out" >/dev/null
    else
        # shellcheck disable=SC2086
        fio --name=b --ioengine=nbd --uri="nbd+unix:///?socket=$tmp/$cfg.sock" \
            $args --time_based --runtime="$RUNTIME" --ramp_time=0.5 \
            --output-format=json --output="$out" >/dev/null
    fi
    python3 - "$out" "$what" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
what = sys.argv[2]
side = j["write"] if j["write"]["io_bytes"] > 0 else j["read"]
if what == "bw":
    print("%.1f" % (side["bw_bytes"] / 1048576.0))
elif what == "iops":
    print("%.0f" % side["iops"])
else:
    # median completion latency (fio's nbd engine submits inline, so
    # submission latency is small and the mean is swayed by rare stalls)
    print("%.1f" % (side["clat_ns"]["percentile"]["50.000000"] / 1000.0))
EOF
}

median () { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A result
for job in "${jobs[@]}"; do
    IFS='|' read -r name args what <<<"$job"
    declare -A samples=()
    for (( r=1; r<=RUNS; r++ )); do
        for cfg in "${configs[@]}"; do
            v=$(run_fio "$cfg" "$args" "$what")
            samples[$cfg]="${samples[$cfg]:-} $v"
            echo "bench-fio: $name run $r $cfg: $v" >&2
        done
    done
    for cfg in "${configs[@]}"; do
        # shellcheck disable=SC2086
        result[$name,$cfg]=$(median ${samples[$cfg]})
    done
    unset samples
done

printf '\nnbd-deadline fio benchmark: backing %s, deadline-depth=%s, nbdkit -t %s, %s s x %s runs (median)\n' \
    "$backing" "$DEPTH" "$THREADS" "$RUNTIME" "$RUNS"
printf '%-34s %12s %12s %12s %8s %12s %8s %12s\n' "test" "plain" "cache=none" "noop" "ratio" "deadline" "ratio" "dev O_DIRECT"
for job in "${jobs[@]}"; do
    IFS='|' read -r name args what <<<"$job"
    case $name in
        seqread)  label="64 KiB seq read MiB/s (qd 8)" ;;
        seqwrite) label="64 KiB seq write MiB/s (qd 8)" ;;
        randread) label="4 KiB rand read IOPS (qd 32)" ;;
        lat1)     label="4 KiB rand read p50 lat us (qd 1)" ;;
    esac
    p=${result[$name,plain]} n=${result[$name,noop]} d=${result[$name,deadline]}
    c=${result[$name,nocache]}
    v=${result[$name,device]}
    if [ "$what" = lat ]; then
        # For latency the "ratio" column is the difference in µs.
        rn=$(awk -v a="$n" -v b="$p" 'BEGIN{printf "%+.1f", a-b}')
        rd=$(awk -v a="$d" -v b="$p" 'BEGIN{printf "%+.1f", a-b}')
    else
        rn=$(awk -v a="$n" -v b="$p" 'BEGIN{printf "%.2f", (b>0)?(a/b):0}')
        rd=$(awk -v a="$d" -v b="$p" 'BEGIN{printf "%.2f", (b>0)?(a/b):0}')
    fi
    printf '%-34s %12s %12s %12s %8s %12s %8s %12s\n' "$label" "$p" "$c" "$n" "$rn" "$d" "$rd" "$v"
done
