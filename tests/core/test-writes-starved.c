/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (seed: writes_starved): reads are preferred, but after
 * writes_starved read batches started while writes waited, the next
 * batch is a write batch.  With the default 2: R R W R R W ...
 */
#include "testlib.h"

int
main (void)
{
  struct dl_tunables t;
  struct dl_sched *s;
  struct dl_req *u;
  char pattern[64];
  size_t n = 0, i;
  uint64_t b[2] = { 0, 0 };
  struct dl_stats st;

  dl_tunables_default (&t);
  CHECK_EQ (t.writes_starved, 2);
  t.max_merge = 0;
  t.fifo_batch = 1;             /* one unit per batch: easy to read */
  s = mksched (&t, 1);

  for (i = 0; i < 8; i++)
    ins (s, DL_OP_READ, (i + 1) << 20, 4 * KiB);
  for (i = 0; i < 4; i++)
    ins (s, DL_OP_WRITE, (i + 100) << 20, 4 * KiB);

  /* Record the direction of every batch start. */
  while ((u = dispatch_complete (s)) != NULL && n < sizeof pattern - 1) {
    st = stats (s);
    if (st.batches[DL_READ] != b[DL_READ])
      pattern[n++] = 'R';
    if (st.batches[DL_WRITE] != b[DL_WRITE])
      pattern[n++] = 'W';
    b[DL_READ] = st.batches[DL_READ];
    b[DL_WRITE] = st.batches[DL_WRITE];
  }
  pattern[n] = '\0';
  printf ("batches: %s\n", pattern);
  CHECK (strcmp (pattern, "RRWRRWRRWRRW") == 0);
  /* The first three write batches were forced while reads waited;
   * the last one had no reads left to take over.
   */
  CHECK_EQ (stats (s).starved_switches, 3);
  finish (s);

  /* Only read batches started while writes waited count: after a run
   * of reads alone, a write that arrives still waits for
   * writes_starved read batches (R R W), it does not go at once.
   */
  s = mksched (&t, 1);
  for (i = 0; i < 4; i++)
    ins (s, DL_OP_READ, (i + 1) << 20, 4 * KiB);
  for (i = 0; i < 4; i++) {
    u = dispatch_complete (s);
    REQUIRE (u != NULL);
    CHECK_EQ (u->op, DL_OP_READ);
  }
  for (i = 0; i < 4; i++)
    ins (s, DL_OP_READ, (i + 10) << 20, 4 * KiB);
  ins (s, DL_OP_WRITE, 100 << 20, 4 * KiB);
  for (i = 0; i < 3; i++) {
    u = dispatch_complete (s);
    REQUIRE (u != NULL);
    CHECK_EQ (u->op, i < 2 ? DL_OP_READ : DL_OP_WRITE);
  }
  finish (s);

  /* writes_starved = 0: writes go first whenever they wait. */
  t.writes_starved = 0;
  s = mksched (&t, 1);
  ins (s, DL_OP_READ, 1 << 20, 4 * KiB);
  ins (s, DL_OP_WRITE, 2 << 20, 4 * KiB);
  u = dispatch_complete (s);
  REQUIRE (u != NULL);
  CHECK_EQ (u->op, DL_OP_WRITE);
  finish (s);

  return test_result ("writes-starved");
}
