/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: overlapping requests never pass each other (rule added
 * for NBD; the kernel leaves it to the layers above the scheduler).
 *
 * NBD lets a client have a read and a write of the same bytes in flight
 * at once, and io_uring and the device may reorder whatever they are
 * given.  So a request that overlaps an earlier one that has not yet
 * completed, where either is a write (write, trim, zero), is held here
 * until every such earlier request has completed; only then is it queued
 * (with its original arrival time, so its deadline is not reset).  Reads
 * never hold reads.
 *
 * Extents are rounded out to the device's alignment, so two writes into
 * the same block are ordered too: the engine serves an unaligned write
 * by read-modify-write of whole blocks, which must not race.
 *
 * Every unit not yet completed is in an interval tree: queued units in
 * the sorted queues (sortq.c), held and dispatched ones in the small
 * "busy" tree here, so that the overlaps of a range are found in
 * O(log n + k).  "Earlier" is the arrival sequence: a merged unit carries
 * the lowest of its members', which keeps every hold it caused.
 */
#include <config.h>

#include <assert.h>
#include <stdlib.h>

struct dl_req;
static void busy_augment (struct dl_req *n);
#define RB_AUGMENT(x) busy_augment (x)

#include "sched-internal.h"

DL_INTERVAL_TREE (busy, live_node)

static int
busy_cmp (const struct dl_req *a, const struct dl_req *b)
{
  if (a->live_lo != b->live_lo)
    return a->live_lo < b->live_lo ? -1 : 1;
  if (a->seq != b->seq)
    return a->seq < b->seq ? -1 : 1;
  return 0;
}

RB_GENERATE_STATIC (dl_busy, dl_req, live_node, busy_cmp)

static bool
conflict (const struct dl_req *a, const struct dl_req *b)
{
  return a->dir == DL_WRITE || b->dir == DL_WRITE;
}

void
hazard_busy_add (struct dl_sched *s, struct dl_req *u)
{
  dl_set_live (s, u);
  u->live_max_hi = u->live_hi;
  RB_INSERT (dl_busy, &s->busy, u);
}

void
hazard_busy_remove (struct dl_sched *s, struct dl_req *u)
{
  RB_REMOVE (dl_busy, &s->busy, u);
}

static bool
holds (struct dl_req *v, void *arg)
{
  struct dl_req *u = arg;

  return v != u && v->seq < u->seq && conflict (u, v);
}

/* Is fn true of a unit not yet completed that overlaps u's live
 * range?  Held and dispatched units are in the busy tree, queued ones
 * in the sorted queues; a read need not look at queued reads (reads
 * never conflict).
 */
static bool
live_overlap (struct dl_sched *s, struct dl_req *u, dl_visit_fn *fn)
{
  uint64_t lo = u->live_lo, hi = u->live_hi;

  if (lo >= hi)
    return false;
  return busy_overlaps_at (RB_ROOT (&s->busy), lo, hi, fn, u) ||
    sortq_overlaps (s, DL_WRITE, lo, hi, fn, u) ||
    (u->dir == DL_WRITE && sortq_overlaps (s, DL_READ, lo, hi, fn, u));
}

/* Is there an earlier, overlapping, conflicting unit not yet completed? */
bool
hazard_blocked (struct dl_sched *s, struct dl_req *u)
{
  return live_overlap (s, u, holds);
}

static bool
crosses (struct dl_req *v, void *arg)
{
  return conflict (arg, v);
}

/* Does u (its live range set) overlap a conflicting unit not yet
 * completed here, whatever its age?  (classes.c: u is of another class,
 * so every unit here came before it.)
 */
bool
hazard_conflicts (struct dl_sched *s, struct dl_req *u)
{
  return live_overlap (s, u, crosses);
}

static bool
is_write (struct dl_req *v, void *arg)
{
  (void) arg;
  return v->dir == DL_WRITE;
}

/* Does a write not yet completed (queued, held or dispatched) touch
 * [lo, hi) rounded out to the alignment, as units' ranges are
 * (dl_set_live)?  (ahead.c: nothing is read ahead over one.)
 */
