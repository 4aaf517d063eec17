# SPDX-License-Identifier: BSD-3-Clause
# nbd-deadline: what bench-fio.sh and bench-engine.sh share (sourced):
# the jobs, the backing (made once, its disk's queue scheduler set to
# none for the run), the page cache dropped before each run, and the
# figures' median, spread and ratio.  The caller sets bench_name (the
# prefix of its messages) and calls restore_scheduler on its way out.
# shellcheck shell=bash
: "${bench_name:=bench}"

# job name, fio arguments, what to extract (bw: MiB/s, iops, lat: the
# median latency in us)
all_jobs=(
  "seqread|--rw=read --bs=64k --iodepth=8|bw"
  "seqwrite|--rw=write --bs=64k --iodepth=8 --end_fsync=1|bw"
  "randread|--rw=randread --bs=4k --iodepth=32|iops"
  "randwrite|--rw=randwrite --bs=4k --iodepth=32 --end_fsync=1|iops"
  "lat1|--rw=randread --bs=4k --iodepth=1|lat"
)

# select_jobs NAMES: the entries of all_jobs named, in that order, into
# jobs; an unknown name stops the script
select_jobs ()
{
    local j job found
    jobs=()
    for j in $1; do
        found=
        for job in "${all_jobs[@]}"; do [ "${job%%|*}" = "$j" ] && jobs+=("$job") found=1; done
        [ -n "$found" ] || { echo "$bench_name: unknown job $j (seqread seqwrite randread randwrite lat1)" >&2; exit 1; }
    done
}

# job_label NAME: the job's title in a table
job_label ()
{
    case $1 in
        seqread)   echo "64 KiB seq read MiB/s (qd 8)" ;;
        seqwrite)  echo "64 KiB seq write+flush MiB/s (qd 8)" ;;
        randread)  echo "4 KiB rand read IOPS (qd 32)" ;;
        randwrite) echo "4 KiB rand write+flush IOPS (qd 32)" ;;
        lat1)      echo "4 KiB rand read p50 latency us (qd 1)" ;;
    esac
}

# make_backing FILE GIB: GIB GiB of random data, written once.
make_backing ()
{
    local f=$1 gib=$2 free
    [ -e "$f" ] && [ "$(stat -c %s "$f")" -ge $((gib << 30)) ] && return 0
    free=$(df --output=avail -B1G "$(dirname "$f")" | tail -1 | tr -d ' ')
    if [ "$free" -lt $((gib + 2)) ]; then
        echo "$bench_name: $f needs $gib GiB and $(dirname "$f") has $free GiB free (set COLD_SIZE or REGIMES=warm)" >&2
        exit 1
    fi
    echo "$bench_name: making $f ($gib GiB of random data, once)" >&2
    dd if=/dev/urandom of="$f" bs=4M count=$((gib * 256)) oflag=direct status=none
}

# The backing's device (the block device itself, or the disk under the
# file's filesystem) gets queue/scheduler=none, restored by
# restore_scheduler: the scheduler under test is to be the only one.
sched_restore=
prepare_backing ()
{
    local backing=$1 dev q old fs
    if [ -b "$backing" ]; then
        dev=$(basename "$(readlink -f "$backing")")
    else
        fs=$(df --output=source "$backing" | tail -1)
        echo "$bench_name: backing is a file on $fs ($(df --output=fstype "$backing" | tail -1 | tr -d ' '))" >&2
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
        echo "$bench_name: $q: $old -> $(cat "$q")" >&2
    else
        echo "$bench_name: cannot set $q to none" >&2
    fi
}
restore_scheduler ()
{
    [ -n "$sched_restore" ] && echo "${sched_restore#*=}" > "${sched_restore%%=*}" 2>/dev/null || :
    sched_restore=
}

# drop_caches: before every run; a failure stops the benchmark
drop_caches ()
{
    sync
    echo 3 > /proc/sys/vm/drop_caches ||
        { echo "$bench_name: dropping the page cache failed: stopping (the run would be invalid)" >&2; exit 1; }
}

# The median of figures that may carry a '*', starred if any was.
median ()
{
    local star=
    case "$*" in *'*'*) star='*' ;; esac
    printf '%s\n' "$@" | tr -d '*' | sort -g |
        awk -v s="$star" '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; print m s}'
}
# spread: "[min-max]" of the same figures
spread ()
{
    printf '%s\n' "$@" | tr -d '*' | sort -g | awk '{a[NR]=$1} END {printf "[%s-%s]", a[1], a[NR]}'
}

# ratio A B: A / B, a true ratio ("-" without a baseline figure)
ratio () { awk -v a="${1%\*}" -v b="${2%\*}" 'BEGIN{ if (b > 0) printf "%.2f", a/b; else print "-" }'; }
