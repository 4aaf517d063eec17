/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (seed: "finally, if there are pending write operations"): with
 * no reads queued, writes are dispatched at once, whatever starved is.
 */
#include "testlib.h"

int
main (void)
{
  struct dl_sched *s = mksched_default ();
  struct dl_req *w1, *w2, *u;

  w1 = ins (s, DL_OP_WRITE, 8 << 20, 4 * KiB);
  w2 = ins (s, DL_OP_WRITE, 1 << 20, 4 * KiB);
  u = dispatch_complete (s);
  REQUIRE (u != NULL);
  /* A new direction starts at the oldest write. */
  CHECK (u == w1);
  u = dispatch_complete (s);
  CHECK (u == w2);
  CHECK (dispatch_complete (s) == NULL);
  CHECK_EQ (stats (s).batches[DL_WRITE], 2);
  CHECK_EQ (stats (s).starved_switches, 0);
  CHECK_EQ (stats (s).dispatched[DL_WRITE], 2);

  finish (s);
  return test_result ("writes-no-reads");
}
