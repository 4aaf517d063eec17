/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the sorted queues (rule: "sort_list").
 *
 * One red-black tree per direction holds the queued units ordered by
 * offset, so that a batch can walk the disk in one direction and a merge
 * candidate is found in O(log n).  Ties (reads may overlap) are broken
 * by arrival sequence, which keeps the key unique.
 *
 * The trees are also interval trees (see DL_INTERVAL_TREE), so that
 * hazard.c finds the queued units a new request overlaps in the same
 * structure, without a tree of its own to keep up to date.
 */
#include <config.h>

#include <assert.h>

struct dl_req;
static void sortq_augment_reads (struct dl_req *n);
#define RB_AUGMENT(x) sortq_augment_reads (x)

#include "sched-internal.h"

DL_INTERVAL_TREE (sortq, sort_node)

/* Only the read queue needs the maxima: queued writes never overlap one
 * another (hazard.c holds the later of two), so a plain search finds the
 * writes that a range overlaps.
 */
static void
sortq_augment_reads (struct dl_req *n)
{
  if (n && n->dir == DL_READ)
    sortq_augment (n);
}

static int
sortq_cmp (const struct dl_req *a, const struct dl_req *b)
{
  if (a->unit_offset != b->unit_offset)
    return a->unit_offset < b->unit_offset ? -1 : 1;
  if (a->seq != b->seq)
    return a->seq < b->seq ? -1 : 1;
  return 0;
}

RB_GENERATE_STATIC (dl_sortq, dl_req, sort_node, sortq_cmp)

void
sortq_insert (struct dl_sched *s, struct dl_req *u)
{
  dl_set_live (s, u);
  u->live_max_hi = u->live_hi;
  RB_INSERT (dl_sortq, &s->sort[u->dir], u);
}

/* A queued unit's end grew in place (a back merge): its key is the same,
 * only the maxima on its path to the root may rise.
 */
void
sortq_grown (struct dl_req *u)
{
  sortq_augment_reads (u);
}

/* Calls fn on each queued unit of direction d overlapping [lo, hi);
 * stops and returns true as soon as fn does.
 */
bool
sortq_overlaps (struct dl_sched *s, enum dl_dir d, uint64_t lo, uint64_t hi,
                dl_visit_fn *fn, void *arg)
{
  struct dl_req *n, *p;

  if (d == DL_READ)
    return sortq_overlaps_at (RB_ROOT (&s->sort[d]), lo, hi, fn, arg);

  /* Writes are disjoint: at most one starts before lo and reaches it. */
  n = sortq_at_or_after (s, d, lo);
  p = n ? sortq_prev (n) : RB_MAX (dl_sortq, &s->sort[d]);
  if (p && p->live_hi > lo && fn (p, arg))
    return true;
  for (; n && n->live_lo < hi; n = sortq_next (n))
    if (n->live_hi > n->live_lo && fn (n, arg))
      return true;
  return false;
}

void
sortq_remove (struct dl_sched *s, struct dl_req *u)
{
  RB_REMOVE (dl_sortq, &s->sort[u->dir], u);
}

struct dl_req *
sortq_first (struct dl_sched *s, enum dl_dir d)
{
  return RB_MIN (dl_sortq, &s->sort[d]);
}

/* The lowest unit starting at or after off.  (RB_NFIND would need a
 * whole dl_req as its key; this descent needs only the offset.)
 */
struct dl_req *
sortq_at_or_after (struct dl_sched *s, enum dl_dir d, uint64_t off)
{
  struct dl_req *n = RB_ROOT (&s->sort[d]), *best = NULL;

  while (n) {
    if (n->unit_offset >= off) {
      best = n;
      n = RB_LEFT (n, sort_node);
    }
    else
      n = RB_RIGHT (n, sort_node);
  }
  return best;
}

/* The highest unit starting strictly before off. */
struct dl_req *
sortq_last_before (struct dl_sched *s, enum dl_dir d, uint64_t off)
{
  struct dl_req *n = sortq_at_or_after (s, d, off);

  return n ? RB_PREV (dl_sortq, &s->sort[d], n) : RB_MAX (dl_sortq, &s->sort[d]);
}

struct dl_req *
sortq_next (struct dl_req *u)
{
  return RB_NEXT (dl_sortq, NULL, u);
}

struct dl_req *
sortq_prev (struct dl_req *u)
{
  return RB_PREV (dl_sortq, NULL, u);
}

/* dl_sched_check: the queue of direction d is in key order, holds only
 * queued units of that direction, and each node's maximum covers its
 * extent.  Returns how many units it holds.
 */
uint64_t
sortq_check (struct dl_sched *s, enum dl_dir d)
{
  struct dl_req *u, *prev = NULL;
  uint64_t n = 0;

  RB_FOREACH (u, dl_sortq, &s->sort[d]) {
    assert (u->state == DL_S_QUEUED && u->dir == d);
    assert (prev == NULL || sortq_cmp (prev, u) < 0);
    assert (d != DL_READ || u->live_max_hi >= u->live_hi);
    prev = u;
    n++;
  }
  return n;
}
