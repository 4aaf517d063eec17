# SPDX-License-Identifier: BSD-3-Clause
# nbd-deadline: the slow-disk stack under a scheduled nbdkit, sourced by
# bench/amiw-vm.sh and bench/amiw-fio.sh (bash); bench/amiw.sh builds its
# own stack and uses only ss_find_built, as do bench-fio.sh and bench-antic.sh.
#
#   slowdisk (nbdkit plugin, one modelled spindle, data in $data)  --unix $SS_DIR/s1.sock
#     -> nbdfuse $SS_DIR/m1/disk -> losetup --direct-io=on -> /dev/loopA (scheduler none)
#     -> nbdkit -t $THREADS --filter=deadline file /dev/loopA ...   --unix $SS_DIR/s2.sock
#        (the filter's direct path; CONFIG "plain" is nbdkit file /dev/loopA)
#
# CONFIG: deadline, elevator, noop (deadline-scheduler=), plain, or
# NAME:k=v,k=v (deadline-k=v each; plain:k=v passes k=v to the file
# plugin, e.g. plain:cache=none), or qemu-nbd (qemu-nbd --cache=none
# --aio=io_uring on /dev/loopA instead of nbdkit: the O_DIRECT server
# users would pick instead; export name $SS_EXPORT, default "").  The
# baselines (plain, plain:..., qemu-nbd) have no filter; ss_is_baseline
# says which a CONFIG is.  The caller sets SS_DIR (a work
# directory), FILTER, SLOWDISK, SLOWDISK_ARGS, THREADS, NBDKIT and
# calls ss_down from its exit trap.  Logs go to $SS_DIR/TAG.*.

SS_S1= SS_S2= SS_F1= SS_LOOP=

# The first of FILES that exists, as an absolute path.
ss_find_so ()
{
    local f
    for f in "$@"; do
        [ -f "$f" ] && { echo "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")"; return 0; }
    done
    return 1
}

# ss_find_built BENCHDIR: FILTER and SLOWDISK, unless the caller set them,
# from a tree built in place or in build/.
ss_find_built ()
{
    : "${FILTER:=$(ss_find_so "$1/../src/filter/.libs/nbdkit-deadline-filter.so" \
                             "$1/../build/src/filter/.libs/nbdkit-deadline-filter.so" || true)}"
    : "${CTL:=$(ss_find_so "$1/../src/ctl/nbd-deadline-ctl" \
                          "$1/../build/src/ctl/nbd-deadline-ctl" || echo nbd-deadline-ctl)}"
    : "${SLOWDISK:=$(ss_find_so "$1/slowdisk/.libs/nbdkit-slowdisk-plugin.so" \
                               "$1/../build/bench/slowdisk/.libs/nbdkit-slowdisk-plugin.so" || true)}"
}

