# SPDX-License-Identifier: BSD-3-Clause
# nbd-deadline: helpers for the integration tests (sourced).
#
#   requires CMD...          skip (exit 77) if CMD is not installed;
#                            fail (exit 1) if it is but does not run
#                            (requires test ...: skip unless the test holds)
#   requires_root            skip unless root
#   expect_dispatch SOCK P   fail unless the filter of the nbdkit at SOCK
#                            serves through path P (direct or next)
#   cleanup_fn CMD...        run CMD at exit, last registered first,
#                            whether the test passed, failed or was killed
#   start_nbdkit SOCK ARGS.. start nbdkit on a UNIX socket with a pidfile,
#                            wait until it serves, stop it at exit
#   stop_nbdkit SOCK         stop it now and wait for it to exit
#   nbdkit_log SOCK          the file holding its stderr (-v)
#   wait_sockets PID LOG S.. until server PID serves every socket S
#
# Tests run from the build tree's tests/ directory; FILTER is the
# filter's .so (make check sets it), NBDKIT the nbdkit binary.

set -u
# A pipeline fails if any of its commands fails, not only the last.
set -o pipefail
: "${NBDKIT:=nbdkit}"
: "${abs_top_builddir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${FILTER:=$abs_top_builddir/src/filter/.libs/nbdkit-deadline-filter.so}"
# In a sanitizer build configure points NBDKIT at a wrapper that
# preloads the runtime (build-aux/nbdkit-sanitized); SANITIZER_PRELOAD
# is set then too.
export NBDKIT FILTER

# Every test gets a scratch directory removed at exit.
tmpdir=$(mktemp -d "/tmp/nbd-deadline-test.XXXXXX")

_cleanup_cmds=()
cleanup_fn ()
{
    _cleanup_cmds+=("$*")
}

_run_cleanup ()
{
    local status=$? i
    trap '' INT TERM
    for (( i=${#_cleanup_cmds[@]}-1; i>=0; i-- )); do
        eval "${_cleanup_cmds[$i]}" || :
    done
    rm -rf "$tmpdir"
    exit $status
}
trap _run_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

requires ()
{
    local out
    if [ "$1" = test ] || [ "$1" = "[" ]; then
        if ! "$@" >/dev/null 2>&1; then
            echo "$0: SKIP: requires: $*"
            exit 77
        fi
        return 0
    fi
    # Not installed: a skip.  Installed but broken: a failure, never a
    # skip that hides it.
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "$0: SKIP: requires: $1 (not installed)"
        exit 77
    fi
    if ! out=$("$@" 2>&1 </dev/null); then
        echo "$0: FAIL: $* is installed but fails:"
        printf '%s\n' "$out" | tail -5
        exit 1
    fi
}

requires_root ()
{
    if [ "$(id -u)" != 0 ]; then
        echo "$0: SKIP: requires root"
        exit 77
    fi
}

requires_filter ()
{
    if [ ! -f "$FILTER" ]; then
        echo "$0: SKIP: filter not built: $FILTER"
        exit 77
    fi
}

# Kill the nbdkit we started (by its own pid) and wait for it to go.
_stop_pidfile ()
{
    local pidfile=$1 pid i
    [ -s "$pidfile" ] || return 0
    pid=$(cat "$pidfile")
    rm -f "$pidfile"
    kill "$pid" 2>/dev/null || return 0
    for (( i=0; i<100; i++ )); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    echo "$0: nbdkit $pid did not exit on SIGTERM; killing it" >&2
    kill -9 "$pid" 2>/dev/null || :
}

nbdkit_log ()
{
    echo "$1.log"
}

# dispatch_path SOCK: the path the filter of the nbdkit at SOCK really
# serves through, "direct" or "next": its last word on it, which is the
# line after the engine is made (get_ready).  The "dispatch=auto ->
# direct" line comes earlier and stays true when auto later falls back
# to next because the direct engine could not be made.
dispatch_path ()
{
    local line
    line=$(grep -E 'deadline: .*, depth (auto <= )?[0-9]+, [0-9]+ bytes in flight, align [0-9]+' \
               "$1.log" | tail -1)
    case "$line" in
        "") echo "none" ;;
        *"deadline: next layer, depth"*) echo next ;;
        *) echo direct ;;
    esac
}

# expect_dispatch SOCK PATH: fail (return 1, with the reason) unless the
# filter serves through PATH.
expect_dispatch ()
{
    local got
    got=$(dispatch_path "$1")
    if [ "$got" != "$2" ]; then
        echo "$0: FAIL: $1: the filter serves through '$got', not $2:" >&2
        grep 'deadline: ' "$1.log" | grep -v 'stats' | head -5 >&2
        return 1
    fi
    if [ "$2" = direct ] && grep -q 'direct unavailable' "$1.log"; then
        echo "$0: FAIL: $1: direct fell back: $(grep 'direct unavailable' "$1.log")" >&2
        return 1
    fi
}

start_nbdkit ()
{
    local sock=$1 i
    shift
    rm -f "$sock" "$sock.pid"
    # -v: the filter's debug lines (dispatch path, counters) go to the log.
    $NBDKIT -v -U "$sock" -P "$sock.pid" "$@" 2>"$sock.log" || {
        echo "$0: nbdkit failed to start:" >&2
        tail -5 "$sock.log" >&2
        return 1
    }
    cleanup_fn _stop_pidfile "$sock.pid"
    for (( i=0; i<100; i++ )); do
        if [ -s "$sock.pid" ] && [ -S "$sock" ]; then
            return 0
        fi
        sleep 0.1
    done
    echo "$0: nbdkit did not start serving $sock" >&2
    return 1
}

