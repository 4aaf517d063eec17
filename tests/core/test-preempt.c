/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (beyond the seed: read preemption, select.c): a read arriving
 * during a write batch ends the batch once it has spent preempt_min
 * cost units, so reads wait less and writes still progress.  Off (the
 * seed), the write batch runs its full fifo_batch.
 */
#include "testlib.h"

/* Start a write batch of contiguous writes, let `done` of them go,
 * then a read arrives: how many more writes go before it?
 */
static int
writes_before_read (const struct dl_tunables *t, int done,
                    struct dl_stats *out)
{
  struct dl_sched *s = mksched (t, 1);
  struct dl_req *u;
  int i, n = 0;

  for (i = 0; i < 200; i++)
    ins (s, DL_OP_WRITE, (uint64_t) i * 4 * KiB, 4 * KiB);
  for (i = 0; i < done; i++) {
    u = dispatch_complete (s);
    REQUIRE (u != NULL && u->op == DL_OP_WRITE);
  }
  ins (s, DL_OP_READ, 1ULL << 30, 4 * KiB);
  while ((u = dispatch_complete (s)) != NULL && u->op != DL_OP_READ)
    n++;
  REQUIRE (u != NULL);
  *out = stats (s);
  finish (s);
  return n;
}

/* A read from connection `stream`, as the engine would insert it. */
static struct dl_req *
ins_from (struct dl_sched *s, uint64_t stream, uint64_t offset)
{
  struct dl_req *r = mkreq (DL_OP_READ, offset, 4 * KiB, 0);

  now += 1000000;               /* 1 ms later: the reader's think time */
  r->stream = stream;
  dl_insert (s, r, now);
  return r;
}

/* A reader on connection 2 first shows its habit on an idle device:
 * `together` reads at a time (1: each read waits for the previous one,
 * as cat; 8: eight queued at once, as fio at depth 8).  Then a write
 * batch starts, and the reader asks again: how many writes go before
 * its first read?
 */
static int
writes_before_reader (const struct dl_tunables *t, int together,
                      struct dl_stats *out)
{
  struct dl_sched *s = mksched (t, 1);
  struct dl_req *u;
  uint64_t off = 1ULL << 30;
  int i, j, n = 0;

  for (i = 0; i < 4; i++) {
    for (j = 0; j < together; j++, off += 1 << 20)
      ins_from (s, 2, off);
    while (dispatch_complete (s) != NULL)
      ;
  }
  for (i = 0; i < 200; i++)
    ins (s, DL_OP_WRITE, (uint64_t) i * 4 * KiB, 4 * KiB);
  for (i = 0; i < 4; i++) {
    u = dispatch_complete (s);
    REQUIRE (u != NULL && u->op == DL_OP_WRITE);
  }
  for (j = 0; j < together; j++, off += 1 << 20)
    ins_from (s, 2, off);
  while ((u = dispatch_complete (s)) != NULL && u->op != DL_OP_READ)
    n++;
  REQUIRE (u != NULL);
  *out = stats (s);
  finish (s);
  return n;
}

