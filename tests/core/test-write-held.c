/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (beyond the seed: select.c, write_held): beside a reader that
 * waits for each read, writes take at most half of the device's slots
 * (one at the default depth of 2), so that the reader's next read waits
 * for fewer writes; reads still take the other slots.  Without such a
 * reader, or with preemption off (the seed), writes fill every slot.
 */
#include "testlib.h"

/* A read from connection `stream`, 1 ms (the reader's think time)
 * after the last event.
 */
static struct dl_req *
read_from (struct dl_sched *s, uint64_t stream, uint64_t offset)
{
  struct dl_req *r = mkreq (DL_OP_READ, offset, 4 * KiB, 0);

  now += 1 * MS;
  r->stream = stream;
  dl_insert (s, r, now);
  return r;
}

/* A reader on connection 2 shows its habit on an idle device: four
 * rounds of `together` reads (1: cat; 8: a reader at depth 8).
 */
static uint64_t
teach (struct dl_sched *s, int together)
{
  uint64_t off = 1ULL << 30;
  int i, j;

  for (i = 0; i < 4; i++) {
    for (j = 0; j < together; j++, off += 64 * KiB)
      read_from (s, 2, off);
    while (dispatch_complete (s) != NULL)
      ;
  }
  return off;
}

/* cat, then a flood of 20 writes: the first write goes to the device.
 * Returns the scheduler; *w is that write, *off where cat reads next.
 */
static struct dl_sched *
cat_then_writes (const struct dl_tunables *t, struct dl_req **w,
                 uint64_t *off)
{
  struct dl_sched *s = mksched (t, 1);
  int k;

  *off = teach (s, 1);
  for (k = 0; k < 20; k++)
    ins (s, DL_OP_WRITE, (uint64_t) k * 64 * KiB, 64 * KiB);
  *w = dl_dispatch (s, now);
  REQUIRE (*w != NULL && (*w)->op == DL_OP_WRITE);
  return s;
}

/* With a device of `depth` slots full of nothing but a write flood,
 * how many writes does the device hold at once?
 */
static unsigned
writes_at_once (struct dl_sched *s, unsigned depth)
{
  struct dl_req *u[8];
  unsigned n = 0, i;
  int k;

  for (k = 0; k < 100; k++)
    ins (s, DL_OP_WRITE, (uint64_t) k * 64 * KiB, 64 * KiB);
  while (n < depth && (u[n] = dl_dispatch (s, now)) != NULL)
    n++;
  for (i = 0; i < n; i++)
    dl_complete (s, u[i], now);
  return n;
}

