/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (NBD semantics): a flush covers only writes already completed,
 * so it never waits behind queued writes (nor reads): it goes first.
 * Several flushes waiting together are served by one unit.
 */
#include "testlib.h"

int
main (void)
{
  struct dl_sched *s = mksched_default ();
  struct dl_req *w, *f1, *f2, *f3, *u;

  w = ins (s, DL_OP_WRITE, 0, 4 * KiB);
  ins (s, DL_OP_READ, 1 << 20, 4 * KiB);
  ins (s, DL_OP_WRITE, 2 << 20, 4 * KiB);
  f1 = ins (s, DL_OP_FLUSH, 0, 0);
  f2 = ins (s, DL_OP_FLUSH, 0, 0);
  CHECK_EQ (stats (s).flushes, 2);
  CHECK_EQ (stats (s).queued_flushes, 1);

  u = dl_dispatch (s, now);
  REQUIRE (u != NULL);
  CHECK (u == f1);
  CHECK_EQ (u->op, DL_OP_FLUSH);
  CHECK_EQ (u->nr_members, 2);
  CHECK (unit_has (u, f2));
  /* A flush arriving while one is at the device gets its own unit,
   * and does not wait for the first one (nor for queued writes).
   */
  f3 = ins (s, DL_OP_FLUSH, 0, 0);
  CHECK (dl_dispatch (s, now) == f3);
  dl_complete (s, f3, now);
  dl_complete (s, u, now);

  /* A flush does not wait for a write in flight either. */
  u = dl_dispatch (s, now);
  REQUIRE (u != NULL && u->op != DL_OP_FLUSH);
  f1 = ins (s, DL_OP_FLUSH, 0, 0);
  CHECK (dl_dispatch (s, now) == f1);
  dl_complete (s, f1, now);
  dl_complete (s, u, now);

  /* It also jumps into the middle of a batch without ending it. */
  {
    uint64_t b = stats (s).batches[DL_READ] + stats (s).batches[DL_WRITE];
    f1 = ins (s, DL_OP_FLUSH, 0, 0);
    CHECK (dispatch_complete (s) == f1);
    CHECK_EQ (stats (s).batches[DL_READ] + stats (s).batches[DL_WRITE], b);
  }
  (void) w;
  finish (s);
  return test_result ("flush");
}
