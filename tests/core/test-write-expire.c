/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (mq-deadline's write deadline): a write that has waited
 * write_expire forces a write batch even while reads keep coming and
 * writes_starved has not been reached; write_expire = 0 is the seed's
 * behaviour, where only writes_starved ever serves writes.
 */
#include "testlib.h"

/* A read arrives every 1 ms tick and the device serves one unit per
 * tick; one write waits from tick 0.  writes_starved is huge so that
 * only the deadline can serve it.  Returns the tick at which the
 * write went out, or -1 within 10 s.
 */
static long
write_served (uint64_t write_expire_ns)
{
  struct dl_tunables t;
  struct dl_sched *s;
  struct dl_req *w, *u;
  long tick, got = -1;

  dl_tunables_default (&t);
  t.write_expire_ns = write_expire_ns;
  t.writes_starved = 100000;
  s = mksched (&t, 1);
  now = 0;
  ins (s, DL_OP_READ, 0, 4 * KiB);
  REQUIRE (dispatch_complete (s) != NULL);
  /* Far above every read, so that no read overlaps it. */
  w = ins (s, DL_OP_WRITE, 1ULL << 40, 4 * KiB);
  for (tick = 0; tick < 10000 && got < 0; tick++) {
    now = tick * MS;
    /* Reads far apart and descending, so every batch is a new one. */
    ins (s, DL_OP_READ, (uint64_t) (10000 - tick) << 20, 4 * KiB);
    u = dispatch_complete (s);
    if (u == w)
      got = tick;
  }
  if (got >= 0)
    CHECK_EQ (stats (s).expired[DL_WRITE], 1);
  CHECK_EQ (stats (s).starved_switches, got >= 0 ? 1 : 0);
  pool_used = 0;                /* the pool is reused by the next run */
  finish (s);
  return got;
}

int
main (void)
{
  struct dl_tunables t;
  long tick;

  dl_tunables_default (&t);
  CHECK_EQ (t.write_expire_ns, 5000 * MS);

  tick = write_served (5000 * MS);
  printf ("write_expire 5s: write served at tick %ld\n", tick);
  /* Expired at tick 5000; served when the batch in progress ends, which
   * with one read per batch is at once.
   */
  CHECK (tick >= 5000 && tick <= 5001);

  tick = write_served (100 * MS);
  CHECK (tick >= 100 && tick <= 101);

  tick = write_served (0);
  printf ("write_expire 0: write served at tick %ld\n", tick);
  CHECK_EQ (tick, -1);

  return test_result ("write-expire");
}
