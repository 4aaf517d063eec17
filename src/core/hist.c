/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: a latency histogram for callers (the engine's per
 * direction latencies, the benchmarks).
 *
 * Log-linear buckets: values below 16 have a bucket each; above, every
 * power of two is cut into 8 equal buckets, so any value is known within
 * 1/8 of itself with 496 counters covering all of uint64_t.  Adding is a
 * count of leading zeros and an increment: cheap enough for every request.
 */
#include <config.h>

#include "dl-sched.h"

static unsigned
bucket_of (uint64_t v)
{
  unsigned e;

  if (v < 16)
    return (unsigned) v;
  e = 63 - (unsigned) __builtin_clzll (v);        /* 4 .. 63 */
  return 16 + (e - 4) * 8 + (unsigned) ((v >> (e - 3)) & 7);
}

static uint64_t
bucket_low (unsigned b)
{
  unsigned e, sub;

  if (b < 16)
    return b;
  e = (b - 16) / 8 + 4;
  sub = (b - 16) % 8;
  return (uint64_t) (8 + sub) << (e - 3);
}

static uint64_t
bucket_high (unsigned b)
{
  if (b < 16)
    return b;
  return bucket_low (b) + ((uint64_t) 1 << ((b - 16) / 8 + 1)) - 1;
}

void
dl_hist_add (struct dl_hist *h, uint64_t v)
{
  if (h->count == 0 || v < h->min)
    h->min = v;
  if (v > h->max)
    h->max = v;
  h->count++;
  h->sum += v;
  h->bucket[bucket_of (v)]++;
}

void
dl_hist_merge (struct dl_hist *dst, const struct dl_hist *src)
{
  unsigned i;

  if (src->count == 0)
    return;
  if (dst->count == 0 || src->min < dst->min)
    dst->min = src->min;
  if (src->max > dst->max)
    dst->max = src->max;
  dst->count += src->count;
  dst->sum += src->sum;
  for (i = 0; i < DL_HIST_BUCKETS; i++)
    dst->bucket[i] += src->bucket[i];
}

/* The middle of the bucket holding the p-th percentile, kept within the
 * observed minimum and maximum.
 */
uint64_t
dl_hist_percentile (const struct dl_hist *h, double p)
{
  uint64_t rank, seen = 0;
  unsigned i;

  if (h->count == 0)
    return 0;
  if (p <= 0)
    return h->min;
  if (p >= 100)
    return h->max;
  rank = (uint64_t) (p / 100.0 * (double) h->count + 0.999999);
  if (rank == 0)
    rank = 1;
  for (i = 0; i < DL_HIST_BUCKETS; i++) {
    seen += h->bucket[i];
    if (seen >= rank) {
      uint64_t lo = bucket_low (i), hi = bucket_high (i);
      uint64_t mid = lo + (hi - lo) / 2;

      if (mid < h->min)
        mid = h->min;
      if (mid > h->max)
        mid = h->max;
      return mid;
    }
  }
  return h->max;
}
