#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A second user cannot use the control socket: the file is 0600, and
# even when its mode is opened up the server refuses a peer whose uid is
# neither its own nor root's (SO_PEERCRED).  Needs root (to be a second
# user: nobody, through setpriv).
source "$(dirname "$0")/functions.sh"
set -e
requires_filter
requires_root
requires setpriv --version
CTL=$abs_top_builddir/src/ctl/nbd-deadline-ctl
requires test -x "$CTL"
nobody_uid=$(id -u nobody) || { echo "$0: SKIP: no user nobody"; exit 77; }
as_nobody () { setpriv --reuid="$nobody_uid" --regid="$(id -g nobody)" --clear-groups "$@"; }
# nobody must be able to reach the directory, so that only the socket's
# own permissions and the server's check stand in the way.
chmod 755 "$tmpdir"
requires as_nobody test -x "$CTL"

ctl_sock=$tmpdir/ctl
start_nbdkit "$tmpdir/nbd" --filter="$FILTER" memory 16M deadline-control="$ctl_sock"
"$CTL" -s "$ctl_sock" ping | grep -qx ok

# The file mode keeps nobody out.
if as_nobody "$CTL" -s "$ctl_sock" stats 2>"$tmpdir/err"; then
    echo "FAIL: nobody read stats through a 0600 socket"; exit 1
fi
grep -q "Permission denied" "$tmpdir/err" || { cat "$tmpdir/err"; exit 1; }
echo "mode 0600: $(cat "$tmpdir/err")"

# With the mode opened, the server's peer check still refuses.
chmod 666 "$ctl_sock"
for cmd in stats "set read_expire=1ms" "scheduler noop"; do
    if as_nobody "$CTL" -s "$ctl_sock" $cmd 2>"$tmpdir/err"; then
        echo "FAIL: nobody ran '$cmd'"; exit 1
    fi
    grep -q "permission denied" "$tmpdir/err" || { cat "$tmpdir/err"; exit 1; }
done
echo "mode 0666: $(cat "$tmpdir/err")"
# Nothing changed.
"$CTL" -s "$ctl_sock" --raw get read_expire scheduler | tr '\n' ' ' |
    grep -qx 'read_expire 500ms scheduler deadline ' ||
    { echo "FAIL: a refused peer changed tunables"; exit 1; }
echo "$0: PASS"
