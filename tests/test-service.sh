#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The service: the units verify (systemd-analyze verify, with our man
# pages on MANPATH so that Documentation= is checked too); the unit's
# ExecStart, expanded as systemd would for an instance, started from the
# example configuration, serves an export that a libnbd client reads and
# writes, also under socket activation; the exports of one disk from
# one configuration ([export NAME] sections: one nbdkit, one scheduler,
# each export its class); configuration errors stop the start with one
# line naming the file, line and key (exit 78); the generator allows
# exactly the backings.
source "$(dirname "$0")/functions.sh"
set -e
requires_filter
requires test -x ./integrity
requires nbdinfo --version
B=$abs_top_builddir
S=$abs_top_srcdir
START=$B/src/ctl/nbd-deadline-start
export NBD_DEADLINE_CTL=$B/src/ctl/nbd-deadline-ctl
export NBD_DEADLINE_FILTER=$FILTER
export NBD_DEADLINE_CONFDIR=$tmpdir/etc
export NBD_DEADLINE_RUNDIR=$tmpdir/run
export NBDKIT
requires test -x "$START"
mkdir -p "$NBD_DEADLINE_CONFDIR"
fail () { echo "FAIL: $*"; exit 1; }
# Parts that cannot run here: the test is then a skip as a whole (exit
# 77 at the end, once every part that can run has passed), never a pass.
not_run=()

# ---- The units, as installed but pointing at this build ---------------
unit=$B/systemd/nbd-deadline@.service
installed_start=$(sed -n 's|^ExecStart=\([^ ]*\) .*|\1|p' "$unit")
[ "$(basename "$installed_start")" = nbd-deadline-start ] || fail "ExecStart: $installed_start"
mkdir -p "$tmpdir/units"
sed "s|$installed_start|$START|" "$unit" > "$tmpdir/units/nbd-deadline@.service"
cp "$S/systemd/nbd-deadline@.socket" "$tmpdir/units/"
if command -v systemd-analyze >/dev/null 2>&1; then
    mkdir -p "$tmpdir/man/man1" "$tmpdir/man/man5" "$tmpdir/man/man8"
    have_man=no
    if [ -f "$B/man/nbd-deadline-ctl.8" ] && command -v man >/dev/null 2>&1; then
        cp "$B/man/"*.1 "$tmpdir/man/man1/"
        cp "$B/man/"*.5 "$tmpdir/man/man5/"
        cp "$B/man/"*.8 "$tmpdir/man/man8/"
        have_man=yes
    fi
    ( cd "$tmpdir/units"
      cp nbd-deadline@.service nbd-deadline@t1.service
      cp nbd-deadline@.socket nbd-deadline@t1.socket
      MANPATH=$tmpdir/man systemd-analyze verify --man=$have_man \
          "$PWD/nbd-deadline@t1.service" "$PWD/nbd-deadline@t1.socket" ) \
        > "$tmpdir/verify" 2>&1 || { cat "$tmpdir/verify"; fail "systemd-analyze verify"; }
    if [ -s "$tmpdir/verify" ]; then
        cat "$tmpdir/verify"; fail "systemd-analyze verify is not clean"
    fi
    echo "systemd-analyze verify: clean (man pages checked: $have_man)"
    # The hardening, as systemd scores it (lower is better; 10 = none;
    # --threshold counts in tenths).
    if systemd-analyze security --offline=yes --threshold=30 \
           "$tmpdir/units/nbd-deadline@t1.service" > "$tmpdir/security" 2>&1; then
        tail -1 "$tmpdir/security"
    elif grep -q "Overall exposure" "$tmpdir/security"; then
        tail -1 "$tmpdir/security"; fail "exposure above 3"
    else
        cat "$tmpdir/security"; fail "systemd-analyze security --offline gave no score"
    fi
else
    not_run+=("systemd-analyze not installed: units not verified (apt-get install systemd)")
fi
for k in NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes DevicePolicy=closed \
         CapabilityBoundingSet= Restart=on-failure RestartPreventExitStatus=78; do
    grep -qx "$k" "$unit" || fail "unit lacks $k"
done