int
main (void)
{
  struct dl_tunables t;
  struct dl_stats st;
  int n;

  dl_tunables_default (&t);
  t.max_merge = 0;              /* one write, one unit: countable */
  CHECK (t.preempt);             /* on by default (measured, select.c) */
  CHECK_EQ (t.preempt_min, 16);

  /* Off (the seed): the write batch spends all of fifo_batch (64
   * contiguous).
   */
  t.preempt = false;
  n = writes_before_read (&t, 4, &st);
  CHECK_EQ (n, 60);
  CHECK_EQ (st.preemptions, 0);

  /* On: the batch ends once it has spent preempt_min (16 by default:
   * the 4 contiguous writes done cost 4, so 12 more go first).
   */
  t.preempt = true;
  n = writes_before_read (&t, 4, &st);
  CHECK_EQ (n, 12);
  CHECK_EQ (st.preemptions, 1);

  /* With preempt_min = 32: 28 more. */
  t.preempt_min = 32;
  n = writes_before_read (&t, 4, &st);
  CHECK_EQ (n, 28);
  CHECK_EQ (st.preemptions, 1);
  t.preempt_min = 16;

  /* Preemption does not starve writes: after writes_starved read
   * batches, writes get a batch again, and it spends at least
   * preempt_min: the default is one seek's worth, so that a batch that
   * starts with a seek still writes its first unit.
   */
  {
    struct dl_sched *s;
    struct dl_req *u;
    int i, writes = 0;

    s = mksched (&t, 1);
    for (i = 0; i < 100; i++)
      ins (s, DL_OP_WRITE, (uint64_t) i * 4 * KiB, 4 * KiB);
    for (i = 0; i < 300; i++) {
      /* A read every step, always ahead of the last, far from writes. */
      ins (s, DL_OP_READ, (1ULL << 30) + (uint64_t) i * (1 << 20), 4 * KiB);
      u = dispatch_complete (s);
      REQUIRE (u != NULL);
      writes += u->op == DL_OP_WRITE;
    }
    printf ("writes served among 300 steps of a read flood: %d\n", writes);
    /* The floor: a read batch is four reads (each a seek, 16 of
     * fifo_batch's 64), and after two of them a write batch writes at
     * least its first unit (a seek: preempt_min) -- one write in nine.
     */
    CHECK (writes >= 300 / 9);
    finish (s);
  }

  /* Only a reader that waits for each read preempts.  One that keeps
   * reads queued always has one waiting: preempting for it would end
   * every write batch early and shorten nothing, so its reads wait for
   * the batch as in the seed (anticipation off: the rule alone).
   */
  t.anticipate_ns = 0;
  t.preempt_min = 32;           /* room to see where the batch ends */
  n = writes_before_reader (&t, 1, &st);
  CHECK_EQ (n, 13);             /* 32 - (a seek, 16, + 3 contiguous) */
  CHECK_EQ (st.preemptions, 1);
  n = writes_before_reader (&t, 8, &st);
  CHECK_EQ (n, 45);             /* the whole batch: 64 - 19 */
  CHECK_EQ (st.preemptions, 0);
  /* A read of a known reader completes after the tunables stopped the
   * learning (noop for a while): it must still be uncounted, or the
   * reader would look like one with reads outstanding for ever and
   * never preempt again.
   */
  {
    struct dl_sched *s = mksched (&t, 1);
    struct dl_tunables noop = t;
    struct dl_req *u;
    uint64_t off = 1ULL << 30;
    int i;

    noop.policy = DL_POLICY_NOOP;
    for (i = 0; i < 4; i++, off += 1 << 20) {
      ins_from (s, 2, off);
      if (i < 3) {
        dispatch_complete (s);
        continue;
      }
      u = dl_dispatch (s, now);
      REQUIRE (u != NULL);
      REQUIRE (dl_sched_set_tunables (s, &noop, NULL, 0) == 0);
      dl_complete (s, u, now);
      REQUIRE (dl_sched_set_tunables (s, &t, NULL, 0) == 0);
    }
    for (i = 0; i < 200; i++)
      ins (s, DL_OP_WRITE, (uint64_t) i * 4 * KiB, 4 * KiB);
    for (i = 0; i < 4; i++)
      dispatch_complete (s);
    /* Each read now arrives during a write batch (the one started while
     * the reader thought) and ends it.
     */
    for (i = 0; i < 8; i++, off += 1 << 20) {
      ins_from (s, 2, off);
      while ((u = dispatch_complete (s)) != NULL && u->op != DL_OP_READ)
        ;
      REQUIRE (u != NULL);
      dispatch_complete (s);    /* a write batch starts: the reader thinks */
    }
    st = stats (s);
    CHECK_EQ (st.preemptions, 8);
    finish (s);
  }

  /* A reader not yet known is given the benefit of the doubt. */
  {
    struct dl_sched *s = mksched (&t, 1);
    struct dl_req *u;
    int i;

    for (i = 0; i < 200; i++)
      ins (s, DL_OP_WRITE, (uint64_t) i * 4 * KiB, 4 * KiB);
    for (i = 0; i < 32; i++)
      dispatch_complete (s);
    ins_from (s, 7, 1ULL << 30);
    u = dispatch_complete (s);
    CHECK (u != NULL && u->op == DL_OP_READ);
    st = stats (s);
    CHECK_EQ (st.preemptions, 1);
    finish (s);
  }

  return test_result ("preempt");
}
