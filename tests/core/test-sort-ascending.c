/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (seed: sort_list, deadline_move_requests): within a batch the
 * units go to the device in ascending offset order, whatever order
 * they arrived in.
 */
#include "testlib.h"

int
main (void)
{
  struct dl_tunables t;
  struct dl_sched *s;
  struct dl_req *u, *behind = NULL;
  static const uint64_t mib[] = { 5, 3, 9, 1, 7 };
  static const uint64_t want[] = { 1, 3, 5, 7, 9 };
  size_t i;

  dl_tunables_default (&t);
  t.seek_cost = 1;              /* so that all five fit in one batch */
  s = mksched (&t, 1);

  /* Start a read batch at offset 0 so that the batch is in progress. */
  ins (s, DL_OP_READ, 0, 4 * KiB);
  u = dispatch_complete (s);
  REQUIRE (u != NULL);
  CHECK_EQ (stats (s).batches[DL_READ], 1);

  for (i = 0; i < 5; i++)
    ins (s, DL_OP_READ, mib[i] << 20, 4 * KiB);
  for (i = 0; i < 5; i++) {
    u = dispatch_complete (s);
    REQUIRE (u != NULL);
    CHECK_EQ (u->unit_offset, want[i] << 20);
    /* A read arriving behind the head during the sweep (at 2 MiB, once
     * 3 MiB has gone) does not join it: the sweep goes on upwards.
     */
    if (i == 1)
      behind = ins (s, DL_OP_READ, 2 << 20, 4 * KiB);
  }
  /* All in the one batch that the first read started. */
  CHECK_EQ (stats (s).batches[DL_READ], 1);
  /* The read behind the head waited for the sweep's end: it starts the
   * next batch.
   */
  u = dispatch_complete (s);
  CHECK (u == behind);
  CHECK_EQ (stats (s).batches[DL_READ], 2);

  /* Same for writes, once a write batch is in progress (a batch in a
   * new direction starts at its oldest request, see switch-oldest).
   */
  ins (s, DL_OP_WRITE, 64 << 20, 4 * KiB);
  REQUIRE (dispatch_complete (s) != NULL);
  for (i = 0; i < 5; i++)
    ins (s, DL_OP_WRITE, (mib[i] << 20) + (64 << 20), 4 * KiB);
  for (i = 0; i < 5; i++) {
    u = dispatch_complete (s);
    REQUIRE (u != NULL);
    CHECK_EQ (u->unit_offset, (want[i] << 20) + (64 << 20));
  }
  CHECK_EQ (stats (s).batches[DL_WRITE], 1);

  finish (s);
  return test_result ("sort-ascending");
}
