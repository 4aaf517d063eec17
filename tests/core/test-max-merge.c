/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (mq-deadline: max_sectors): a merged unit never exceeds
 * max_merge bytes; max_merge = 0 disables merging.
 */
#include "testlib.h"

int
main (void)
{
  struct dl_tunables t;
  struct dl_sched *s;
  struct dl_req *u;
  int i, units = 0;

  dl_tunables_default (&t);
  CHECK_EQ (t.max_merge, 256 * KiB);
  t.max_merge = 16 * KiB;
  s = mksched (&t, 1);
  /* 10 contiguous 4 KiB writes: units of 16, 16, 8 KiB. */
  for (i = 0; i < 10; i++)
    ins (s, DL_OP_WRITE, i * 4 * KiB, 4 * KiB);
  CHECK_EQ (dl_waiting (s), 3);
  while ((u = dispatch_complete (s)) != NULL) {
    CHECK (u->unit_length <= 16 * KiB);
    CHECK_EQ (u->unit_length, u->nr_members * 4 * KiB);
    units++;
  }
  CHECK_EQ (units, 3);
  finish (s);

  /* Exactly max_merge is allowed; one byte more is not. */
  s = mksched (&t, 1);
  ins (s, DL_OP_WRITE, 0, 12 * KiB);
  ins (s, DL_OP_WRITE, 12 * KiB, 4 * KiB);      /* total 16 KiB: merges */
  CHECK_EQ (dl_waiting (s), 1);
  ins (s, DL_OP_WRITE, 16 * KiB, 1);            /* would be 16 KiB + 1 */
  CHECK_EQ (dl_waiting (s), 2);
  finish (s);

  /* A single request larger than max_merge is still queued, alone. */
  s = mksched (&t, 1);
  ins (s, DL_OP_WRITE, 0, 64 * KiB);
  ins (s, DL_OP_WRITE, 64 * KiB, 4 * KiB);
  CHECK_EQ (dl_waiting (s), 2);
  finish (s);

  /* 0 disables merging. */
  t.max_merge = 0;
  s = mksched (&t, 1);
  for (i = 0; i < 4; i++)
    ins (s, DL_OP_READ, i * 4 * KiB, 4 * KiB);
  CHECK_EQ (dl_waiting (s), 4);
  CHECK_EQ (stats (s).merged_back + stats (s).merged_front, 0);
  finish (s);

  return test_result ("max-merge");
}
