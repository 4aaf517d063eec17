/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: issuing units through the layer below.
 *
 * The callback (the filter's next->pread etc.) blocks, and the loop
 * must not, so `depth` worker threads take dispatched units from a
 * queue, perform each member in offset order, and hand the unit back
 * to the loop through the inbox's done list (inbox_done).  There are never
 * more units in flight than workers, so none waits here long.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* One member, whole, or for a write in the core's pieces (piece.c),
 * one after the other: a read sent meanwhile by another worker waits
 * at the device for one piece, not for the whole write.  Only the last
 * piece carries FUA.
 */
/* A request of r's caller, for a part of it: only the fields that
 * perform reads, never r's core state (dl), which the loop thread
 * changes meanwhile (its tree links).
 */
static void
part_of (struct engine_req *p, const struct engine_req *r)
{
  memset (p, 0, sizeof *p);
  p->op = r->op;
  p->offset = r->offset;
  p->length = r->length;
  p->flags = r->flags;
  p->buf = r->buf;
  p->stream = r->stream;
  p->export_id = r->export_id;
  p->ctx = r->ctx;
  p->sort_base = r->sort_base;
  p->prio = r->prio;
}

static int
perform_member (struct engine *e, struct engine_req *r, uint64_t piece)
{
  struct engine_req p;
  uint32_t done = 0;
  int res;

  if (r->op != DL_OP_WRITE || piece == 0 || r->length <= piece)
    return e->p.perform (e->p.perform_opaque, r);
  do {
    part_of (&p, r);
    p.offset = r->offset + done;
    p.buf = (char *) r->buf + done;
    p.length = r->length - done < piece ? r->length - done : (uint32_t) piece;
    if (done + p.length < r->length)
      p.flags &= ~ENGINE_F_FUA;
    res = e->p.perform (e->p.perform_opaque, &p);
    done += p.length;
  } while (res == 0 && done < r->length);
  return res;
}

/* The core's readahead (ahead.c) for this unit, reserved when the core
 * handed it out: read into the cache's extent, within the export; the unit
 * says what was read (ra_length).
 */
static void
read_ahead (struct engine *e, struct engine_req *head)
{
  struct engine_req p;
  bool ok;

  part_of (&p, head);
  p.op = DL_OP_READ;
  p.offset = head->dl.unit_offset + head->dl.unit_length - head->sort_base;
  p.length = (uint32_t) head->dl.ra_length;
  p.flags = ENGINE_F_AHEAD;
  p.buf = head->ra_buf;
  ok = head->dl.ra_length != 0 && e->p.perform (e->p.perform_opaque, &p) == 0;
  head->dl.ra_length = ok ? p.length : 0;
  racache_fill (&e->ra, head->ra, NULL, head->dl.ra_length, engine_now_ns ());
}

static void *
worker (void *arg)
{
  struct engine *e = arg;

  for (;;) {
    struct engine_req *head;
    struct dl_req *m, *tmp;

    pthread_mutex_lock (&e->wq_lock);
    while (e->wq_head == NULL && !e->wq_stop)
      pthread_cond_wait (&e->wq_cond, &e->wq_lock);
    if (e->wq_head == NULL) {
      pthread_mutex_unlock (&e->wq_lock);
      return NULL;
    }
    head = e->wq_head;
    e->wq_head = head->inbox_next;
    if (e->wq_head == NULL)
      e->wq_tail = NULL;
    pthread_mutex_unlock (&e->wq_lock);

    DL_FOREACH_MEMBER (m, &head->dl, tmp) {
      struct engine_req *r = req_of (m);
      r->result = perform_member (e, r, head->dl.piece_length);
    }
    if (head->ra.idx >= 0)
      read_ahead (e, head);

    inbox_done (e, head);
  }
}

static void nextpool_stop (struct engine *e);

/* Units come back through inbox_done, not through done: the workers
 * are not the loop thread.
 */
static int
nextpool_start (struct engine *e, unit_done_fn *done, char *err,
                size_t errlen)
{
  uint32_t i;
  int r;

  (void) done;
  e->workers = calloc (e->p.depth, sizeof *e->workers);
  if (e->workers == NULL) {
    snprintf (err, errlen, "calloc: %s", strerror (ENOMEM));
    return -ENOMEM;
  }
  e->wq_stop = false;
  for (i = 0; i < e->p.depth; ++i) {
    r = pthread_create (&e->workers[i], NULL, worker, e);
    if (r != 0) {
      snprintf (err, errlen, "pthread_create: %s", strerror (r));
      e->nworkers = i;
      nextpool_stop (e);
      return -r;
    }
  }
  e->nworkers = e->p.depth;
  return 0;
}

static void
nextpool_stop (struct engine *e)
{
  uint32_t i;

  pthread_mutex_lock (&e->wq_lock);
  e->wq_stop = true;
  pthread_cond_broadcast (&e->wq_cond);
  pthread_mutex_unlock (&e->wq_lock);
  for (i = 0; i < e->nworkers; ++i)
    pthread_join (e->workers[i], NULL);
  free (e->workers);
  e->workers = NULL;
  e->nworkers = 0;
}

static void
nextpool_issue (struct engine *e, struct dl_req *unit)
{
  struct engine_req *head = req_of (unit);

  /* Its read-ahead extent, if any, is reserved already (reserve_ahead). */
  head->inbox_next = NULL;
  pthread_mutex_lock (&e->wq_lock);
  if (e->wq_tail)
    e->wq_tail->inbox_next = head;
  else
    e->wq_head = head;
  e->wq_tail = head;
  pthread_cond_signal (&e->wq_cond);
  pthread_mutex_unlock (&e->wq_lock);
}

const struct dispatcher nextpool_dispatcher = {
  .start = nextpool_start,
  .issue = nextpool_issue,
  .push = NULL,
  .stop = nextpool_stop,
};
