/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the engine.
 *
 * One engine per backing device.  It owns a scheduler instance (the
 * core) and drives it from a libev loop running in its own thread:
 * submitting threads push requests onto an inbox and wake the loop with
 * an ev_async; the loop inserts them into the scheduler and, whenever
 * fewer than `depth` units (and fewer than `max_bytes` bytes) are in
 * flight, asks the scheduler for the next unit and issues it:
 *
 *   ENGINE_DIRECT  through an io_uring on the backing opened O_DIRECT
 *                  (aligned bounce buffers, read-modify-write for
 *                  unaligned requests, fallocate for trim/zero);
 *   ENGINE_NEXT    through a caller-supplied callback, on a pool of
 *                  `depth` worker threads (the callback may block).
 *
 * Plain C: nothing here knows about nbdkit.  Errors are -errno, with a
 * one-line reason in the caller's buffer where one is taken.
 */
#ifndef NBD_DEADLINE_ENGINE_H
#define NBD_DEADLINE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "dl-sched.h"
#include "racache.h"

#ifdef __cplusplus
extern "C" {
#endif

enum engine_dispatch { ENGINE_DIRECT = 0, ENGINE_NEXT };

/* Request flags (a superset of the core's DL_F_*; passed through). */
#define ENGINE_F_FUA        DL_F_FUA
#define ENGINE_F_MAY_TRIM   DL_F_MAY_TRIM
#define ENGINE_F_FAST_ZERO  (1u << 8)   /* NEXT only: fail rather than write */
#define ENGINE_F_AHEAD      (1u << 9)   /* NEXT only: the engine's own read
                                           ahead: read only what lies within
                                           the export, and set r->length to
                                           that */

struct engine_req;
struct engine_stats;

/* ENGINE_NEXT: perform one request (r->op, r->offset, r->length,
 * r->flags, r->buf, r->ctx) through the layer below.  Called on a worker
 * thread; may block.  Returns 0 or -errno.
 */
typedef int (*engine_perform_fn) (void *opaque, struct engine_req *r);

struct engine_params {
  enum engine_dispatch dispatch;
  const char *path;             /* DIRECT: file or block device */
  const char *dir;              /* DIRECT, instead of path: every export is
                                   dir/NAME, opened O_DIRECT by
                                   engine_export: one scheduler and one
                                   ring for the exports of one disk */
  bool readonly;                /* DIRECT: open O_RDONLY */
  struct dl_tunables tunables;
  uint32_t depth;               /* units in flight at the device, >= 1 */
  bool depth_auto;              /* depth is only the ceiling: the depth in
                                 * force is measured (src/core/autodepth.c) */
  uint64_t max_bytes;           /* bytes in flight (a bigger unit still goes alone) */
  uint32_t align;               /* NEXT: granularity to give the core (1 if none) */
  uint64_t writeback_bytes;     /* DIRECT: non-FUA writes answered once copied,
                                 * up to this many bytes not yet on the device
                                 * (0 = every write waits for the device) */
  uint64_t spin_ns;             /* DIRECT: poll the ring this long at low load (0 = never) */
  bool inline_io;               /* (default off) a plain request that the core
                                 * hands out alone goes to the device from
                                 * its own thread (syncio.c); false: always
                                 * through the loop (ring or workers) */
  /* Called on the loop thread every stats_interval_ns while requests
   * flow (0 = never); must not block.
   */
  void (*stats_cb) (const struct engine_stats *st, void *opaque);
  void *stats_opaque;
  uint64_t stats_interval_ns;
  engine_perform_fn perform;    /* NEXT */
  void *perform_opaque;
  /* Called once on the loop thread just before the loop runs, with the
   * loop (a struct ev_loop *), so that a caller can add its own watchers
   * (the control socket); they run on the loop thread and must not
   * block.  NULL = none.
   */
  void (*loop_init_cb) (void *loop, void *opaque);
  void *loop_init_opaque;
};

void engine_params_default (struct engine_params *p);

/* One request.  The caller owns it (usually on its stack) and fills the
 * first block; engine_submit() returns when it has completed.
 */
struct engine_req {
  enum dl_op op;
  uint64_t offset;
  uint32_t length;
  uint32_t flags;               /* ENGINE_F_* */
  void *buf;                    /* READ: filled; WRITE: data; else NULL */
  uint64_t stream;              /* who sent it (connection id) */
  uint32_t export_id;           /* which export (NEXT: a plugin may serve
                                   several; data read ahead for one is
                                   never given to another) */
  void *ctx;                    /* NEXT: the caller's handle for perform */
  uint64_t sort_base;           /* where the export's byte 0 sorts on the
                                   disk: exports of one disk share the
                                   scheduler, and their offsets must not
                                   mix (overlap, merge); 0 for one export */
  enum dl_prio prio;            /* the export's class (classes.c) */

  /* engine_submit_async: called on the loop thread when r completes
   * (r->result set); must not block.  NULL for engine_submit.
   */
  void (*done_cb) (struct engine_req *r, void *opaque);
  void *done_opaque;

  /* Private to the engine. */
  struct dl_req dl;
  struct engine_req *inbox_next;
  uint64_t t_submit, t_insert, t_dispatch;
  struct ra_token ra;           /* a unit head's extent to read ahead,
                                   reserved when the core hands it out */
  char *ra_buf;
  int result;
  int done;                     /* engine_submit: futex word, 1 when done,
                                   2 when its own thread is to do it */
};

struct engine;

/* Validates the parameters, opens the backing (DIRECT) and allocates;
 * no thread is started (safe before fork).  NULL with errno set and a
 * one-line reason in errbuf.
 */
struct engine *engine_new (const struct engine_params *p,
                           char *errbuf, size_t errlen);
/* Starts the loop thread (and the NEXT workers).  0 or -errno. */
int engine_start (struct engine *e);
/* Queue r and wait for it.  Returns 0 or -errno (as the device gave it). */
int engine_submit (struct engine *e, struct engine_req *r);
/* Queue r and return at once; r->done_cb(r, r->done_opaque) runs on the
 * loop thread when it completes (r->result: 0 or -errno), and r must
 * stay valid until then.  Returns 0, or -ESHUTDOWN (then no callback).
 */
int engine_submit_async (struct engine *e, struct engine_req *r,
                         void (*cb) (struct engine_req *, void *), void *opaque);
/* Fails everything still waiting (-ESHUTDOWN), lets what is in flight
 * finish, and stops the threads.  Idempotent; safe if never started.
 */
void engine_stop (struct engine *e);
void engine_free (struct engine *e);

/* What the backing is (DIRECT; for NEXT: size 0, align p->align). */
uint64_t engine_size (const struct engine *e);
uint32_t engine_align (const struct engine *e);
bool engine_is_blockdev (const struct engine *e);
bool engine_readonly (const struct engine *e);

/* Exports sharing the engine: one scheduler for the disk, whatever
 * export a request is for (exports.c).  engine_export gives name its id
 * (new names get prio and sort_base; a name seen keeps its own);
 * engine_req_export fills a request's export_id, prio (the export's
 * class now) and sort_base.  0 or -errno (-ENOSPC: too many exports).
 */
int engine_export (struct engine *e, const char *name, enum dl_prio prio,
                   uint64_t sort_base, uint32_t *id);
/* With dir: an export's own backing (after engine_export).  false if
 * id is not an export of a directory.
 */
bool engine_export_backing (struct engine *e, uint32_t id, uint64_t *size,
                            bool *readonly);
void engine_req_export (struct engine *e, struct engine_req *r, uint32_t id);
/* The id of an export engine_export has seen: 0, or -ENOENT. */
int engine_export_find (struct engine *e, const char *name, uint32_t *id);
/* Change an export's class at run time: its next requests go to it.
 * 0, or -ENOENT for a name no client has opened.
 */
int engine_set_export_class (struct engine *e, const char *name, enum dl_prio p);
struct engine_export_stats {
  const char *name;             /* the engine's: valid while it lives */
  enum dl_prio prio;
  uint64_t requests[2], bytes[2]; /* completed, by direction */
};
/* The id-th export's figures: 0, or -ENOENT past the last. */
int engine_export_stats (struct engine *e, uint32_t id, struct engine_export_stats *st);

/* Change tunables at run time (taken by the loop at its next turn). */
int engine_set_tunables (struct engine *e, const struct dl_tunables *t,
                         char *errbuf, size_t errlen);
/* The tunables in force, or about to be after engine_set_tunables. */
void engine_get_tunables (struct engine *e, struct dl_tunables *t);

/* The engine's counters, named once as the core's are (dl-sched.h:
 * X (field, name, doc)), in four lists: ENGINE_STATS_ALL puts them
 * between the core's lists in the order of the control socket's `stats`
 * answer, which control.c prints from it.  Adding a counter is one line
 * in one list, and counting it.
 */
#define ENGINE_STATS_REQUESTS(X)                                         \
  X (submitted, "requests_total", "requests submitted")                  \
  X (completed, "completed_total", "... completed")                      \
  X (failed, "failed_total", "... completed with an error")              \
  /* end of ENGINE_STATS_REQUESTS */

#define ENGINE_STATS_UNITS(X)                                            \
  X (units, "units_total", "units issued")                               \
  X (unit_members, "unit_members_total", "the requests they held")       \
  X (units_inline, "units_inline_total",                                 \
     "... of the units, those their own submitting thread took to the "  \
     "device (deadline-inline)")                                         \
  /* end of ENGINE_STATS_UNITS */

#define ENGINE_STATS_IO(X)                                               \
  X (rmw, "rmw_total", "writes that needed a read of edge blocks")       \
  X (short_io, "short_io_total", "resubmissions after a short read/write") \
  X (zero_fallback, "zero_fallback_total", "zero done by writing zeroes") \
  X (ra_hits, "readahead_hits_total",                                    \
     "reads answered from data read ahead (racache.c; among the "        \
     "requests and completed too)")                                      \
  X (ra_fills, "readahead_fills_total", "extents read ahead and kept")   \
  X (ra_dropped, "readahead_dropped_total",                              \
     "... dropped unread because a write overlapped them")               \
  X (reads_behind_write, "reads_behind_write_total",                     \
     "reads sent while a write was at the device, which each waited for " \
     "(direct path)")                                                    \
  /* end of ENGINE_STATS_IO */

#define ENGINE_STATS_PEAKS(X)                                            \
  X (inflight_max, "inflight_max", "most units seen in flight")          \
  X (depth, "depth_now", "units the device may hold now (deadline-depth, "    \
     "or what deadline-depth=auto chose)")                                \
  X (waiting_max, "waiting_max", "most units seen waiting in the core")  \
  X (wb_answered, "writeback_answered_total",                            \
     "writes answered before the device had them")                       \
  X (wb_bytes_max, "writeback_bytes_max", "most bytes of such writes pending") \
  X (wb_failed, "writeback_failed_total", "... of which failed on the device") \
  X (conn_full, "connection_full_total",                                 \
     "requests that took their connection's last server thread: the "    \
     "client's next requests waited in the socket, unseen by the "       \
     "scheduler (src/filter/threads.h)")                                 \
  /* end of ENGINE_STATS_PEAKS */

/* Every counter of struct engine_stats in `stats` order: E (field, name,
 * doc) for the engine's, C and C2 (as the core's X and X2) for
 * sched.field.
 */
#define ENGINE_STATS_ALL(E, C, C2)                                       \
  ENGINE_STATS_REQUESTS (E)                                              \
  DL_STATS_REQUESTS (C, C2)                                              \
  ENGINE_STATS_UNITS (E)                                                 \
  DL_STATS_EVENTS (C, C2)                                                \
  ENGINE_STATS_IO (E)                                                    \
  DL_STATS_GAUGES (C, C2)                                                \
  ENGINE_STATS_PEAKS (E)

#define ENGINE_STATS_FIELD_(field, name, doc) uint64_t field;
struct engine_stats {
  struct dl_stats sched;        /* as of the last loop turn */
  ENGINE_STATS_REQUESTS (ENGINE_STATS_FIELD_)
  ENGINE_STATS_UNITS (ENGINE_STATS_FIELD_)
  ENGINE_STATS_IO (ENGINE_STATS_FIELD_)
  ENGINE_STATS_PEAKS (ENGINE_STATS_FIELD_)
  /* Where requests wait, in ns. */
  struct dl_hist inbox;         /* submit -> inserted by the loop */
  struct dl_hist queue;         /* inserted -> dispatched (the scheduler) */
  struct dl_hist device;        /* dispatched -> completed (the device) */
  struct dl_hist total[2];      /* submit -> completed, by direction */
  /* A read's time split in two: what it waits for in the scheduler
   * (writes ahead of it, anticipation) and at the device.
   */
  struct dl_hist read_queue;
  struct dl_hist read_device;
  /* Per priority class (classes.c): the core's counters, and reads'
   * submit -> completed.
   */
  struct dl_stats class_sched[DL_NPRIO];
  struct dl_hist class_read[DL_NPRIO];
};

/* A request took its connection's last server thread (the caller
 * knows how many there are): counted as connection_full_total.
 */
void engine_note_connection_full (struct engine *e);

/* A consistent copy; may be called at any time. */
void engine_get_stats (struct engine *e, struct engine_stats *st);
/* One line of counters and percentiles, for logs. */
void engine_format_stats (const struct engine_stats *st, char *buf, size_t len);

/* The clock of every timestamp in the engine and its stats. */
static inline uint64_t
engine_now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000u + ts.tv_nsec;
}

#ifdef __cplusplus
}
#endif

#endif /* NBD_DEADLINE_ENGINE_H */
