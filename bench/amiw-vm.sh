#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nbd-deadline: the AMIW through the real kernel NBD client, in a VM.
#
#   sudo bench/amiw-vm.sh [-r RUNS] [-c "CONFIG ..."] [-W dd|dbench|both]
#                         [-n FILES] [-f FLOOD_MB] [-T CAT_TIMEOUT]
#                         [-w WARM] [-t THREADS] [-G QUEUE] [-o FILE] [-k] [-v]
#
# bench/amiw.sh's client is nbdfuse, which hands the server at most ~10
# requests, so a write flood waits upstream of any scheduler.  The
# kernel's nbd driver queues deep (128 tags per connection), as the
# seed's block layer did.  Here the client is Linux itself: Debian's
# linux-image-amd64 booted under qemu (TCG; about 5 s to boot) with a
# tiny initramfs (tests/vm/mkinitramfs.sh: busybox, nbd-client, dbench,
# the nbd and ext4 modules; tests/vm/guest-init is its /init).  The
# guest reaches the host's nbdkit UNIX socket through qemu's user
# network (restrict=on: nothing else is reachable), a guestfwd of
# 10.0.2.100:10809 to a -chardev socket on nbdkit's socket.
#
# The stack, rebuilt for every configuration on a fresh copy of the same
# filesystem image (kept in /dev/shm), so every configuration sees the
# same layout:
#
#   slowdisk (nbdkit plugin, one modelled spindle)          --unix S1
#     -> nbdfuse M1/disk -> losetup --direct-io=on -> /dev/loopA (scheduler none)
#     -> nbdkit -t THREADS --filter=deadline file /dev/loopA ...  --unix S2
#        (the filter's direct path: io_uring, O_DIRECT; "plain" is
#         nbdkit file /dev/loopA without the filter)
#     -> qemu guestfwd -> guest: nbd-client -C 1 /dev/nbd0 (scheduler none)
#     -> ext4 mounted in the guest
#
# The image is made once on the host (mkfs.ext4 -d): tree/ (FILES small
# files, a sorted subset of /usr/include), md5 (their sums) and flood
# (FLOOD_MB MiB of random data that the dd flood rewrites in place).
# In the guest (tests/vm/guest-init): drop caches, time `cat` of every
# file (idle disk); the host drops its caches too; start the flood (dd:
# a loop of dd conv=notrunc,fsync of flood; dbench: dbench 4), let it run
# WARM s (the write-only MiB/s of nbd0 over that time, its first third
# left out), time the cat again (capped at CAT_TIMEOUT s, ">T"), with the
# MiB/s written meanwhile (the mixed load), check every file's md5.
#
# CONFIG: deadline, elevator, noop (deadline-scheduler=), plain,
# plain:k=v (file plugin parameters), qemu-nbd, and NAME:k=v,k=v for
# deadline-k=v parameters; LABEL=CONFIG names a row.  Default: the
# issue 8 set (seed-exact deadline, anticipation alone, preemption
# alone, both, elevator, noop) and the baselines (plain nbdkit file,
# plain cache=none, qemu-nbd --cache=none --aio=io_uring if installed).
#
# The guest's queue settings on nbd0 (-G, tests/vm/guest-init's
# amiw.queue): "filter" (default) leaves the baselines at the guest
# kernel's own settings and gives only the filter's configurations
# scheduler none and wbt_lat_usec=0 (the filter is then the only
# scheduler); "default" leaves every configuration at the guest's
# settings; "none" changes them for every one.  The table's queue
# column says what nbd0 had (as the guest read it back) for each row.
#
# Every table comes from one build (the commit is printed at the top)
# and one run of this script: each figure is the median of RUNS runs
# (at least 3 for a result; fewer marks the tables NOT A RESULT), with
# the spread (min-max) beside it, and the runs are interleaved across
# the configurations so that drift hits all alike.
# Options: -r runs (3), -W flood (dd), -n files (300), -f flood MiB
# (256), -T cat timeout (120), -w warm-up s (10), -t nbdkit threads of
# the scheduled server (128, the kernel client's queue depth; nbdkit's
# default 16 would leave the rest of the kernel's queue in the socket,
# in FIFO order), -o FILE also write the tables there, -k keep the work
# directory (logs, consoles), -v the filter's exit statistics and the
# slow disk's per configuration.  Env: FILTER, SLOWDISK (the .so
# files), SLOWDISK_ARGS ("size=4G rate=20M": tests/vm/README says why),
# VM_CACHE (the kernel/initramfs cache, /var/cache/nbd-deadline-vm),
# QEMU_ACCEL (tcg), VM_MEM (1024), VM_SMP (the guest's CPUs, 1),
# VM_TRACE=1 (the guest times the reads of the flood cat at nbd0 from
# header sent to reply header (socket, qemu and server) / reply data,
# medians in ms: read_server_recv_ms in the run lines; the rest of
# nbd_read_ms is spent in the guest; and where the idle and the flood
# cat's time went: its reads (data and file-system blocks), the nbd
# socket's send lock, nbd0's tags, the CPU: cat_wait_ms,
# tests/vm/guest-init says how).
# Needs root, /dev/fuse, loop devices, qemu-system-x86_64; exit 77 when
# qemu or the guest kernel cannot be had.  1 to 3 minutes a
# configuration and flood.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/slowstack.sh
. "$here/slowstack.sh"
# shellcheck source=tests/vm/boot.sh
. "$here/../tests/vm/boot.sh"
cmdline="$0${*:+ $*}"
RUNS=3 FLOODS=dd NFILES=300 FLOOD_MB=256 CAT_TIMEOUT=120 WARM=10 THREADS=128
KEEP=0 VERBOSE=0 OUT='' QUEUE=filter
CONFIGS=
while getopts "r:c:W:n:f:T:w:t:G:o:kv" o; do
    case $o in
        r) RUNS=$OPTARG ;; c) CONFIGS=$OPTARG ;; W) FLOODS=$OPTARG ;;
        n) NFILES=$OPTARG ;; f) FLOOD_MB=$OPTARG ;; T) CAT_TIMEOUT=$OPTARG ;;
        w) WARM=$OPTARG ;; t) THREADS=$OPTARG ;; o) OUT=$OPTARG ;;
        G) QUEUE=$OPTARG ;;
        k) KEEP=1 ;; v) VERBOSE=1 ;;
        *) sed -n '2,/^set -euo/p' "$0" | grep '^#' >&2; exit 2 ;;
    esac
