/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (dl_sched_set_tunables): the policy and every tunable change at
 * run time and apply to what is already queued; a bad set is refused
 * whole.
 */
#include "testlib.h"

int
main (void)
{
  struct dl_sched *s = mksched_default ();
  struct dl_tunables t, got;
  struct dl_req *r[4], *u;
  char err[200];
  int i;

  /* Queued under deadline, served under noop: arrival order. */
  for (i = 0; i < 4; i++) {
    now = i * MS;
    r[i] = ins (s, i % 2 ? DL_OP_WRITE : DL_OP_READ, (40 - 10 * i) << 20, 4 * KiB);
  }
  dl_sched_get_tunables (s, &t);
  t.policy = DL_POLICY_NOOP;
  CHECK_EQ (dl_sched_set_tunables (s, &t, err, sizeof err), 0);
  for (i = 0; i < 4; i++)
    CHECK (dispatch_complete (s) == r[i]);

  /* A shorter read_expire applies to reads already queued. */
  t.policy = DL_POLICY_DEADLINE;
  t.max_merge = 0;
  CHECK_EQ (dl_sched_set_tunables (s, &t, err, sizeof err), 0);
  now = 100 * MS;
  ins (s, DL_OP_READ, 0, 4 * KiB);
  REQUIRE (dispatch_complete (s) != NULL);     /* a read batch */
  now = 101 * MS;
  r[0] = ins (s, DL_OP_READ, 900 << 20, 4 * KiB);  /* oldest, highest */
  for (i = 1; i <= 8; i++)
    ins (s, DL_OP_READ, i << 20, 4 * KiB);
  now = 112 * MS;
  t.read_expire_ns = 10 * MS;
  t.fifo_batch = 1;             /* end the batch in progress at once */
  CHECK_EQ (dl_sched_set_tunables (s, &t, err, sizeof err), 0);
  u = dispatch_complete (s);
  CHECK (u == r[0]);
  CHECK_EQ (stats (s).expired[DL_READ], 1);

  /* front_merges off at run time. */
  t.front_merges = false;
  t.max_merge = 1 << 20;
  CHECK_EQ (dl_sched_set_tunables (s, &t, err, sizeof err), 0);
  {
    uint64_t w = dl_waiting (s);
    ins (s, DL_OP_READ, (1 << 20) - 4 * KiB, 4 * KiB);  /* in front of 1 MiB */
    CHECK_EQ (dl_waiting (s), w + 1);
  }

  /* A bad value: refused, with a reason, nothing changed. */
  dl_sched_get_tunables (s, &got);
  t.seek_cost = 0;
  err[0] = '\0';
  CHECK_EQ (dl_sched_set_tunables (s, &t, err, sizeof err), -EINVAL);
  CHECK (err[0] != '\0');
  dl_sched_get_tunables (s, &t);
  CHECK (memcmp (&t, &got, sizeof t) == 0);

  finish (s);
  return test_result ("tunable-runtime");
}
