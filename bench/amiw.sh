#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nbd-deadline: the AMIW (Andrew Morton Interactive Workload) on a slow disk.
#
#   sudo bench/amiw.sh [-r RUNS] [-s "deadline elevator noop plain ..."]
#                      [-n FILES] [-f FLOOD_MB] [-d DEPTH] [-T CAT_TIMEOUT]
#                      [-x "k=v ..."] [-B N] [-W dd|dbench|both] [-q|-L]
#                      [-k] [-v] [-o FILE]
#
# The stack, rebuilt for every scheduler (the data stays in a tmpfs
# file, so every scheduler sees the same filesystem layout):
#
#   slowdisk (nbdkit plugin, one modelled spindle)      --unix S1
#     -> nbdfuse M1/disk -> losetup --direct-io=on -> /dev/loopA (scheduler none)
#     -> nbdkit --filter=deadline file /dev/loopA deadline-scheduler=X  --unix S2
#        (or plain "nbdkit file /dev/loopA" for "plain")
#     -> nbdfuse M2/disk -> losetup --direct-io=on -> /dev/loopB (scheduler none)
#     -> ext4 mounted on M3
#
# Once: mkfs.ext4, copy FILES small files (a sorted subset of
# /usr/include) and write the flood file.  Then for each run and each
# scheduler (interleaved, so drift hits all alike), each on a freshly
# started stack: drop caches, time `cat` of every file on the idle
# disk; restart the stack, drop caches, start the write
# flood (a loop of buffered `dd conv=notrunc,fsync` rewriting FLOOD_MB
# of one file), wait 2 s, time `cat` of every file again (capped at
# CAT_TIMEOUT s, then reported as ">T"), check every file's md5 against
# the original, stop the flood and sync.
#
# Prints the medians side by side, each with its spread (min-max) over
# the runs (at least 3 for a result: fewer, as with -q, marks the table
# NOT A RESULT), and the ratios to the first deadline entry, under the
# command and the commit (every row from this one build and run); with -v also where requests waited during the last flood cat of
# each scheduler: requests in the upper and lower FUSE connections and
# in flight on the upper loop (sampled every 0.2 s), mean read and write
# latency at the upper loop (what ext4 sees) and at the lower loop (the
# filter's device), the filter's exit statistics line and the slow
# disk's statistics.
#
# Schedulers: deadline, elevator, noop (the filter's deadline-scheduler=)
# and the baselines: plain (nbdkit file, no filter, page cache),
# plain:k=v,... (file plugin parameters: plain:cache=none) and qemu-nbd
# (qemu-nbd --cache=none --aio=io_uring, when installed); NAME:k=v,k=v
# adds deadline-k=v, e.g. "deadline:depth=1,fifo-batch=2".  Default:
# deadline elevator noop plain plain:cache=none, and qemu-nbd where
# installed.  The upper loop device (the client's, under ext4) keeps the
# kernel's default scheduler for the baselines; only the filter's rows
# set it to none (the table's last column says what each row had).
#
# Options: -r runs (3), -s schedulers, -n files (300), -f flood MiB
# (256), -d deadline-depth for every filter entry, -T cat timeout (90),
# -q quick (1 run, 200 files, timeout 60), -L long (2000 files, timeout
# 300; about 6x the time), -k keep the work directory, -v print where
# requests waited, -o FILE also write the table there, -x "k=v ..."
# extra filter parameters, -B N the kernel FUSE max_background of the
# upper nbdfuse (kernel default 12; nbdfuse itself runs at most 10
# libfuse threads, which no option raises).
# -W dd|dbench|both: the flood (default dd; dbench runs "dbench 4" from
# /usr/share/dbench/client.txt in a directory of the same filesystem).
# Env: FILTER, SLOWDISK (the .so files), SLOWDISK_ARGS (model keys,
# default "size=4G"), MOUNT_OPTS (ext4 mount options), PRE_FILTERS
# (nbdkit arguments put before the scheduler, e.g. "--filter=X.so k=v",
# for experiments with filters above it), NBDFUSE2_OPTS (options of the
# upper nbdfuse, e.g. "-C 1" for one connection).  Needs root,
# /dev/fuse, loop devices.  The defaults take about 10 minutes.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cmdline="$0${*:+ $*}"
# shellcheck source=bench/slowstack.sh
. "$here/slowstack.sh"
RUNS=3 SCHEDS="deadline elevator noop plain plain:cache=none" NFILES=300 FLOOD_MB=256
if command -v qemu-nbd >/dev/null; then SCHEDS+=" qemu-nbd"; fi
DEPTH= CAT_TIMEOUT=90 KEEP=0 VERBOSE=0 OUT= EXTRA= FUSE_BG= FLOOD=dd
while getopts "r:s:n:f:d:T:qLkvo:x:B:W:" o; do
    case $o in
        r) RUNS=$OPTARG ;; s) SCHEDS=$OPTARG ;; n) NFILES=$OPTARG ;;
        f) FLOOD_MB=$OPTARG ;; d) DEPTH=$OPTARG ;; T) CAT_TIMEOUT=$OPTARG ;;
        q) RUNS=1 NFILES=200 CAT_TIMEOUT=60 ;;
        L) NFILES=2000 CAT_TIMEOUT=300 ;; k) KEEP=1 ;; v) VERBOSE=1 ;;
        o) OUT=$OPTARG ;; x) EXTRA=$OPTARG ;;
        B) FUSE_BG=$OPTARG ;; W) FLOOD=$OPTARG ;;
        *) sed -n '2,/^set -euo/p' "$0" | grep '^#' >&2; exit 2 ;;
    esac
