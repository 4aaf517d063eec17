#!/usr/bin/env bash
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
# Configurations: the seed (anticipate=0 preempt=off), each mechanism
# alone, the defaults (both), the defaults before 256 KiB units and
# preempt-min 16, and elevator.  Run from the top of a built
# tree (run-tests or run-export build in build/).  SLOWDISK_ARGS
# changes the disk (default "size=4G"; see slowdisk.pod), e.g.
# SLOWDISK_ARGS="size=4G rate=150M seek-ms=12 wcache=32M".
set -u

secs=${1:-15}
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
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

jobfile () {                    # $1: reader rw, $2: bs, $3: depth
    cat > "$tmp/job.fio" <<EOF
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
EOF
}

row () {                        # $1: label, rest: filter parameters
    local label=$1; shift
    rm -f "$tmp/sock"
    # shellcheck disable=SC2086 # $disk is a list of plugin parameters
    nbdkit -f -U "$tmp/sock" --filter="$filter" "$slowdisk" $disk "$@" \
        2>"$tmp/nbdkit.log" &
    pid=$!
    for _ in $(seq 50); do [ -S "$tmp/sock" ] && break; sleep 0.1; done
    fio --output-format=json "$tmp/job.fio" 2>/dev/null |
        sed -n '/^{/,$p' > "$tmp/out.json"
    kill "$pid"; wait "$pid" 2>/dev/null; pid=
    python3 - "$label" "$tmp/out.json" <<'PY'
import json, sys
jobs = {j['jobname']: j for j in json.load(open(sys.argv[2]))['jobs']}
r, w = jobs['reader']['read'], jobs['writer']['write']
p = r['clat_ns']['percentile']
print("%-30s %9.1f %10.1f %10.1f %10.1f" % (sys.argv[1], r['iops'],
      p['50.000000'] / 1e6, p['99.000000'] / 1e6, w['bw'] / 1024))
PY
}

table () {
    printf '%-30s %9s %10s %10s %10s\n' configuration reads/s 'p50 ms' 'p99 ms' 'write MiB/s'
    row "seed (anticipate=0 preempt=off)" deadline-anticipate=0 deadline-preempt=off
    row "anticipation alone" deadline-preempt=off
    row "preemption alone" deadline-anticipate=0
    row "defaults (both)"
    row "both, 1M units, preempt-min 32" deadline-max-merge=1M deadline-preempt-min=32
    row "elevator" deadline-scheduler=elevator
}
echo "slow disk: $disk (filter defaults unless named)"
echo "== dependent reader: sequential 16 KiB at depth 1, ${secs} s each"
jobfile read 16k 1
table
echo
echo "== no dependent reads: random 4 KiB at depth 32"
jobfile randread 4k 32
row "seed (anticipate=0 preempt=off)" deadline-anticipate=0 deadline-preempt=off
row "defaults (both)"
echo
echo "== dependent but random: random 4 KiB at depth 1"
jobfile randread 4k 1
row "seed (anticipate=0 preempt=off)" deadline-anticipate=0 deadline-preempt=off
row "defaults (both)"
