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
#   - deadline's flood cat is no slower than VM_MAX_VS_ELEVATOR (1.5)
#     times elevator's.
# Skipped (77, with the reason) without root, qemu-system-x86_64, FUSE,
# loop devices, or when the kernel packages cannot be downloaded.
set -u

srcdir=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${abs_top_srcdir:-$(cd "$srcdir/../.." && pwd)}
top_builddir=${abs_top_builddir:-$top_srcdir}
: "${FILTER:=$top_builddir/src/filter/.libs/nbdkit-deadline-filter.so}"
: "${SLOWDISK:=$top_builddir/bench/slowdisk/.libs/nbdkit-slowdisk-plugin.so}"
: "${VM_MAX_VS_ELEVATOR:=1.5}"
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
d=$(flood deadline) e=$(flood elevator) p=$(flood plain)
echo "flood cat: deadline $d s, elevator $e s, plain $p s"
for v in "$d" "$e" "$p"; do
    [ -n "$v" ] || { echo "FAIL: a configuration has no result"; exit 1; }
done
case $d in '>'*) echo "FAIL: deadline's cat timed out under the flood"; exit 1 ;; esac
if awk -v d="$d" -v e="${e#>}" -v m="$VM_MAX_VS_ELEVATOR" 'BEGIN { exit !(d > m * e) }'; then
    echo "FAIL: deadline ($d s) slower than $VM_MAX_VS_ELEVATOR x elevator ($e s)"
    exit 1
fi
echo "PASS"