stop_nbdkit ()
{
    _stop_pidfile "$1.pid"
}

# Make a loop device over FILE (with any extra losetup options) into
# $loopdev; it is detached at exit.  (Not in $(...): the cleanup must be
# registered in this shell.)
make_loop ()
{
    local file=$1
    shift
    loopdev=$(losetup --show -f "$@" "$file") || return 1
    cleanup_fn losetup -d "$loopdev"
}

# Mount the export at SOCK as the file DIR/nbd with nbdfuse (unmounted
# at exit).  Fails if it does not appear within 10 s.
mount_nbdfuse ()
{
    local sock=$1 dir=$2 pid i
    mkdir -p "$dir"
    nbdfuse "$dir/nbd" --unix "$sock" 2>"$dir.nbdfuse.log" &
    pid=$!
    cleanup_fn "fusermount3 -u $dir 2>/dev/null || umount -l $dir 2>/dev/null; kill $pid 2>/dev/null; wait $pid 2>/dev/null"
    for (( i=0; i<100; i++ )); do [ -f "$dir/nbd" ] && return 0; sleep 0.1; done
    return 1
}

# wait_started LOG PID: until the integrity client (PID, writing LOG)
# has read the disk and runs its workload.
wait_started ()
{
    local i
    for (( i=0; i<400; i++ )); do
        grep -q 'workload started' "$1" && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

# wait_sockets PID LOG SOCK...: until every SOCK is a socket, while the
# server PID runs (it writes LOG).  Prints LOG and fails if the server
# exits or ten seconds pass first.
wait_sockets ()
{
    local pid=$1 log=$2 i s missing
    shift 2
    for (( i=0; i<100; i++ )); do
        missing=
        for s in "$@"; do [ -S "$s" ] || missing=$s; done
        [ -z "$missing" ] && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    cat "$log" >&2
    if kill -0 "$pid" 2>/dev/null; then
        echo "$0: no socket at $missing after 10 s" >&2
    else
        echo "$0: the server exited before serving $missing" >&2
    fi
    return 1
}

# faulted_run OUT ERRFILE SOCK OPS SEED: the integrity client (errors
# expected, -E) against SOCK; faults are switched on (ERRFILE created,
# as nbdkit's error filter watches it) once its workload has started,
# and off when it ends.  Its output is in OUT; returns its exit status.
faulted_run ()
{
    local out=$1 errfile=$2 sock=$3 ops=$4 seed=$5 client rc=0
    timeout 300 ./integrity -E -q -c 4 -d 16 -n "$ops" -s "$seed" -m "$tmpdir/model" "$sock" \
        >"$out" 2>&1 &
    client=$!
    wait_started "$out" $client || { echo "client did not start"; cat "$out"; kill $client 2>/dev/null; return 1; }
    touch "$errfile"
    wait $client || rc=$?
    rm -f "$errfile"
    return $rc
}

# ---- A slow block device (test-overlap.sh, test-sched-order.sh) ----

# requires_slow_device: skip unless make_slow_device can work here
# (root for the loop device, nbdfuse and /dev/fuse).
requires_slow_device ()
{
    requires_root
    requires nbdfuse --version
    requires fusermount3 --version
    requires losetup --version
    requires test -c /dev/fuse
}

# rest_needs_slow_device FAILS WHAT: for a test whose later parts need
# make_slow_device, after the earlier parts' verdict: where it cannot
# work here, exit 1 if FAILS (the earlier parts' failures) is not 0,
# else skip, saying WHAT ("the direct part needs") -- a skip, never
# a pass.
rest_needs_slow_device ()
{
    if [ "$(id -u)" != 0 ] || [ ! -c /dev/fuse ] ||
       ! command -v nbdfuse >/dev/null || ! command -v losetup >/dev/null; then
        [ "$1" = 0 ] || exit 1
        echo "$0: SKIP: $2 root, /dev/fuse, nbdfuse, losetup"
        exit 77
    fi
}

# make_slow_device DIR NBDKIT-ARGS...: a block device whose every
# request is served by "nbdkit NBDKIT-ARGS" (e.g. --filter=delay memory
# 64M delay-write=100ms): that nbdkit on DIR/bottom.sock, nbdfuse's file
# DIR/fuse/nbd over it, and a loop device over that file with direct
# I/O (so that no request is absorbed by the page cache) and no
# scheduler of its own.  The filter's direct path can then be given a
# slow device.  Sets $slowdev; everything is removed at exit.  (Not in
# $(...): the cleanups must be registered in this shell.)
make_slow_device ()
{
    local dir=$1 dev
    shift
    mkdir -p "$dir"
    start_nbdkit "$dir/bottom.sock" "$@" || return 1
    mount_nbdfuse "$dir/bottom.sock" "$dir/fuse" || {
        echo "$0: nbdfuse did not mount $dir/fuse" >&2; return 1; }
    make_loop "$dir/fuse/nbd" --direct-io=on || return 1
    dev=${loopdev#/dev/}
    if [ "$(cat "/sys/block/$dev/loop/dio")" != 1 ]; then
        echo "$0: $loopdev: direct I/O not enabled" >&2
        return 1
    fi
    echo none > "/sys/block/$dev/queue/scheduler" || return 1
    slowdev=$loopdev
}