int
main (void)
{
  struct dl_tunables t;
  struct dl_sched *s;
  struct dl_req *w, *w2, *r, *u;
  struct dl_stats st;
  uint64_t off;

  dl_tunables_default (&t);
  t.max_merge = 0;              /* one write, one unit */
  t.anticipate_ns = 0;          /* the rule alone */
  CHECK (t.preempt);

  /* A write flood alone: every slot. */
  s = mksched (&t, 1);
  CHECK_EQ (writes_at_once (s, 4), 4);
  CHECK_EQ (stats (s).write_holds, 0);
  finish (s);

  /* Beside cat: one write at a time. */
  s = mksched (&t, 1);
  teach (s, 1);
  CHECK_EQ (writes_at_once (s, 4), 1);
  st = stats (s);
  CHECK (st.write_holds >= 1);
  CHECK_EQ (st.inflight_writes, 0);
  finish (s);

  /* At depth 8 (an SSD), four. */
  s = mksched (&t, 1);
  dl_sched_set_depth (s, 8);
  teach (s, 1);
  CHECK_EQ (writes_at_once (s, 8), 4);
  finish (s);
  s = mksched (&t, 1);
  dl_sched_set_depth (s, 8);
  CHECK_EQ (writes_at_once (s, 8), 8);
  finish (s);

  /* The reader's read still takes a free slot beside the write at the
   * device, and the next write waits for that write, not for the read.
   */
  s = cat_then_writes (&t, &w, &off);
  CHECK (dl_dispatch (s, now) == NULL);
  read_from (s, 2, off);
  r = dl_dispatch (s, now);
  CHECK (r != NULL && r->op == DL_OP_READ);
  CHECK (dl_dispatch (s, now) == NULL);
  dl_complete (s, w, now);
  w2 = dl_dispatch (s, now);
  CHECK (w2 != NULL && w2->op == DL_OP_WRITE);
  CHECK (dl_dispatch (s, now) == NULL);
  if (r)
    dl_complete (s, r, now);
  if (w2)
    dl_complete (s, w2, now);
  finish (s);

  /* A read already queued behind a write batch that has not yet spent
   * preempt_min is preemption's business: the free slot goes to the
   * next write rather than idling (the read waits for preemption).
   */
  t.preempt_min = 32;
  s = cat_then_writes (&t, &w, &off);  /* a seek: 16 of the 32 */
  read_from (s, 2, off);
  w2 = dl_dispatch (s, now);
  CHECK (w2 != NULL && w2->op == DL_OP_WRITE);
  dl_complete (s, w, now);
  if (w2)
    dl_complete (s, w2, now);
  finish (s);
  t.preempt_min = 16;

  /* Preemption turned off at run time, the reader still recent: every
   * slot at once.
   */
  s = mksched (&t, 1);
  teach (s, 1);
  {
    struct dl_tunables off_t = t;
    off_t.preempt = false;
    REQUIRE (dl_sched_set_tunables (s, &off_t, NULL, 0) == 0);
  }
  CHECK_EQ (writes_at_once (s, 4), 4);
  finish (s);

  /* A read's completion counts as the reader being seen: one that took
   * 150 ms at the device still holds writes back 50 ms later.
   */
  s = mksched (&t, 1);
  off = teach (s, 1);
  read_from (s, 2, off);
  u = dl_dispatch (s, now);
  REQUIRE (u != NULL && u->op == DL_OP_READ);
  now += 150 * MS;
  dl_complete (s, u, now);
  now += 50 * MS;
  CHECK_EQ (writes_at_once (s, 4), 1);
  finish (s);

  /* The reader gone quiet for longer than READER_RECENT_NS (100 ms):
   * the flood has every slot again.
   */
  s = mksched (&t, 1);
  teach (s, 1);
  now += 101 * MS;
  CHECK_EQ (writes_at_once (s, 4), 4);
  finish (s);

  /* A reader that keeps 8 reads queued never preempts, so it does not
   * hold writes back either (once known: a new reader's first reads get
   * the benefit of the doubt, so its reads after that quiet time).
   */
  s = mksched (&t, 1);
  teach (s, 8);
  now += 101 * MS;
  teach (s, 8);
  CHECK_EQ (writes_at_once (s, 4), 4);
  CHECK_EQ (stats (s).write_holds, 0);
  finish (s);

  /* Preemption off (the seed): every slot, whoever reads. */
  t.preempt = false;
  s = mksched (&t, 1);
  teach (s, 1);
  CHECK_EQ (writes_at_once (s, 4), 4);
  CHECK_EQ (stats (s).write_holds, 0);
  finish (s);
  t.preempt = true;

  /* Flushes are not writes: one goes beside the write at the device. */
  s = cat_then_writes (&t, &w, &off);
  ins (s, DL_OP_FLUSH, 0, 0);
  u = dl_dispatch (s, now);
  CHECK (u != NULL && u->op == DL_OP_FLUSH);
  st = stats (s);
  CHECK_EQ (st.inflight_writes, 1);
  if (u)
    dl_complete (s, u, now);
  dl_complete (s, w, now);
  CHECK_EQ (stats (s).inflight_writes, 0);
  finish (s);

  return test_result ("test-write-held");
}
