/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (merge.c): trim and write-zeroes are writes (they are ordered
 * and batched with writes) that never merge with data writes nor with
 * one another; zeroes that may trim never merge with ones that may not.
 * A trim merges with a trim, a zero with a zero.
 */
#include "testlib.h"

int
main (void)
{
  struct dl_sched *s = mksched_default ();
  struct dl_req *w, *t, *z, *u;

  w = ins (s, DL_OP_WRITE, 0, 4 * KiB);
  t = ins (s, DL_OP_TRIM, 4 * KiB, 4 * KiB);
  z = ins (s, DL_OP_ZERO, 8 * KiB, 4 * KiB);
  ins_flags (s, DL_OP_ZERO, 12 * KiB, 4 * KiB, DL_F_MAY_TRIM);
  ins (s, DL_OP_WRITE, 16 * KiB, 4 * KiB);
  CHECK_EQ (dl_waiting (s), 5);
  CHECK_EQ (stats (s).merged_back + stats (s).merged_front, 0);
  CHECK_EQ (stats (s).inserted[DL_WRITE], 5);
  CHECK_EQ (stats (s).queued[DL_WRITE], 5);

  /* Like kinds do merge. */
  ins (s, DL_OP_TRIM, 1 << 20, 4 * KiB);
  ins (s, DL_OP_TRIM, (1 << 20) + 4 * KiB, 4 * KiB);
  ins (s, DL_OP_ZERO, 2 << 20, 4 * KiB);
  ins (s, DL_OP_ZERO, (2 << 20) + 4 * KiB, 4 * KiB);
  CHECK_EQ (dl_waiting (s), 7);

  /* They are served as writes: in one ascending sweep. */
  u = dispatch_complete (s);
  CHECK (u == w);
  u = dispatch_complete (s);
  CHECK (u == t);
  u = dispatch_complete (s);
  CHECK (u == z);
  CHECK_EQ (stats (s).batches[DL_WRITE], 1);
  CHECK_EQ (stats (s).dispatched[DL_WRITE], 3);
  finish (s);
  return test_result ("trim-zero");
}