done
[ "$FLOODS" = both ] && FLOODS="dd dbench"
: "${SLOWDISK_ARGS:=size=4G rate=20M}" "${QEMU_ACCEL:=tcg}" "${VM_MEM:=1024}"
: "${NBDKIT:=nbdkit}"
: "${CONFIGS:=$SS_CONFIGS_DEFAULT}"

ss_find_built "$here"

die () { echo "amiw-vm: $*" >&2; exit 1; }
skip () { echo "amiw-vm: SKIP: $*" >&2; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (loop devices, FUSE, drop_caches)"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
[ -f "$FILTER" ] || die "filter not built (set FILTER=)"
[ -f "$SLOWDISK" ] || die "slowdisk plugin not built (set SLOWDISK=)"
for p in nbdfuse fusermount3 losetup mkfs.ext4 md5sum; do
    command -v $p >/dev/null || skip "$p not found"
done
[ -c /dev/fuse ] || skip "/dev/fuse missing"
for f in $FLOODS; do
    case $f in dd|dbench) ;; *) die "-W: dd, dbench or both" ;; esac
done
case $QUEUE in filter|default|none) ;; *) die "-G: filter, default or none" ;; esac
for c in $CONFIGS; do
    [ "$(ss_spec "$c")" = qemu-nbd ] && { command -v qemu-nbd >/dev/null || die "qemu-nbd not installed (apt-get install qemu-utils)"; }
done
# what nbd0's queue gets in the guest for one configuration (SPEC)
guest_queue ()
{
    case $QUEUE in
        filter) if ss_is_baseline "$1"; then echo default; else echo none; fi ;;
        *) echo "$QUEUE" ;;
    esac
}
# the guest's report of nbd0's settings, from its console: "sched/wbt"
queue_seen ()
{
    sed -n 's/.*nbd0 scheduler: [^;]*\[\([^]]*\)\].*wbt_lat_usec \([0-9]*\).*/\1,wbt=\2/p' "$1" | head -1
}

rc=0
vm=$("$here/../tests/vm/mkinitramfs.sh") || rc=$?
[ $rc = 0 ] || { [ $rc = 77 ] && skip "no guest kernel/initramfs (see above)"; die "mkinitramfs failed"; }
read -r KERNEL INITRD <<< "$vm"

