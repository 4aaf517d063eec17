/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the device depth, chosen from what the device does
 * (deadline-depth=auto; for the caller, which owns the depth).
 *
 * A scheduler orders only what waits in it, so the device should hold
 * as few units as keep it busy: on a disk with one head, two (one being
 * served, one ready behind it), and more only where the device serves
 * several at once (an SSD, a striped volume, a cloud disk), which shows
 * as more completions per second for more units in flight.  The
 * rotational flag cannot say which: virtual disks lie about it.  So the
 * depth is measured, as a hill climb:
 *
 *   - An epoch is at least AD_EPOCH_UNITS completions and AD_EPOCH_NS.
 *     Only saturated completions count (the caller had units waiting
 *     that the depth kept back): below the depth, the depth is not what
 *     limits the rate, and an epoch of mostly idle time says nothing.
 *   - From a measured base, the depth is doubled for one epoch (a
 *     probe).  It is kept if the device then completed at least
 *     AD_GAIN times as many units per second and no fewer bytes per
 *     second; else the depth goes back to the base.
 *   - Little's law says why this settles where it should: a device
 *     serving one unit at a time completes at the same rate at any
 *     depth (each unit just waits longer), so a probe never gains; one
 *     serving k at once gains until the depth passes k.
 *   - A failed probe is tried again after a hold (the load may have
 *     changed, or a probe was unlucky): AD_HOLD_EPOCHS epochs, doubled
 *     after each failure up to AD_HOLD_MAX, so that a disk with one
 *     head spends ever less of its time probing a depth it cannot use.
 *     A kept depth is checked downward the same way: halving it must
 *     not lose more than AD_GAIN's worth of rate, or the depth goes
 *     back up.
 *   - Beside the climb, a floor in device time: the device may always
 *     hold as many units as it completes in AD_DRAIN_NS, at the rate
 *     measured in the last saturated epoch.  A request kept back by the
 *     depth costs the server a hand-off (queued, woken, issued by
 *     another thread) where one given a slot is issued by its own
 *     thread; on a device that drains its queue faster than a reader
 *     would notice, holding requests back orders nothing worth the
 *     hand-offs, and where the server's CPU is the limit they cost
 *     throughput that no probe sees gained in one doubling (the gain
 *     comes when nearly every request finds a slot).  A disk that
 *     takes a millisecond or more per unit gets a floor of at most
 *     two, so there the climb alone decides, as before; on a fast one
 *     a read waits at most about AD_DRAIN_NS behind the device's queue.
 *
 * The caller reports each completion (dl_autodepth_done) and uses the
 * depth returned.  Pure: the clock is passed in.
 */
#include <config.h>

#include <string.h>

#include "dl-sched.h"

#define AD_EPOCH_UNITS 64
#define AD_EPOCH_NS (50 * 1000000ULL)
#define AD_GAIN 1.15
#define AD_HOLD_EPOCHS 16
#define AD_HOLD_MAX 512
#define AD_DRAIN_NS (2 * 1000000ULL)

void
dl_autodepth_init (struct dl_autodepth *a, uint32_t min, uint32_t max)
{
  memset (a, 0, sizeof *a);
  if (min < 1)
    min = 1;
  if (max < min)
    max = min;
  a->min = min;
  a->max = max;
  a->depth = a->climb = a->base = min;
  a->phase = DL_AD_MEASURE;
  a->hold_len = AD_HOLD_EPOCHS;
}

/* A rate measured at the current depth: go on from it. */
static void
decide (struct dl_autodepth *a, double ops, double bytes)
{
  switch (a->phase) {
  case DL_AD_MEASURE:           /* the base's rate: probe up */
    a->base_ops = ops;
    a->base_bytes = bytes;
    if (a->climb < a->max) {
      a->climb = a->climb * 2 > a->max ? a->max : a->climb * 2;
      a->phase = DL_AD_PROBE_UP;
    }
    else {
      a->phase = DL_AD_HOLD;
      a->hold = a->hold_len;
    }
    break;
  case DL_AD_PROBE_UP:
    if (ops >= AD_GAIN * a->base_ops && bytes >= a->base_bytes) {
      a->base = a->climb;       /* kept: measure from here */
      a->probes_kept++;
      a->hold_len = AD_HOLD_EPOCHS;
      a->phase = DL_AD_MEASURE;
      decide (a, ops, bytes);
      return;
    }
    a->climb = a->base;
    a->phase = DL_AD_HOLD;
    a->hold = a->hold_len;
    if (a->hold_len < AD_HOLD_MAX)
      a->hold_len *= 2;
    break;
  case DL_AD_HOLD:
    a->base_ops = ops;          /* the load may have changed */
    a->base_bytes = bytes;
    if (--a->hold > 0)
      break;
    if (a->base > a->min) {     /* does the device still need it? */
      a->climb = a->base / 2 < a->min ? a->min : a->base / 2;
      a->phase = DL_AD_PROBE_DOWN;
    }
    else
      a->phase = DL_AD_MEASURE;
    break;
  case DL_AD_PROBE_DOWN:
    if (ops * AD_GAIN > a->base_ops && bytes * AD_GAIN > a->base_bytes) {
      a->base = a->climb;       /* no loss worth the units: keep fewer */
      a->probes_down++;
    }
    else
      a->climb = a->base;
    a->phase = DL_AD_MEASURE;
    break;
  }
}

/* The units the device completes in AD_DRAIN_NS at `ops` a second. */
static uint32_t
drain_floor (const struct dl_autodepth *a, double ops)
{
  double units = ops * AD_DRAIN_NS / 1e9;

  return units >= a->max ? a->max : (uint32_t) units;
}

uint32_t
dl_autodepth_done (struct dl_autodepth *a, uint64_t now_ns, uint64_t bytes,
                   bool saturated)
{
  uint64_t span;

  if (a->epoch_start_ns == 0 || now_ns < a->epoch_start_ns) {
    a->epoch_start_ns = now_ns;     /* the first completion opens it */
    a->n = a->sat = a->bytes = 0;
    return a->depth;
  }
  a->n++;
  a->bytes += bytes;
  a->sat += saturated;
  span = now_ns - a->epoch_start_ns;
  if (a->n < AD_EPOCH_UNITS || span < AD_EPOCH_NS)
    return a->depth;

  /* Mostly not saturated: the load, not the depth, set the rate. */
  if (a->sat * 4 >= a->n * 3) {
    double ops = a->n * 1e9 / span;

    decide (a, ops, a->bytes * 1e9 / span);
    a->drain = drain_floor (a, ops);
  }
  else
    a->unsaturated++;
  a->depth = a->climb > a->drain ? a->climb : a->drain;
  a->epochs++;
  a->epoch_start_ns = now_ns;
  a->n = a->sat = a->bytes = 0;
  return a->depth;
}
