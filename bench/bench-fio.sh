#!/usr/bin/env bash
# nbd-deadline: fio benchmark of the filter against plain nbdkit file.
#
#   bench/bench-fio.sh [BACKING]
#
# Serves the same backing four ways (plain `nbdkit file`, the same with
# cache=none, the filter with noop, the filter with deadline) and drives
# each with fio's nbd engine: 64 KiB sequential read and write (MiB/s,
# depth 8), 4 KiB random read IOPS at depth 32, and 4 KiB random read
# latency at depth 1 (median µs).  Each number is the median of RUNS
# runs; runs are interleaved across the servers so that drift hits all
# alike, and the page cache is dropped before each run.  Writes end with
# a flush that counts in the time (fio's end_fsync): what reached the
# disk, not what reached the page cache.  Ratios are against plain.  The
# last column is fio on the backing itself with O_DIRECT and io_uring, no
# NBD at all.
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
# With BACKING (a file or block device) only that backing is measured.
# The backing's device gets queue/scheduler=none for the run (restored
# after), so that the scheduler under test is the only one.
# Env: REGIMES ("cold warm"), COLD_SIZE (GiB, 12), RUNTIME (s, 4), RUNS
# (3), DEPTH (deadline-depth, 32: the backing here is an SSD-like
# virtual disk), THREADS (nbdkit -t, 64), FILTER (the .so).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/slowstack.sh
. "$here/slowstack.sh"          # for ss_find_built only
: "${RUNTIME:=4}" "${RUNS:=3}" "${DEPTH:=32}" "${THREADS:=64}"
: "${REGIMES:=cold warm}" "${COLD_SIZE:=12}"
ss_find_built "$here"
[ -f "$FILTER" ] || { echo "bench-fio: filter not built (set FILTER=)" >&2; exit 1; }
command -v fio >/dev/null || { echo "bench-fio: fio not installed" >&2; exit 1; }
fio --enghelp=nbd >/dev/null 2>&1 || { echo "bench-fio: fio lacks the nbd engine" >&2; exit 1; }

tmp=$(mktemp -d /tmp/nbd-deadline-bench.XXXXXX)
pids=()
sched_restore=
stop_servers ()
{
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || :; done
    for p in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    done
    pids=()
    [ -n "$sched_restore" ] && echo "${sched_restore#*=}" > "${sched_restore%%=*}" 2>/dev/null || :
    sched_restore=
}
cleanup () { stop_servers; rm -rf "$tmp"; }
trap cleanup EXIT

# make_backing FILE GIB: GIB GiB of random data, written once.
make_backing ()
{
    local f=$1 gib=$2 free
    [ -e "$f" ] && [ "$(stat -c %s "$f")" -ge $((gib << 30)) ] && return 0
    free=$(df --output=avail -B1G "$(dirname "$f")" | tail -1 | tr -d ' ')
    if [ "$free" -lt $((gib + 2)) ]; then
        echo "bench-fio: $f needs $gib GiB and $(dirname "$f") has $free GiB free (set COLD_SIZE or REGIMES=warm)" >&2
        exit 1
    fi
    echo "bench-fio: making $f ($gib GiB of random data, once)" >&2
    dd if=/dev/urandom of="$f" bs=4M count=$((gib * 256)) oflag=direct status=none
}

# The backing's device (the block device itself, or the disk under the
# file's filesystem) gets queue/scheduler=none, restored by stop_servers:
# the scheduler under test is to be the only one.
prepare_backing ()
{
    local backing=$1 dev q old fs
    if [ -b "$backing" ]; then
        dev=$(basename "$(readlink -f "$backing")")
    else
        fs=$(df --output=source "$backing" | tail -1)
        echo "bench-fio: backing is a file on $fs ($(df --output=fstype "$backing" | tail -1 | tr -d ' '))" >&2
        dev=$(basename "$(readlink -f "$fs" 2>/dev/null || echo "$fs")")
        # a partition's queue is its disk's
        [ -e "/sys/class/block/$dev/partition" ] &&
            dev=$(basename "$(readlink -f "/sys/class/block/$dev/..")")
    fi
    q=/sys/block/$dev/queue/scheduler
    if [ -w "$q" ]; then
        old=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$q")
        sched_restore="$q=$old"
        echo none > "$q" || :
        echo "bench-fio: $q: $old -> $(cat "$q")" >&2
    else
        echo "bench-fio: cannot set $q to none" >&2
    fi
}

start ()
{
    local name=$1 sock=$tmp/$1.sock
    shift
    rm -f "$sock"
    nbdkit -f -t "$THREADS" -U "$sock" "$@" 2>"$tmp/$name.log" &
    pids+=($!)
    for _ in $(seq 100); do [ -S "$sock" ] && return 0; sleep 0.1; done
    echo "bench-fio: $name did not start:" >&2; cat "$tmp/$name.log" >&2; exit 1
}
configs=(plain nocache noop deadline device)

# job name, fio arguments, what to extract
jobs=(
  "seqread|--rw=read --bs=64k --iodepth=8|bw"
  "seqwrite|--rw=write --bs=64k --iodepth=8 --end_fsync=1|bw"
  "randread|--rw=randread --bs=4k --iodepth=32|iops"
  "lat1|--rw=randread --bs=4k --iodepth=1|lat"
)

