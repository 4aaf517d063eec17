/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (struct dl_stats): every counter and gauge moves as the events
 * it names happen.
 */
#include "testlib.h"

int
main (void)
{
  struct dl_sched *s = mksched_default ();
  struct dl_stats st;
  struct dl_req *u1, *u2, *u3;

  ins (s, DL_OP_READ, 8 * KiB, 4 * KiB);
  ins (s, DL_OP_READ, 12 * KiB, 4 * KiB);       /* back merge */
  ins (s, DL_OP_READ, 4 * KiB, 4 * KiB);        /* front merge */
  ins (s, DL_OP_WRITE, 1 << 20, 8 * KiB);
  ins (s, DL_OP_READ, 1 << 20, 4 * KiB);        /* held */
  ins (s, DL_OP_FLUSH, 0, 0);
  st = stats (s);
  CHECK_EQ (st.inserted[DL_READ], 4);
  CHECK_EQ (st.inserted[DL_WRITE], 1);
  CHECK_EQ (st.flushes, 1);
  CHECK_EQ (st.merged_back, 1);
  CHECK_EQ (st.merged_front, 1);
  CHECK_EQ (st.hazard_holds, 1);
  CHECK_EQ (st.queued[DL_READ], 1);
  CHECK_EQ (st.queued[DL_WRITE], 1);
  CHECK_EQ (st.queued_flushes, 1);
  CHECK_EQ (st.held, 1);
  CHECK_EQ (st.inflight, 0);
  CHECK_EQ (dl_waiting (s), 4);

  u1 = dl_dispatch (s, now);                    /* the flush */
  u2 = dl_dispatch (s, now);                    /* the read unit */
  u3 = dl_dispatch (s, now);                    /* the write */
  REQUIRE (u1 && u2 && u3);
  st = stats (s);
  CHECK_EQ (u1->op, DL_OP_FLUSH);
  CHECK_EQ (st.inflight, 3);
  CHECK_EQ (st.dispatched[DL_READ], 1);
  CHECK_EQ (st.dispatched[DL_WRITE], 1);
  CHECK_EQ (st.dispatched_bytes[DL_READ], 12 * KiB);
  CHECK_EQ (st.dispatched_bytes[DL_WRITE], 8 * KiB);
  CHECK_EQ (st.batches[DL_READ], 1);
  CHECK_EQ (st.batches[DL_WRITE], 1);
  CHECK_EQ (st.seeks, 2);                       /* 4 KiB and 1 MiB */
  CHECK_EQ (st.queued[DL_READ] + st.queued[DL_WRITE], 0);
  CHECK_EQ (st.queued_flushes, 0);
  dl_complete (s, u1, now);
  dl_complete (s, u2, now);
  dl_complete (s, u3, now);
  st = stats (s);
  CHECK_EQ (st.inflight, 0);
  CHECK_EQ (st.held, 0);
  CHECK_EQ (st.queued[DL_READ], 1);             /* released */
  finish (s);
  return test_result ("counters");
}