# ---- ExecStart as systemd expands it for instance t1 ------------------
execstart=$(sed -n 's|^ExecStart=||p' "$tmpdir/units/nbd-deadline@t1.service")
execstart=${execstart//%i/t1}
read -r -a cmd <<<"$execstart"
echo "ExecStart for t1: ${cmd[*]}"

disk=$tmpdir/disk.img
truncate -s 64M "$disk"
# The example, with every commented default uncommented (so that each
# documented default is also accepted), pointed at this test's files.
sed -e 's|^#\([a-z-]* =\)|\1|' \
    -e "s|^backing = .*|backing = $disk|" \
    -e "s|^listen = .*|listen = unix:$tmpdir/t1.sock|" \
    -e "s|^control = .*|control = $tmpdir/t1.ctl|" \
    -e "s|^export-name = .*|export-name = t1|" \
    "$S/etc/nbd-deadline/example.conf" > "$NBD_DEADLINE_CONFDIR/t1.conf"
grep -c '^[a-z]' "$NBD_DEADLINE_CONFDIR/t1.conf" | grep -qx 24 ||
    fail "expected 24 keys in the example: $(grep -c '^[a-z]' "$NBD_DEADLINE_CONFDIR/t1.conf")"
# (Options go before the instance name; ExecStart's last word is it.)
rc=0; "${cmd[@]:0:${#cmd[@]}-1}" --dry-run "${cmd[-1]}" >"$tmpdir/dry" 2>&1 || rc=$?
[ $rc = 0 ] || { cat "$tmpdir/dry"; fail "dry run: exit $rc"; }
# The dry run shows the nbdkit command it would run.
grep -q -- "--foreground .* file $disk deadline-control=$tmpdir/t1.ctl" "$tmpdir/dry" ||
    { cat "$tmpdir/dry"; fail "dry run does not show the nbdkit command for $disk"; }
"${cmd[@]}" 2>"$tmpdir/t1.log" &
pid=$!
cleanup_fn "kill $pid 2>/dev/null; wait $pid 2>/dev/null"
wait_sockets $pid "$tmpdir/t1.log" "$tmpdir/t1.sock" "$tmpdir/t1.ctl" ||
    fail "the service does not serve"
# It is nbdkit itself (exec), in the foreground, so systemd sees it.
[ "$(cat /proc/$pid/comm)" = nbdkit ] || fail "pid $pid is $(cat /proc/$pid/comm), not nbdkit"
nbdinfo "nbd+unix:///t1?socket=$tmpdir/t1.sock" | grep -q 'export-size: 67108864' ||
    fail "nbdinfo"
./integrity -c 2 -d 8 -n 3000 -s 21 -m "$tmpdir/model" "$tmpdir/t1.sock" >/dev/null ||
    fail "integrity through the service"
"$NBD_DEADLINE_CTL" -s "$tmpdir/t1.ctl" --raw stats > "$tmpdir/stats"
awk '$1=="completed_total" && $2>=3000 {ok=1} END {exit !ok}' "$tmpdir/stats" ||
    fail "stats: $(grep completed_total "$tmpdir/stats")"
# Stopped as systemd does (SIGTERM): a clean exit, sockets removed.
kill $pid
wait $pid || fail "exit status $? after SIGTERM"
[ ! -e "$tmpdir/t1.ctl" ] || fail "control socket left"
./integrity --compare "$disk" "$tmpdir/model" || fail "data on disk"
echo "service t1: served, read and written, stopped cleanly"

# ---- The exports of one disk: [export NAME] sections ------------------
truncate -s 32M "$tmpdir/db.img" "$tmpdir/backup.img"
printf '%s\n' "# two images of one disk, one scheduler" "listen = unix:$tmpdir/disk1.sock" \
    "read-expire = 300ms" "" "[export db]" "backing = $tmpdir/db.img" "class = rt" "" \
    "[export backup]" "backing = $tmpdir/backup.img" "class = idle" > "$NBD_DEADLINE_CONFDIR/disk1.conf"
"$START" --dry-run disk1 >"$tmpdir/dry1" 2>&1 || { cat "$tmpdir/dry1"; fail "dry run of disk1"; }
grep -q -- "file dir=$tmpdir/run/disk1.exports deadline-control=$tmpdir/run/disk1.ctl deadline-read-expire=300ms deadline-class=db:rt deadline-class=backup:idle" \
    "$tmpdir/dry1" || { cat "$tmpdir/dry1"; fail "dry run does not serve both exports from one nbdkit"; }
"$START" disk1 2>"$tmpdir/disk1.log" &
pid=$!
cleanup_fn "kill $pid 2>/dev/null; wait $pid 2>/dev/null"
wait_sockets $pid "$tmpdir/disk1.log" "$tmpdir/disk1.sock" "$tmpdir/run/disk1.ctl" ||
    fail "disk1 does not serve"
./integrity -x db -c 2 -d 8 -n 1500 -s 31 -m "$tmpdir/db.model" "$tmpdir/disk1.sock" >/dev/null &
ipid=$!
./integrity -x backup -c 2 -d 8 -n 1500 -s 32 -m "$tmpdir/backup.model" "$tmpdir/disk1.sock" >/dev/null ||
    fail "integrity on backup"
wait $ipid || fail "integrity on db"
"$NBD_DEADLINE_CTL" -s "$tmpdir/run/disk1.ctl" --raw stats > "$tmpdir/stats1"
for want in 'export_class{export_name="db",class="rt"} 1' 'export_class{export_name="backup",class="idle"} 1'; do
    grep -qxF "$want" "$tmpdir/stats1" || fail "stats lack '$want'"
done
awk '$1 ~ /^class_reads_total\{class="(rt|idle)"\}$/ && $2 > 0 { n++ } END { exit n != 2 }' "$tmpdir/stats1" ||
    fail "reads not counted in rt and idle: $(grep class_reads_total "$tmpdir/stats1")"
kill $pid
wait $pid || fail "disk1: exit status $? after SIGTERM"
./integrity --compare "$tmpdir/db.img" "$tmpdir/db.model" || fail "db's data"
./integrity --compare "$tmpdir/backup.img" "$tmpdir/backup.model" || fail "backup's data"
echo "service disk1: two exports, one nbdkit, classes rt and idle, data in place"

# ---- Socket activation (what nbd-deadline@t1.socket does) -------------
if command -v systemd-socket-activate >/dev/null 2>&1; then
    sed -i "s|^listen = .*|listen = unix:$tmpdir/unused.sock|" "$NBD_DEADLINE_CONFDIR/t1.conf"
    systemd-socket-activate -l "$tmpdir/sa.sock" \
        -E NBD_DEADLINE_CTL -E NBD_DEADLINE_FILTER -E NBD_DEADLINE_CONFDIR -E NBDKIT \
        -E PATH "${cmd[@]}" 2>"$tmpdir/sa.log" &
    sapid=$!
    cleanup_fn "kill $sapid 2>/dev/null; wait $sapid 2>/dev/null"
    for (( i=0; i<100; i++ )); do [ -S "$tmpdir/sa.sock" ] && break; sleep 0.1; done
    ./integrity -c 1 -d 8 -n 1000 -s 22 "$tmpdir/sa.sock" >/dev/null ||
        { cat "$tmpdir/sa.log"; fail "integrity through socket activation"; }
    [ ! -e "$tmpdir/unused.sock" ] || fail "listen used under socket activation"
    kill $sapid; wait $sapid || :
    echo "socket activation: served"
else
    not_run+=("systemd-socket-activate not installed: socket activation not run")
fi

# ---- Configuration errors: one line, file:line: key, exit 78 ----------
bad ()
{
    local expect=$1 conf=$NBD_DEADLINE_CONFDIR/bad.conf out rc=0
    shift
    printf '%s\n' "$@" > "$conf"
    out=$("$START" bad 2>&1) || rc=$?
    [ $rc = 78 ] || fail "exit $rc (not 78) for: $*: $out"
    [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "not one line: $out"
    case "$out" in
        *"$expect"*) echo "refused: $out" ;;
        *) fail "'$out' lacks '$expect'" ;;
    esac
}
bad "bad.conf: backing: missing" "read-expire = 100ms"
bad "bad.conf:2: read-expire=1x: read_expire: '1x' is not a duration" \
    "backing = $disk" "read-expire = 1x"