tmp=$(mktemp -d /tmp/amiw-vm.XXXXXX)
pristine=$(mktemp /dev/shm/amiw-vm-pristine.XXXXXX)
data=$(mktemp /dev/shm/amiw-vm-disk.XXXXXX)

SS_DIR=$tmp
SS_EXPORT=amiw          # the guest's nbd-client -N
QEMU_PID=

stack_down ()
{
    exec 4>&-
    ss_kill_wait "$QEMU_PID"; QEMU_PID=
    ss_down
}

cleanup ()
{
    local rc=$?
    trap - EXIT INT TERM
    stack_down
    rm -f "$data" "$pristine"
    if [ "$KEEP" = 1 ] || [ $rc -ne 0 ]; then
        echo "amiw-vm: logs kept in $tmp" >&2
    else
        rm -rf "$tmp"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# vm_run TAG FLOOD QUEUE: boot the guest, answer its SYNC, print its RESULT line
vm_run ()
{
    local tag=$1 flood=$2 queue=$3 line limit deadline_s
    vm_boot "$tmp/$tag.qemu.log" "amiw.flood=$flood amiw.mb=$FLOOD_MB amiw.warm=$WARM amiw.timeout=$CAT_TIMEOUT amiw.queue=$queue amiw.trace=${VM_TRACE:-0}"
    # boot, two cats, warm-up, md5 check, with room to spare
    limit=$(( $(date +%s) + 120 + 2 * CAT_TIMEOUT + WARM ))
    while :; do
        deadline_s=$(( limit - $(date +%s) ))
        [ $deadline_s -gt 0 ] || { echo "amiw-vm: $tag: the guest timed out" >&2; break; }
        IFS= read -r -t "$deadline_s" line < "$tmp/ser.out" || {
            kill -0 "$QEMU_PID" 2>/dev/null || { echo "amiw-vm: $tag: qemu exited" >&2; break; }
            continue
        }
        line=${line%$'\r'}
        echo "$line" >> "$tmp/$tag.console"
        case $line in
            AMIW-MARK*) ss_stats > "$tmp/$tag.${line#AMIW-MARK }" ;;
            AMIW-SYNC*) sync
                        # (set -e does not reach here: vm_run runs in $(...))
                        if ! echo 3 > /proc/sys/vm/drop_caches; then
                            echo "amiw-vm: $tag: dropping the host's page cache failed: the run would be invalid" >&2
                            break
                        fi
                        echo go >&4 ;;
            AMIW-RESULT*) echo "${line#AMIW-RESULT }"
                          # then unmount and power off; do not wait long
                          limit=$(( $(date +%s) + 45 )) ;;
            AMIW-FAIL*) echo "amiw-vm: $tag: guest: ${line#AMIW-FAIL }" >&2; break ;;
            AMIW-DONE*) break ;;
        esac
    done
    # the guest powers off after DONE
    for _ in $(seq 50); do kill -0 "$QEMU_PID" 2>/dev/null || break; sleep 0.1; done
    exec 4>&-
    ss_kill_wait "$QEMU_PID"; QEMU_PID=
}

# ---- the fixture: one ext4 image, copied for every configuration -----
commit=$(git -C "$here/.." describe --always --dirty --abbrev=10 2>/dev/null || echo '?')
echo "amiw-vm: command: $cmdline; commit $commit" >&2
echo "amiw-vm: slowdisk $SLOWDISK_ARGS; $NFILES files; flood ${FLOOD_MB} MiB; floods: $FLOODS; runs $RUNS; nbdkit -t $THREADS; $(basename "$KERNEL") under qemu $QEMU_ACCEL" >&2
size=$(sed -n 's/.*size=\([0-9]*[kKmMgGtT]\?\).*/\1/p' <<< "$SLOWDISK_ARGS")
mkdir -p "$tmp/stage/tree"
(cd /usr/include && find . -type f | LC_ALL=C sort | awk -v n="$NFILES" 'NR <= n' > "$tmp/files")
tar -C /usr/include -cf - -T "$tmp/files" | tar -C "$tmp/stage/tree" -xf -
(cd "$tmp/stage/tree" && tr '\n' '\0' < "$tmp/files" | xargs -0 md5sum) > "$tmp/stage/md5"
head -c "$((FLOOD_MB * 1048576))" /dev/urandom > "$tmp/stage/flood"
truncate -s "${size:-4G}" "$pristine"
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0,nodiscard -d "$tmp/stage" "$pristine"
nfiles=$(wc -l < "$tmp/files")
kib=$(du -sk "$tmp/stage/tree" | cut -f1)
rm -rf "$tmp/stage"

