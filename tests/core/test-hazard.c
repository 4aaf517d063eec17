/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (hazard.c; the kernel leaves this to upper layers, an NBD server
 * cannot): a request that overlaps an earlier live one, where either is
 * a write, is held until that one has completed, then queued with its
 * original arrival time.  Reads never hold reads.
 */
#include "testlib.h"

/* first = op of the earlier request, second = op of the later one;
 * they overlap by 4 KiB.  Checks the later one is held until the
 * earlier completes.
 */
static void
ordered (enum dl_op first, enum dl_op second)
{
  struct dl_sched *s = mksched_default ();
  struct dl_req *a, *b, *u;

  now = 1 * MS;
  a = ins (s, first, 0, 8 * KiB);
  now = 2 * MS;
  b = ins (s, second, 4 * KiB, 8 * KiB);
  CHECK_EQ (stats (s).hazard_holds, 1);
  CHECK_EQ (stats (s).held, 1);
  CHECK_EQ (dl_waiting (s), 2);
  CHECK_EQ (a->nr_members, 1);              /* held: no merge */

  now = 3 * MS;
  u = dl_dispatch (s, now);
  CHECK (u == a);
  /* b waits while a is at the device. */
  CHECK (dl_dispatch (s, now) == NULL);
  CHECK_EQ (dl_waiting (s), 1);
  now = 4 * MS;
  dl_complete (s, a, now);
  CHECK_EQ (stats (s).held, 0);
  u = dl_dispatch (s, now);
  CHECK (u == b);
  CHECK_EQ (b->arrival_ns, 2 * MS);         /* its original arrival */
  if (u)
    dl_complete (s, u, now);
  finish (s);
}

int
main (void)
{
  struct dl_sched *s;
  struct dl_req *a, *b, *c, *u1, *u2;

  ordered (DL_OP_WRITE, DL_OP_READ);   /* read after write */
  ordered (DL_OP_READ, DL_OP_WRITE);   /* write after read */
  ordered (DL_OP_WRITE, DL_OP_WRITE);  /* write after write */
  ordered (DL_OP_TRIM, DL_OP_READ);
  ordered (DL_OP_READ, DL_OP_ZERO);
  ordered (DL_OP_ZERO, DL_OP_TRIM);

  /* Reads do not hold reads: both at the device at once. */
  s = mksched_default ();
  a = ins (s, DL_OP_READ, 0, 8 * KiB);
  b = ins (s, DL_OP_READ, 4 * KiB, 8 * KiB);
  CHECK_EQ (stats (s).hazard_holds, 0);
  u1 = dl_dispatch (s, now);
  u2 = dl_dispatch (s, now);
  CHECK (u1 != NULL && u2 != NULL);
  CHECK_EQ (dl_inflight (s), 2);
  if (u1)
    dl_complete (s, u1, now);
  if (u2)
    dl_complete (s, u2, now);
  (void) a; (void) b;
  finish (s);

  /* Adjacent is not overlapping. */
  s = mksched_default ();
  ins (s, DL_OP_WRITE, 0, 4 * KiB);
  ins (s, DL_OP_READ, 4 * KiB, 4 * KiB);
  CHECK_EQ (stats (s).hazard_holds, 0);
  finish (s);

  /* A held request is held until every earlier overlapping one has
   * completed, and a later one waits for it in turn: W1 < R < W2.
   */
  s = mksched_default ();
  a = ins (s, DL_OP_WRITE, 0, 4 * KiB);
  b = ins (s, DL_OP_WRITE, 8 * KiB, 4 * KiB);
  c = ins (s, DL_OP_READ, 0, 12 * KiB);         /* overlaps a and b */
  CHECK_EQ (stats (s).held, 1);
  u1 = dl_dispatch (s, now);
  u2 = dl_dispatch (s, now);
  CHECK (u1 == a && u2 == b);
  CHECK (dl_dispatch (s, now) == NULL);
  dl_complete (s, a, now);
  CHECK (dl_dispatch (s, now) == NULL);       /* b still at the device */
  {
    struct dl_req *w2 = ins (s, DL_OP_WRITE, 0, 4 * KiB); /* after c */
    CHECK_EQ (stats (s).held, 2);
    dl_complete (s, b, now);
    CHECK (dl_dispatch (s, now) == c);
    CHECK (dl_dispatch (s, now) == NULL);     /* w2 waits for c */
    dl_complete (s, c, now);
    CHECK (dl_dispatch (s, now) == w2);
    dl_complete (s, w2, now);
  }
  finish (s);

  /* A write in flight holds an overlapping write that arrives later. */
  s = mksched_default ();
  a = ins (s, DL_OP_WRITE, 0, 4 * KiB);
  CHECK (dl_dispatch (s, now) == a);
  b = ins (s, DL_OP_WRITE, 0, 4 * KiB);
  CHECK_EQ (stats (s).held, 1);
  CHECK (dl_dispatch (s, now) == NULL);
  dl_complete (s, a, now);
  CHECK (dl_dispatch (s, now) == b);
  dl_complete (s, b, now);
  finish (s);

  /* An empty write inside a queued write hides it from no later write:
   * the queued write still holds one that overlaps it, though the empty
   * one is the unit just before the later one's start.
   */
  s = mksched_default ();
  a = ins (s, DL_OP_WRITE, 0, 8 * KiB);
  b = ins (s, DL_OP_WRITE, 4 * KiB, 0);
  CHECK_EQ (stats (s).held, 0);             /* empty: overlaps nothing */
  c = ins (s, DL_OP_WRITE, 6 * KiB, 1 * KiB);
  CHECK_EQ (stats (s).held, 1);
  u1 = dl_dispatch (s, now);
  u2 = dl_dispatch (s, now);
  CHECK (u1 == a && u2 == b);
  CHECK (dl_dispatch (s, now) == NULL);     /* c waits for a */
  if (u2)
    dl_complete (s, u2, now);
  if (u1)
    dl_complete (s, u1, now);
  u1 = dl_dispatch (s, now);
  CHECK (u1 == c);
  if (u1)
    dl_complete (s, u1, now);
  finish (s);

  return test_result ("hazard");
}
