/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (seed: deadline_merge_request, "if dnext expires before drq,
 * assign its expire time"): a merged unit keeps the earliest deadline
 * of its members, whichever way the merge went.
 */
#include "testlib.h"

int
main (void)
{
  struct dl_sched *s = mksched_default ();
  struct dl_tunables t;
  struct dl_req *old, *u;

  dl_sched_get_tunables (s, &t);

  /* Start a read batch so that later batches continue by position. */
  ins (s, DL_OP_READ, 0, 4 * KiB);
  REQUIRE (dispatch_complete (s) != NULL);

  /* An old read at 100 MiB; much later a young read just in front of
   * it (front merge: the young one becomes the head) and a run of
   * reads lower down that the sweep would take first.
   */
  now = 1 * MS;
  old = ins (s, DL_OP_READ, 100ULL << 20, 4 * KiB);
  /* A read in between, far above: when the merged unit is queued again
   * it is older than the FIFO's tail, and must still be its head.
   */
  now = 200 * MS;
  ins (s, DL_OP_READ, 200ULL << 20, 4 * KiB);
  now = 400 * MS;
  u = ins (s, DL_OP_READ, (100ULL << 20) - 4 * KiB, 4 * KiB);
  CHECK_EQ (stats (s).merged_front, 1);
  CHECK_EQ (old->arrival_ns, 1 * MS);
  CHECK_EQ (u->arrival_ns, 400 * MS);

  /* Past the old read's deadline but not the young one's: the unit
   * must count as expired, so the next new batch starts at it.
   */
  now = 1 * MS + t.read_expire_ns;
  {
    struct dl_req *v;
    int i;
    for (i = 1; i <= 10; i++)
      ins (s, DL_OP_READ, i * (1 << 20), 4 * KiB); /* seeks */
    /* The batch in progress (1 unit, cost 1) continues: 3 seeks of 16
     * reach 49, the 4th 65: then the new batch starts at the unit.
     */
    for (i = 0; i < 4; i++) {
      v = dispatch_complete (s);
      REQUIRE (v != NULL);
      CHECK (v != u);
    }
    v = dispatch_complete (s);
    REQUIRE (v != NULL);
    CHECK (v == u);
    CHECK_EQ (v->nr_members, 2);
    CHECK_EQ (stats (s).expired[DL_READ], 1);
  }
  finish (s);
  return test_result ("merge-deadline");
}