label () { ss_label "$1"; }
spec () { ss_spec "$1"; }

declare -A R
for run in $(seq "$RUNS"); do
    for fl in $FLOODS; do
        for c in $CONFIGS; do
            l=$(label "$c"); s=$(spec "$c"); tag="$fl.$l.$run"
            cp --sparse=always "$pristine" "$data"
            ss_up "$tag" "$s" "$data" || die "$tag: the stack did not come up (logs in $tmp)"
            res=$(vm_run "$tag" "$fl" "$(guest_queue "$s")")
            stack_down
            [ -n "$res" ] && res+=" queue=$(queue_seen "$tmp/$tag.console")"
            if [ -n "$res" ] && [ -f "$tmp/$tag.cat0" ] && [ -f "$tmp/$tag.cat1" ]; then
                for k in read read_queue read_device; do
                    res+=" filter_${k}_ms=$(ss_read_wait "$tmp/$tag.cat0" "$tmp/$tag.cat1" $k)"
                done
                # the flood cat's reads at the device, those sent while
                # a write was there, and the pieces kept back for them
                for k in read_device_latency_count reads_behind_write_total write_piece_waits_total; do
                    res+=" $k=$(ss_delta "$tmp/$tag.cat0" "$tmp/$tag.cat1" $k)"
                done
            fi
            [ -n "$res" ] && [ -f "$tmp/$tag.idle0" ] && [ -f "$tmp/$tag.idle1" ] &&
                res+=" filter_idle_read_ms=$(ss_read_wait "$tmp/$tag.idle0" "$tmp/$tag.idle1")"
            [ -n "$res" ] || die "$tag: no result (console: $tmp/$tag.console, kept)"
            case $res in *md5=ok*) ;; *) KEEP=1; die "$tag: files read under the flood differ: $res" ;; esac
            R[$fl.$l]+="$res|"
            echo "amiw-vm: run $run $fl $l: $res" >&2
        done
    done
done

