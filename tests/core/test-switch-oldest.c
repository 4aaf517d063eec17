/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (mq-deadline's fix to the seed): a new batch in a new direction
 * starts at the oldest request of that direction, not at its lowest
 * offset (which starved high offsets); a new batch in the same
 * direction continues from the last position, or at the oldest when
 * nothing lies beyond it.
 */
#include "testlib.h"

static struct dl_req *
first_read_after (enum dl_op previous, struct dl_req **old, struct dl_req **low)
{
  struct dl_tunables t;
  struct dl_sched *s;
  struct dl_req *u;

  /* One unit per batch, so that every dispatch below starts a batch. */
  dl_tunables_default (&t);
  t.fifo_batch = 1;
  s = mksched (&t, 1);

  now = 0;
  ins (s, previous, 0, 4 * KiB);
  REQUIRE (dispatch_complete (s) != NULL);       /* one batch of it */
  now = 1 * MS;
  *old = ins (s, DL_OP_READ, 50 << 20, 4 * KiB);
  now = 2 * MS;
  *low = ins (s, DL_OP_READ, 1 << 20, 4 * KiB);
  ins (s, DL_OP_READ, 10 << 20, 4 * KiB);
  now = 3 * MS;                 /* nothing expired */
  u = dispatch_complete (s);
  CHECK_EQ (stats (s).batches[DL_READ], previous == DL_OP_READ ? 2 : 1);
  CHECK_EQ (stats (s).expired[DL_READ], 0);
  finish (s);
  return u;
}

int
main (void)
{
  struct dl_req *u, *old, *low;

  /* After a write batch: the reads start at the oldest (50 MiB). */
  u = first_read_after (DL_OP_WRITE, &old, &low);
  CHECK (u == old);

  /* After a read batch: the new read batch continues the sweep from
   * where the last one ended, at the lowest offset after it: 1 MiB.
   */
  u = first_read_after (DL_OP_READ, &old, &low);
  CHECK (u == low);

  /* ... and where nothing is left above that position, at the oldest
   * read, not back at the lowest offset (which would starve the high
   * ones as the seed's direction change did).
   */
  {
    struct dl_tunables t;
    struct dl_sched *s;

    dl_tunables_default (&t);
    t.fifo_batch = 1;
    s = mksched (&t, 1);
    now = 0;
    ins (s, DL_OP_READ, 100 << 20, 4 * KiB);
    REQUIRE (dispatch_complete (s) != NULL);   /* a read batch, up high */
    now = 1 * MS;
    old = ins (s, DL_OP_READ, 50 << 20, 4 * KiB);
    now = 2 * MS;
    low = ins (s, DL_OP_READ, 1 << 20, 4 * KiB);
    now = 3 * MS;                             /* nothing expired */
    u = dispatch_complete (s);
    CHECK (u == old);
    CHECK_EQ (stats (s).batches[DL_READ], 2);
    CHECK_EQ (stats (s).expired[DL_READ], 0);
    finish (s);
  }

  return test_result ("switch-oldest");
}
