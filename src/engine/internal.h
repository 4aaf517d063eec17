/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the engine's private state, shared by its files.
 *
 * The files of the engine, bottom up.  Each calls only the files above
 * it in this list; what a lower file must tell a higher one goes
 * through a callback it is given (tests/test-layers.sh checks this):
 *
 *   backing.c, bufpool.c  the backing's descriptors; aligned buffers
 *   exports.c             the exports sharing the engine: names, classes
 *   racache.c             the extents read ahead (its own lock)
 *   inbox.c               requests handed between threads and the loop
 *   direct.c, nextpool.c  the two dispatchers (struct dispatcher):
 *                         io_uring on the O_DIRECT backing, or the
 *                         layer below on worker threads
 *   syncio.c              a request's own thread doing its I/O
 *   writeback.c           writes answered before they reach the device
 *   engine.c              lifecycle, the loop, depth accounting, stats
 *   control.c             the control socket (engine.h's API only)
 */
#ifndef NBD_DEADLINE_ENGINE_INTERNAL_H
#define NBD_DEADLINE_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <bsd/sys/queue.h>
#include <ev.h>
#include <liburing.h>

#include "engine.h"
#include "backing.h"
#include "bufpool.h"
#include "exports.h"

struct xfer;
struct wb_write;
struct engine;

/* DIRECT with a directory: the engine's alignment, whatever the
 * exports' devices ask (each must divide it).
 */
#define EXPORT_ALIGN 4096

/* Does a request of this kind change the data (the readahead cache
 * drops what it overlaps)?
 */
static inline bool
modifies (enum dl_op op)
{
  return op == DL_OP_WRITE || op == DL_OP_TRIM || op == DL_OP_ZERO;
}

/* How a dispatcher reports that a unit has finished, on the loop
 * thread.  result is applied to every member; with per_member, each
 * member's own engine_req.result is kept instead.
 */
typedef void unit_done_fn (struct engine *e, struct dl_req *unit, int result,
                           bool per_member);

/* A dispatcher takes the units the core chooses to the device.  The
 * engine starts it before the loop runs, gives it each unit, asks it to
 * push what it has prepared at the end of every loop turn, and stops it
 * once the loop has ended.  A unit's end comes back through the
 * unit_done_fn given to start (direct), or through the inbox's done list,
 * which the loop turns into the same call (nextpool: its workers are
 * not the loop thread).
 */
struct dispatcher {
  int (*start) (struct engine *e, unit_done_fn *done, char *err,
                size_t errlen);
  void (*issue) (struct engine *e, struct dl_req *unit);
  void (*push) (struct engine *e);      /* NULL: nothing to push */
  /* Send what waits between two pieces of a write (dl_piece_wait) if
   * it may go now; the time to be called again, 0: none.  NULL: the
   * dispatcher never keeps pieces back.
   */
  uint64_t (*resume) (struct engine *e, uint64_t now);
  void (*stop) (struct engine *e);
};
extern const struct dispatcher direct_dispatcher;
extern const struct dispatcher nextpool_dispatcher;

struct engine {
  struct engine_params p;
  struct backing b;             /* DIRECT */
  uint64_t size;
  uint32_t align;
  /* The core and the depth counters below, under sched_lock: held by
   * the loop for each turn, and by submitting threads that insert their
   * own requests and dispatch (engine.c, submit_shared).
   */
  pthread_mutex_t sched_lock;
  struct dl_classes *sched;
  struct exports exports;       /* the exports sharing it (exports.c) */
  bool multi;                   /* DIRECT with p.dir: each export its own
                                   backing (backing_for) */
  /* Units dispatched by a submitting thread that only the loop can
   * issue (through the ring), linked through the head's inbox_next.
   */
  struct engine_req *handoff_head, *handoff_tail;
  /* syncio.c's bounce buffers. */
  pthread_mutex_t own_pool_lock;
  struct bufpool own_pool;

  /* Shared with submitting threads and workers, under lock. */
  pthread_mutex_t lock;
  struct engine_req *inbox_head, *inbox_tail;
  struct engine_req *done_head; /* NEXT: unit heads finished by workers */
  bool started, stopping, stopped;
  bool tunables_pending;
  struct dl_tunables new_tunables;
  uint64_t submitted;           /* atomic: requests submitted */
  uint64_t conn_full;           /* atomic: engine_note_connection_full */
  uint64_t outstanding;         /* atomic: submitted, not yet completed */

  /* The loop thread's (and, under sched_lock, inflight to draining). */
  pthread_t thread;
  struct ev_loop *loop;
  ev_async wake;
  ev_io ring_io;
  ev_timer sched_timer;
  ev_timer stats_timer;
  uint64_t stats_last_completed;
  uint32_t inflight;            /* units at the device */
  uint32_t inflight_own;        /* ... taken there by their submitter */
  bool loop_live;               /* the loop runs: submit_shared may insert */
  uint32_t depth;               /* ... at most (p.depth unless depth_auto) */
  struct dl_autodepth autodepth; /* depth_auto: how the depth is chosen */
  bool depth_full;              /* the last dispatch left units waiting for a slot */
  uint64_t waiting_peak;        /* most units seen waiting in the core */
  uint64_t inflight_bytes;
  uint32_t flushes_inflight;    /* flush units among them */
  bool draining;

  const struct dispatcher *disp;  /* direct or nextpool */

  /* DIRECT. */
  struct io_uring ring;
  unit_done_fn *direct_done;    /* engine.c's, given to direct_start */
  bool ring_ready;
  int efd;
  struct bufpool pool;
  struct xfer *xfer_free;
  struct xfer *paused;          /* writes waiting between two pieces */
  uint32_t writes_at_device;    /* write SQEs outstanding (direct.c) */
  void *zeroes;                 /* ZCHUNK aligned zero bytes, read-only */

  /* NEXT. */
  pthread_t *workers;
  uint32_t nworkers;
  pthread_mutex_t wq_lock;
  pthread_cond_t wq_cond;
  struct engine_req *wq_head, *wq_tail;
  bool wq_stop;

  /* writeback.c: writes answered before they reached the device. */
  pthread_mutex_t wb_lock;
  pthread_cond_t wb_cond;       /* one completed, or closed */
  TAILQ_HEAD (wb_list, wb_write) wb_list; /* in answer order */
  uint64_t wb_seq, wb_bytes, wb_bytes_max, wb_answered, wb_failed;
  uint64_t wb_ticket, wb_serving; /* writers waiting for room, in order */
  uint64_t wb_error_seq;        /* the first answered write that failed */
  int wb_error;                 /* its error: every flush from then on fails */
  bool wb_closed;

  /* racache.c: what was read ahead, for reads to come. */
  struct racache ra;

  /* Statistics, under stats_lock (updated by the loop thread). */
  pthread_mutex_t stats_lock;
  struct engine_stats st;
};

/* inbox.c */
void inbox_req_init (struct engine *e, struct engine_req *r,
                     void (*cb) (struct engine_req *, void *), void *opaque);
int inbox_put (struct engine *e, struct engine_req *r,
               void (*cb) (struct engine_req *, void *), void *opaque);
void inbox_done (struct engine *e, struct engine_req *head);
struct inbox_batch {
  struct engine_req *in;        /* arrivals, in order */
  struct engine_req *done;      /* unit heads finished by workers */
  bool stopping;
  bool tunables_pending;
  struct dl_tunables tunables;
};
void inbox_take (struct engine *e, struct inbox_batch *b);

/* direct.c, besides its dispatcher */
void direct_reap (struct engine *e);          /* from the ring's ev_io */

/* syncio.c: the largest extent a submitting thread does itself. */
#define SYNCIO_MAX (4u << 20)
bool syncio_fits (struct engine *e, const struct engine_req *r);
int syncio_rw (struct engine *e, struct engine_req *r);

/* writeback.c */
bool wb_applies (const struct engine *e, const struct engine_req *r);
int wb_submit (struct engine *e, struct engine_req *r);
int wb_before_flush (struct engine *e);
void wb_close (struct engine *e);

/* Alignments are powers of two. */
static inline uint64_t round_down (uint64_t x, uint32_t a) { return x & ~(uint64_t) (a - 1); }
static inline uint64_t round_up (uint64_t x, uint32_t a) { return round_down (x + a - 1, a); }
static inline bool is_aligned (uint64_t x, uint32_t a) { return (x & (a - 1)) == 0; }

static inline struct engine_req *
req_of (struct dl_req *d)
{
  return (struct engine_req *) d->priv;
}

/* The backing a request of export id goes to: its own with a
 * directory, else the engine's.
 */
static inline struct backing *
backing_for (struct engine *e, uint32_t export_id)
{
  struct export_entry *x;

  if (!e->multi)
    return &e->b;
  x = exports_get (&e->exports, export_id);
  return x && x->b.fd >= 0 ? &x->b : &e->b;
}

#endif
