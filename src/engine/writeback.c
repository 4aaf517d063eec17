/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the write-back window (a volatile write cache).
 *
 * A scheduler orders only what waits in it.  A client with few request
 * slots (nbdfuse has ten; a virtual machine's queue may have fewer)
 * fills them with the writes of a flood, each slot held until its write
 * is on the disk, and a reader's request then waits in the client's
 * FIFO, where no scheduler can reach it: behind nbdfuse every policy
 * then does as badly as any other, and anticipation never engages (the
 * reader's next read cannot even be sent).  (bench/results/tuning.md,
 * "write-back window".)
 *
 * So, as a disk with a write cache does: a write without FUA is copied
 * and answered at once, then scheduled like any other, up to
 * `writeback_bytes` of such writes not yet on the device (beyond that
 * a writer waits for room: backpressure, not loss).  The client's slots
 * come back, the flood moves into the scheduler, and reads get past it.
 *
 * What the client may rely on is what NBD promises for a server with a
 * write cache, and what plain `nbdkit file` gives through the page
 * cache: a flush returns only once every write answered before it is
 * on the device (and then fsyncs); once an answered write has failed,
 * every flush that covers it fails, on every connection, for as long as
 * the server runs (data a client was told is written is gone: the
 * client must not be told otherwise by a later flush, and which
 * connection's data it was is not the point); a FUA write is never answered early; a read or a
 * write overlapping an answered write is ordered after it by the core
 * (hazard.c), so it sees its data.  Stopping the engine first completes
 * every answered write.  Only direct dispatch uses it: a write through
 * the layer below would outlive its connection's handle.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct wb_write {
  struct engine_req r;          /* first: engine_req -> wb_write */
  struct engine *e;
  uint64_t seq;                 /* answer order, for flushes */
  TAILQ_ENTRY (wb_write) link;  /* e->wb_list, in seq order */
  char data[];
};

/* On an engine thread when the write reached the device (or failed). */
static void
wb_done (struct engine_req *r, void *opaque)
{
  struct wb_write *w = opaque;
  struct engine *e = w->e;

  pthread_mutex_lock (&e->wb_lock);
  TAILQ_REMOVE (&e->wb_list, w, link);
  e->wb_bytes -= w->r.length;
  if (r->result < 0) {
    e->wb_failed++;
    if (e->wb_error == 0 || w->seq < e->wb_error_seq) {
      e->wb_error = r->result;
      e->wb_error_seq = w->seq;
    }
  }
  pthread_cond_broadcast (&e->wb_cond);
  pthread_mutex_unlock (&e->wb_lock);
  free (w);
}

bool
wb_applies (const struct engine *e, const struct engine_req *r)
{
  return e->p.writeback_bytes > 0 && e->p.dispatch == ENGINE_DIRECT &&
    r->op == DL_OP_WRITE && !(r->flags & ENGINE_F_FUA) &&
    r->length <= e->p.writeback_bytes;
}

/* Wait for room in the window, in the order writers came (a ticket),
 * or a big write could wait forever while small ones keep fitting in.
 * Called and returns with wb_lock held; false if the window closed.
 */
static bool
wb_wait_room (struct engine *e, uint64_t len)
{
  uint64_t ticket = e->wb_ticket++;

  while (!e->wb_closed &&
         (e->wb_serving != ticket ||
          (e->wb_bytes > 0 && e->wb_bytes + len > e->p.writeback_bytes)))
    pthread_cond_wait (&e->wb_cond, &e->wb_lock);
  if (e->wb_closed)
    return false;
  e->wb_serving++;
  pthread_cond_broadcast (&e->wb_cond);   /* the next ticket's turn */
  return true;
}

/* A copy of r that the window owns until the device has it. */
static struct wb_write *
wb_copy (struct engine *e, const struct engine_req *r)
{
  struct wb_write *w = malloc (sizeof *w + r->length);

  if (w == NULL)
    return NULL;
  memcpy (w->data, r->buf, r->length);
  memset (&w->r, 0, sizeof w->r);
  w->r.op = DL_OP_WRITE;
  w->r.offset = r->offset;
  w->r.length = r->length;
  w->r.flags = r->flags;
  w->r.buf = w->data;
  w->r.stream = r->stream;
  w->r.export_id = r->export_id;
  w->r.prio = r->prio;
  w->r.sort_base = r->sort_base;
  w->e = e;
  return w;
}

/* Copy r and answer it now; 1 if done so, 0 if the caller should submit
 * it the ordinary way (stopping, or no memory), -errno on a refusal.
 */
int
wb_submit (struct engine *e, struct engine_req *r)
{
  struct wb_write *w = wb_copy (e, r);
  int rc;

  if (w == NULL)
    return 0;                   /* no memory: the write goes through */
  pthread_mutex_lock (&e->wb_lock);
  if (!wb_wait_room (e, r->length)) {
    pthread_mutex_unlock (&e->wb_lock);
    free (w);
    return 0;
  }
  w->seq = ++e->wb_seq;
  TAILQ_INSERT_TAIL (&e->wb_list, w, link);
  e->wb_bytes += r->length;
  if (e->wb_bytes > e->wb_bytes_max)
    e->wb_bytes_max = e->wb_bytes;
  e->wb_answered++;
  /* Queued under wb_lock, so that seq order is queue order: a flush
   * that sees seq n answered knows writes 1..n are in the core.
   */
  rc = inbox_put (e, &w->r, wb_done, w);
  if (rc < 0) {
    TAILQ_REMOVE (&e->wb_list, w, link);
    e->wb_bytes -= r->length;
    e->wb_answered--;
  }
  pthread_mutex_unlock (&e->wb_lock);
  if (rc < 0) {
    free (w);
    return rc;
  }
  return 1;
}

/* Before a flush: wait until every write answered so far is on the
 * device.  Returns the error of the first answered write that failed,
 * if it is among them (and for every later flush too).
 */
int
wb_before_flush (struct engine *e)
{
  uint64_t mark;
  int err = 0;

  if (e->p.writeback_bytes == 0)
    return 0;
  pthread_mutex_lock (&e->wb_lock);
  mark = e->wb_seq;
  while (!TAILQ_EMPTY (&e->wb_list) && TAILQ_FIRST (&e->wb_list)->seq <= mark)
    pthread_cond_wait (&e->wb_cond, &e->wb_lock);
  if (e->wb_error && e->wb_error_seq <= mark)
    err = e->wb_error;
  pthread_mutex_unlock (&e->wb_lock);
  return err;
}

/* Stopping: answer no more writes early, and wait for those answered. */
void
wb_close (struct engine *e)
{
  pthread_mutex_lock (&e->wb_lock);
  e->wb_closed = true;
  pthread_cond_broadcast (&e->wb_cond);
  while (!TAILQ_EMPTY (&e->wb_list))
    pthread_cond_wait (&e->wb_cond, &e->wb_lock);
  pthread_mutex_unlock (&e->wb_lock);
}
