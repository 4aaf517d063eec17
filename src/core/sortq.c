/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the sorted queues (rule: "sort_list").
 *
 * One B+tree per direction (btree.c) holds the queued units ordered by
 * offset, so that a batch can walk the disk in one direction and a merge
 * candidate is found in O(log n).  Ties (reads may overlap) are broken
 * by arrival sequence, which keeps the key unique.
 *
 * The trees are also interval trees, so that hazard.c finds the queued
 * units a new request overlaps in the same structure, without a tree of
 * its own to keep up to date.  Only the read queue needs that search:
 * queued writes never overlap one another (hazard.c holds the later of
 * two), so the last non-empty write before a range is the only one
 * before it that can reach into it.  (Not simply the last one: an empty
 * write may sit inside another.)
 *
 * The trees take their nodes from one pool, reserved by dl_insert for
 * every unit that may come to be queued (sortq_reserve), so that queueing
 * a unit never fails, wherever it happens.
 */
#include <config.h>

#include <assert.h>

#include "sched-internal.h"

void
sortq_init (struct dl_sched *s)
{
  enum dl_dir d;

  btpool_init (&s->sort_pool);
  for (d = DL_READ; d <= DL_WRITE; d++)
    btree_init (&s->sort[d], &s->sort_pool, (uint64_t) s->align - 1);
}

void
sortq_fini (struct dl_sched *s)
{
  btpool_fini (&s->sort_pool);
}

/* Room for `units` units queued in both directions at once; -ENOMEM. */
int
sortq_reserve (struct dl_sched *s, uint64_t units)
{
  return btpool_reserve (&s->sort_pool, units);
}

void
sortq_insert (struct dl_sched *s, struct dl_req *u)
{
  dl_set_live (s, u);
  btree_insert (&s->sort[u->dir], u);
}

/* A queued unit's end grew in place (a back merge): its key is the same,
 * only the maxima on its path to the root may rise.
 */
void
sortq_grown (struct dl_req *u)
{
  btree_grown (u);
}

/* Calls fn on each queued unit of direction d overlapping [lo, hi), in
 * order; stops and returns true as soon as fn does.
 */
bool
sortq_overlaps (struct dl_sched *s, enum dl_dir d, uint64_t lo, uint64_t hi,
                dl_visit_fn *fn, void *arg)
{
  if (d == DL_READ)
    return btree_overlaps (&s->sort[d], lo, hi, fn, arg);
  return btree_overlaps_disjoint (&s->sort[d], lo, hi, fn, arg);
}

void
sortq_remove (struct dl_sched *s, struct dl_req *u)
{
  btree_remove (&s->sort[u->dir], u);
}

struct dl_req *
sortq_first (struct dl_sched *s, enum dl_dir d)
{
  return btree_first (&s->sort[d]);
}

/* The lowest unit starting at or after off. */
struct dl_req *
sortq_at_or_after (struct dl_sched *s, enum dl_dir d, uint64_t off)
{
  return btree_at_or_after (&s->sort[d], off);
}

/* The merge candidates of [off, end) in the queue of direction d: the
 * unit just before off if it may end at off, the first unit at or after
 * end if it starts there (NULL where the queue's keys already say no),
 * without reading the units the answer rules out.
 */
void
sortq_neighbours (struct dl_sched *s, enum dl_dir d, uint64_t off,
                  uint64_t end, struct dl_req **before, struct dl_req **after)
{
  btree_neighbours (&s->sort[d], off, end, before, after);
}

struct dl_req *
sortq_next (struct dl_req *u)
{
  return btree_next (u);
}

struct dl_req *
sortq_prev (struct dl_req *u)
{
  return btree_prev (u);
}

/* dl_sched_check: the queue of direction d is a sound tree in key order
 * (btree_check) and holds only queued units of that direction, and no
 * two non-empty queued writes overlap (what sortq_overlaps relies on).
 * Returns how many units it holds.
 */
uint64_t
sortq_check (struct dl_sched *s, enum dl_dir d)
{
  struct dl_req *u;
  uint64_t n = btree_check (&s->sort[d]), walked = 0, reach = 0;

  for (u = btree_first (&s->sort[d]); u; u = btree_next (u)) {
    assert (u->state == DL_S_QUEUED && u->dir == d);
    if (d == DL_WRITE && u->live_lo < u->live_hi) {
      assert (u->live_lo >= reach);
      reach = u->live_hi;
    }
    walked++;
  }
  assert (walked == n);
  return n;
}