# field KEY "res|res|": the values, one per line
field () { tr '|' '\n' <<< "$2" | grep . | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# spread: "[min-max]" of the values (">T" counts as T and marks it)
spread ()
{
    local gt=
    grep -q '>' <<< "$*" && gt=">"
    tr ' ' '\n' <<< "$*" | sed '/^-\?$/d' | tr -d '>' | sort -g | awk -v gt="$gt" '
        { v[NR] = $1 + 0 } END { if (!NR) print "-"; else printf "[%.2f-%s%.2f]", v[1], gt, v[NR] }'
}
median ()
{
    local gt=
    grep -q '>' <<< "$*" && gt=">"
    tr ' ' '\n' <<< "$*" | sed '/^-\?$/d' | tr -d '>' | sort -g | awk -v gt="$gt" '
        { v[NR] = $1 + 0 }
        END { if (!NR) { print "-"; exit }
              n = NR; m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2;
              printf "%s%.2f", gt, m }'
}
ratio () { awk -v a="${1#>}" -v b="${2#>}" -v g="${1//[^>]/}" 'BEGIN { if (b > 0) printf "%s%.1fx", g, a / b; else print "-" }'; }

table ()
{
    local fl c l ref mi mf wo wm q
    echo "amiw-vm: command: $cmdline"
    echo "commit: $commit (one build for every row); $(date -u '+%F %T') UTC; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    [ "$RUNS" -ge 3 ] || echo "NOT A RESULT: $RUNS run(s) per configuration (a result needs -r 3 or more); a format check only"
    for fl in $FLOODS; do
        case $fl in
            dd) echo "== kernel nbd client (VM): cat under dd ${FLOOD_MB} MiB conv=notrunc,fsync in a loop" ;;
            dbench) echo "== kernel nbd client (VM): cat under dbench 4" ;;
        esac
        ref=
        # (tests/vm/test-vm.sh reads columns 1-3: config, idle and flood medians)
        printf "%-16s %9s %10s %-15s %-13s %10s %9s %12s %12s %9s %-16s %10s %-16s %11s %9s  %s\n" config idle_cat_s flood_cat_s \
            "flood[min-max]" "idle[min-max]" flood/idle vs_first \
            wr_only_MiBs wr_mixed_MiBs mix/only "shares r+w=sum" nbd_rd_ms filt_rd=wait+dev filt_idle_ms guest_cpu "nbd0 queue (guest)"
        for c in $CONFIGS; do
            l=$(label "$c")
            mi=$(median $(field idle "${R[$fl.$l]}"))
            mf=$(median $(field flood "${R[$fl.$l]}"))
            wo=$(median $(field write_only_mibs "${R[$fl.$l]}"))
            wm=$(median $(field write_mixed_mibs "${R[$fl.$l]}"))
            q=$(field queue "${R[$fl.$l]}" | sort -u | tr '\n' ' ' | sed 's/ $//')
            [ -z "$ref" ] && ref=$mf
            printf "%-16s %9s %10s %-15s %-13s %10s %9s %12s %12s %9s %-16s %10s %-16s %11s %9s  %s\n" "$l" "$mi" "$mf" \
                "$(spread $(field flood "${R[$fl.$l]}"))" "$(spread $(field idle "${R[$fl.$l]}"))" \
                "$(ratio "$mf" "$mi")" \
                "$(ratio "$mf" "$ref")" "$wo" "$wm" "$(awk -v a="$wm" -v b="$wo" 'BEGIN { if (b > 0) printf "%.0f%%", 100 * a / b; else print "-" }')" \
                "$(awk -v i="$mi" -v f="${mf#>}" -v a="$wm" -v b="$wo" 'BEGIN { if (f > 0 && b > 0) printf "%.2f+%.2f=%.2f", i / f, a / b, i / f + a / b; else print "-" }')" \
                "$(median $(field nbd_read_ms "${R[$fl.$l]}"))" "$(median $(field filter_read_ms "${R[$fl.$l]}"))=$(median $(field filter_read_queue_ms "${R[$fl.$l]}"))+$(median $(field filter_read_device_ms "${R[$fl.$l]}"))" \
                "$(median $(field filter_idle_read_ms "${R[$fl.$l]}"))" \
                "$(median $(field cpu_busy "${R[$fl.$l]}" | cut -d/ -f1) | cut -d. -f1)/$(median $(field cpu_busy "${R[$fl.$l]}" | cut -d/ -f2) | cut -d. -f1)%" \
                "$(guest_queue "$(spec "$c")"): ${q:-?}"
        done
        echo "(medians of $RUNS run(s), spread [min-max] beside the cats; $nfiles files, $kib KiB; slowdisk $SLOWDISK_ARGS; nbdkit -t $THREADS;"
        echo " wr_*: MiB/s written to nbd0 by the flood alone and during the flood cat; shares: the reader's (idle cat / flood cat)
 and the writer's (mixed / alone) and their sum, how much of the disk did useful work; nbd_rd_ms: mean read latency at nbd0 during it;
 filt_rd=wait+dev: the same inside the filter, arrival to answer, for the reads that went to the device (not the
 readahead hits, which nbd_rd_ms counts), as the wait in the scheduler + the time at the device (medians of each);
 filt_idle_ms: the filter's mean read latency over the idle cat; guest_cpu: how busy the guest's one CPU was over
 the idle cat / the flood cat (a busy guest makes each read wait there, whatever the server does);
 nbd0 queue: -G $QUEUE; \"default\" is the guest kernel's own settings, \"none\" is scheduler none and wbt_lat_usec=0 set for
 that row; after the colon the scheduler and wbt_lat_usec the guest read back)"
        echo "raw flood cat s: $(for c in $CONFIGS; do l=$(label "$c"); printf '%s [%s] ' "$l" "$(field flood "${R[$fl.$l]}" | tr '\n' ' ' | sed 's/ $//')"; done)"
    done
    echo "configs: $(for c in $CONFIGS; do printf '%s=%s ' "$(label "$c")" "$(spec "$c")"; done)"
}

if [ "$VERBOSE" = 1 ]; then
    for fl in $FLOODS; do
        for c in $CONFIGS; do
            l=$(label "$c"); tag="$fl.$l.$RUNS"
            echo "== $fl $l (run $RUNS)"
            grep -h "deadline stats (exit)" "$tmp/$tag.s2.log" | sed 's/.*deadline stats/  deadline stats/' || true
            sed 's/^/  /' "$tmp/$tag.slowdisk" 2>/dev/null || true
        done
    done
fi
table | tee ${OUT:+"$OUT"}