bool
hazard_write_overlaps (struct dl_sched *s, uint64_t lo, uint64_t hi)
{
  if (lo >= hi)
    return false;
  dl_round_out (s, lo, hi, &lo, &hi);
  return busy_overlaps_at (RB_ROOT (&s->busy), lo, hi, is_write, NULL) ||
    sortq_overlaps (s, DL_WRITE, lo, hi, is_write, NULL);
}

/* dl_sched_check: the busy tree holds only held, batched and dispatched
 * units, as many held and batched ones as counted, and no more
 * dispatched ones than are in flight; the held list only held units.
 */
void
hazard_check (struct dl_sched *s)
{
  struct dl_req *u;
  uint64_t held = 0, batched = 0, inflight = 0, listed = 0;

  RB_FOREACH (u, dl_busy, &s->busy) {
    assert (u->state == DL_S_HELD || u->state == DL_S_BATCHED ||
            u->state == DL_S_INFLIGHT);
    assert (u->live_max_hi >= u->live_hi);
    held += u->state == DL_S_HELD;
    batched += u->state == DL_S_BATCHED;
    inflight += u->state == DL_S_INFLIGHT;
  }
  TAILQ_FOREACH (u, &s->held, fifo_link) {
    assert (u->state == DL_S_HELD);
    listed++;
  }
  assert (held == s->st.held && listed == s->st.held);
  assert (batched == s->batch_n);
  assert (inflight <= s->st.inflight);
}

void
hazard_hold (struct dl_sched *s, struct dl_req *u)
{
  assert (u->state == DL_S_NEW);
  u->state = DL_S_HELD;
  TAILQ_INSERT_TAIL (&s->held, u, fifo_link);
  hazard_busy_add (s, u);
  s->st.held++;
  s->st.hazard_holds++;
}

struct release_ctx {
  struct dl_sched *s;
  struct dl_req *done;
  bool oom;
};

static bool
collect (struct dl_req *v, void *arg)
{
  struct release_ctx *c = arg;
  struct dl_sched *s = c->s;

  if (v->state != DL_S_HELD || v->seq < c->done->seq || !conflict (v, c->done))
    return false;
  if (s->scratch_len == s->scratch_cap) {
    size_t cap = s->scratch_cap ? 2 * s->scratch_cap : 16;
    struct dl_req **p = realloc (s->scratch, cap * sizeof *p);

    if (p == NULL) {
      c->oom = true;
      return true;
    }
    s->scratch = p;
    s->scratch_cap = cap;
  }
  s->scratch[s->scratch_len++] = v;
  return false;
}

static int
by_seq (const void *a, const void *b)
{
  const struct dl_req *x = *(struct dl_req *const *) a;
  const struct dl_req *y = *(struct dl_req *const *) b;

  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void
release (struct dl_sched *s, struct dl_req *v)
{
  assert (v->state == DL_S_HELD && s->st.held > 0);
  TAILQ_REMOVE (&s->held, v, fifo_link);
  s->st.held--;
  hazard_busy_remove (s, v);
  v->state = DL_S_NEW;
  merge_or_queue (s, v);
}

/* A unit has completed (and left the busy tree): queue the held units it
 * was holding that nothing else holds now.  Held units are all in the
 * busy tree.  Candidates are collected first, because queueing one may
 * merge it and so change the trees.
 */
void
hazard_release (struct dl_sched *s, struct dl_req *done)
{
  struct release_ctx c = { .s = s, .done = done };
  size_t i;

  if (TAILQ_EMPTY (&s->held) || done->live_lo >= done->live_hi)
    return;

  s->scratch_len = 0;
  busy_overlaps_at (RB_ROOT (&s->busy), done->live_lo, done->live_hi, collect,
                    &c);
  if (c.oom) {
    /* No memory for the list: check every held unit instead. */
    struct dl_req *v, *next;

    for (v = TAILQ_FIRST (&s->held); v; v = next) {
      next = TAILQ_NEXT (v, fifo_link);
      if (!hazard_blocked (s, v))
        release (s, v);
    }
    return;
  }

  if (s->scratch_len > 1)
    qsort (s->scratch, s->scratch_len, sizeof s->scratch[0], by_seq);
  for (i = 0; i < s->scratch_len; i++)
    if (!hazard_blocked (s, s->scratch[i]))
      release (s, s->scratch[i]);
}