# run_fio BACKING CONFIG ARGS WHAT: prints the figure, with a '*' if
# the run read more bytes than the backing holds and could have re-read
# them from the page cache (only plain nbdkit file can).
run_fio ()
{
    local backing=$1 cfg=$2 args=$3 what=$4 out=$tmp/out.json size
    size=$(blockdev --getsize64 "$backing" 2>/dev/null || stat -c %s "$backing")
    sync
    echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || :
    if [ "$cfg" = device ]; then
        # shellcheck disable=SC2086
        fio --name=b --ioengine=io_uring --direct=1 --filename="$backing" \
            --size="$size" $args --time_based --runtime="$RUNTIME" --ramp_time=0.5 \
            --output-format=json --output="$out" >/dev/null
    else
        # shellcheck disable=SC2086
        fio --name=b --ioengine=nbd --uri="nbd+unix:///?socket=$tmp/$cfg.sock" \
            $args --time_based --runtime="$RUNTIME" --ramp_time=0.5 \
            --output-format=json --output="$out" >/dev/null
    fi
    case $cfg in plain|nocache) ;; *) size=-1 ;; esac
    python3 - "$out" "$what" "$size" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
what, size = sys.argv[2], int(sys.argv[3])
side = j["write"] if j["write"]["io_bytes"] > 0 else j["read"]
wrapped = "*" if 0 <= size < j["read"]["io_bytes"] else ""
if what == "bw":
    print("%.1f%s" % (side["bw_bytes"] / 1048576.0, wrapped))
elif what == "iops":
    print("%.0f%s" % (side["iops"], wrapped))
else:
    # median completion latency (fio's nbd engine submits inline, so
    # submission latency is small and the mean is swayed by rare stalls)
    print("%.1f%s" % (side["clat_ns"]["percentile"]["50.000000"] / 1000.0, wrapped))
PY
}

# The median of figures that may carry a '*', starred if any was.
median ()
{
    local star=
    case "$*" in *'*'*) star='*' ;; esac
    printf '%s\n' "$@" | tr -d '*' | sort -g |
        awk -v s="$star" '{a[NR]=$1} END {print a[int((NR+1)/2)] s}'
}

ratio () { awk -v a="${1%\*}" -v b="${2%\*}" 'BEGIN{printf "%.2f", (b>0)?(a/b):0}'; }
delta () { awk -v a="${1%\*}" -v b="${2%\*}" 'BEGIN{printf "%+.1f", a-b}'; }

# measure TITLE BACKING: the four servers on BACKING, every job, a table.
measure ()
{
    local title=$1 backing=$2 job name args what r cfg v label p n d rn rd
    local -A result samples
    prepare_backing "$backing"
    start plain file "$backing"
    start nocache file "$backing" cache=none
    start noop --filter="$FILTER" file "$backing" deadline-scheduler=noop deadline-depth="$DEPTH"
    start deadline --filter="$FILTER" file "$backing" deadline-scheduler=deadline deadline-depth="$DEPTH"
    for job in "${jobs[@]}"; do
        IFS='|' read -r name args what <<<"$job"
        samples=()
        for (( r=1; r<=RUNS; r++ )); do
            for cfg in "${configs[@]}"; do
                v=$(run_fio "$backing" "$cfg" "$args" "$what")
                samples[$cfg]="${samples[$cfg]:-} $v"
                echo "bench-fio: $title: $name run $r $cfg: $v" >&2
            done
        done
        for cfg in "${configs[@]}"; do
            # shellcheck disable=SC2086
            result[$name,$cfg]=$(median ${samples[$cfg]})
        done
    done
    stop_servers

    printf '\n%s\nbacking %s (%s), deadline-depth=%s, nbdkit -t %s, %s s x %s runs (median)\n' \
        "$title" "$backing" \
        "$(numfmt --to=iec "$(blockdev --getsize64 "$backing" 2>/dev/null || stat -c %s "$backing")")" \
        "$DEPTH" "$THREADS" "$RUNTIME" "$RUNS"
    printf '%-34s %12s %12s %12s %8s %12s %8s %12s\n' "test" "plain" "cache=none" "noop" "ratio" "deadline" "ratio" "dev O_DIRECT"
    for job in "${jobs[@]}"; do
        IFS='|' read -r name args what <<<"$job"
        case $name in
            seqread)  label="64 KiB seq read MiB/s (qd 8)" ;;
            seqwrite) label="64 KiB seq write+flush MiB/s (qd 8)" ;;
            randread) label="4 KiB rand read IOPS (qd 32)" ;;
            lat1)     label="4 KiB rand read p50 lat us (qd 1)" ;;
        esac
        p=${result[$name,plain]} n=${result[$name,noop]} d=${result[$name,deadline]}
        if [ "$what" = lat ]; then      # here the "ratio" is the difference in µs
            rn=$(delta "$n" "$p") rd=$(delta "$d" "$p")
        else
            rn=$(ratio "$n" "$p") rd=$(ratio "$d" "$p")
        fi
        printf '%-34s %12s %12s %12s %8s %12s %8s %12s\n' "$label" "$p" \
            "${result[$name,nocache]}" "$n" "$rn" "$d" "$rd" "${result[$name,device]}"
    done
    case "${result[*]}" in
        *'*'*) echo "(* a run read more than the backing holds: some of it came from the page cache)" ;;
    esac
}

echo "nbd-deadline fio benchmark at $(git -C "$here/.." describe --always --dirty 2>/dev/null || echo '?'), $(date -u '+%F %T') UTC"
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
