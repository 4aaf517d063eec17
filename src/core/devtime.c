/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: what the device takes for a unit, learned from its
 * completions (beyond the seed).
 *
 * The seed counts a batch in requests, a seek as seek_cost of them:
 * right for the disk it was tuned on, and wrong for one of another
 * shape.  Where a seek takes 8 ms and a 128 KiB transfer about one, a
 * seek is worth six transfers; on a throttled volume that "seeks" in
 * 0.3 ms and takes 6 ms a transfer, it is worth a twentieth of one, and
 * a batch of 64 units lasts most of a second.  Budgets of time need the
 * device's own figures, so they are learned here, per direction:
 *
 *   time of a unit = access * (1 if it seeked, else 0) + bytes * ns_per_byte
 *
 * fitted by least squares over the recent units (sums that decay by
 * 1/DECAY a sample, so the fit follows a device that changes).  A
 * unit's time is from when the device could start on it to its
 * completion: the later of its dispatch and the device's previous
 * completion, because a device given two units serves the second after
 * the first (and one that serves several at once gives each its share
 * of the time between completions).  Flushes, trims and zeroes end a
 * unit's time like any other but teach nothing: their cost is not a
 * transfer.
 *
 * What the scheduler does with the figures is up to the rules above;
 * this file only measures, and stats show what it has learned.
 */
#include <config.h>

#include "sched-internal.h"

#define DECAY 64                /* samples: the fit's memory */
#define MIN_SAMPLES 8           /* before that, nothing is published */

void
devtime_dispatched (struct dl_sched *s, struct dl_req *u, uint64_t now)
{
  (void) s;
  u->dispatch_ns = now;
}

/* Solve the 2x2 normal equations of y = a*s + b*x.  With no seeked
 * units (s == 0), or every unit the same size, a and b cannot be told
 * apart: keep the access time learned before and fit the rate alone.
 */
static void
fit_solve (struct dl_fit *f)
{
  double det = f->s * f->xx - f->sx * f->sx;
  double a, b;

  if (f->xx <= 0)
    return;
  if (det > 1e-9 * f->s * f->xx) {
    a = (f->sy * f->xx - f->sx * f->xy) / det;
    b = (f->s * f->xy - f->sx * f->sy) / det;
    if (a < 0) {                /* noise: no access cost to speak of */
      a = 0;
      b = f->xy / f->xx;
    }
  }
  else {
    a = f->access_ns;
    b = (f->xy - a * f->sx) / f->xx;
  }
  if (b > 0) {
    f->access_ns = a;
    f->ns_per_byte = b;
  }
}

static void
fit_add (struct dl_fit *f, bool seeked, uint64_t bytes, uint64_t ns)
{
  const double keep = 1.0 - 1.0 / DECAY;
  double s = seeked ? 1 : 0, x = (double) bytes, y = (double) ns;

  f->s = f->s * keep + s;
  f->sx = f->sx * keep + s * x;
  f->xx = f->xx * keep + x * x;
  f->sy = f->sy * keep + s * y;
  f->xy = f->xy * keep + x * y;
  f->n++;
  fit_solve (f);
}

/* A double as a uint64_t, saturating: the clock is the caller's, and a
 * wild one must not make the conversion undefined.
 */
static uint64_t
saturate (double v)
{
  if (!(v > 0))
    return 0;
  if (v >= 18446744073709549568.0)      /* the largest double below 2^64 */
    return UINT64_MAX;
  return (uint64_t) v;
}

static void
publish (struct dl_sched *s, enum dl_dir d)
{
  const struct dl_fit *f = &s->dev.fit[d];

  if (f->n < MIN_SAMPLES || f->ns_per_byte <= 0)
    return;
  s->st.device_access_ns[d] = saturate (f->access_ns);
  s->st.device_rate[d] = saturate (1e9 / f->ns_per_byte);
}

void
devtime_done (struct dl_sched *s, struct dl_req *u, uint64_t now)
{
  uint64_t start = u->dispatch_ns > s->dev.last_done_ns ? u->dispatch_ns
                                                         : s->dev.last_done_ns;

  if (now > s->dev.last_done_ns)
    s->dev.last_done_ns = now;
  /* A unit sent in pieces (piece.c) shared its time with the reads
   * between them: its time says nothing of its size.
   */
  if ((u->op != DL_OP_READ && u->op != DL_OP_WRITE) || u->unit_length == 0 ||
      u->piece_length != 0 || now < start)
    return;
  /* A read ahead (ahead.c) was one transfer with the unit. */
  fit_add (&s->dev.fit[u->dir], u->seeked,
           u->unit_length + (u->dir == DL_READ ? u->ra_length : 0), now - start);
  publish (s, u->dir);
}

/* What a unit of this many bytes would take, by what has been learned
 * (0 while nothing has).
 */
uint64_t
devtime_estimate (const struct dl_sched *s, enum dl_dir d, uint64_t bytes,
                  bool seek)
{
  const struct dl_fit *f = &s->dev.fit[d];

  if (f->n < MIN_SAMPLES)
    return 0;
  return saturate ((seek ? f->access_ns : 0) + (double) bytes * f->ns_per_byte);
}

/* How many bytes the device transfers in this much time, by what has
 * been learned (0 while nothing has).
 */
uint64_t
devtime_bytes_in (const struct dl_sched *s, enum dl_dir d, uint64_t ns)
{
  const struct dl_fit *f = &s->dev.fit[d];

  if (f->n < MIN_SAMPLES || !(f->ns_per_byte > 0))
    return 0;
  return saturate ((double) ns / f->ns_per_byte);
}

/* What a seek adds to a unit's time, by what has been learned (0 while
 * nothing has).
 */
uint64_t
devtime_access (const struct dl_sched *s, enum dl_dir d)
{
  const struct dl_fit *f = &s->dev.fit[d];

  if (f->n < MIN_SAMPLES)
    return 0;
  return saturate (f->access_ns);
}
