#!/usr/bin/env bash
# nbd-deadline: `make check-vm`, the AMIW through the kernel NBD client.
#
# Short form of bench/amiw-vm.sh: Debian's kernel under qemu (TCG) with
# nbd-client attaching the filter's export, ext4 on /dev/nbd0, 150 small
# files; cat of every file with the disk idle and under a dd flood, for
# the deadline filter with its defaults, elevator and plain nbdkit file,
# over the slow-disk fixture.  Every file read back under the flood is
# checked (amiw-vm.sh fails otherwise).  About 5 minutes; the first run
# also downloads the kernel and packages (~75 MB) into
# /var/cache/nbd-deadline-vm (VM_CACHE).
#
# Assertions (generous: it is a test, not the benchmark):
#   - every configuration produced a result and its md5 check passed;
#   - deadline's flood cat is at least VM_MIN_SPEEDUP (3) times faster
#     than elevator's (measured: 9x and more, bench/results/README);
#   - deadline's flood cat is at most VM_MAX_VS_IDLE (6) times its idle
#     cat (measured: 2.7-3.5x; elevator 30x).
# Skipped (77, with the reason) without root, qemu-system-x86_64, FUSE,
# loop devices, or when the kernel packages cannot be downloaded.
set -u

srcdir=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${abs_top_srcdir:-$(cd "$srcdir/../.." && pwd)}
top_builddir=${abs_top_builddir:-$top_srcdir}
: "${FILTER:=$top_builddir/src/filter/.libs/nbdkit-deadline-filter.so}"
: "${SLOWDISK:=$top_builddir/bench/slowdisk/.libs/nbdkit-slowdisk-plugin.so}"
: "${VM_MIN_SPEEDUP:=3}" "${VM_MAX_VS_IDLE:=6}"
export FILTER SLOWDISK

skip () { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
[ -c /dev/fuse ] || skip "no /dev/fuse"
[ -e /dev/loop-control ] || skip "no loop devices"
[ -f "$FILTER" ] || skip "filter not built: $FILTER"
[ -f "$SLOWDISK" ] || skip "slowdisk plugin not built: $SLOWDISK"
probe=$(mktemp /tmp/amiw-vm-probe.XXXXXX)
truncate -s 1M "$probe"
if dev=$(losetup -f --show "$probe" 2>/dev/null); then
    losetup -d "$dev"; rm -f "$probe"
else
    rm -f "$probe"; skip "cannot attach a loop device"
fi

out=$(mktemp /tmp/amiw-vm-table.XXXXXX)
trap 'rm -f "$out"' EXIT
rc=0
"$top_srcdir/bench/amiw-vm.sh" -n 150 -T 120 -c "deadline elevator plain" -o "$out" || rc=$?
[ $rc = 77 ] && skip "bench/amiw-vm.sh skipped (reason above)"
[ $rc = 0 ] || { echo "FAIL: bench/amiw-vm.sh exited $rc"; exit 1; }

flood () { awk -v c="$1" '$1 == c { print $3; exit }' "$out"; }
idle () { awk -v c="$1" '$1 == c { print $2; exit }' "$out"; }
d=$(flood deadline) e=$(flood elevator) p=$(flood plain) i=$(idle deadline)
echo "flood cat: deadline $d s (idle $i s), elevator $e s, plain $p s"
for v in "$d" "$e" "$p"; do
    [ -n "$v" ] || { echo "FAIL: a configuration has no result"; exit 1; }
done
case $d in '>'*) echo "FAIL: deadline's cat timed out under the flood"; exit 1 ;; esac
# (a timed-out elevator, ">T", counts as T: the ratio is then a floor)
if awk -v d="$d" -v e="${e#>}" -v k="$VM_MIN_SPEEDUP" 'BEGIN { exit !(d * k > e) }'; then
    echo "FAIL: deadline ($d s) not $VM_MIN_SPEEDUP x faster than elevator ($e s)"
    exit 1
fi
if awk -v d="$d" -v i="$i" -v m="$VM_MAX_VS_IDLE" 'BEGIN { exit !(d > m * i) }'; then
    echo "FAIL: deadline's flood cat ($d s) more than $VM_MAX_VS_IDLE x its idle cat ($i s)"
    exit 1
fi
echo "PASS"
