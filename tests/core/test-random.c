/* SPDX-License-Identifier: BSD-3-Clause */
/* Seeded randomized test of the core against the reference model
 * (model.c checks every invariant on every call).
 *
 * Each seed picks tunables, an alignment and a device depth (1..8),
 * then runs a simulated device: every 1 ms tick, 0..3 random requests
 * arrive (reads, writes, FUA writes, trims, zeroes, flushes; offsets in
 * a small region so that many overlap or touch), the device is filled
 * up to its depth, and one random unit in flight completes (so the
 * device keeps completing one unit per tick while anything is at it).
 * Now and then the tunables change at run time, or everything waiting
 * is drained (a shutdown) and the run goes on.
 *
 * Usage: test-random [--digest] [first-seed [seeds [ticks]]]
 *   default: seeds 1..400, 2000 ticks each (a few seconds)
 *   make check-long: many more of both
 *   --digest: also print, per kind of run, a digest of every unit the
 *     core dispatched and when: the same seeds give the same digests as
 *     long as the core's decisions are the same (test-order-digest.sh
 *     compares them with order-digest.expected, so that a change meant
 *     to keep behaviour, a refactoring, is shown to keep it).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "model.h"

#define MS 1000000ULL

static uint64_t rng;

static uint64_t
rnd (void)
{
  /* xorshift64* */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 2685821657736338717ULL;
}

static uint64_t
pick (uint64_t n)
{
  return rnd () % n;
}

/* Tunables: a profile (default or seed), then the seed's own tunables
 * varied, and the extensions on or off.  The reference (ref.c) predicts
 * every dispatch while anticipate is 0 and preempt off (about half the
 * runs); the others keep the invariant checks only.
 */
static void
random_tunables (struct dl_tunables *t, int deadline_only)
{
  static const uint32_t batch[] = { 1, 4, 16, 64 };
  static const uint32_t seek[] = { 1, 4, 16 };
  static const uint32_t starved[] = { 0, 1, 2, 4 };
  static const uint64_t rexp[] = { 5, 50, 500 };
  static const uint64_t wexp[] = { 0, 0, 100, 1000 };
  static const uint64_t mm[] = { 0, 16 * 1024, 255 * 512, 1024 * 1024 };
  char err[200];

  dl_tunables_default (t);
  t->policy = deadline_only || pick (4) ? DL_POLICY_DEADLINE :
    pick (2) ? DL_POLICY_NOOP : DL_POLICY_ELEVATOR;
  if (pick (3) == 0) {
    if (dl_tunables_profile (t, "seed", err, sizeof err) != 0)
      model_fail ("profile seed refused: %s", err);
    if (pick (2))
      return;                   /* the seed exactly */
  }
  else {
    t->size_cost = pick (2);
    t->seed_batches = pick (4) == 0;
    t->anticipate_ns = pick (4) == 0 ? 20 * MS : 0;
    t->preempt = pick (4) == 0;
    t->preempt_min = pick (2) ? 16 : 1;
    t->write_expire_ns = wexp[pick (4)] * MS;
  }
  t->fifo_batch = batch[pick (4)];
  t->seek_cost = seek[pick (3)];
  t->writes_starved = starved[pick (4)];
  t->read_expire_ns = rexp[pick (3)] * MS;
  t->front_merges = pick (2);
  t->max_merge = mm[pick (4)];
}

/* Dispatches predicted by the reference, by kind: noop, elevator,
 * deadline with the batches of the default profile, with seed_batches.
 */
static uint64_t predicted[4], runs_exact, runs_stopped;

/* Order digests (--digest), FNV-1a 64 over each dispatched unit, by the
 * kind the run started as: noop, elevator, deadline, seed batches, and
 * deadline with an extension on (anticipate or preempt).
 */
static const char *const digest_names[] = {
  "noop", "elevator", "deadline", "seed_batches", "extensions",
};
static uint64_t digest[5] = {
  DIGEST_INIT, DIGEST_INIT, DIGEST_INIT, DIGEST_INIT, DIGEST_INIT,
};
static int show_digest;

static void
digest_unit (uint64_t *h, unsigned tick, const struct dl_req *u)
{
  const struct dl_req *m;

  digest_add (h, tick);
  digest_add (h, u->op);
  digest_add (h, u->unit_offset);
  digest_add (h, u->unit_length);
  for (m = u; m; m = m->next_member)
    digest_add (h, ((const struct mreq *) m->priv)->seq);
}

static int
kind (const struct dl_tunables *t)
{
  return t->policy == DL_POLICY_NOOP ? 0 : t->policy == DL_POLICY_ELEVATOR ? 1
    : t->seed_batches ? 3 : 2;
}