bad "bad.conf:1: depth: '0' is neither auto nor an integer" "depth = 0" "backing = $disk"
bad "bad.conf:2: color: unknown key" "backing = $disk" "color = blue"
bad "bad.conf:3: backing: already set on line 1" "backing = $disk" "" "backing = $disk"
bad "bad.conf:1: backing: $tmpdir/nope: No such file" "backing = $tmpdir/nope"
bad "bad.conf:1: backing: $tmpdir: not a block device or regular file" "backing = $tmpdir"
bad "bad.conf:2: listen: 'udp:1' is not unix:/PATH" "backing = $disk" "listen = udp:1"
bad "bad.conf:2: threads: 'many' is not an integer" "backing = $disk" "threads = many"
bad "bad.conf:2: readonly: 'maybe' is not yes or no" "backing = $disk" "readonly = maybe"
bad "bad.conf:1: 'just words' is not KEY = VALUE" "just words"
bad "bad.conf:1: backing: give it in each [export NAME] section" \
    "backing = $disk" "[export a]" "backing = $disk"
bad "bad.conf:3: read-expire: not a key of an export" "[export a]" "backing = $disk" "read-expire = 1s"
bad "bad.conf:3: class: 'fast' is not rt, be or idle" "[export a]" "backing = $disk" "class = fast"
bad "bad.conf:1: '[export a/b]' is not [export NAME]" "[export a/b]" "backing = $disk"
bad "bad.conf:1: export a: backing: missing" "[export a]" "class = rt"
bad "bad.conf:3: export a: already on line 1" "[export a]" "backing = $disk" "[export a]"
out=$("$START" missing 2>&1) && fail "a missing configuration started"
echo "refused: $out"

