/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (seed: read_fifo, deadline_check_fifo): when a new batch starts
 * and the oldest read has passed read_expire, the batch starts at that
 * read, not at the next one in sorted order.  Without expiry the new
 * batch continues from the last position.
 */
#include "testlib.h"

/* Returns the index (0-based) at which the read at 100 MiB is
 * dispatched among the 1 + 100 reads after the first batch began;
 * checks that it was the first unit of a batch.
 */
static int
run (int expire, uint64_t *expired_count)
{
  struct dl_sched *s = mksched_default ();
  struct dl_tunables t;
  struct dl_req *x, *u;
  uint64_t batches;
  int i, where = -1;

  dl_sched_get_tunables (s, &t);
  t.max_merge = 0;              /* keep every read its own unit */
  REQUIRE (dl_sched_set_tunables (s, &t, NULL, 0) == 0);

  now = 0;
  ins (s, DL_OP_READ, 0, 4 * KiB);
  REQUIRE (dispatch_complete (s) != NULL); /* a read batch is in progress */

  now = 1 * MS;
  x = ins (s, DL_OP_READ, 100ULL << 20, 4 * KiB);   /* the oldest */
  now = 2 * MS;
  for (i = 1; i <= 100; i++)
    ins (s, DL_OP_READ, i * 4 * KiB, 4 * KiB);       /* contiguous run */

  if (expire)
    now = 1 * MS + t.read_expire_ns;                 /* exactly expired */

  for (i = 0; i < 101; i++) {
    batches = stats (s).batches[DL_READ];
    u = dispatch_complete (s);
    REQUIRE (u != NULL);
    if (u == x) {
      where = i;
      if (expire)               /* it started a new batch */
        CHECK_EQ (stats (s).batches[DL_READ], batches + 1);
    }
  }
  *expired_count = stats (s).expired[DL_READ];
  finish (s);
  return where;
}

int
main (void)
{
  uint64_t expired;
  int where;

  /* Expired: served as soon as the current batch (which started at
   * offset 0 and costs 1 per contiguous read) ends: after 63 more
   * contiguous reads, the batch having reached fifo_batch = 64.
   */
  where = run (1, &expired);
  CHECK_EQ (where, 63);
  CHECK_EQ (expired, 1);

  /* Not expired: the sweep carries on upwards and reaches it last. */
  where = run (0, &expired);
  CHECK_EQ (where, 100);
  CHECK_EQ (expired, 0);

  return test_result ("read-expire");
}
