/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (devtime.c): the core learns, per direction, what a seek adds
 * to a unit's time at the device and the device's transfer rate, from
 * the times of dispatch and completion alone.
 *
 * A simulated device serves the units in the order given, one at a
 * time: a unit that does not start where the last one ended pays the
 * access time, and every unit its bytes at the transfer rate.  It is
 * kept busy at depth 2 (so most units wait at the device behind
 * another, and their time must be counted from the previous
 * completion, not from their dispatch) with idle gaps now and then (so
 * some units start at their dispatch).  Two shapes of disk: one that
 * seeks in 8 ms (a spindle) and one that is bound by its transfer rate
 * (a throttled volume: 0.3 ms, 20 MiB/s).  The learned figures must be
 * the device's within 5%.
 */
#include "testlib.h"

struct shape {
  const char *name;
  uint64_t access_ns[2];        /* by direction */
  double mib_per_s[2];
};

struct inflight {
  struct dl_req *u;
  uint64_t done_ns;
};

static uint64_t rng = 88172645463325252ULL;
static uint64_t
rnd (uint64_t n)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng % n;
}

static bool
near (double got, double want, double tolerance)
{
  return got >= want * (1 - tolerance) && got <= want * (1 + tolerance);
}

static void
run (const struct shape *sh)
{
  struct dl_tunables t;
  struct dl_sched *s;
  struct dl_stats st;
  struct inflight fl[2];
  unsigned nfl = 0, done = 0, i;
  uint64_t busy_until = 0, head = 0, wpos = 1ULL << 30;
  double ns_per_byte[2];
  int d;

  for (d = DL_READ; d <= DL_WRITE; d++)
    ns_per_byte[d] = 1e9 / (sh->mib_per_s[d] * 1048576.0);
  dl_tunables_default (&t);
  s = mksched (&t, 512);
  dl_sched_set_depth (s, 2);
  now = 1;

  dl_sched_stats (s, &st);
  CHECK_EQ (st.device_rate[DL_READ], 0);        /* nothing learned yet */
  CHECK_EQ (st.device_access_ns[DL_WRITE], 0);

  while (done < 3000) {
    /* Keep a few of each waiting: random reads of 4-64 KiB, and a
     * sequential writer of 16-128 KiB requests (which merge).
     */
    while (dl_waiting (s) < 6) {
      if (rnd (2))
        dl_insert (s, heapreq (DL_OP_READ, rnd (1 << 20) * 512,
                               (1 + rnd (16)) * 4096, 0), now);
      else {
        uint64_t len = (1 + rnd (8)) * 16384;
        dl_insert (s, heapreq (DL_OP_WRITE, wpos, len, 0), now);
        wpos += len;
      }
    }
    /* The device takes units while it has a free slot. */
    while (nfl < 2) {
      struct dl_req *u = dl_dispatch (s, now);
      uint64_t start, svc;

      if (u == NULL)
        break;
      d = u->op == DL_OP_READ ? DL_READ : DL_WRITE;
      start = busy_until > now ? busy_until : now;
      svc = (u->unit_offset != head ? sh->access_ns[d] : 0) +
        (uint64_t) (u->unit_length * ns_per_byte[d]);
      busy_until = start + svc;
      head = u->unit_offset + u->unit_length;
      fl[nfl].u = u;
      fl[nfl].done_ns = busy_until;
      nfl++;
    }
    REQUIRE (nfl > 0);
    /* The first in flight completes. */
    now = fl[0].done_ns;
    dl_complete (s, fl[0].u, now);
    free_unit (fl[0].u);
    fl[0] = fl[1];
    nfl--;
    done++;
    /* Now and then the device idles for a while. */
    if (done % 100 == 0 && nfl == 1) {
      now = fl[0].done_ns;
      dl_complete (s, fl[0].u, now);
      free_unit (fl[0].u);
      nfl = 0;
      now += 50 * MS;
    }
  }

  dl_sched_stats (s, &st);
  for (d = DL_READ; d <= DL_WRITE; d++) {
    double rate = sh->mib_per_s[d] * 1048576.0;

    printf ("%s %s: access %" PRIu64 " ns (device %" PRIu64 "), "
            "rate %" PRIu64 " B/s (device %.0f)\n", sh->name,
            d == DL_READ ? "read" : "write", st.device_access_ns[d],
            sh->access_ns[d], st.device_rate[d], rate);
    CHECK (near (st.device_access_ns[d], sh->access_ns[d], 0.05));
    CHECK (near (st.device_rate[d], rate, 0.05));
  }

  for (i = 0; i < nfl; i++) {
    dl_complete (s, fl[i].u, now);
    free_unit (fl[i].u);
  }
  sched_free_all (s);
}

int
main (void)
{
  static const struct shape spindle = {
    "spindle", { 8 * MS, 8 * MS }, { 100, 80 },
  };
  static const struct shape throttled = {
    "throttled", { 300000, 250000 }, { 20, 16 },
  };

  run (&spindle);
  run (&throttled);
  return test_result ("test-devtime");
}
