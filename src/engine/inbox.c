/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the inbox, where other threads hand requests to the loop.
 *
 * A submitting thread whose request it cannot do itself (engine.c,
 * submit_shared) appends it to the inbox under `lock` and
 * wakes the loop, which takes the whole inbox in
 * one step at the start of its turn.  The next layer's workers hand
 * finished units back the same way (the done list).  This file is the
 * only code that takes `lock` for these lists, so their order rules are
 * all here.
 */
#include <errno.h>

#include "internal.h"

/* Fill the core's part of r and count it outstanding; cb (or, if NULL,
 * the `done` word) hears of its end.  Also for a request that its own
 * thread takes to the device (engine.c, submit_shared).
 */
void
inbox_req_init (struct engine *e, struct engine_req *r,
                void (*cb) (struct engine_req *, void *), void *opaque)
{
  r->done_cb = cb;
  r->done_opaque = opaque;
  r->dl.offset = r->sort_base + r->offset;
  r->dl.length = r->op == DL_OP_FLUSH ? 0 : r->length;
  r->dl.op = r->op;
  r->dl.flags = r->flags;
  r->dl.stream = r->stream;
  r->dl.priv = r;
  r->dl.prio = (uint8_t) r->prio;
  r->dl.domain = r->export_id;
  r->inbox_next = NULL;
  r->t_submit = engine_now_ns ();
  r->t_insert = r->t_dispatch = 0;
  r->result = 0;
  r->done = 0;

  /* Before it is queued: no read after this one may be answered with
   * what was read ahead of it.
   */
  if (modifies (r->op))
    racache_modified (&e->ra, r->offset, r->offset + r->length);
  __atomic_add_fetch (&e->outstanding, 1, __ATOMIC_RELAXED);
}

/* Append r to the inbox (inbox_req_init first).  -ESHUTDOWN once the
 * engine stops taking requests.
 */
int
inbox_put (struct engine *e, struct engine_req *r,
           void (*cb) (struct engine_req *, void *), void *opaque)
{
  bool first;

  inbox_req_init (e, r, cb, opaque);
  pthread_mutex_lock (&e->lock);
  if (!e->started || e->stopping) {
    pthread_mutex_unlock (&e->lock);
    __atomic_sub_fetch (&e->outstanding, 1, __ATOMIC_RELAXED);
    return -ESHUTDOWN;
  }
  first = e->inbox_head == NULL;
  if (first)                    /* atomic: poll_briefly peeks without the lock */
    __atomic_store_n (&e->inbox_head, r, __ATOMIC_RELAXED);
  else
    e->inbox_tail->inbox_next = r;
  e->inbox_tail = r;
  pthread_mutex_unlock (&e->lock);

  /* Not under stats_lock: every submitting thread passes here, and the
   * lock is the loop thread's (contention showed up in profiles).
   */
  __atomic_add_fetch (&e->submitted, 1, __ATOMIC_RELAXED);

  /* One wake-up per batch: later arrivals ride on the first's.  (Not
   * waking the loop while every slot is taken was tried: a unit that
   * completes inside issue(), or a NEXT unit completed through the done
   * list, lowers `inflight` after the inbox was taken, and a request
   * could then be stranded.)
   */
  if (first)
    ev_async_send (e->loop, &e->wake);
  return 0;
}

/* A worker has performed every member of the unit whose head this is. */
void
inbox_done (struct engine *e, struct engine_req *head)
{
  bool first;

  pthread_mutex_lock (&e->lock);
  first = e->done_head == NULL;
  head->inbox_next = e->done_head;
  e->done_head = head;
  pthread_mutex_unlock (&e->lock);
  if (first)
    ev_async_send (e->loop, &e->wake);
}

/* The loop takes everything handed to it since its last turn, and the
 * state that came with it (stopping, new tunables).
 */
void
inbox_take (struct engine *e, struct inbox_batch *b)
{
  pthread_mutex_lock (&e->lock);
  b->in = e->inbox_head;
  __atomic_store_n (&e->inbox_head, NULL, __ATOMIC_RELAXED);
  e->inbox_tail = NULL;
  b->done = e->done_head;
  e->done_head = NULL;
  b->stopping = e->stopping;
  b->tunables_pending = e->tunables_pending;
  b->tunables = e->new_tunables;
  e->tunables_pending = false;
  pthread_mutex_unlock (&e->lock);
}
