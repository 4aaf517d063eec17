/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (autodepth.c): the depth climbs while more units in flight bring
 * more completions per second, and stays at its floor on a device that
 * serves one unit at a time, however long it runs; a load that never
 * fills the depth leaves it alone; a depth the device no longer uses
 * is given back.  Beside the climb, a floor in device time: a device
 * that completes its units fast keeps as many as it completes in 2 ms,
 * whether or not more of them complete faster.
 *
 * The devices are simulated: LANES units served at once, each taking
 * SERVICE ns (within +-JITTER), with an endless backlog unless the load
 * keeps only `outstanding` units.  A gain in units per second that is
 * not one in bytes (smaller units) is no gain.
 */
#include "testlib.h"

struct sim {
  uint32_t lanes;
  uint64_t service_ns, jitter_ns;
  uint32_t outstanding;         /* 0: endless backlog */
  uint64_t merged_bytes;        /* not 0: units are this / depth bytes
                                   (fewer waiting, fewer merged), each
                                   taking ns_per_kib more per KiB */
  uint64_t ns_per_kib;
  uint64_t rng;
  uint64_t done_at[1024];       /* per unit in flight: its completion */
  uint64_t bytes[1024];         /* ... and its size */
  uint32_t inflight;
  uint64_t lane_free[1024];     /* per lane: when it is next free */
};

static uint64_t
rnd (uint64_t *s)
{
  *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
  return *s;
}

/* A new unit: served by the lane free first, after what it holds. */
static void
submit (struct sim *m, uint64_t t, uint32_t depth)
{
  uint32_t i, best = 0;
  uint64_t start, svc = m->service_ns, bytes = 4096;

  if (m->merged_bytes) {
    bytes = m->merged_bytes / depth;
    svc += bytes / 1024 * m->ns_per_kib;
  }
  for (i = 1; i < m->lanes; i++)
    if (m->lane_free[i] < m->lane_free[best])
      best = i;
  if (m->jitter_ns)
    svc += rnd (&m->rng) % (2 * m->jitter_ns) - m->jitter_ns;
  start = m->lane_free[best] > t ? m->lane_free[best] : t;
  m->lane_free[best] = start + svc;
  m->bytes[m->inflight] = bytes;
  m->done_at[m->inflight++] = start + svc;
}

/* Runs until `until`; returns how many ns the depth spent above `above`. */
static uint64_t
run (struct sim *m, struct dl_autodepth *a, uint64_t until, uint32_t above)
{
  uint64_t t = now, over = 0;

  while (t < until) {
    uint32_t i, first = 0, want;
    uint64_t bytes;
    bool saturated;
    uint32_t depth = a->depth;

    want = m->outstanding ? (m->outstanding < depth ? m->outstanding : depth) : depth;
    while (m->inflight < want)
      submit (m, t, depth);
    for (i = 1; i < m->inflight; i++)
      if (m->done_at[i] < m->done_at[first])
        first = i;
    if (a->depth > above)
      over += m->done_at[first] - t;
    t = m->done_at[first];
    bytes = m->bytes[first];
    m->inflight--;
    m->done_at[first] = m->done_at[m->inflight];
    m->bytes[first] = m->bytes[m->inflight];
    /* Units were kept back by the depth: the backlog is endless, or the
     * load has more outstanding than the depth lets out.
     */
    saturated = m->outstanding == 0 || m->outstanding > depth;
    dl_autodepth_done (a, t, bytes, saturated);
  }
  now = t;
  return over;
}

/* A fresh device of `lanes` lanes and a fresh controller (2 to max),
 * the clock at its start.
 */
static void
fresh (struct sim *m, struct dl_autodepth *a, uint32_t lanes,
       uint64_t service_ns, uint64_t jitter_ns, uint64_t seed, uint32_t max)
{
  memset (m, 0, sizeof *m);
  m->lanes = lanes;
  m->service_ns = service_ns;
  m->jitter_ns = jitter_ns;
  m->rng = seed;
  dl_autodepth_init (a, 2, max);
  now = 1;
}

