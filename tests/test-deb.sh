#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Debian package: dpkg-buildpackage -us -uc builds it from a copy of
# this source tree, lintian finds no error in it, and the files it
# installs, unpacked into a scratch root, serve an export: the packaged
# launcher reads a configuration, runs nbdkit with the packaged filter,
# and the packaged nbd-deadline-ctl reads its statistics.
#
# The package is built from the source, whatever this build's flags: it
# runs once, in the plain build (under the sanitizers it skips).
source "$(dirname "$0")/functions.sh"
set -e
S=$abs_top_srcdir
fail () { echo "FAIL: $*"; exit 1; }

if [ -n "${SANITIZER_PRELOAD:-}" ]; then
    echo "$0: SKIP: the package does not depend on this build's flags (it runs in the plain build)"
    exit 77
fi
requires dpkg-buildpackage --version
requires test -x /usr/bin/dh
requires lintian --version
requires git --version
requires test -d "$S/.git" -o -f "$S/.git"
requires test -x ./integrity

# A copy of the tree as git sees it (tracked and new files, with their
# changes; not the builds or what autoreconf made in place).
src=$tmpdir/nbd-deadline
mkdir -p "$src"
( cd "$S" && git ls-files -z --cached --others --exclude-standard |
      tar --null -T - -cf - ) | tar -C "$src" -xf -
[ -f "$src/debian/control" ] || fail "debian/control is missing"

# (Not with this make check's variables: TESTS= would reach the
# package's own make check.)
( cd "$src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u TESTS \
      dpkg-buildpackage -us -uc -b ) > "$tmpdir/build.log" 2>&1 ||
    { tail -30 "$tmpdir/build.log"; fail "dpkg-buildpackage -us -uc -b"; }
# The package build ran the core's tests (debian/rules, dh_auto_test).
grep -q '^# PASS: *[1-9]' "$tmpdir/build.log" || fail "the package build ran no core tests"
! grep -q '^# FAIL: *[1-9]' "$tmpdir/build.log" || fail "core tests failed in the package build"

deb=$(ls "$tmpdir"/nbd-deadline_*_*.deb)
[ -f "$deb" ] || fail "no .deb made"
echo "built: $(basename "$deb")"

lintian --fail-on error "$deb" > "$tmpdir/lintian" 2>&1 ||
    { cat "$tmpdir/lintian"; fail "lintian reports errors"; }
sed 's/^/lintian: /' "$tmpdir/lintian"

dpkg-deb -f "$deb" Depends | grep -q 'nbdkit (>= 1.32)' ||
    fail "Depends lacks nbdkit: $(dpkg-deb -f "$deb" Depends)"
dpkg-deb -f "$deb" Depends | grep -q 'liburing' ||
    fail "Depends lacks liburing (shlibs): $(dpkg-deb -f "$deb" Depends)"

root=$tmpdir/root
dpkg-deb -x "$deb" "$root"
filterdir=$(pkg-config --variable=filterdir nbdkit)
unitdir=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || :)
: "${unitdir:=/lib/systemd/system}"
for f in "$filterdir/nbdkit-deadline-filter.so" \
         /usr/sbin/nbd-deadline-ctl /usr/sbin/nbd-deadline-start \
         "$unitdir/nbd-deadline@.service" "$unitdir/nbd-deadline@.socket" \
         /etc/nbd-deadline/example.conf \
         /usr/share/man/man1/nbdkit-deadline-filter.1.gz \
         /usr/share/man/man5/nbd-deadline.conf.5.gz \
         /usr/share/man/man8/nbd-deadline-ctl.8.gz \
         /usr/share/man/man8/nbd-deadline-start.8.gz \
         /usr/share/doc/nbd-deadline/copyright; do
    [ -f "$root$f" ] || fail "the package lacks $f"
done
# Configuration files are conffiles: an upgrade keeps the admin's edits.
dpkg-deb -e "$deb" "$tmpdir/control"
grep -qx /etc/nbd-deadline/example.conf "$tmpdir/control/conffiles" ||
    fail "example.conf is not a conffile"

# Serve from the packaged files: the launcher with the packaged filter
# and tool (the environment points it into the scratch root, as the
# installed paths would be on a real system).
export NBD_DEADLINE_FILTER=$root$filterdir/nbdkit-deadline-filter.so
export NBD_DEADLINE_CTL=$root/usr/sbin/nbd-deadline-ctl
export NBD_DEADLINE_CONFDIR=$tmpdir/etc
mkdir -p "$NBD_DEADLINE_CONFDIR"
disk=$tmpdir/disk.img
truncate -s 64M "$disk"
cat > "$NBD_DEADLINE_CONFDIR/pkg.conf" <<EOF
backing = $disk
listen = unix:$tmpdir/pkg.sock
control = $tmpdir/pkg.ctl
EOF
"$root/usr/sbin/nbd-deadline-start" pkg 2>"$tmpdir/pkg.log" &
pid=$!
cleanup_fn "kill $pid 2>/dev/null; wait $pid 2>/dev/null"
wait_sockets $pid "$tmpdir/pkg.log" "$tmpdir/pkg.sock" "$tmpdir/pkg.ctl" ||
    fail "the packaged launcher does not serve"
# It is the packaged filter that nbdkit loaded, not a build tree's.
grep -q "$root$filterdir/nbdkit-deadline-filter.so" "/proc/$pid/maps" ||
    fail "nbdkit did not load the packaged filter"
./integrity -c 2 -d 8 -n 2000 -s 7 -m "$tmpdir/model" "$tmpdir/pkg.sock" >/dev/null ||
    fail "integrity through the packaged export"
"$NBD_DEADLINE_CTL" -s "$tmpdir/pkg.ctl" --raw stats > "$tmpdir/stats"
awk '$1=="completed_total" && $2>=2000 {ok=1} END {exit !ok}' "$tmpdir/stats" ||
    fail "packaged ctl stats: $(grep completed_total "$tmpdir/stats")"
kill $pid
wait $pid || fail "exit status $? after SIGTERM"
./integrity --compare "$disk" "$tmpdir/model" || fail "data on disk"
echo "served from the package: 2000 checked requests, stats read by the packaged tool"
echo "$0: PASS"
