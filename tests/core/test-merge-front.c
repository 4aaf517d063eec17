/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (seed: "checking for a front merge"): a request that ends where
 * a queued unit starts is prepended to it, unless front_merges is off.
 */
#include "testlib.h"

int
main (void)
{
  struct dl_tunables t;
  struct dl_sched *s;
  struct dl_req *a, *b, *u, *w;

  dl_tunables_default (&t);
  CHECK (t.front_merges);
  s = mksched (&t, 1);
  a = ins (s, DL_OP_READ, 64 * KiB, 4 * KiB);
  b = ins (s, DL_OP_READ, 60 * KiB, 4 * KiB);
  CHECK_EQ (stats (s).merged_front, 1);
  CHECK_EQ (stats (s).merged_back, 0);
  CHECK_EQ (dl_waiting (s), 1);
  u = dl_dispatch (s, now);
  REQUIRE (u != NULL);
  /* The unit's first member is the lowest offset: the new request. */
  CHECK (u == b);
  CHECK (u->next_member == a);
  CHECK_EQ (u->unit_offset, 60 * KiB);
  CHECK_EQ (u->unit_length, 8 * KiB);
  CHECK_EQ (u->nr_members, 2);
  dl_complete (s, u, now);
  finish (s);

  /* The unit keeps its first arrival's place among the requests: a
   * write over the queued read arrived after it and is held by it; a
   * later read merging in front must not make the unit later than that
   * write, or its completion would not release it.
   */
  s = mksched (&t, 1);
  a = ins (s, DL_OP_READ, 64 * KiB, 4 * KiB);
  w = ins (s, DL_OP_WRITE, 64 * KiB, 4 * KiB);
  CHECK_EQ (stats (s).held, 1);
  b = ins (s, DL_OP_READ, 60 * KiB, 4 * KiB);
  CHECK_EQ (stats (s).merged_front, 1);
  u = dl_dispatch (s, now);
  CHECK (u == b);
  CHECK (dl_dispatch (s, now) == NULL);         /* w waits for the read */
  if (u)
    dl_complete (s, u, now);
  CHECK_EQ (stats (s).held, 0);
  CHECK (dl_dispatch (s, now) == w);
  dl_complete (s, w, now);
  finish (s);

  /* front_merges off: two units. */
  t.front_merges = false;
  s = mksched (&t, 1);
  a = ins (s, DL_OP_READ, 64 * KiB, 4 * KiB);
  b = ins (s, DL_OP_READ, 60 * KiB, 4 * KiB);
  CHECK_EQ (stats (s).merged_front, 0);
  CHECK_EQ (dl_waiting (s), 2);
  CHECK_EQ (a->nr_members, 1);
  /* ... but back merges still happen. */
  ins (s, DL_OP_READ, 68 * KiB, 4 * KiB);
  CHECK_EQ (stats (s).merged_back, 1);
  CHECK_EQ (dl_waiting (s), 2);
  (void) b;
  finish (s);

  return test_result ("merge-front");
}