static void
random_insert (struct model *m, uint32_t align)
{
  static uint64_t last_end;
  unsigned k = pick (100);
  enum dl_op op;
  uint32_t flags = 0;
  uint64_t off, len;

  if (k < 45)
    op = DL_OP_READ;
  else if (k < 75)
    op = DL_OP_WRITE;
  else if (k < 84)
    op = DL_OP_TRIM;
  else if (k < 93)
    op = DL_OP_ZERO;
  else
    op = DL_OP_FLUSH;
  if (op == DL_OP_WRITE && pick (8) == 0)
    flags = DL_F_FUA;
  if (op == DL_OP_ZERO && pick (2))
    flags = DL_F_MAY_TRIM;

  /* 256 blocks of 4 KiB; sometimes sub-block, sometimes right after
   * the previous request (a sequential stream, which merges).
   */
  len = (1 + pick (8)) * (pick (4) ? 4096 : 512);
  if (pick (16) == 0)
    len = (1 + pick (8)) * 65536;       /* large: the size cost counts */
  if (pick (3) == 0)
    off = last_end;
  else
    off = pick (256) * 4096 + (pick (4) ? 0 : pick (8) * 512);
  if (off > (1u << 20))
    off = 0;
  last_end = off + len;
  model_insert (m, op, off, len, flags);
  (void) align;
}

static void
run (uint64_t seed, unsigned ticks, uint64_t *units, uint64_t *maxwait)
{
  static const uint32_t aligns[] = { 1, 512, 4096 };
  struct dl_tunables t;
  struct model m;
  uint32_t align;
  unsigned depth, tick, n;
  int mixed, dkind;

  rng = seed * 0x9E3779B97F4A7C15ULL + 1;
  mixed = pick (3) == 0;        /* policies and tunables change too */
  random_tunables (&t, 0);
  align = aligns[pick (3)];
  depth = 1 + pick (8);
  model_init (&m, &t, align);
  dkind = t.policy == DL_POLICY_DEADLINE &&
    (t.anticipate_ns > 0 || t.preempt) ? 4 : kind (&t);

  for (tick = 0; tick < ticks; tick++) {
    /* Arrivals, at most 32 requests live so the model stays fast. */
    for (n = pick (4); n > 0 && m.nlive < 32; n--)
      random_insert (&m, align);
    for (;;) {
      uint64_t before = m.n_predicted;
      struct dl_req *u = m.ninflight < depth ? model_dispatch (&m) : NULL;
      predicted[kind (&m.t)] += m.n_predicted - before;
      if (u == NULL)
        break;
      digest_unit (&digest[dkind], tick, u);
    }
    if (m.ninflight)
      model_complete (&m, pick (m.ninflight));
    model_advance (&m, MS);

    if (mixed && pick (500) == 0) {
      random_tunables (&t, 0);
      if (model_set_tunables (&m, &t) != 0)
        model_fail ("valid tunables refused at run time");
    }
    if (pick (2000) == 0)
      model_drain_all (&m);
  }
  *units += m.n_dispatched_units;
  if (m.ref_stopped)
    runs_stopped++;
  else
    runs_exact++;
  if (m.max_read_wait_ns > *maxwait)
    *maxwait = m.max_read_wait_ns;
  model_free (&m);
}

int
main (int argc, char **argv)
{
  uint64_t first, seeds, seed, units = 0, maxwait = 0;
  unsigned ticks;
  size_t k;

  if (argc > 1 && strcmp (argv[1], "--digest") == 0) {
    show_digest = 1;
    argc--;
    argv++;
  }
  first = argc > 1 ? strtoull (argv[1], NULL, 0) : 1;
  seeds = argc > 2 ? strtoull (argv[2], NULL, 0) : 400;
  ticks = argc > 3 ? strtoul (argv[3], NULL, 0) : 2000;

  for (seed = first; seed < first + seeds; seed++) {
    /* Say which seed is running, so a failure names its reproducer. */
    fprintf (stderr, "\rseed %" PRIu64 "   ", seed);
    run (seed, ticks, &units, &maxwait);
  }
  fprintf (stderr, "\n");
  printf ("random: reference predicted every dispatch in %" PRIu64 " runs "
          "(stopped at an extension in %" PRIu64 "): noop %" PRIu64
          ", elevator %" PRIu64 ", deadline %" PRIu64 ", seed batches %"
          PRIu64 " dispatches\n", runs_exact, runs_stopped, predicted[0],
          predicted[1], predicted[2], predicted[3]);
  if (seeds >= 100 && (predicted[0] == 0 || predicted[1] == 0 ||
                       predicted[2] == 0 || predicted[3] == 0))
    model_fail ("a policy or profile was never predicted");
  printf ("random: ok: seeds %" PRIu64 "..%" PRIu64 ", %u ticks each, "
          "%" PRIu64 " units dispatched, longest read wait %" PRIu64 " ms\n",
          first, first + seeds - 1, ticks, units, (uint64_t) (maxwait / MS));
  for (k = 0; show_digest && k < sizeof digest / sizeof digest[0]; k++)
    printf ("digest %s %016" PRIx64 "\n", digest_names[k], digest[k]);
  return 0;
}
