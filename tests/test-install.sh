#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# make install DESTDIR=... puts every file where Debian expects it:
# configured as a Debian package would be (--prefix=/usr --sysconfdir=/etc),
# built in a scratch directory from this source tree.  Checks the list of
# installed files exactly, and that the installed scripts and units name
# the installed paths.
source "$(dirname "$0")/functions.sh"
set -e
S=$abs_top_srcdir
requires test -x "$S/configure"
requires pkg-config --version
if [ -f "$S/config.status" ]; then
    # configure refuses a second, out-of-tree build of a configured tree.
    echo "$0: SKIP: $S is configured in place (make distclean there to run this)"
    exit 77
fi
fail () { echo "FAIL: $*"; exit 1; }

b=$tmpdir/build
dest=$tmpdir/dest
mkdir -p "$b"
( cd "$b" &&
  "$S/configure" --prefix=/usr --sysconfdir=/etc --localstatedir=/var \
      > configure.log 2>&1 ) || { tail -5 "$b/configure.log"; fail configure; }
# Only what is installed (not the tests and benchmarks).
for d in src/core src/engine src/filter src/ctl man etc systemd; do
    make -C "$b/$d" -j2 install DESTDIR="$dest" > "$b/install.log" 2>&1 ||
        { tail -20 "$b/install.log"; fail "make install in $d"; }
done

filterdir=$(pkg-config --variable=filterdir nbdkit)
unitdir=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || :)
gendir=$(pkg-config --variable=systemdsystemgeneratordir systemd 2>/dev/null || :)
: "${unitdir:=/usr/lib/systemd/system}" "${gendir:=/usr/lib/systemd/system-generators}"
have_man=$(grep -c '^POD2MAN = /' "$b/man/Makefile" || :)

expected=(
  /etc/nbd-deadline/example.conf
  /usr/sbin/nbd-deadline-ctl
  /usr/sbin/nbd-deadline-start
  "$filterdir/nbdkit-deadline-filter.so"
  "$unitdir/nbd-deadline@.service"
  "$unitdir/nbd-deadline@.socket"
  "$gendir/nbd-deadline-generator"
)
if [ "$have_man" = 1 ]; then
    expected+=(/usr/share/man/man1/nbdkit-deadline-filter.1
               /usr/share/man/man5/nbd-deadline.conf.5
               /usr/share/man/man8/nbd-deadline-ctl.8
               /usr/share/man/man8/nbd-deadline-start.8)
fi
( cd "$dest" && find . -type f -o -type l | sed 's|^\.||' | sort ) > "$tmpdir/got"
printf '%s\n' "${expected[@]}" | sort > "$tmpdir/want"
if ! diff -u "$tmpdir/want" "$tmpdir/got"; then
    fail "installed files differ from what Debian expects (- expected, + installed)"
fi
echo "installed:"; sed 's/^/  /' "$tmpdir/got"

for f in /usr/sbin/nbd-deadline-ctl /usr/sbin/nbd-deadline-start "$gendir/nbd-deadline-generator"; do
    [ -x "$dest$f" ] || fail "$f is not executable"
done
grep -qx 'ExecStart=/usr/sbin/nbd-deadline-start %i' "$dest$unitdir/nbd-deadline@.service" ||
    fail "ExecStart"
grep -qx '# Reads /etc/nbd-deadline/%i.conf; a missing or wrong file is' \
    "$dest$unitdir/nbd-deadline@.service" || fail "sysconfdir in the unit"
grep -q '^exec /usr/sbin/nbd-deadline-start --generate' "$dest$gendir/nbd-deadline-generator" ||
    fail "generator path"
start=$dest/usr/sbin/nbd-deadline-start
grep -q '^confdir=${NBD_DEADLINE_CONFDIR:-/etc/nbd-deadline}$' "$start" || fail "confdir"
grep -q "^filter=\${NBD_DEADLINE_FILTER:-$filterdir/nbdkit-deadline-filter.so}\$" "$start" ||
    fail "filter path in the launcher"
grep -q '^ctl=${NBD_DEADLINE_CTL:-/usr/sbin/nbd-deadline-ctl}$' "$start" || fail "ctl path"
# The installed tool runs (no build-tree paths baked in).
"$dest/usr/sbin/nbd-deadline-ctl" --version | grep -q '^nbd-deadline-ctl ' || fail "--version"
echo "$0: PASS"
