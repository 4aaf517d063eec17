#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nbd-deadline: the kernel and initramfs of the AMIW guest (tests/vm).
#
#   tests/vm/mkinitramfs.sh        # prints "KERNEL INITRAMFS" on success
#
# Everything comes from Debian packages, fetched with `apt-get download`
# into the cache directory ($VM_CACHE, default /var/cache/nbd-deadline-vm,
# outside the source tree so that reruns and CI reuse it):
#   linux-image-amd64 -> its linux-image-VERSION-amd64: vmlinuz and the
#       modules nbd, ext4, crc32c_generic, virtio_net, virtio_pci (with
#       what they depend on, in load order, read from each module's
#       .modinfo: no depmod needed);
#   busybox-static: the shell, mount, ip, find, xargs, cat, dd, md5sum...;
#   nbd-client, dbench (and its client.txt): dynamically linked, so the
#       shared libraries they need are copied from this machine (Debian 12
#       like the packages), those of libnl and popt from their packages;
#   mke2fs (as mkfs.ext4, for make check-vm) and /etc/mke2fs.conf from
#       this machine's e2fsprogs (build-aux/setup-deps installs it), with
#       its libraries.
# The guest's /init is tests/vm/guest-init.  The initramfs is named after
# a hash of its inputs, so a changed init or package rebuilds it and an
# unchanged one is reused.  Exit 77 (with the reason on stderr) when the
# packages cannot be had (no apt-get, no network to the Debian mirror).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${VM_CACHE:-/var/cache/nbd-deadline-vm}
skip () { echo "mkinitramfs: $*" >&2; exit 77; }
die () { echo "mkinitramfs: $*" >&2; exit 1; }

command -v apt-get >/dev/null || skip "no apt-get: cannot fetch the Debian packages"
command -v dpkg-deb >/dev/null || skip "no dpkg-deb"
mkdir -p "$cache/debs" || skip "cannot create $cache"
cd "$cache/debs"

# apt-get download as root warns that _apt cannot write here; harmless.
fetch ()        # PACKAGE...: download the ones not in the cache yet
{
    local p need=()
    for p in "$@"; do
        compgen -G "${p}_*.deb" >/dev/null || need+=("$p")
    done
    [ ${#need[@]} = 0 ] && return 0
    apt-get download "${need[@]}" >/dev/null 2>"$cache/apt.err" ||
        skip "apt-get download ${need[*]} failed: $(tail -1 "$cache/apt.err")"
}

fetch linux-image-amd64
meta=$(ls -t linux-image-amd64_*.deb | head -1)
kpkg=$(dpkg-deb -f "$meta" Depends | tr ',' '\n' | sed -n 's/^ *\(linux-image-[0-9][^ ]*\).*/\1/p' | head -1)
[ -n "$kpkg" ] || die "cannot tell the kernel package from $meta"
fetch "$kpkg" busybox-static nbd-client dbench libnl-3-200 libnl-genl-3-200 libpopt0
kdeb=$(ls -t "${kpkg}"_*.deb | head -1)
debs=("$kdeb" $(for p in busybox-static nbd-client dbench libnl-3-200 libnl-genl-3-200 libpopt0; do
                    ls -t "${p}"_*.deb | head -1; done))

hash=$( (sha256sum "$here/guest-init" "$here/mkinitramfs.sh"; printf '%s\n' "${debs[@]}") | sha256sum | cut -c1-16)
out=$cache/initramfs-$hash.gz
x=$cache/x-$hash
kver=${kpkg#linux-image-}
kernel=$cache/vmlinuz-$kver
if [ -s "$out" ] && [ -s "$kernel" ]; then
    echo "$kernel $out"
    exit 0
fi

rm -rf "$x" && mkdir -p "$x"
for d in "${debs[@]}"; do dpkg-deb -x "$d" "$x/pkg"; done
cp "$x/pkg/boot/vmlinuz-$kver" "$kernel"
mods=$x/pkg/lib/modules/$kver/kernel
[ -d "$mods" ] || die "no modules for $kver in $kdeb"

root=$x/root
mkdir -p "$root"/{bin,sbin,lib,lib64,proc,sys,dev,mnt,tmp,etc,usr/share}
cp "$x/pkg/bin/busybox" "$root/bin/busybox"
for a in $("$root/bin/busybox" --list); do
    [ -e "$root/bin/$a" ] || ln -s busybox "$root/bin/$a"
done
cp "$x/pkg/sbin/nbd-client" "$x/pkg/usr/bin/dbench" "$root/bin/"
mke2fs=$(command -v mke2fs || echo /sbin/mke2fs)
[ -x "$mke2fs" ] || die "mke2fs not found (apt-get install e2fsprogs)"
rm -f "$root/bin/mkfs.ext4"     # busybox's applet list may hold one
cp "$mke2fs" "$root/bin/mkfs.ext4"
[ -f /etc/mke2fs.conf ] && cp /etc/mke2fs.conf "$root/etc/"
cp "$x/pkg/usr/share/dbench/client.txt" "$root/usr/share/client.txt"
cp "$here/guest-init" "$root/init"
chmod 755 "$root/init"

# Shared libraries: this machine's (the same Debian release), except
# those the packages above brought.
libpath=$x/pkg/lib/x86_64-linux-gnu:$x/pkg/usr/lib/x86_64-linux-gnu
mkdir -p "$root/lib/x86_64-linux-gnu"
for b in "$root/bin/nbd-client" "$root/bin/dbench" "$root/bin/mkfs.ext4"; do
    LD_LIBRARY_PATH=$libpath ldd "$b" > "$x/ldd" || die "ldd $b failed"
    if grep -q 'not found' "$x/ldd"; then
        die "$(basename "$b") needs libraries this machine lacks: $(grep 'not found' "$x/ldd" | tr -s ' \t' ' ')"
    fi
    awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\/lib64\// { print $1 }' "$x/ldd" |
    while read -r l; do
        case $l in
            /lib64/*) cp -L "$l" "$root/lib64/" ;;
            *) cp -L "$l" "$root/lib/x86_64-linux-gnu/" ;;
        esac
    done
done

# Modules and their dependencies, in load order (depth first).
declare -A path seen
while read -r f; do
    n=${f##*/}; n=${n%.ko}; path[${n//-/_}]=$f
done < <(find "$mods" -name '*.ko')
order=()
want ()
{
    local n=${1//-/_} d f
    [ -n "${seen[$n]:-}" ] && return 0
    seen[$n]=1
    f=${path[$n]:-}
    [ -n "$f" ] || die "module $n not in $kdeb"
    for d in $(tr '\0' '\n' < "$f" | sed -n 's/^depends=//p' | tr ',' ' '); do
        want "$d"
    done
    order+=("$n")
}
# ext4 finds crc32c through the crypto API (a soft dependency).
for m in crc32c_generic ext4 nbd virtio_pci virtio_net; do want "$m"; done
mkdir -p "$root/lib/modules"
for n in "${order[@]}"; do cp "${path[$n]}" "$root/lib/modules/$n.ko"; done
printf '%s\n' "${order[@]}" > "$root/lib/modules/order"

(cd "$root" && find . | LC_ALL=C sort | "$root/bin/busybox" cpio -o -H newc 2>/dev/null) |
    gzip -1 > "$out.tmp"
mv "$out.tmp" "$out"
rm -rf "$x"
echo "$kernel $out"