int
main (void)
{
  struct dl_autodepth a;
  static struct sim m;
  uint64_t over;

  /* One head (a disk): the rate is the same at any depth.  Over an
   * hour of simulated time the depth stays at its floor but for its
   * probes, which back off: less than 1% of the time above it.
   */
  fresh (&m, &a, 1, 5 * MS, 2 * MS, 1, 64);
  over = run (&m, &a, 3600ULL * 1000 * MS, 2);
  printf ("one head: base %u, %" PRIu64 " epochs, above 2 for %.2f%% of the time, %" PRIu64 " probes kept\n",
          a.base, a.epochs, 100.0 * over / (3600.0 * 1000 * MS), a.probes_kept);
  CHECK_EQ (a.base, 2);
  CHECK_EQ (a.probes_kept, 0);
  CHECK (over < 3600ULL * 1000 * MS / 100);
  CHECK (a.epochs > 1000);      /* it did measure */

  /* One head under a sequential writer: at a greater depth fewer units
   * wait to be merged, so they are smaller and more of them complete
   * per second, but fewer bytes: no gain, the depth stays.
   */
  fresh (&m, &a, 1, 1 * MS, 0, 6, 64);
  m.merged_bytes = 512 * KiB; m.ns_per_kib = 50000;  /* 20 MiB/s */
  run (&m, &a, now + 600000 * MS, 2);
  printf ("one head, merging writer: base %u, %" PRIu64 " probes kept\n", a.base, a.probes_kept);
  CHECK_EQ (a.base, 2);
  CHECK_EQ (a.probes_kept, 0);

  /* Sixteen lanes (a striped volume of disks, 4 ms a unit: 4000 units
   * a second, a floor of 8): the depth climbs to 16 within seconds,
   * and no further (32 units complete no faster).
   */
  fresh (&m, &a, 16, 4 * MS, 1 * MS, 2, 64);
  run (&m, &a, now + 3000 * MS, 0);
  printf ("16 lanes: base %u after 3 s, %" PRIu64 " probes kept\n", a.base, a.probes_kept);
  CHECK_EQ (a.base, 16);
  run (&m, &a, now + 60000 * MS, 0);
  printf ("16 lanes: base %u after 63 s, floor %u\n", a.base, a.drain);
  CHECK_EQ (a.base, 16);
  CHECK (a.drain <= 8);
  CHECK_EQ (a.depth, 16);

  /* ... and not beyond the caller's ceiling. */
  fresh (&m, &a, 64, 4 * MS, 0, 3, 8);
  run (&m, &a, now + 3000 * MS, 0);
  CHECK_EQ (a.base, 8);
  CHECK (a.depth <= 8);

  /* A load that keeps one unit out (a reader waiting for each read)
   * never fills the depth: nothing is learned, nothing changes.
   */
  fresh (&m, &a, 16, 100000, 0, 4, 64);
  m.outstanding = 1;
  run (&m, &a, now + 10000 * MS, 0);
  CHECK_EQ (a.depth, 2);
  CHECK_EQ (a.probes_kept, 0);
  CHECK (a.unsaturated > 0);

  /* The device changes under a kept depth (the volume is throttled to
   * one lane): the depth is given back within its holds.
   */
  fresh (&m, &a, 16, 4 * MS, 0, 5, 64);
  run (&m, &a, now + 3000 * MS, 0);
  CHECK_EQ (a.base, 16);
  m.lanes = 1;
  for (uint32_t i = 0; i < 1024; i++)
    m.lane_free[i] = 0;
  run (&m, &a, now + 600000 * MS, 0);
  printf ("16 lanes then one: base %u, %" PRIu64 " halvings kept\n", a.base, a.probes_down);
  CHECK_EQ (a.base, 2);
  CHECK (a.probes_down >= 3);

  /* The floor.  One lane of 20 us (a fast disk behind a server whose
   * CPU is the limit: no depth completes faster): 50000 units a second,
   * so the device keeps 100 units, what it completes in 2 ms, though
   * no probe gained.
   */
  fresh (&m, &a, 1, 20000, 5000, 7, 256);
  run (&m, &a, now + 1000 * MS, 0);
  printf ("one fast lane: depth %u, floor %u, base %u\n", a.depth, a.drain, a.base);
  CHECK_EQ (a.probes_kept, 0);
  CHECK (a.drain >= 90 && a.drain <= 110);
  CHECK_EQ (a.depth, a.drain);

  /* ... capped by the caller's ceiling ... */
  fresh (&m, &a, 1, 20000, 0, 8, 64);
  run (&m, &a, now + 1000 * MS, 0);
  CHECK_EQ (a.depth, 64);

  /* ... and given back at once when the device slows (throttled to
   * 1 ms a unit: a floor of 2).
   */
  m.service_ns = 1 * MS;
  run (&m, &a, now + 2000 * MS, 0);
  printf ("one lane slowed to 1 ms: depth %u, floor %u\n", a.depth, a.drain);
  CHECK (a.drain <= 2);
  CHECK_EQ (a.depth, 2);

  /* A disk with one head at 1 ms a unit (1000 a second) has a floor
   * of 2 at most: the climb alone decides there, and the depth stays.
   */
  fresh (&m, &a, 1, 1 * MS, 200000, 9, 64);
  run (&m, &a, now + 60000 * MS, 2);
  CHECK (a.drain <= 2);
  CHECK_EQ (a.base, 2);

  return test_result ("autodepth");
}
