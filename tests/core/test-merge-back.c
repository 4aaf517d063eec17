/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (seed: deadline_find_hash, ELEVATOR_BACK_MERGE): a request that
 * starts where a queued unit of the same direction, op and flags ends
 * is appended to it; the unit completes all its members.
 */
#include "testlib.h"

int
main (void)
{
  struct dl_sched *s = mksched_default ();
  struct dl_req *a, *b, *c, *u, *m, *tmp;
  int n = 0;

  a = ins (s, DL_OP_WRITE, 64 * KiB, 4 * KiB);
  b = ins (s, DL_OP_WRITE, 68 * KiB, 4 * KiB);
  c = ins (s, DL_OP_WRITE, 72 * KiB, 8 * KiB);
  CHECK_EQ (stats (s).merged_back, 2);
  CHECK_EQ (stats (s).queued[DL_WRITE], 1);
  CHECK_EQ (dl_waiting (s), 1);

  u = dl_dispatch (s, now);
  REQUIRE (u != NULL);
  CHECK (u == a);
  CHECK_EQ (u->unit_offset, 64 * KiB);
  CHECK_EQ (u->unit_length, 16 * KiB);
  CHECK_EQ (u->nr_members, 3);
  /* Members in ascending offset order, contiguous. */
  DL_FOREACH_MEMBER (m, u, tmp) {
    CHECK (m == (n == 0 ? a : n == 1 ? b : c));
    n++;
  }
  CHECK_EQ (n, 3);
  CHECK_EQ (stats (s).dispatched_bytes[DL_WRITE], 16 * KiB);
  dl_complete (s, u, now);
  CHECK_EQ (dl_inflight (s), 0);

  /* Reads merge too, but never with an adjacent write. */
  a = ins (s, DL_OP_READ, 0, 4 * KiB);
  b = ins (s, DL_OP_WRITE, 4 * KiB, 4 * KiB);   /* adjacent, other dir */
  CHECK_EQ (stats (s).merged_back, 2);
  CHECK_EQ (a->nr_members, 1);
  c = ins (s, DL_OP_READ, 1 << 20, 4 * KiB);
  b = ins (s, DL_OP_READ, (1 << 20) + 4 * KiB, 4 * KiB);
  CHECK_EQ (stats (s).merged_back, 3);
  CHECK_EQ (c->nr_members, 2);
  CHECK (c->next_member == b);
  CHECK_EQ (b->arrival_ns, now);
  /* The grown unit covers the appended read for the hazard rule too: a
   * write over that read alone is held until the unit completes.
   */
  {
    uint64_t h = stats (s).hazard_holds;

    ins (s, DL_OP_WRITE, (1 << 20) + 4 * KiB, 4 * KiB);
    CHECK_EQ (stats (s).hazard_holds, h + 1);
  }

  finish (s);
  return test_result ("merge-back");
}
