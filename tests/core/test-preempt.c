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

int
main (void)
{
  struct dl_tunables t;
  struct dl_stats st;
  int n;

  dl_tunables_default (&t);
  t.max_merge = 0;              /* one write, one unit: countable */
  CHECK (t.preempt);             /* on by default (measured, select.c) */
  CHECK_EQ (t.preempt_min, 32);

  /* Off (the seed): the write batch spends all of fifo_batch (64
   * contiguous).
   */
  t.preempt = false;
  n = writes_before_read (&t, 4, &st);
  CHECK_EQ (n, 60);
  CHECK_EQ (st.preemptions, 0);

  /* On: the batch ends once it has spent preempt_min (32 by default:
   * the 4 contiguous writes done cost 4, so 28 more go first).
   */
  t.preempt = true;
  n = writes_before_read (&t, 4, &st);
  CHECK_EQ (n, 28);
  CHECK_EQ (st.preemptions, 1);

  /* With preempt_min = 16: 12 more. */
  t.preempt_min = 16;
  n = writes_before_read (&t, 4, &st);
  CHECK_EQ (n, 12);
  CHECK_EQ (st.preemptions, 1);
  t.preempt_min = 32;

  /* Preemption does not starve writes: after writes_starved read
   * batches, writes get a batch again, and it spends at least
   * preempt_min: the default is two seeks' worth, so that a batch that
   * starts with a seek still does some contiguous work.
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
    CHECK (writes >= 40);
    finish (s);
  }

  return test_result ("preempt");
}