done
: "${SLOWDISK_ARGS:=size=4G}"
# make check points NBDKIT at a wrapper under sanitizers.
: "${NBDKIT:=nbdkit}"

ss_find_built "$here"

die () { echo "amiw: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (loop devices, mount, drop_caches)"
[ -f "$FILTER" ] || die "filter not built (set FILTER=)"
[ -f "$SLOWDISK" ] || die "slowdisk plugin not built (set SLOWDISK=)"
for p in nbdfuse fusermount3 losetup mkfs.ext4 timeout md5sum; do
    command -v $p >/dev/null || die "$p not found"
done
case " $SCHEDS " in
    *" qemu-nbd "*) command -v qemu-nbd >/dev/null || die "qemu-nbd not installed (apt-get install qemu-utils)" ;;
esac
case $FLOOD in
    dd) ;;
    dbench|both) command -v dbench >/dev/null && [ -f /usr/share/dbench/client.txt ] ||
                     die "dbench not installed (apt-get install dbench)" ;;
    *) die "-W: dd, dbench or both" ;;
esac
[ -c /dev/fuse ] || die "/dev/fuse missing"
FUSECTL_MOUNTED=0
if ! mountpoint -q /sys/fs/fuse/connections; then
    mount -t fusectl none /sys/fs/fuse/connections || die "cannot mount fusectl"
    FUSECTL_MOUNTED=1
fi

tmp=$(mktemp -d /tmp/amiw.XXXXXX)
data=$(mktemp /dev/shm/amiw-disk.XXXXXX)
log=$tmp/log
mkdir -p "$tmp/m1" "$tmp/m2" "$tmp/m3"

# ---- resources, released in reverse order by stack_down / the trap ----
S1_PID= S2_PID= F1_PID= F2_PID= LOOP1= LOOP2= MOUNTED=0 FLOOD_PID= SAMPLER_PID= LOOP2_SCHED=
CONN1= CONN2=

kill_wait ()    # PID: TERM, then KILL after 10 s; only our own children
{
    local pid=$1 i
    [ -n "$pid" ] || return 0
    kill "$pid" 2>/dev/null || return 0
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
}

flood_stop ()
{
    local kids k
    [ -n "$FLOOD_PID" ] || return 0
    # its dd or dbench, and dbench's client processes
    kids=$(pgrep -P "$FLOOD_PID" || true)
    for k in $kids; do kids="$kids $(pgrep -P "$k" || true)"; done
    kill "$FLOOD_PID" 2>/dev/null || true
    # shellcheck disable=SC2086
    [ -n "$kids" ] && kill $kids 2>/dev/null || true
    wait "$FLOOD_PID" 2>/dev/null || true
    FLOOD_PID=
}