ss_kill_wait ()         # PID: TERM, then KILL after 10 s; only our own children
{
    local pid=$1 i
    [ -n "$pid" ] || return 0
    kill "$pid" 2>/dev/null || return 0
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

ss_wait_for ()          # FILE SECONDS
{
    local i
    for i in $(seq $(( $2 * 10 ))); do [ -e "$1" ] && return 0; sleep 0.1; done
    echo "slowstack: timed out waiting for $1" >&2
    return 1
}

ss_down ()
{
    ss_kill_wait "$SS_S2"; SS_S2=
    [ -n "$SS_LOOP" ] && { losetup -d "$SS_LOOP" 2>/dev/null || true; SS_LOOP=; }
    if [ -n "$SS_F1" ]; then
        fusermount3 -u "$SS_DIR/m1/disk" 2>/dev/null || fusermount3 -u "$SS_DIR/m1" 2>/dev/null ||
            umount -l "$SS_DIR/m1/disk" 2>/dev/null || true
        ss_kill_wait "$SS_F1"; SS_F1=
    fi
    ss_kill_wait "$SS_S1"; SS_S1=
}

ss_up ()                # TAG CONFIG DATAFILE
{
    local tag=$1 spec=$2 data=$3 args=() kv
    mkdir -p "$SS_DIR/m1"
    rm -f "$SS_DIR/s1.sock" "$SS_DIR/s2.sock" "$SS_DIR/f1.pid" "$SS_DIR/ctl.sock"
    # shellcheck disable=SC2086
    $NBDKIT -f -v --unix "$SS_DIR/s1.sock" "$SLOWDISK" file="$data" $SLOWDISK_ARGS \
        stats="$SS_DIR/$tag.slowdisk" 2>"$SS_DIR/$tag.s1.log" &
    SS_S1=$!
    ss_wait_for "$SS_DIR/s1.sock" 10 || return 1
    nbdfuse -P "$SS_DIR/f1.pid" "$SS_DIR/m1/disk" --unix "$SS_DIR/s1.sock" 2>>"$SS_DIR/nbdfuse.log" &
    SS_F1=$!
    ss_wait_for "$SS_DIR/f1.pid" 10 || return 1
    SS_LOOP=$(losetup --direct-io=on -f --show "$SS_DIR/m1/disk") || return 1
    [ "$(cat /sys/block/"${SS_LOOP#/dev/}"/loop/dio)" = 1 ] ||
        { echo "slowstack: $SS_LOOP: direct I/O not enabled" >&2; return 1; }
    echo none > /sys/block/"${SS_LOOP#/dev/}"/queue/scheduler
    if [ "$spec" = qemu-nbd ]; then
        qemu-nbd --format=raw --cache=none --aio=io_uring --persistent --shared=8 \
            --export-name="${SS_EXPORT:-}" --socket="$SS_DIR/s2.sock" "$SS_LOOP" \
            2>"$SS_DIR/$tag.s2.log" &
        SS_S2=$!
        ss_wait_for "$SS_DIR/s2.sock" 20
        return
    elif [ "${spec%%:*}" = plain ]; then
        # plain:k=v,... passes k=v to the file plugin (e.g. cache=none)
        args=(file "$SS_LOOP")
        if [ "$spec" != "${spec#*:}" ]; then
            local IFS=,
            for kv in ${spec#*:}; do args+=("$kv"); done
            unset IFS
        fi
    else
        # a control socket, so that a benchmark can read the filter's
        # counters at the moments it cares about (ss_stats)
        args=(--filter="$FILTER" file "$SS_LOOP" deadline-scheduler="${spec%%:*}"
              deadline-control="$SS_DIR/ctl.sock")
        if [ "$spec" != "${spec#*:}" ]; then
            local IFS=,
            for kv in ${spec#*:}; do args+=("deadline-$kv"); done
            unset IFS
        fi
    fi
    # -v for the filter's exit statistics line
    $NBDKIT -f -v -t "$THREADS" --unix "$SS_DIR/s2.sock" "${args[@]}" 2>"$SS_DIR/$tag.s2.log" &
    SS_S2=$!
    ss_wait_for "$SS_DIR/s2.sock" 20
}

# LABEL=CONFIG names a row; a bare CONFIG is its own label.
# ss_stats: the filter's counters now, as raw "key value" lines (nothing
# for plain, which has no filter)
ss_stats ()
{
    [ -S "$SS_DIR/ctl.sock" ] || return 0
    "${CTL:-nbd-deadline-ctl}" -s "$SS_DIR/ctl.sock" --raw stats 2>/dev/null || true
}

# ss_read_wait BEFORE AFTER [NAME]: mean latency inside the filter (ms)
# of the reads between two ss_stats snapshots: NAME read (the default:
# arrival to answer), read_queue (arrival to dispatch: waiting in the
# scheduler) or read_device (dispatch to completion); "-" when none
ss_read_wait ()
{
    awk -v k="${3:-read}" 'FNR == 1 { f++ } { v[f, $1] = $2 }
        END { n = v[2, k "_latency_count"] - v[1, k "_latency_count"]
              if (n <= 0) { print "-"; exit }
              printf "%.1f", (v[2, k "_latency_sum_us"] - v[1, k "_latency_sum_us"]) / n / 1000 }' "$1" "$2"
}

# ss_delta BEFORE AFTER KEY: how much the counter KEY grew between two
# ss_stats snapshots ("-" when it is in neither)
ss_delta ()
{
    awk -v k="$3" 'FNR == 1 { f++ } $1 == k { v[f] = $2; seen = 1 }
        END { if (seen) printf "%d", v[2] - v[1]; else print "-" }' "$1" "$2"
}

ss_label () { case $1 in *=*:*|*=plain|*=elevator|*=noop|*=deadline|*=qemu-nbd) echo "${1%%=*}" ;; *) echo "$1" ;; esac; }
ss_spec ()  { case $1 in *=*:*|*=plain|*=elevator|*=noop|*=deadline|*=qemu-nbd) echo "${1#*=}" ;; *) echo "$1" ;; esac; }
# ss_is_baseline SPEC: true for the servers without the filter
ss_is_baseline () { case $1 in plain|plain:*|qemu-nbd) return 0 ;; *) return 1 ;; esac; }

# The issue 8 set: seed-exact deadline, each mechanism alone, both,
# elevator, noop; and the baselines, measured in the same run: plain
# nbdkit file (page cache), the same with cache=none, and qemu-nbd
# --cache=none --aio=io_uring where it is installed.
SS_CONFIGS_DEFAULT="seed=deadline:anticipate=0,preempt=off antic=deadline:preempt=off \
preempt=deadline:anticipate=0 defaults=deadline elevator noop plain nocache=plain:cache=none"
if command -v qemu-nbd >/dev/null; then SS_CONFIGS_DEFAULT+=" qemu-nbd"; fi
