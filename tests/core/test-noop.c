/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (policy noop): units go in arrival order across both directions,
 * with merges only: no sorting, no batches, no deadlines.
 */
#include "testlib.h"

int
main (void)
{
  struct dl_tunables t;
  struct dl_sched *s;
  struct dl_req *r[6], *u;
  static const uint64_t off[6] = { 50, 10, 30, 70, 20, 60 };
  int i;

  dl_tunables_default (&t);
  t.policy = DL_POLICY_NOOP;
  s = mksched (&t, 1);
  for (i = 0; i < 6; i++) {
    now = i * MS;
    r[i] = ins (s, i % 2 ? DL_OP_WRITE : DL_OP_READ, off[i] << 20, 4 * KiB);
  }
  /* Merges still happen: this one joins r[1] (a write at 10 MiB). */
  ins (s, DL_OP_WRITE, (10 << 20) + 4 * KiB, 4 * KiB);
  CHECK_EQ (stats (s).merged_back, 1);
  now = 10 * 1000 * MS;         /* deadlines do not matter */
  for (i = 0; i < 6; i++) {
    u = dispatch_complete (s);
    CHECK (u == r[i]);
  }
  CHECK (r[1]->nr_members == 2);
  CHECK (dispatch_complete (s) == NULL);
  finish (s);
  return test_result ("noop");
}