fuse_down ()    # MOUNTPOINT PID
{
    [ -n "$2" ] || return 0
    fusermount3 -u "$1" 2>/dev/null || umount -l "$1" 2>/dev/null || true
    kill_wait "$2"
}

stack_down ()
{
    sampler_stop
    flood_stop
    if [ "$MOUNTED" = 1 ]; then
        umount "$tmp/m3" 2>/dev/null || umount -l "$tmp/m3" 2>/dev/null || true
        MOUNTED=0
    fi
    [ -n "$LOOP2" ] && { losetup -d "$LOOP2" 2>/dev/null || true; LOOP2=; }
    fuse_down "$tmp/m2" "$F2_PID"; F2_PID=
    kill_wait "$S2_PID"; wait "$S2_PID" 2>/dev/null || true; S2_PID=
    [ -n "$LOOP1" ] && { losetup -d "$LOOP1" 2>/dev/null || true; LOOP1=; }
    fuse_down "$tmp/m1" "$F1_PID"; F1_PID=
    kill_wait "$S1_PID"; wait "$S1_PID" 2>/dev/null || true; S1_PID=
}

cleanup ()
{
    local rc=$?
    trap - EXIT INT TERM
    stack_down
    rm -f "$data"
    [ "$FUSECTL_MOUNTED" = 1 ] && umount /sys/fs/fuse/connections 2>/dev/null
    if [ "$KEEP" = 1 ] || [ $rc -ne 0 ]; then
        echo "amiw: logs kept in $tmp" >&2
    else
        rm -rf "$tmp"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_for ()     # FILE SECONDS
{
    local i
    for i in $(seq $(( $2 * 10 ))); do [ -e "$1" ] && return 0; sleep 0.1; done
    die "timed out waiting for $1"
}

# stack_up TAG SCHED: everything from the slow disk to the ext4 mount point
# (ext4 not mounted when SCHED is "mkfs": the caller makes it).
stack_up ()
{
    local tag=$1 sched=$2 args=()
    rm -f "$tmp/s1.sock" "$tmp/s2.sock" "$tmp/f1.pid" "$tmp/f2.pid"
    # shellcheck disable=SC2086
    $NBDKIT -f -v --unix "$tmp/s1.sock" "$SLOWDISK" file="$data" $SLOWDISK_ARGS \
        stats="$tmp/$tag.slowdisk" 2>"$tmp/$tag.s1.log" &
    S1_PID=$!
    wait_for "$tmp/s1.sock" 10
    nbdfuse -P "$tmp/f1.pid" "$tmp/m1/disk" --unix "$tmp/s1.sock" 2>>"$log" &
    F1_PID=$!
    wait_for "$tmp/f1.pid" 10
    LOOP1=$(losetup --direct-io=on -f --show "$tmp/m1/disk")
    [ "$(cat /sys/block/"${LOOP1#/dev/}"/loop/dio)" = 1 ] || die "$LOOP1: direct I/O not enabled"
    echo none > /sys/block/"${LOOP1#/dev/}"/queue/scheduler

    args=()
    # shellcheck disable=SC2206
    [ -n "${PRE_FILTERS:-}" ] && args=($PRE_FILTERS)
    if [ "$sched" = qemu-nbd ]; then
        :
    elif [ "${sched%%:*}" = plain ]; then
        args+=(file "$LOOP1")
        if [ "$sched" != "${sched#*:}" ]; then
            local kv
            local IFS=,
            for kv in ${sched#*:}; do args+=("$kv"); done
            unset IFS
        fi
    else
        # NAME:k=v,k=v -> deadline-scheduler=NAME deadline-k=v ...
        args+=(--filter="$FILTER" file "$LOOP1" deadline-scheduler="${sched%%:*}")
        [ -n "$DEPTH" ] && args+=(deadline-depth="$DEPTH")
        if [ "$sched" != "${sched#*:}" ]; then
            local kv
            local IFS=,
            for kv in ${sched#*:}; do args+=("deadline-$kv"); done
            unset IFS
        fi
        # shellcheck disable=SC2206
        [ -n "$EXTRA" ] && args+=($EXTRA)
    fi
    if [ "$sched" = qemu-nbd ]; then
        qemu-nbd --format=raw --cache=none --aio=io_uring --persistent --shared=8 \
            --socket="$tmp/s2.sock" "$LOOP1" 2>"$tmp/$tag.s2.log" &
    else
        $NBDKIT -f -v --unix "$tmp/s2.sock" "${args[@]}" 2>"$tmp/$tag.s2.log" &
    fi
    S2_PID=$!
    wait_for "$tmp/s2.sock" 20
    # shellcheck disable=SC2086
    nbdfuse -P "$tmp/f2.pid" ${NBDFUSE2_OPTS:-} "$tmp/m2/disk" --unix "$tmp/s2.sock" 2>>"$log" &
    F2_PID=$!
    wait_for "$tmp/f2.pid" 10
    CONN2=$(mountpoint -d "$tmp/m2"); CONN2=${CONN2#*:}
    CONN1=$(mountpoint -d "$tmp/m1"); CONN1=${CONN1#*:}
    if [ -n "$FUSE_BG" ]; then
        local conn=$CONN2
        echo "$FUSE_BG" > /sys/fs/fuse/connections/"$conn"/max_background
        echo "$FUSE_BG" > /sys/fs/fuse/connections/"$conn"/congestion_threshold
    fi
    LOOP2=$(losetup --direct-io=on -f --show "$tmp/m2/disk")
    # the client's device: scheduler none only under the filter (the
    # baselines keep the kernel's default); which one, for the table
    ss_is_baseline "$sched" || echo none > /sys/block/"${LOOP2#/dev/}"/queue/scheduler
    LOOP2_SCHED=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/block/"${LOOP2#/dev/}"/queue/scheduler)
}

mount_fs ()
{
    mount -t ext4 ${MOUNT_OPTS:+-o "$MOUNT_OPTS"} "$LOOP2" "$tmp/m3"
    MOUNTED=1
}

drop_caches () { sync; echo 3 > /proc/sys/vm/drop_caches; }

now () { date +%s.%N; }

# time_cat: seconds to cat every file of the tree, or ">T" on timeout.
time_cat ()
{
    local t0 t1 rc=0
    t0=$(now)
    timeout "$CAT_TIMEOUT" sh -c 'find "$1" -type f -print0 | xargs -0 cat > /dev/null' \
        sh "$tmp/m3/tree" || rc=$?
    t1=$(now)
    if [ $rc = 124 ]; then echo ">$CAT_TIMEOUT"; else
        [ $rc = 0 ] || die "cat failed ($rc)"
        awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
    fi
}

# Where requests wait, sampled every 0.2 s while the cat runs under the
# flood: requests in the upper FUSE connection (queued in the kernel or
# in nbdfuse, i.e. above the filter), in flight on the upper loop
# device, in the lower FUSE connection (below the filter).  Columns:
# fuse2 loop2_inflight fuse1.
sampler_start ()   # FILE
{
    local f=$1 c2=/sys/fs/fuse/connections/$CONN2/waiting
    local c1=/sys/fs/fuse/connections/$CONN1/waiting
    local l2=/sys/block/${LOOP2#/dev/}/inflight
    ( while :; do
          echo "$(cat "$c2") $(awk '{print $1 + $2}' "$l2") $(cat "$c1")"
          sleep 0.2
      done > "$f" 2>/dev/null ) &
    SAMPLER_PID=$!
}
sampler_stop ()
{
    [ -n "$SAMPLER_PID" ] || return 0
    kill "$SAMPLER_PID" 2>/dev/null || true
    wait "$SAMPLER_PID" 2>/dev/null || true
    SAMPLER_PID=
}
# Block-layer read/write counts and mean latencies of the upper loop
# device (what ext4 sees: the whole stack below it) and the lower one
# (what the filter sees from its device), over the flood cat.
blat ()            # BSTAT0 BSTAT1
{
    paste -d' ' "$1" "$2" | awk '
        { r = $18 - $1; rt = $21 - $4; w = $22 - $5; wt = $25 - $8
          printf "%s reads %d mean %.1f ms, writes %d mean %.1f ms; ",
                 (NR == 1 ? "upper loop (ext4 sees)" : "lower loop (filter sees)"),
                 r, r ? rt / r : 0, w, w ? wt / w : 0 }
        END { print "" }'
}
depths ()          # FILE: mean/max of each column
{
    awk 'NF == 3 { for (i = 1; i <= 3; i++) { s[i] += $i; if ($i > m[i]) m[i] = $i } n++ }
         END { if (n) printf "fuse_above_filter mean %.1f max %d; loop2_inflight mean %.1f max %d; fuse_below_filter mean %.1f max %d (%d samples)\n",
                   s[1]/n, m[1], s[2]/n, m[2], s[3]/n, m[3], n }' "$1"
}

flood_start ()
{
    ( if [ "$FLOOD" != dd ]; then
          mkdir -p "$tmp/m3/dbench"
          dbench -D "$tmp/m3/dbench" -t 3600 \
              -c /usr/share/dbench/client.txt 4 > "$tmp/dbench.log" 2>&1 &
      fi
      if [ "$FLOOD" != dbench ]; then
          while :; do
              dd if=/dev/zero of="$tmp/m3/flood" bs=1M count="$FLOOD_MB" \
                 conv=notrunc,fsync status=none || break
          done
      fi
      wait ) &
    FLOOD_PID=$!
}

# ---- the fixture: filesystem, tree, flood file -----------------------
commit=$(git -C "$here/.." describe --always --dirty --abbrev=10 2>/dev/null || echo '?')
echo "amiw: command: $cmdline; commit $commit" >&2
echo "amiw: slowdisk $SLOWDISK_ARGS; $NFILES files; flood ${FLOOD_MB} MiB; runs $RUNS; schedulers: $SCHEDS" >&2
t0=$(now)
stack_up setup plain
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0,nodiscard "$LOOP2"
mount_fs
mkdir "$tmp/m3/tree"
(cd /usr/include && find . -type f | LC_ALL=C sort | awk -v n="$NFILES" 'NR <= n' > "$tmp/files")
tar -C /usr/include -cf - -T "$tmp/files" | tar -C "$tmp/m3/tree" -xf -
(cd "$tmp/m3/tree" && tr '\n' '\0' < "$tmp/files" | xargs -0 md5sum) > "$tmp/md5"
dd if=/dev/zero of="$tmp/m3/flood" bs=1M count="$FLOOD_MB" conv=fsync status=none
sync
nfiles=$(find "$tmp/m3/tree" -type f | wc -l)
kib=$(du -sk "$tmp/m3/tree" | cut -f1)
stack_down
echo "amiw: fixture ready ($nfiles files, $kib KiB) in $(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.0f", b-a}') s" >&2

declare -A idle flood upper
for run in $(seq "$RUNS"); do
    for s in $SCHEDS; do
        # The idle and the flood cat each get a fresh stack, so that the
        # exit statistics of the filter and the slow disk are the flood's.
        stack_up "$s.$run.idle" "$s"
        mount_fs
        drop_caches
        i=$(time_cat)
        stack_down
        stack_up "$s.$run" "$s"
        upper[$s]=$LOOP2_SCHED
        mount_fs
        drop_caches
        flood_start
        sleep 2
        sampler_start "$tmp/$s.$run.depths"
        cat /sys/block/"${LOOP2#/dev/}"/stat /sys/block/"${LOOP1#/dev/}"/stat > "$tmp/$s.$run.bstat0"
        f=$(time_cat)
        cat /sys/block/"${LOOP2#/dev/}"/stat /sys/block/"${LOOP1#/dev/}"/stat > "$tmp/$s.$run.bstat1"
        sampler_stop
        # What came through the whole stack during the flood is right
        # (the cat left it in the page cache, so this costs little).
        (cd "$tmp/m3/tree" && md5sum -c --quiet "$tmp/md5") >&2 ||
            die "$s: files read back under the flood differ from the originals"
        flood_stop
        sync
        stack_down
        idle[$s]+="$i "
        flood[$s]+="$f "
        echo "amiw: run $run $s: idle $i s, under flood $f s" >&2
    done
done

# spread of a list: "[min-max]"; a ">T" entry counts as T, marked ">"
spread ()
{
    local gt=
    case " $* " in *" >"*) gt=">" ;; esac
    echo "$@" | tr ' ' '\n' | sed '/^$/d' | tr -d '>' | sort -g | awk -v gt="$gt" '
        { v[NR] = $1 + 0 } END { printf "[%.2f-%s%.2f]", v[1], gt, v[NR] }'
}

# median of a list; a ">T" entry counts as T and marks the result ">"
median ()
{
    local gt=
    case " $* " in *" >"*) gt=">" ;; esac
    echo "$@" | tr ' ' '\n' | grep . | tr -d '>' | sort -g | awk -v gt="$gt" '
        { v[NR] = $1 + 0 }
        END { n = NR; m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2;
              printf "%s%.2f", gt, m }'
}

case $FLOOD in
    dd) flood_desc="dd ${FLOOD_MB} MiB conv=fsync in a loop" ;;
    dbench) flood_desc="dbench 4" ;;
    both) flood_desc="dd ${FLOOD_MB} MiB conv=fsync in a loop + dbench 4" ;;
esac
table ()
{
    local s mi mf ref
    ref=
    for s in $SCHEDS; do
        [ -z "$ref" ] && [ "${s%%:*}" = deadline ] && ref=$(median ${flood[$s]})
    done
    echo "amiw: command: $cmdline"
    echo "commit: $commit (one build for every row); $(date -u '+%F %T') UTC; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    [ "$RUNS" -ge 3 ] || echo "NOT A RESULT: $RUNS run(s) per scheduler (a result needs -r 3 or more); a format check only"
    # (tests/amiw/test-amiw.sh reads columns 1 and 3: scheduler, flood median)
    printf "%-40s %10s %12s %-17s %-13s %10s %12s  %s\n" scheduler "idle_cat_s" "flood_cat_s" \
        "flood[min-max]" "idle[min-max]" "flood/idle" "vs_deadline" "upper loop scheduler"
    for s in $SCHEDS; do
        mi=$(median ${idle[$s]})
        mf=$(median ${flood[$s]})
        printf "%-40s %10s %12s %-17s %-13s %10s %12s  %s\n" "$s" "$mi" "$mf" \
            "$(spread ${flood[$s]})" "$(spread ${idle[$s]})" \
            "$(awk -v a="${mf#>}" -v b="${mi#>}" 'BEGIN{printf "%.1fx", a/b}')" \
            "$( [ -n "$ref" ] && awk -v a="${mf#>}" -v b="${ref#>}" 'BEGIN{printf "%.1fx", a/b}' || echo -)" \
            "${upper[$s]}$(ss_is_baseline "$s" && echo " (kernel default)" || echo " (set by the script)")"
    done
    echo "(medians of $RUNS runs, spread [min-max] beside; $nfiles files, $kib KiB; flood: $flood_desc; slowdisk $SLOWDISK_ARGS${DEPTH:+; deadline-depth=$DEPTH})"
    echo "raw (s): $(for s in $SCHEDS; do printf '%s idle[%s] flood[%s]; ' "$s" "${idle[$s]% }" "${flood[$s]% }"; done)"
}

if [ "$VERBOSE" = 1 ]; then
    for s in $SCHEDS; do
        echo "== $s (run $RUNS): filter / slow disk"
        echo "  during the flood cat: $(depths "$tmp/$s.$RUNS.depths")"
        echo "  $(blat "$tmp/$s.$RUNS.bstat0" "$tmp/$s.$RUNS.bstat1")"
        grep -h "deadline stats (exit)" "$tmp/$s.$RUNS.s2.log" | sed 's/.*deadline stats/  deadline stats/' || true
        sed 's/^/  /' "$tmp/$s.$RUNS.slowdisk" 2>/dev/null || true
    done
fi
table | tee ${OUT:+"$OUT"}
