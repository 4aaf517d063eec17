/* SPDX-License-Identifier: BSD-3-Clause */
/* Randomized liveness and safety with the mechanisms beyond the seed
 * on (anticipation, read preemption), which the reference model of
 * test-random does not describe (it expects the seed's rules).  Checks:
 *   - every request completes exactly once, members contiguous;
 *   - no two conflicting units overlap at the device;
 *   - the core never stalls: when it dispatches nothing while requests
 *     wait and the device is idle, it has set a timer in the future, and
 *     at that time it dispatches (unless a new read came first);
 *   - the gauges return to zero, the queued preempting reads never
 *     outnumber the queued reads, the write gauge counts the writes at
 *     the device, and a write is held back only while another is there.
 *
 *   test-beyond-random [--digest] [FIRST-SEED [SEEDS [STEPS]]]
 *
 * --digest also prints a digest of every unit dispatched and when
 * (test-order-digest.sh pins it, as test-random's).
 */
#include "digest.h"
#include "testlib.h"

#define MAXREQ 3000
#define MAXDEPTH 8

static uint64_t rng;
static uint64_t all_holds;      /* writes held back, every seed */
static uint64_t all_slices;     /* time slices started, every seed */
static uint64_t digest = DIGEST_INIT;

static void
digest_unit (const struct dl_req *u)
{
  const struct dl_req *m;

  digest_add (&digest, now);
  digest_add (&digest, u->op);
  digest_add (&digest, u->unit_offset);
  digest_add (&digest, u->unit_length);
  for (m = u; m; m = m->next_member)
    digest_add (&digest, (uint64_t) (intptr_t) m->priv);
}

static uint64_t
rnd (void)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static int
conflicts (const struct dl_req *a, const struct dl_req *b)
{
  if (a->op == DL_OP_FLUSH || b->op == DL_OP_FLUSH)
    return 0;
  if (a->op == DL_OP_READ && b->op == DL_OP_READ)
    return 0;
  return a->unit_offset < b->unit_offset + b->unit_length &&
    b->unit_offset < a->unit_offset + a->unit_length;
}

