/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: merges (rule: "merged with adjacent requests").
 *
 * A new request that touches a queued unit of the same kind becomes part
 * of it, so the device sees one larger I/O instead of two.  Back merges
 * (the unit ends where the request starts) are the common case of a
 * sequential writer; front merges (the request ends where the unit
 * starts) catch writers that go backwards and can be turned off.  After
 * either, the grown unit may touch its neighbour, and the two join (the
 * kernel's "attempt_back_merge").  Both candidates are found in the
 * sorted queue in O(log n).
 *
 * What may merge: same op and same flags (so FUA only with FUA, trim only
 * with trim, zero only with zero, never a trim or zero with data), only
 * queued units (never one already at the device or held by a hazard), and
 * at most max_merge bytes in all (the engine needs one buffer per unit).
 * A merged unit keeps the earliest deadline of its members.
 *
 * max_merge is 256 KiB by default, not more, because a unit at the
 * device cannot be taken back: a read that arrives while large writes
 * are in flight waits for all of them, whatever the scheduler decides,
 * and on a slow disk that is tens of milliseconds per MiB.  A disk
 * streams 256 KiB units back to back as fast as 1 MiB ones when the
 * next is already queued (deadline-depth 2), so the writes lose little.
 * (The runs behind this choice: bench/results/tuning.md, "max_merge".)
 */
#include <config.h>

#include "sched-internal.h"

static bool
mergeable (const struct dl_sched *s, const struct dl_req *a,
           const struct dl_req *b)
{
  return a->op == b->op && a->flags == b->flags && a->domain == b->domain &&
    a->unit_length > 0 && b->unit_length > 0 &&
    a->unit_length <= s->t.max_merge &&
    b->unit_length <= s->t.max_merge - a->unit_length;
}

/* a takes b's members after its own; a ends where b starts. */
static void
absorb (struct dl_req *a, struct dl_req *b)
{
  a->last_member->next_member = b;
  a->last_member = b->last_member;
  a->unit_length += b->unit_length;
  a->nr_members += b->nr_members;
  if (b->unit_arrival_ns < a->unit_arrival_ns)
    a->unit_arrival_ns = b->unit_arrival_ns;
  if (b->seq < a->seq)
    a->seq = b->seq;
  a->preempts |= b->preempts;
  b->state = DL_S_MEMBER;
}

/* Two queued units, a just before b, become one. */
static void
join (struct dl_sched *s, struct dl_req *a, struct dl_req *b)
{
  unit_unlink (s, a);
  unit_unlink (s, b);
  absorb (a, b);
  unit_relink (s, a);
  s->st.merged_units++;
}

/* After a back merge only the end moved: the unit may now touch the next
 * one.  After a front merge only the start moved: the previous one may
 * touch it.  (The kernel's attempt_back_merge and attempt_front_merge.)
 */
static void
join_next (struct dl_sched *s, struct dl_req *u)
{
  struct dl_req *n = sortq_next (u);

  if (n && n->unit_offset == dl_end (u) && mergeable (s, u, n))
    join (s, u, n);
}

static void
join_prev (struct dl_sched *s, struct dl_req *u)
{
  struct dl_req *p = sortq_prev (u);

  if (p && dl_end (p) == u->unit_offset && mergeable (s, p, u))
    join (s, p, u);
}

/* r is a single request, not in any queue.  Returns true if it became a
 * member of a queued unit.
 */
bool
merge_into_queue (struct dl_sched *s, struct dl_req *r)
{
  struct dl_req *n, *u;

  if (s->t.max_merge == 0)
    return false;

  /* One lookup finds both candidates: the unit before r may end where r
   * starts, the first unit at or after r's end may start there.
   */
  sortq_neighbours (s, r->dir, r->unit_offset, dl_end (r), &u, &n);
  if (u && dl_end (u) == r->unit_offset && mergeable (s, u, r)) {
    if (u->unit_arrival_ns <= r->unit_arrival_ns && u->seq < r->seq) {
      /* The usual case: the unit's keys do not change, only its end
       * (it stays queued: count its preempting flag here).
       */
      s->st.queued_preempting += r->preempts && !u->preempts;
      absorb (u, r);
      dl_set_live (s, u);
      sortq_grown (u);
    }
    else {
      unit_unlink (s, u);
      absorb (u, r);
      unit_relink (s, u);
    }
    s->st.merged_back++;
    join_next (s, u);
    return true;
  }

  if (!s->t.front_merges)
    return false;
  u = n;
  if (u && u->unit_offset == dl_end (r) && mergeable (s, r, u)) {
    /* The request becomes the head: members stay in offset order. */
    unit_unlink (s, u);
    absorb (r, u);
    unit_relink (s, r);
    s->st.merged_front++;
    join_prev (s, r);
    return true;
  }
  return false;
}

/* A unit that nothing holds (new, or released by hazard.c) goes into
 * the queues: merged into a queued unit if it can be, else on its own.
 */
void
merge_or_queue (struct dl_sched *s, struct dl_req *u)
{
  if (!merge_into_queue (s, u))
    unit_relink (s, u);
}

/* Flushes: every flush waiting for dispatch is served by the same
 * fsync, because one issued now covers every write completed before any
 * of them arrived.  A flush arriving while another is at the device
 * needs its own (writes may have completed since that one started).
 */
void
merge_flush (struct dl_sched *s, struct dl_req *r)
{
  if (s->pending_flush) {
    absorb (s->pending_flush, r);
    return;
  }
  r->state = DL_S_FLUSH;
  s->pending_flush = r;
  s->st.queued_flushes++;
}
