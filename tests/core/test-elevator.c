/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (policy elevator): one C-LOOK sweep over both directions: the
 * lowest unit at or after the end of the last one, wrapping to the
 * lowest; no deadlines, no batches.  This is the scheduler the seed
 * replaced: a stream of ascending writes starves a read below it for
 * as long as the stream lasts.  deadline serves that read within
 * read_expire (here, at the end of the first write batch).
 */
#include "testlib.h"

static void
clook_order (void)
{
  struct dl_tunables t;
  struct dl_sched *s;
  struct dl_req *u;
  static const uint64_t off[4] = { 50, 10, 30, 70 };
  static const uint64_t want[5] = { 30, 50, 70, 5, 10 };
  int i;

  dl_tunables_default (&t);
  t.preempt = false;            /* the seed's deadline */
  t.policy = DL_POLICY_ELEVATOR;
  s = mksched (&t, 1);
  for (i = 0; i < 4; i++)
    ins (s, i % 2 ? DL_OP_WRITE : DL_OP_READ, off[i] << 20, 4 * KiB);
  u = dispatch_complete (s);
  REQUIRE (u != NULL);
  CHECK_EQ (u->unit_offset, 10 << 20);        /* head starts at 0 */
  ins (s, DL_OP_READ, 5 << 20, 4 * KiB);       /* behind the head */
  ins (s, DL_OP_WRITE, 10 << 20, 4 * KiB);     /* same place, behind */
  for (i = 0; i < 5; i++) {
    u = dispatch_complete (s);
    REQUIRE (u != NULL);
    CHECK_EQ (u->unit_offset, want[i] << 20);
  }
  CHECK_EQ (stats (s).batches[0] + stats (s).batches[1], 0);
  finish (s);
}

/* A device serving one unit per 1 ms tick; a writer adding two
 * contiguous 4 KiB writes ahead of the head every tick; one read at
 * offset 0 inserted at tick 1.  Returns the tick at which the read was
 * dispatched, or -1 if not within 2000 ticks.
 */
static long
low_read_wait (enum dl_policy policy)
{
  struct dl_tunables t;
  struct dl_sched *s;
  struct dl_req *u, *rd = NULL;
  uint64_t woff = 1 << 20;
  long tick, got = -1;

  dl_tunables_default (&t);
  t.preempt = false;            /* the seed's deadline */
  t.policy = policy;
  t.max_merge = 0;              /* one unit per request */
  s = mksched (&t, 1);
  for (tick = 0; tick < 2000 && got < 0; tick++) {
    now = tick * MS;
    ins (s, DL_OP_WRITE, woff, 4 * KiB);
    ins (s, DL_OP_WRITE, woff + 4 * KiB, 4 * KiB);
    woff += 8 * KiB;
    if (tick == 1)
      rd = ins (s, DL_OP_READ, 0, 4 * KiB);
    u = dispatch_complete (s);
    if (u && u == rd)
      got = tick;
  }
  finish (s);
  return got;
}

int
main (void)
{
  struct dl_tunables t;
  long w;

  clook_order ();

  w = low_read_wait (DL_POLICY_ELEVATOR);
  printf ("elevator: low read served at tick %ld\n", w);
  CHECK_EQ (w, -1);             /* starved for the whole run */

  dl_tunables_default (&t);
  t.preempt = false;            /* the seed's deadline */
  w = low_read_wait (DL_POLICY_DEADLINE);
  printf ("deadline: low read served at tick %ld\n", w);
  CHECK (w >= 1);
  CHECK ((uint64_t) w * MS <= 1 * MS + t.read_expire_ns);
  /* Precisely: the first write batch is 64 contiguous writes from
   * tick 0 (the first, at 1 MiB, is a seek: 16 + 48 = 64, so 49
   * writes), then reads are preferred: the read goes at tick 49.
   */
  CHECK_EQ (w, 49);

  return test_result ("elevator");
}
