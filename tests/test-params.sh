#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every deadline-* parameter: its default, a valid value (seen in the
# filter's "settings" debug line), and invalid values (nbdkit refuses to
# start, exit status non-zero, one line of error naming the parameter);
# deadline-profile=seed at start and through the control socket.
source "$(dirname "$0")/functions.sh"
requires_filter
requires $NBDKIT --version

fails=0
settings ()
{
    $NBDKIT -v -U - --filter="$FILTER" memory 1M "$@" --run true 2>&1 |
        grep 'deadline: settings' | sed 's/.*deadline: settings//'
}

# Defaults.
line=$(settings)
for kv in scheduler=deadline read_expire=500ms write_expire=5s fifo_batch=64 \
          seek_cost=16 writes_starved=2 front_merges=on max_merge=256k "depth=auto<=64" \
          anticipate=20ms preempt=on preempt_min=16 \
          max_inflight=0 dispatch=auto inline=on; do
    case " $line " in
        *" $kv "*) ;;
        *) echo "FAIL: default $kv not in:$line"; fails=$((fails+1)) ;;
    esac
done

# Valid values: parameter, value, how the settings line shows it.
valid=(
  "scheduler noop scheduler=noop"
  "scheduler elevator scheduler=elevator"
  "read-expire 250ms read_expire=250ms"
  "read-expire 2s read_expire=2s"
  "write-expire 10s write_expire=10s"
  "fifo-batch 16 fifo_batch=16"
  "seek-cost 4 seek_cost=4"
  "writes-starved 4 writes_starved=4"
  "front-merges off front_merges=off"
  "max-merge 256k max_merge=256k"
  "anticipate 2ms anticipate=2ms"
  "preempt off preempt=off"
  "preempt-min 8 preempt_min=8"
  "depth 32 depth=32"
  "depth 2 depth=2"
  "depth auto depth=auto<=64"
  "max-inflight 16M max_inflight=16777216"
  "dispatch next dispatch=next"
  "inline off inline=off"
  "inline on inline=on"
)
for v in "${valid[@]}"; do
    set -- $v
    line=$(settings "deadline-$1=$2")
    case " $line " in
        *" $3 "*) echo "ok: deadline-$1=$2" ;;
        *) echo "FAIL: deadline-$1=$2: expected $3 in:$line"; fails=$((fails+1)) ;;
    esac
done

# Invalid values.
invalid=(
  scheduler=cfq scheduler=
  read-expire=1x read-expire=-5ms
  write-expire=abc
  fifo-batch=0 fifo-batch=x
  seek-cost=x
  writes-starved=many
  front-merges=maybe
  max-merge=1Q
  anticipate=x
  preempt=maybe
  preempt-min=-1
  depth=0 depth=5000 depth=two
  max-inflight=1 max-inflight=lots
  dispatch=sideways
  inline=maybe inline=
  profile=fast profile=
  bogus=1
)
for kv in "${invalid[@]}"; do
    err=$($NBDKIT -U - --filter="$FILTER" memory 1M "deadline-$kv" --run true 2>&1)
    rc=$?
    key=${kv%%=*}
    nlines=$(printf '%s\n' "$err" | grep -c .)
    if [ $rc -ne 0 ] && [ "$nlines" = 1 ] && [[ "$err" == *"deadline-$key"* ]]; then
        echo "ok: deadline-$kv refused: $err"
    else
        echo "FAIL: deadline-$kv: rc=$rc, $nlines lines: $err"
        fails=$((fails+1))
    fi
done

# direct where it cannot be proven.
err=$($NBDKIT -U - --filter="$FILTER" memory 1M deadline-dispatch=direct --run true 2>&1)
rc=$?
if [ $rc -ne 0 ] && [ "$(printf '%s\n' "$err" | grep -c .)" = 1 ]; then
    echo "ok: deadline-dispatch=direct over memory refused: $err"
else
    echo "FAIL: deadline-dispatch=direct over memory: rc=$rc: $err"; fails=$((fails+1))
fi

# deadline-profile=seed: every tunable beyond the 2002 patch off, in the
# settings line at start and through the control socket at run time
# (get names the profile and its values); a tunable given beside it
# still applies, and then the profile is "custom".
seed_kvs="write_expire=0s max_merge=130560 anticipate=0s preempt=off size_cost=off seed_batches=on read_expire=500ms fifo_batch=64"
line=$(settings deadline-profile=seed)
for kv in $seed_kvs; do
    case " $line " in
        *" $kv "*) ;;
        *) echo "FAIL: deadline-profile=seed: $kv not in:$line"; fails=$((fails+1)) ;;
    esac
done
line=$(settings deadline-fifo-batch=8 deadline-profile=seed)
case " $line " in
    *" fifo_batch=8 "*" anticipate=0s "*) echo "ok: deadline-fifo-batch=8 deadline-profile=seed" ;;
    *) echo "FAIL: deadline-fifo-batch=8 deadline-profile=seed:$line"; fails=$((fails+1)) ;;
esac
CTL=$abs_top_builddir/src/ctl/nbd-deadline-ctl
if [ ! -x "$CTL" ]; then
    echo "FAIL: $CTL not built"; fails=$((fails+1))
else
    start_nbdkit "$tmpdir/nbd" --filter="$FILTER" memory 1M \
        deadline-profile=seed deadline-control="$tmpdir/ctl" || fails=$((fails+1))
    got=$("$CTL" -s "$tmpdir/ctl" --raw get profile write_expire anticipate preempt \
              size_cost seed_batches max_merge | tr '\n' ' ')
    want="profile seed write_expire 0s anticipate 0s preempt off size_cost off seed_batches on max_merge 130560 "
    if [ "$got" = "$want" ]; then
        echo "ok: control socket: $got"
    else
        echo "FAIL: control socket get: '$got', expected '$want'"; fails=$((fails+1))
    fi
    # A tunable set at run time leaves the profile: custom; setting the
    # profile again restores it.
    "$CTL" -s "$tmpdir/ctl" set anticipate=5ms >/dev/null
    got=$("$CTL" -s "$tmpdir/ctl" --raw get profile anticipate | tr '\n' ' ')
    [ "$got" = "profile custom anticipate 5ms " ] ||
        { echo "FAIL: after set anticipate=5ms: '$got'"; fails=$((fails+1)); }
    "$CTL" -s "$tmpdir/ctl" set profile=seed >/dev/null
    got=$("$CTL" -s "$tmpdir/ctl" --raw get profile anticipate | tr '\n' ' ')
    [ "$got" = "profile seed anticipate 0s " ] ||
        { echo "FAIL: after set profile=seed: '$got'"; fails=$((fails+1)); }
    stop_nbdkit "$tmpdir/nbd"
fi

# --help documents every parameter.
help=$($NBDKIT --filter="$FILTER" memory --help 2>&1)
for p in scheduler read-expire write-expire fifo-batch seek-cost writes-starved \
         front-merges max-merge anticipate preempt preempt-min depth max-inflight dispatch \
         profile; do
    [[ "$help" == *"deadline-$p="* ]] || { echo "FAIL: --help lacks deadline-$p"; fails=$((fails+1)); }
done

[ $fails -eq 0 ] || { echo "$0: $fails failures"; exit 1; }
echo "$0: PASS"