# A busy device: a loop device with a mounted file system on it.
if [ "$(id -u)" = 0 ] && command -v losetup >/dev/null && command -v mkfs.ext4 >/dev/null; then
    truncate -s 16M "$tmpdir/fs.img"
    mkfs.ext4 -q "$tmpdir/fs.img"
    make_loop "$tmpdir/fs.img" || fail "losetup as root"
    mkdir "$tmpdir/mnt"
    mount "$loopdev" "$tmpdir/mnt" || fail "mounting ext4 on $loopdev as root"
    cleanup_fn "umount $tmpdir/mnt 2>/dev/null"
    bad "bad.conf:1: backing: $loopdev: busy" "backing = $loopdev"
    umount "$tmpdir/mnt"
    # The generator gives the instance that device and nothing else.
    printf 'backing = %s\n' "$loopdev" > "$NBD_DEADLINE_CONFDIR/dev1.conf"
else
    not_run+=("not root, or no losetup/mkfs.ext4: the busy-device check and the device generator not run")
fi

# ---- The generator ----------------------------------------------------
rm -f "$NBD_DEADLINE_CONFDIR/bad.conf"
"$START" --generate "$tmpdir/gen"
grep -qx "ReadWritePaths=$disk" "$tmpdir/gen/nbd-deadline@t1.service.d/50-backing.conf" ||
    fail "generator: $(cat "$tmpdir/gen/nbd-deadline@t1.service.d/50-backing.conf")"
g=$tmpdir/gen/nbd-deadline@disk1.service.d/50-backing.conf
[ "$(grep -c '^ReadWritePaths=' "$g")" = 2 ] && grep -qx "ReadWritePaths=$tmpdir/db.img" "$g" &&
    grep -qx "ReadWritePaths=$tmpdir/backup.img" "$g" || fail "generator for disk1: $(cat "$g")"
if [ -f "$NBD_DEADLINE_CONFDIR/dev1.conf" ]; then
    grep -qx "DeviceAllow=$loopdev rw" "$tmpdir/gen/nbd-deadline@dev1.service.d/50-backing.conf" ||
        fail "generator for a device"
    cp "$tmpdir/gen/nbd-deadline@dev1.service.d/50-backing.conf" "$tmpdir/dropin"
fi
echo "generator: $(grep -h '^[A-Z]' "$tmpdir/gen"/*/50-backing.conf | tr '\n' ' ')"
if [ ${#not_run[@]} -gt 0 ]; then
    printf '%s\n' "${not_run[@]}"
    echo "$0: SKIP: the parts above could not run here"
    exit 77
fi
echo "$0: PASS"
