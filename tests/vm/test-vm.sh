#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nbd-deadline: `make check-vm`, the kernel NBD client through the filter.
#
# Debian's kernel under qemu (TCG) with nbd-client attaching the export
# of nbdkit --filter=deadline file /dev/loopA over the slow-disk fixture
# (bench/slowstack.sh: the filter's direct path, as users run it).  In
# the guest (tests/vm/guest-init, amiw.mode=check): mkfs.ext4 on the
# empty /dev/nbd0, VM_FILES (150) files of random data and one of 8 MiB,
# unmount, drop the caches, mount again, every file's md5 compared; the
# cat of every file with the disk idle, then again under a dd flood
# (VM_FLOOD_MB, 64 MiB rewritten with fsync in a loop), every file's md5
# compared again.  nbd0 keeps the kernel's queue defaults but for its
# scheduler, none, and writeback throttling, off (VM_WBT=0): the filter
# is the scheduler under test, and with the kernel's throttling the
# guest holds the flood back itself, so that even a scheduler that
# starves reads passes (tests/vm/README).  Then, on the host, with the guest and the stack
# gone: e2fsck -fn of the image and every file dumped with debugfs and
# compared with the sums the guest printed.  One boot, 1-3 minutes; the
# first run also downloads the kernel and packages (~75 MB) into
# /var/cache/nbd-deadline-vm (VM_CACHE).
#
# Passes when every check of the data passes and the flood cat (the
# median of VM_CATS, 3, cats under the flood: the path through the
# TCG guest and qemu's network is noisy on a loaded host) is at most
# VM_MAX_VS_IDLE times the idle cat (tests/vm/README gives the
# measurements behind the default).  VM_CONFIG (deadline) is the
# bench/slowstack.sh configuration, e.g. VM_CONFIG=elevator to see what a
# scheduler that favours the writes gives.
#
# Exit 77 (with the reason) without root, qemu-system-x86_64, FUSE,
# loop devices, or when the kernel packages cannot be downloaded; the
# check-vm target turns that into a failure in CI (CI=true).
set -u

srcdir=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${abs_top_srcdir:-$(cd "$srcdir/../.." && pwd)}
top_builddir=${abs_top_builddir:-$top_srcdir}
: "${FILTER:=$top_builddir/src/filter/.libs/nbdkit-deadline-filter.so}"
: "${SLOWDISK:=$top_builddir/bench/slowdisk/.libs/nbdkit-slowdisk-plugin.so}"
: "${CTL:=$top_builddir/src/ctl/nbd-deadline-ctl}"
: "${NBDKIT:=nbdkit}"
: "${VM_CONFIG:=deadline}" "${VM_FILES:=150}" "${VM_FLOOD_MB:=64}"
: "${VM_WARM:=10}" "${VM_CAT_TIMEOUT:=90}" "${VM_MAX_VS_IDLE:=5}"
: "${SLOWDISK_ARGS:=size=4G rate=20M}" "${QEMU_ACCEL:=tcg}" "${VM_MEM:=512}"
: "${VM_WBT:=0}" "${VM_CATS:=3}"
THREADS=128     # the kernel client's 128 tags (tests/vm/README)
export FILTER SLOWDISK CTL NBDKIT

