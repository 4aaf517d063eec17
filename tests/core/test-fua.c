/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (merge.c): requests merge only when op and flags are equal, so
 * an FUA write (which must be durable before it completes) merges only
 * with another FUA write, never with a plain one.
 */
#include "testlib.h"

int
main (void)
{
  struct dl_sched *s = mksched_default ();
  struct dl_req *a, *b, *c;

  a = ins_flags (s, DL_OP_WRITE, 0, 4 * KiB, DL_F_FUA);
  b = ins (s, DL_OP_WRITE, 4 * KiB, 4 * KiB);               /* plain */
  CHECK_EQ (dl_waiting (s), 2);
  CHECK_EQ (a->nr_members, 1);
  c = ins_flags (s, DL_OP_WRITE, 1 << 20, 4 * KiB, DL_F_FUA);
  ins_flags (s, DL_OP_WRITE, (1 << 20) + 4 * KiB, 4 * KiB, DL_F_FUA);
  CHECK_EQ (dl_waiting (s), 3);
  CHECK_EQ (c->nr_members, 2);
  /* Plain in front of FUA: no front merge either. */
  ins (s, DL_OP_WRITE, (1 << 20) - 4 * KiB, 4 * KiB);
  CHECK_EQ (dl_waiting (s), 4);
  CHECK_EQ (stats (s).merged_back + stats (s).merged_front, 1);
  (void) b;
  finish (s);
  return test_result ("fua");
}
