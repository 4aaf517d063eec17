/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the scheduler core's entry points.
 *
 * This file only moves requests between the structures of the other
 * files (their order: sched-internal.h; the map: src/README); each
 * rule lives in its own file.
 */
#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched-internal.h"

struct dl_sched *
dl_sched_new (const struct dl_tunables *t, uint32_t align)
{
  struct dl_sched *s;

  if (align == 0 || (align & (align - 1)) != 0 ||
      dl_tunables_validate (t, NULL, 0) != 0) {
    errno = EINVAL;
    return NULL;
  }
  s = calloc (1, sizeof *s);
  if (s == NULL)
    return NULL;
  s->t = *t;
  s->align = align;
  s->batch_dir = -1;
  s->slice.dir = -1;
  sortq_init (s);
  TAILQ_INIT (&s->fifo[DL_READ]);
  TAILQ_INIT (&s->fifo[DL_WRITE]);
  RB_INIT (&s->late[DL_READ]);
  RB_INIT (&s->late[DL_WRITE]);
  RB_INIT (&s->busy);
  TAILQ_INIT (&s->held);
  TAILQ_INIT (&s->batch);
  return s;
}

void
dl_sched_free (struct dl_sched *s)
{
  if (s == NULL)
    return;
  sortq_fini (s);
  free (s->scratch);
  free (s);
}

int
dl_sched_set_tunables (struct dl_sched *s, const struct dl_tunables *t,
                       char *err, size_t errlen)
{
  int r = dl_tunables_validate (t, err, errlen);

  if (r != 0)
    return r;
  /* A new policy starts afresh; queued units stay where they are, and
   * deadlines follow the new expiries at once (fifo.c).
   */
  if (t->policy != s->t.policy)
    s->batching = false;
  /* A seed batch not yet dispatched goes back to the queues when the
   * policy changes or seed batches end.
   */
  if (t->policy != s->t.policy || !t->seed_batches) {
    struct dl_req *u;

    while ((u = TAILQ_FIRST (&s->batch)) != NULL) {
      TAILQ_REMOVE (&s->batch, u, fifo_link);
      s->batch_n--;
      hazard_busy_remove (s, u);
      unit_relink (s, u);
    }
  }
  if (t->anticipate_ns == 0)
    s->antic.on = false;
  s->t = *t;
  return 0;
}

void
dl_sched_get_tunables (const struct dl_sched *s, struct dl_tunables *t)
{
  *t = s->t;
}

void
dl_sched_stats (const struct dl_sched *s, struct dl_stats *st)
{
  *st = s->st;
}

int
dl_insert (struct dl_sched *s, struct dl_req *r, uint64_t now_ns)
{
  /* Every unit that is or may come back to the sorted queues, and r:
   * room for them now, so that no later step can fail for want of it
   * (inflight units never return to the queues).
   */
  if (r->op != DL_OP_FLUSH &&
      sortq_reserve (s, s->st.queued[DL_READ] + s->st.queued[DL_WRITE] +
                     s->st.held + s->batch_n + 1) != 0)
    return -ENOMEM;

  r->arrival_ns = now_ns;
  r->unit_arrival_ns = now_ns;
  r->unit_offset = r->offset;
  r->unit_length = r->length;
  r->nr_members = 1;
  r->next_member = NULL;
  r->last_member = r;
  r->seq = s->next_seq++;
  r->dir = dl_op_dir (r->op);
  r->state = DL_S_NEW;
  r->preempts = 0;

  if (r->op == DL_OP_FLUSH) {
    r->unit_length = 0;
    s->st.flushes++;
    merge_flush (s, r);
    return 0;
  }

  s->st.inserted[r->dir]++;
  if (r->dir == DL_WRITE)
    s->writes_in++;
  if (r->dir == DL_READ) {
    antic_read_arrived (s, r, now_ns);
    r->preempts = antic_read_preempts (s, r);
    if (r->preempts)
      s->last_preempting_ns = now_ns;
  }
  dl_set_live (s, r);
  if (hazard_blocked (s, r))
    hazard_hold (s, r);
  else
    merge_or_queue (s, r);
  return 0;
}

void
dl_sched_set_depth (struct dl_sched *s, uint32_t depth)
{
  s->depth = depth;
}

struct dl_req *
dl_dispatch (struct dl_sched *s, uint64_t now_ns)
{
  struct dl_req *u = select_next (s, now_ns);

  if (u == NULL)
    return NULL;
  assert (u->state == DL_S_QUEUED || u->state == DL_S_BATCHED ||
          u->state == DL_S_FLUSH);

  if (u == s->pending_flush) {
    s->pending_flush = NULL;
    s->st.queued_flushes--;
  }
  else {
    if (u->state == DL_S_BATCHED) {
      /* Already out of the queues and in the live tree (select.c). */
      TAILQ_REMOVE (&s->batch, u, fifo_link);
      s->batch_n--;
    }
    else {
      unit_unlink (s, u);
      hazard_busy_add (s, u);   /* it still holds overlapping requests */
    }
    cost_account (s, u);
    if (u->dir == DL_READ) {
      antic_read_dispatched (s, u);
      ahead_set (s, u);
    }
    s->st.dispatched[u->dir]++;
    s->st.dispatched_bytes[u->dir] += u->unit_length;
  }
  devtime_dispatched (s, u, now_ns);
  piece_set (s, u, now_ns);
  u->state = DL_S_INFLIGHT;
  s->st.inflight++;
  if (u->op != DL_OP_FLUSH && u->dir == DL_WRITE)
    s->st.inflight_writes++;
  return u;
}