skip () { echo "SKIP: $*"; exit 77; }
fail () { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || skip "needs root"
command -v qemu-system-x86_64 >/dev/null ||
    skip "qemu-system-x86_64 not installed (build-aux/setup-deps --vm)"
for p in nbdfuse fusermount3 losetup e2fsck debugfs md5sum; do
    command -v $p >/dev/null || skip "$p not installed"
done
[ -c /dev/fuse ] || skip "no /dev/fuse"
[ -e /dev/loop-control ] || skip "no loop devices"
[ -f "$FILTER" ] || fail "filter not built: $FILTER"
[ -f "$SLOWDISK" ] || fail "slowdisk plugin not built: $SLOWDISK"
probe=$(mktemp /tmp/check-vm-probe.XXXXXX)
truncate -s 1M "$probe"
if dev=$(losetup -f --show "$probe" 2>/dev/null); then
    losetup -d "$dev"; rm -f "$probe"
else
    rm -f "$probe"; skip "cannot attach a loop device"
fi

rc=0
vm=$("$srcdir/mkinitramfs.sh") || rc=$?
[ $rc = 77 ] && skip "no guest kernel/initramfs (reason above)"
[ $rc = 0 ] || fail "tests/vm/mkinitramfs.sh exited $rc"
read -r KERNEL INITRD <<< "$vm"

# shellcheck source=bench/slowstack.sh
. "$top_srcdir/bench/slowstack.sh"
# shellcheck source=tests/vm/boot.sh
. "$srcdir/boot.sh"
tmp=$(mktemp -d /tmp/check-vm.XXXXXX)
data=$(mktemp /dev/shm/check-vm-disk.XXXXXX)
SS_DIR=$tmp
QEMU_PID=
start=$(date +%s)

cleanup ()
{
    local rc=$?
    trap - EXIT INT TERM
    exec 4>&- 2>/dev/null
    ss_kill_wait "$QEMU_PID"
    ss_down
    rm -f "$data"
    if [ $rc = 0 ]; then
        rm -rf "$tmp"
    else
        echo "check-vm: logs kept in $tmp (the guest's console: $tmp/vm.console)"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "check-vm: $(basename "$KERNEL") under qemu $QEMU_ACCEL; config $VM_CONFIG;" \
     "slowdisk $SLOWDISK_ARGS; $VM_FILES files; flood $VM_FLOOD_MB MiB"
ss_up vm "$(ss_spec "$VM_CONFIG")" "$data" || fail "the stack did not come up (logs in $tmp)"

vm_boot "$tmp/qemu.log" "amiw.mode=check amiw.cats=$VM_CATS amiw.wbt=$VM_WBT amiw.files=$VM_FILES amiw.flood=dd amiw.mb=$VM_FLOOD_MB amiw.warm=$VM_WARM amiw.timeout=$VM_CAT_TIMEOUT"
# boot, mkfs, the files, two cats, the warm-up, with room to spare
limit=$(( $(date +%s) + 300 + (1 + VM_CATS) * VM_CAT_TIMEOUT + VM_WARM ))
res= guestfail= done=
while :; do
    left=$(( limit - $(date +%s) ))
    [ $left -gt 0 ] || { guestfail="the guest timed out"; break; }
    IFS= read -r -t "$left" line < "$tmp/ser.out" || {
        kill -0 "$QEMU_PID" 2>/dev/null || { guestfail="qemu exited (see $tmp/qemu.log)"; break; }
        continue
    }
    line=${line%$'\r'}
    echo "$line" >> "$tmp/vm.console"
    case $line in
        AMIW-INFO*) echo "check-vm: guest: ${line#AMIW-INFO }" ;;
        AMIW-SUM*) set -- ${line#AMIW-SUM }; echo "$1  $2" >> "$tmp/sums" ;;
        AMIW-SYNC*) sync; echo 3 > /proc/sys/vm/drop_caches; echo go >&4 ;;
        AMIW-RESULT*) res=${line#AMIW-RESULT }
                      limit=$(( $(date +%s) + 60 )) ;;   # unmount, power off
        AMIW-FAIL*) guestfail="guest: ${line#AMIW-FAIL }"; break ;;
        AMIW-DONE*) done=1; break ;;
    esac
done
for _ in $(seq 50); do kill -0 "$QEMU_PID" 2>/dev/null || break; sleep 0.1; done
exec 4>&-
ss_kill_wait "$QEMU_PID"; QEMU_PID=
# nbdkit stops (and the filter drains) before the image is read
ss_down
[ -z "$guestfail" ] || fail "$guestfail"
[ -n "$res" ] || fail "no result from the guest"
echo "check-vm: guest: $res"
[ -n "$done" ] || fail "the guest did not unmount and detach nbd0"

field () { tr ' ' '\n' <<< "$res" | sed -n "s/^$1=//p"; }
[ "$(field readback)" = ok ] || fail "files read back after a cache drop differ from what was written"
[ "$(field md5)" = ok ] || fail "files read under the flood differ from what was written"
n=$(wc -l < "$tmp/sums" 2>/dev/null || echo 0)
[ "$n" = $((VM_FILES + 1)) ] || fail "the guest printed $n sums, expected $((VM_FILES + 1))"

# The image as the backing holds it, with nothing of the guest's caches.
e2fsck -fn "$data" > "$tmp/e2fsck.log" 2>&1 || { cat "$tmp/e2fsck.log"; fail "e2fsck -fn: the filesystem is damaged"; }
mkdir "$tmp/dump"
debugfs -R "rdump /tree /big $tmp/dump" "$data" > "$tmp/debugfs.log" 2>&1 ||
    { cat "$tmp/debugfs.log"; fail "debugfs rdump failed"; }
(cd "$tmp/dump" && md5sum -c --quiet "$tmp/sums") > "$tmp/host-md5.log" 2>&1 ||
    { head -20 "$tmp/host-md5.log"; fail "files in the image differ from what the guest wrote"; }
echo "check-vm: the image: e2fsck clean, $n files as written"

idle=$(field idle) flood=$(field flood)
echo "check-vm: cat of $VM_FILES files: idle $idle s, under the flood $flood s (median of $(field floods | tr '/' ' '); bound: $VM_MAX_VS_IDLE x idle);" \
     "flood MiB/s alone $(field write_only_mibs), during the cat $(field write_mixed_mibs); $(( $(date +%s) - start )) s in all"
case $flood in '>'*) fail "the flood cat timed out (${flood#>} s)" ;; esac
case $idle in ''|-|'>'*) fail "no idle cat time ($idle)" ;; esac
awk -v f="$flood" -v i="$idle" -v m="$VM_MAX_VS_IDLE" 'BEGIN { exit !(f > m * i) }' &&
    fail "the flood cat ($flood s) is more than $VM_MAX_VS_IDLE x the idle cat ($idle s)"
echo "PASS"
