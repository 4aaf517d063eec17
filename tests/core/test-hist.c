/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (hist.c): a log-linear latency histogram whose percentiles are
 * within 12.5% of the true value; merge adds histograms.
 */
#include "testlib.h"

static int
near (uint64_t got, uint64_t want)
{
  double d = (double) got - (double) want;
  return (d < 0 ? -d : d) <= 0.125 * (double) want + 1;
}

int
main (void)
{
  static struct dl_hist h, a, b, empty;
  uint64_t v;

  CHECK_EQ (dl_hist_percentile (&empty, 50), 0);

  for (v = 1; v <= 100000; v++)
    dl_hist_add (&h, v * 1000);                 /* 1 us .. 100 ms */
  CHECK_EQ (h.count, 100000);
  CHECK_EQ (h.min, 1000);
  CHECK_EQ (h.max, 100000000);
  CHECK_EQ (h.sum, 1000ULL * 100000 * 100001 / 2);
  CHECK (near (dl_hist_percentile (&h, 50), 50000000));
  CHECK (near (dl_hist_percentile (&h, 90), 90000000));
  CHECK (near (dl_hist_percentile (&h, 99), 99000000));
  CHECK (near (dl_hist_percentile (&h, 99.9), 99900000));
  CHECK (dl_hist_percentile (&h, 100) <= h.max);
  CHECK (dl_hist_percentile (&h, 0) >= h.min);

  /* Small values are exact. */
  dl_hist_add (&a, 3);
  CHECK_EQ (dl_hist_percentile (&a, 50), 3);
  /* Huge values do not overflow the buckets. */
  dl_hist_add (&b, UINT64_MAX);
  dl_hist_add (&b, 0);
  CHECK_EQ (b.max, UINT64_MAX);
  CHECK (dl_hist_percentile (&b, 100) > (UINT64_MAX >> 1));

  dl_hist_merge (&a, &b);
  CHECK_EQ (a.count, 3);
  CHECK_EQ (a.min, 0);
  CHECK_EQ (a.max, UINT64_MAX);

  /* Merged into an empty histogram: the source's minimum, not 0. */
  {
    static struct dl_hist e, c;

    dl_hist_add (&c, 5000);
    dl_hist_add (&c, 7000);
    dl_hist_merge (&e, &c);
    CHECK_EQ (e.count, 2);
    CHECK_EQ (e.min, 5000);
    CHECK_EQ (e.max, 7000);
    CHECK (dl_hist_percentile (&e, 0) == 5000);
  }
  return test_result ("hist");
}