void
dl_complete (struct dl_sched *s, struct dl_req *u, uint64_t now_ns)
{
  /* Only a unit dl_dispatch returned, once. */
  assert (u->state == DL_S_INFLIGHT && s->st.inflight > 0);
  s->st.inflight--;
  u->state = DL_S_DONE;
  devtime_done (s, u, now_ns);
  if (u->op == DL_OP_FLUSH)
    return;
  if (u->dir == DL_WRITE) {
    assert (s->st.inflight_writes > 0);
    s->st.inflight_writes--;
    assert (s->writes_in >= u->nr_members);
    s->writes_in -= u->nr_members;
  }
  if (u->dir == DL_READ) {
    antic_read_done (s, u, now_ns);
    if (u->preempts)
      s->last_preempting_ns = now_ns;
  }
  hazard_busy_remove (s, u);
  hazard_release (s, u);
}

uint64_t
dl_waiting (const struct dl_sched *s)
{
  return s->st.queued[DL_READ] + s->st.queued[DL_WRITE] + s->st.held +
    s->st.queued_flushes + s->batch_n;
}

uint64_t
dl_inflight (const struct dl_sched *s)
{
  return s->st.inflight;
}

struct dl_req *
dl_drain (struct dl_sched *s)
{
  struct dl_req *u;

  if ((u = s->pending_flush) != NULL) {
    s->pending_flush = NULL;
    s->st.queued_flushes--;
  }
  else if ((u = TAILQ_FIRST (&s->batch)) != NULL) {
    TAILQ_REMOVE (&s->batch, u, fifo_link);
    hazard_busy_remove (s, u);
    s->batch_n--;
  }
  else if ((u = TAILQ_FIRST (&s->held)) != NULL) {
    TAILQ_REMOVE (&s->held, u, fifo_link);
    hazard_busy_remove (s, u);
    s->st.held--;
  }
  else if ((u = fifo_oldest (s, DL_READ)) != NULL ||
           (u = fifo_oldest (s, DL_WRITE)) != NULL)
    unit_unlink (s, u);
  else
    return NULL;
  if (u->op != DL_OP_FLUSH && u->dir == DL_WRITE) {
    assert (s->writes_in >= u->nr_members);
    s->writes_in -= u->nr_members;
  }
  u->state = DL_S_DONE;
  return u;
}

uint64_t
dl_next_timer (const struct dl_sched *s, uint64_t now_ns)
{
  uint64_t a = antic_timer (s, now_ns), b = slice_timer (s, now_ns);

  /* In a slice only its end changes what goes next: a read slice keeps
   * the device for the reader past its expected think time (slice.c).
   */
  if (b != 0)
    return b;
  return a;
}

/* A unit's members: contiguous from its offset, as many as it counts,
 * none of them queued on its own (flushes: no range, members merged).
 */
static void
check_members (const struct dl_req *u)
{
  const struct dl_req *m;
  uint64_t end = u->unit_offset, n = 0;

  for (m = u; m; m = m->next_member) {
    assert (m == u || m->state == DL_S_MEMBER);
    if (u->op != DL_OP_FLUSH) {
      assert (m->offset == end);
      end += m->length;
    }
    n++;
  }
  assert (n == u->nr_members);
  assert (u->op == DL_OP_FLUSH || end - u->unit_offset == u->unit_length);
}

void
dl_sched_check (const struct dl_sched *cs)
{
  struct dl_sched *s = (struct dl_sched *) cs;  /* walks only */
  uint64_t preempting = 0;
  struct dl_req *u;
  int d;

  for (d = DL_READ; d <= DL_WRITE; d++) {
    /* Every queued unit is in both structures of its direction, and
     * in nothing else (its state says so: sortq_check, fifo_check).
     */
    assert (sortq_check (s, d) == s->st.queued[d]);
    assert (fifo_check (s, d) == s->st.queued[d]);
    for (u = sortq_first (s, d); u; u = sortq_next (u)) {
      check_members (u);
      preempting += u->preempts;
    }
  }
  assert (preempting == s->st.queued_preempting);
  assert ((s->pending_flush != NULL) == (s->st.queued_flushes == 1));
  if (s->pending_flush) {
    assert (s->pending_flush->state == DL_S_FLUSH);
    check_members (s->pending_flush);
  }
  TAILQ_FOREACH (u, &s->batch, fifo_link) {
    assert (u->state == DL_S_BATCHED);
    check_members (u);
  }
  hazard_check (s);
  assert (s->st.inflight_writes <= s->st.inflight);
  assert (s->batch_dir >= -1 && s->batch_dir <= DL_WRITE);
  assert (s->slice.dir >= -1 && s->slice.dir <= DL_WRITE);
}
