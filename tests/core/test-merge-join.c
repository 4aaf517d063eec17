/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (seed: elv_merge_requests / deadline_merge_request): when a back
 * merge makes a unit touch the next queued unit, the two become one,
 * keeping the earlier deadline and completing every member.
 */
#include "testlib.h"

int
main (void)
{
  struct dl_sched *s = mksched_default ();
  struct dl_req *a, *b, *c, *u, *m, *tmp;
  uint64_t expect_off = 0;
  int n = 0;

  now = 5 * MS;
  c = ins (s, DL_OP_WRITE, 8 * KiB, 4 * KiB);   /* oldest */
  now = 6 * MS;
  a = ins (s, DL_OP_WRITE, 0, 4 * KiB);
  CHECK_EQ (dl_waiting (s), 2);
  now = 7 * MS;
  b = ins (s, DL_OP_WRITE, 4 * KiB, 4 * KiB);   /* fills the gap */
  CHECK_EQ (dl_waiting (s), 1);
  CHECK_EQ (stats (s).merged_units, 1);
  CHECK_EQ (stats (s).queued[DL_WRITE], 1);

  u = dl_dispatch (s, now);
  REQUIRE (u != NULL);
  CHECK (u == a);
  CHECK_EQ (u->unit_offset, 0);
  CHECK_EQ (u->unit_length, 12 * KiB);
  CHECK_EQ (u->nr_members, 3);
  DL_FOREACH_MEMBER (m, u, tmp) {
    CHECK_EQ (m->offset, expect_off);
    expect_off += m->length;
    n++;
  }
  CHECK_EQ (n, 3);
  CHECK (a->next_member == b && b->next_member == c && c->next_member == NULL);
  dl_complete (s, u, now);
  CHECK_EQ (dl_waiting (s) + dl_inflight (s), 0);

  /* The join respects max_merge. */
  {
    struct dl_tunables t;
    dl_sched_get_tunables (s, &t);
    t.max_merge = 8 * KiB;
    REQUIRE (dl_sched_set_tunables (s, &t, NULL, 0) == 0);
    ins (s, DL_OP_WRITE, (1 << 20) + 8 * KiB, 4 * KiB);
    ins (s, DL_OP_WRITE, (1 << 20), 4 * KiB);
    ins (s, DL_OP_WRITE, (1 << 20) + 4 * KiB, 4 * KiB); /* 12 KiB > 8 */
    CHECK_EQ (dl_waiting (s), 2);
    CHECK_EQ (stats (s).merged_units, 1);
  }
  /* After a front merge the grown unit may touch the previous one: they
   * join only if they may merge.  Not an FUA write with a plain one ...
   */
  {
    struct dl_req *p, *r;
    uint64_t w = dl_waiting (s);

    p = ins_flags (s, DL_OP_WRITE, 2 << 20, 4 * KiB, DL_F_FUA);
    ins (s, DL_OP_WRITE, (2 << 20) + 8 * KiB, 4 * KiB);
    r = ins (s, DL_OP_WRITE, (2 << 20) + 4 * KiB, 4 * KiB); /* front merge */
    CHECK_EQ (stats (s).merged_front, 1);
    CHECK_EQ (dl_waiting (s), w + 2);
    CHECK_EQ (p->nr_members, 1);
    CHECK_EQ (r->nr_members, 2);
    /* ... nor past max_merge (8 KiB + 8 KiB). */
    p = ins (s, DL_OP_WRITE, 3 << 20, 8 * KiB);
    ins (s, DL_OP_WRITE, (3 << 20) + 12 * KiB, 4 * KiB);
    r = ins (s, DL_OP_WRITE, (3 << 20) + 8 * KiB, 4 * KiB);  /* front merge */
    CHECK_EQ (stats (s).merged_front, 2);
    CHECK_EQ (dl_waiting (s), w + 4);
    CHECK_EQ (p->unit_length, 8 * KiB);
    CHECK_EQ (r->unit_length, 8 * KiB);
    CHECK_EQ (stats (s).merged_units, 1);
  }

  finish (s);
  return test_result ("merge-join");
}