static int
run (uint64_t seed, int steps, bool slices)
{
  static unsigned char done[MAXREQ];
  struct dl_req *infl[MAXDEPTH];
  struct dl_tunables t;
  struct dl_sched *s;
  int ninfl = 0, next = 0, completed = 0, depth, step;
  struct dl_stats st;
  uint64_t holds = 0;

  rng = seed * 2654435761u + 1;
  pool_used = 0;
  memset (done, 0, sizeof done);
  dl_tunables_default (&t);
  t.anticipate_ns = (rnd () % 10 + 1) * MS;
  t.preempt = rnd () % 2;
  t.preempt_min = rnd () % 64;
  t.fifo_batch = rnd () % 64 + 1;
  t.write_expire_ns = rnd () % 2 ? 0 : 200 * MS;
  t.max_merge = rnd () % 2 ? 0 : 64 * KiB;
  depth = rnd () % 4 + 1;
  if (slices) {                 /* (no draw: the other runs keep theirs) */
    t.read_slice_ns = (seed % 8 + 1) * 5 * MS;
    t.write_slice_ns = (seed / 8 % 4 + 1) * 5 * MS;
  }
  s = mksched (&t, 1);
  dl_sched_set_depth (s, depth);

  for (step = 0; step < steps && completed < MAXREQ; step++) {
    int act = rnd () % 4;

    if (rnd () % 500 == 0) {    /* preemption toggled at run time */
      t.preempt = !t.preempt;
      REQUIRE (dl_sched_set_tunables (s, &t, NULL, 0) == 0);
    }

    if (act == 0 && next < MAXREQ) {
      int k = rnd () % 10;
      enum dl_op op = k < 6 ? DL_OP_READ : k < 9 ? DL_OP_WRITE : DL_OP_FLUSH;
      struct dl_req *r = mkreq (op, (rnd () % 512) * 4 * KiB,
                                (rnd () % 4 + 1) * 4 * KiB, 0);
      r->stream = rnd () % 4;   /* 0 = unknown */
      r->priv = (void *) (intptr_t) next++;
      dl_insert (s, r, now);
    }
    else if (act == 1 && ninfl < depth) {
      struct dl_req *u = dl_dispatch (s, now);
      int i;

      if (u) {
        digest_unit (u);
        for (i = 0; i < ninfl; i++)
          REQUIRE (!conflicts (u, infl[i]));
        infl[ninfl++] = u;
      }
      else if (dl_waiting (s) > 0 && ninfl == 0) {
        uint64_t when = dl_next_timer (s, now);
        /* Waiting with nothing at the device: only for a timer. */
        REQUIRE (when > now);
        now = when;
        u = dl_dispatch (s, now);
        REQUIRE (u != NULL);
        digest_unit (u);
        infl[ninfl++] = u;
      }
    }
    else if (act == 2 && ninfl > 0) {
      int i = rnd () % ninfl;
      struct dl_req *u = infl[i], *m, *tmp;
      uint64_t off;

      infl[i] = infl[--ninfl];
      dl_complete (s, u, now);
      off = u->unit_offset;
      DL_FOREACH_MEMBER (m, u, tmp) {
        intptr_t id = (intptr_t) m->priv;
        REQUIRE (done[id] == 0);
        done[id] = 1;
        completed++;
        if (u->op != DL_OP_FLUSH) {
          REQUIRE (m->offset == off);
          off += m->length;
        }
      }
    }
    else
      now += rnd () % (2 * MS);
    /* The preempting gauge counts queued read units: never more (an
     * unbalanced decrement would wrap around and show here).
     */
    dl_sched_check (s);          /* the core's structures agree */
    dl_sched_stats (s, &st);
    REQUIRE (st.queued_preempting <= st.queued[DL_READ]);
    /* The write gauge is what is at the device; writes are held back
     * (select.c, write_held) only with another write there.
     */
    {
      uint64_t w = 0;
      int k;
      for (k = 0; k < ninfl; k++)
        w += infl[k]->op != DL_OP_FLUSH && infl[k]->op != DL_OP_READ;
      REQUIRE (st.inflight_writes == w);
      if (st.write_holds > holds)
        REQUIRE (w > 0 && t.preempt);
      holds = st.write_holds;
    }
  }

  /* Drain: no new requests; the device serves until nothing is left. */
  while (dl_waiting (s) > 0 || ninfl > 0) {
    struct dl_req *u, *m, *tmp;

    while (ninfl < depth && (u = dl_dispatch (s, now)) != NULL) {
      digest_unit (u);
      infl[ninfl++] = u;
    }
    if (ninfl == 0) {
      uint64_t when = dl_next_timer (s, now);
      REQUIRE (when > now);
      now = when;
      continue;
    }
    u = infl[--ninfl];
    now += 100000;
    dl_complete (s, u, now);
    DL_FOREACH_MEMBER (m, u, tmp) {
      intptr_t id = (intptr_t) m->priv;
      REQUIRE (done[id] == 0);
      done[id] = 1;
      completed++;
    }
  }
  REQUIRE (completed == next);
  dl_sched_stats (s, &st);
  REQUIRE (st.queued[0] == 0 && st.queued[1] == 0 && st.held == 0 &&
           st.inflight == 0 && st.queued_flushes == 0 &&
           st.queued_preempting == 0 && st.inflight_writes == 0);
  all_holds += st.write_holds;
  all_slices += st.slices[DL_READ] + st.slices[DL_WRITE];
  dl_sched_free (s);
  return completed;
}

int
main (int argc, char *argv[])
{
  int show_digest = argc > 1 && strcmp (argv[1], "--digest") == 0;
  uint64_t first, seeds, i, total = 0;
  int steps;

  if (show_digest) {
    argc--;
    argv++;
  }
  first = argc > 1 ? strtoull (argv[1], NULL, 0) : 1;
  seeds = argc > 2 ? strtoull (argv[2], NULL, 0) : 300;
  steps = argc > 3 ? atoi (argv[3]) : 4000;

  now = 1000 * MS;
  for (i = first; i < first + seeds; i++)
    total += run (i, steps, false);
  printf ("beyond-random: %" PRIu64 " seeds, %" PRIu64 " requests, %" PRIu64
          " writes held back\n", seeds, total, all_holds);
  if (seeds >= 100)
    CHECK (all_holds > 0);      /* the rule was exercised */
  if (show_digest)
    printf ("digest beyond %016" PRIx64 "\n", digest);

  /* Again with time slices (slice.c), 5-40 ms for reads, 5-20 ms for
   * writes: the same invariants hold.
   */
  digest = DIGEST_INIT;
  all_slices = 0;
  for (i = first; i < first + seeds; i++)
    total += run (i, steps, true);
  printf ("beyond-random with slices: %" PRIu64 " slices\n", all_slices);
  if (seeds >= 100)
    CHECK (all_slices > 0);     /* the rule was exercised */
  if (show_digest)
    printf ("digest slices %016" PRIx64 "\n", digest);
  return test_result ("beyond-random");
}
