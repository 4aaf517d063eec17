/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the engine's lifecycle and loop.
 *
 * The scheduler only has a choice to make while requests wait, which
 * is why units are handed to the device only while fewer than `depth`
 * of them are in flight: everything else waits in the core, where it
 * can be ordered.  The core is single-threaded but need not live on
 * one thread: it and the depth counters are under sched_lock.
 *
 * A thread that waits for its request, when the request is a plain read
 * or write (syncio_fits), inserts it into the core itself and asks the
 * core for what the free slots allow (submit_shared).  The core makes
 * every decision as always.  When it hands that request out at once,
 * alone (nothing waited, a slot was free: a disk that keeps up), the
 * thread does the I/O itself with one pread or pwrite (syncio.c),
 * completes it, and hands out what its slot lets go: nobody is woken
 * at all.  Every other unit (merged, read ahead, in pieces, a flush;
 * with DIRECT also trim, zero, read-modify-write) and every other
 * request (through the inbox, inbox.c) goes to the loop thread, which
 * alone owns the ring, the timers and the control socket.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "internal.h"

void
engine_params_default (struct engine_params *p)
{
  memset (p, 0, sizeof *p);
  p->dispatch = ENGINE_DIRECT;
  dl_tunables_default (&p->tunables);
  p->depth = 2;
  p->max_bytes = 8u << 20;
  p->align = 1;
  p->spin_ns = 30000;
  p->inline_io = false;
}

static inline void
cpu_relax (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#endif
}

/* A submitter sleeps on its request's `done` word with a bare futex
 * rather than a mutex and condition variable: the waker then never
 * holds a lock that the woken thread must take at once (which made
 * every completion cost a second switch), and after storing `done` it
 * touches the request only through the futex address, so the
 * submitter may return and reuse its stack the moment it sees it.
 */
static void
futex_wait_while (int *word, int val)
{
  while (__atomic_load_n (word, __ATOMIC_ACQUIRE) == val)
    syscall (SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void
futex_wake_one (int *word)
{
  syscall (SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* The parameters a caller may get wrong, each with a one-line reason. */
static int
check_params (const struct engine_params *p, char *err, size_t errlen)
{
  if (p->depth < 1 || p->depth > 1024) {
    snprintf (err, errlen, "depth %u out of range 1..1024", p->depth);
    return -EINVAL;
  }
  if (p->max_bytes < 4096) {
    snprintf (err, errlen, "max in-flight bytes must be at least 4096");
    return -EINVAL;
  }
  if (dl_tunables_validate (&p->tunables, err, errlen) != 0)
    return -EINVAL;
  if (p->dispatch == ENGINE_NEXT && p->perform == NULL) {
    snprintf (err, errlen, "next dispatch needs a perform callback");
    return -EINVAL;
  }
  if (p->dispatch == ENGINE_DIRECT && (p->path == NULL) == (p->dir == NULL)) {
    snprintf (err, errlen, "direct dispatch needs a backing path or a directory");
    return -EINVAL;
  }
  return 0;
}

static struct engine *
engine_alloc (const struct engine_params *p)
{
  struct engine *e = calloc (1, sizeof *e);
  pthread_mutexattr_t a;

  if (e == NULL)
    return NULL;
  e->p = *p;
  e->disp = p->dispatch == ENGINE_DIRECT ? &direct_dispatcher
                                         : &nextpool_dispatcher;
  e->b.fd = e->b.fd_buffered = -1;
  e->efd = -1;
  /* Held for a few instructions at a time by many submitters and the
   * loop: spinning briefly beats sleeping in the kernel.
   */
  pthread_mutexattr_init (&a);
  pthread_mutexattr_settype (&a, PTHREAD_MUTEX_ADAPTIVE_NP);
  pthread_mutex_init (&e->lock, &a);
  pthread_mutex_init (&e->sched_lock, &a);
  exports_init (&e->exports);
  pthread_mutexattr_destroy (&a);
  pthread_mutex_init (&e->stats_lock, NULL);
  pthread_mutex_init (&e->own_pool_lock, NULL);
  TAILQ_INIT (&e->wb_list);
  pthread_mutex_init (&e->wb_lock, NULL);
  pthread_cond_init (&e->wb_cond, NULL);
  pthread_mutex_init (&e->wq_lock, NULL);
  pthread_cond_init (&e->wq_cond, NULL);
  racache_init (&e->ra);
  return e;
}

/* DIRECT: open the backing, and make sure a ring can be had here, so
 * that a refusal shows on the terminal rather than in syslog after the
 * fork; the real ring is made in engine_start.
 */
static int
open_direct (struct engine *e, char *err, size_t errlen)
{
  struct io_uring probe;
  int r;

  if (e->p.dir) {
    /* The exports open their own (engine_export); every alignment an
     * O_DIRECT device asks divides this one.
     */
    e->multi = true;
    e->align = EXPORT_ALIGN;
    e->size = 0;
  }
  else {
    r = backing_open (&e->b, e->p.path, e->p.readonly, err, errlen);
    if (r < 0)
      return r;
    e->size = e->b.size;
    e->align = e->b.align;
  }
  r = io_uring_queue_init (8, &probe, 0);
  if (r < 0) {
    snprintf (err, errlen, "io_uring_queue_init: %s", strerror (-r));
    return r;
  }
  io_uring_queue_exit (&probe);
  return 0;
}

/* NEXT: the layer below's granularity, as the caller gives it. */
static int
take_next_align (struct engine *e, char *err, size_t errlen)
{
  e->align = e->p.align ? e->p.align : 1;
  if (e->align & (e->align - 1)) {
    snprintf (err, errlen, "alignment %u is not a power of two", e->align);
    return -EINVAL;
  }
  return 0;
}

struct engine *
engine_new (const struct engine_params *p, char *err, size_t errlen)
{
  struct engine *e;
  int r;

  r = check_params (p, err, errlen);
  if (r < 0) {
    errno = -r;
    return NULL;
  }
  e = engine_alloc (p);
  if (e == NULL) {
    snprintf (err, errlen, "calloc: %s", strerror (errno));
    return NULL;
  }
  if (p->dispatch == ENGINE_DIRECT)
    r = open_direct (e, err, errlen);
  else
    r = take_next_align (e, err, errlen);
  if (r < 0)
    goto fail;

  /* Bounce buffers for the threads' own I/O (syncio.c): the few in use
   * at once (depth) are kept.
   */
  bufpool_init (&e->own_pool, e->align, (uint64_t) p->depth * 131072 + (1u << 20));
  e->sched = dl_classes_new (&p->tunables, e->align);
  if (e->sched == NULL) {
    r = -errno;
    snprintf (err, errlen, "dl_classes_new: %s", strerror (errno));
    goto fail;
  }
  e->depth = p->depth;
  if (p->depth_auto) {
    dl_autodepth_init (&e->autodepth, p->depth < 2 ? p->depth : 2, p->depth);
    e->depth = e->autodepth.depth;
  }
  e->st.depth = e->depth;
  dl_classes_set_depth (e->sched, e->depth);
  return e;

 fail:
  engine_free (e);
  errno = -r;
  return NULL;
}

uint64_t engine_size (const struct engine *e) { return e->size; }
uint32_t engine_align (const struct engine *e) { return e->align; }
bool engine_is_blockdev (const struct engine *e) { return e->b.blockdev; }
bool engine_readonly (const struct engine *e)
{
  return e->p.dispatch == ENGINE_DIRECT && e->b.readonly;
}

/* The request's export's counters (exports.c). */
static void
count_export (struct engine *e, const struct engine_req *r, int dir)
{
  struct export_entry *x = exports_get (&e->exports, r->export_id);

  if (x == NULL || r->op == DL_OP_FLUSH)
    return;
  __atomic_add_fetch (&x->requests[dir], 1, __ATOMIC_RELAXED);
  __atomic_add_fetch (&x->bytes[dir], r->length, __ATOMIC_RELAXED);
}

/* Wake the submitter of one request. */
static void
complete_req (struct engine *e, struct engine_req *r, uint64_t now)
{
  int dir = (r->op == DL_OP_READ) ? DL_READ : DL_WRITE;

  pthread_mutex_lock (&e->stats_lock);
  e->st.completed++;
  if (r->result != 0)
    e->st.failed++;
  if (r->t_dispatch) {
    dl_hist_add (&e->st.device, now - r->t_dispatch);
    if (dir == DL_READ)
      dl_hist_add (&e->st.read_device, now - r->t_dispatch);
  }
  dl_hist_add (&e->st.total[dir], now - r->t_submit);
  if (dir == DL_READ && r->prio < DL_NPRIO)
    dl_hist_add (&e->st.class_read[r->prio], now - r->t_submit);
  pthread_mutex_unlock (&e->stats_lock);
  count_export (e, r, dir);
  __atomic_sub_fetch (&e->outstanding, 1, __ATOMIC_RELAXED);

  if (r->done_cb) {
    r->done_cb (r, r->done_opaque);
    return;
  }
  __atomic_store_n (&r->done, 1, __ATOMIC_RELEASE);
  futex_wake_one (&r->done);   /* r may be gone already: address only */
}

/* deadline-depth=auto: the depth the device is measured to use (the
 * units already in flight above a lower one just complete).
 */
static void
set_depth (struct engine *e, uint32_t depth)
{
  if (depth == e->depth)
    return;
  e->depth = depth;
  dl_classes_set_depth (e->sched, depth);
  pthread_mutex_lock (&e->stats_lock);
  e->st.depth = depth;
  pthread_mutex_unlock (&e->stats_lock);
}

/* The dispatchers' unit_done_fn: a unit has left the device. */
static void
unit_done (struct engine *e, struct dl_req *unit, int result, bool per_member)
{
  uint64_t now = engine_now_ns ();
  struct dl_req *m, *tmp;

  if (e->p.depth_auto && unit->op != DL_OP_FLUSH)
    set_depth (e, dl_autodepth_done (&e->autodepth, now, unit->unit_length,
                                     e->depth_full));
  e->inflight--;
  e->inflight_bytes -= unit->op == DL_OP_FLUSH ? 0 : unit->unit_length;
  if (unit->op == DL_OP_FLUSH)
    e->flushes_inflight--;
  dl_classes_complete (e->sched, unit, now);
  DL_FOREACH_MEMBER (m, unit, tmp) {
    struct engine_req *r = req_of (m);
    if (!per_member)
      r->result = result;
    complete_req (e, r, now);
  }
}

/* Fail a unit that never reached the device (shutdown). */
static void
fail_unit (struct engine *e, struct dl_req *unit, int err)
{
  uint64_t now = engine_now_ns ();
  struct dl_req *m, *tmp;

  DL_FOREACH_MEMBER (m, unit, tmp) {
    struct engine_req *r = req_of (m);
    r->result = err;
    complete_req (e, r, now);
  }
}

/* A unit leaves the core for the device: count it in flight.  Whoever
 * issues it (the loop, or its own submitter) holds sched_lock.
 */
static void
account_issue (struct engine *e, struct dl_req *unit, uint64_t now,
               bool own_thread)
{
  struct dl_req *m, *tmp;
  uint64_t members = 0;

  e->inflight++;
  e->inflight_bytes += unit->op == DL_OP_FLUSH ? 0 : unit->unit_length;
  if (unit->op == DL_OP_FLUSH)
    e->flushes_inflight++;
  /* The device never holds more than depth units, and one flush beyond
   * them (pump).
   */
  assert (e->inflight <= e->p.depth + e->flushes_inflight);
  DL_FOREACH_MEMBER (m, unit, tmp) {
    struct engine_req *r = req_of (m);
    r->t_dispatch = now;
    members++;
  }
  pthread_mutex_lock (&e->stats_lock);
  e->st.units++;
  e->st.unit_members += members;
  if (own_thread)
    e->st.units_inline++;
  DL_FOREACH_MEMBER (m, unit, tmp) {
    dl_hist_add (&e->st.queue, now - req_of (m)->t_insert);
    if (m->op == DL_OP_READ)
      dl_hist_add (&e->st.read_queue, now - req_of (m)->t_insert);
  }
  if (e->inflight > e->st.inflight_max)
    e->st.inflight_max = e->inflight;
  pthread_mutex_unlock (&e->stats_lock);
}

/* Units a submitting thread dispatched that need the ring (counted in
 * flight already).
 */
static void
issue_handoffs (struct engine *e)
{
  struct engine_req *r;

  while ((r = e->handoff_head) != NULL) {
    e->handoff_head = r->inbox_next;
    if (e->handoff_head == NULL)
      e->handoff_tail = NULL;
    e->disp->issue (e, &r->dl);
  }
}

/* A unit the core has handed out goes to the device.  The request
 * that this very thread has just inserted (self, from submit_shared),
 * alone and plain, is done by the thread (its `done` word goes to 2);
 * any other unit is issued through the dispatcher on the loop, or left
 * for it.  (Waking the owner of a unit that waited, for it to do its
 * own I/O, was tried: with the queue full that cost a wake-up and a
 * blocking read per request where the ring serves many per wake-up,
 * and random reads at depth 32 lost; bench/results, section Q.)
 */
static void own_done (struct engine_req *r, void *opaque);

/* The extent the core asked to read ahead (ahead.c) is reserved in the
 * cache here, under the scheduler lock, the moment the core hands the
 * unit out: a write that arrives after this drops it (racache.h),
 * whichever thread issues the unit and however late.  Reserving only at
 * issue let a thread's write, done at once meanwhile, land before the
 * reservation while the read could still see the old data.  The
 * dispatcher owns r->ra from here (it fills or abandons it).
 */
static void
reserve_ahead (struct engine *e, struct dl_req *unit)
{
  struct engine_req *r = req_of (unit);
  uint64_t lo = unit->unit_offset + unit->unit_length - r->sort_base;
  uint64_t hi = lo + unit->ra_length;
  uint64_t size = backing_for (e, r->export_id)->size;

  r->ra.idx = -1;
  r->ra_buf = NULL;
  if (e->p.dispatch == ENGINE_DIRECT && hi > size)
    hi = size;                  /* not past the end of the backing */
  if (unit->ra_length != 0 && hi > lo)
    r->ra = racache_reserve (&e->ra, r->export_id, lo, hi, &r->ra_buf);
  unit->ra_length = r->ra.idx < 0 ? 0 : hi - lo;
}

static void
hand_out (struct engine *e, struct dl_req *unit, uint64_t now, bool on_loop,
          struct engine_req *self)
{
  struct engine_req *r = req_of (unit);

  if (r == self && unit->nr_members == 1 && unit->ra_length == 0 &&
      unit->piece_length == 0) {
    account_issue (e, unit, now, true);
    e->inflight_own++;
    r->done_cb = own_done;
    __atomic_store_n (&r->done, 2, __ATOMIC_RELAXED);
    return;
  }
  account_issue (e, unit, now, false);
  reserve_ahead (e, unit);
  if (on_loop) {
    e->disp->issue (e, unit);
    return;
  }
  r->inbox_next = NULL;
  if (e->handoff_tail)
    e->handoff_tail->inbox_next = r;
  else
    e->handoff_head = r;
  e->handoff_tail = r;
}

/* Dispatch while the device has free slots (the loop's pump, or a
 * submitting thread: on_loop false, and then units the loop must issue
 * are queued for it).  Returns how many units wait in the core.
 */
static uint64_t
dispatch_free_slots (struct engine *e, uint64_t now, bool on_loop,
                     struct engine_req *self)
{
  struct dl_req *unit;
  uint64_t waiting;

  while (!e->draining && e->inflight < e->depth &&
         e->inflight_bytes < e->p.max_bytes &&
         (unit = dl_classes_dispatch (e->sched, now)) != NULL)
    hand_out (e, unit, now, on_loop, self);
  waiting = dl_classes_waiting (e->sched);
  /* Is the depth what holds units back now?  Judged here, after the
   * device was given what it may hold, and not when a unit completes:
   * completions reaped together would see the slots of each other's
   * units free and call a full device idle (autodepth.c).
   */
  e->depth_full = e->inflight - e->flushes_inflight >= e->depth && waiting > 0;
  if (waiting > e->waiting_peak)
    e->waiting_peak = waiting;
  return waiting;
}

/* Hand units to the device while there is room; arm the core's timer. */
static void
pump (struct engine *e)
{
  uint64_t now = engine_now_ns (), t, waiting;
  struct dl_req *unit;

  issue_handoffs (e);
  waiting = dispatch_free_slots (e, now, true, NULL);

  /* A flush covers only writes already completed, so it need not wait
   * for a slot behind writes in flight: it gets one beyond the depth
   * (only a flush, and NULL when none waits: dl_classes_dispatch_flush).
   */
  if (!e->draining && waiting > 0 && e->flushes_inflight == 0) {
    unit = dl_classes_dispatch_flush (e->sched, now);
    if (unit)
      hand_out (e, unit, now, true, NULL);
  }

  /* The core may want to be asked again later even if nothing happens
   * (e.g. a deadline expiring while it idles the device).
   */
  ev_timer_stop (e->loop, &e->sched_timer);
  t = waiting ? dl_classes_next_timer (e->sched, now) : 0;
  if (e->disp->resume) {
    uint64_t wake = e->disp->resume (e, now);
    if (wake != 0 && (t == 0 || wake < t))
      t = wake;
  }
  if (t) {
    double after = t > now ? (double) (t - now) / 1e9 : 0.;
    ev_timer_set (&e->sched_timer, after, 0.);
    ev_timer_start (e->loop, &e->sched_timer);
  }

  if (e->disp->push)
    e->disp->push (e);

  if (e->draining && e->inflight == 0)
    ev_break (e->loop, EVBREAK_ALL);
}

/* At low load a request's latency is mostly wake-ups: the loop sleeping
 * in epoll until the ring's eventfd fires.  When a single unit is in
 * flight and nothing else is outstanding, watch the completion queue
 * (and the inbox) for a short while instead of sleeping.  At higher load the
 * ordinary path is taken, so the spinning costs nothing there.
 */
static void on_wake (struct ev_loop *loop, ev_async *w, int revents);

/* Only one request in the whole engine, and it is on the ring: a
 * client at depth 1.  With more, spinning only takes the CPU from the
 * threads that would bring the next requests (on two cores it cost 40%
 * of the IOPS at depth 32).
 */
static bool
alone_on_ring (struct engine *e)
{
  bool alone;

  pthread_mutex_lock (&e->sched_lock);
  alone = !e->draining && e->inflight - e->inflight_own == 1 &&
    __atomic_load_n (&e->outstanding, __ATOMIC_RELAXED) == 1;
  pthread_mutex_unlock (&e->sched_lock);
  return alone;
}

static void
poll_briefly (struct engine *e)
{
  uint64_t until;
  unsigned i;

  if (e->p.dispatch != ENGINE_DIRECT || e->p.spin_ns == 0)
    return;
  while (alone_on_ring (e)) {
    until = engine_now_ns () + e->p.spin_ns;
    for (i = 0;; ++i) {
      if (io_uring_cq_ready (&e->ring)) {
        pthread_mutex_lock (&e->sched_lock);
        direct_reap (e);
        pump (e);
        pthread_mutex_unlock (&e->sched_lock);
        break;
      }
      if (__atomic_load_n (&e->inbox_head, __ATOMIC_RELAXED) != NULL) {
        on_wake (e->loop, &e->wake, 0);
        break;
      }
      if ((i & 15) == 0 && engine_now_ns () > until)
        return;
      cpu_relax ();
    }
  }
}

/* Requests that arrived: into the core, or failed if the engine is
 * stopping.
 */
static void
insert_arrivals (struct engine *e, struct engine_req *in, bool stopping)
{
  uint64_t now = engine_now_ns ();
  struct engine_req *r, *next;

  for (r = in; r; r = next) {
    next = r->inbox_next;
    r->t_insert = now;
    pthread_mutex_lock (&e->stats_lock);
    dl_hist_add (&e->st.inbox, now - r->t_submit);
    pthread_mutex_unlock (&e->stats_lock);
    if (stopping) {
      r->result = -ESHUTDOWN;
      complete_req (e, r, now);
      continue;
    }
    if (dl_classes_insert (e->sched, &r->dl, now) != 0) {
      r->result = -ENOMEM;      /* the core has no room for it */
      complete_req (e, r, now);
      continue;
    }
    if (modifies (r->op))
      racache_taken (&e->ra); /* the core holds it: ahead.c sees it */
  }
}

/* Stopping: fail every unit still waiting in the core, once; those in
 * flight complete as usual, and the loop ends when none is left.
 */
static void
drain_waiting (struct engine *e)
{
  struct dl_req *u;

  e->draining = true;
  while ((u = dl_classes_drain (e->sched)) != NULL)
    fail_unit (e, u, -ESHUTDOWN);
}

static void
on_wake (struct ev_loop *loop, ev_async *w, int revents)
{
  struct engine *e = w->data;
  struct inbox_batch b;
  struct engine_req *r, *next;

  (void) loop;
  /* Taken and inserted in one hold of sched_lock: a request that
   * submit_shared inserts finds those before it either still in the
   * inbox or already in the core, never between the two.
   */
  pthread_mutex_lock (&e->sched_lock);
  inbox_take (e, &b);
  if (b.tunables_pending) {
    char err[128];
    dl_classes_set_tunables (e->sched, &b.tunables, err, sizeof err);
  }
  /* Completions first: they free slots for what arrives. */
  for (r = b.done; r; r = next) {
    next = r->inbox_next;
    unit_done (e, &r->dl, 0, true);
  }
  insert_arrivals (e, b.in, b.stopping);
  if (b.stopping && !e->draining)
    drain_waiting (e);
  pump (e);
  pthread_mutex_unlock (&e->sched_lock);
  if (w != NULL && revents != 0)
    poll_briefly (e);
}

static void
on_ring (struct ev_loop *loop, ev_io *w, int revents)
{
  struct engine *e = w->data;
  uint64_t v;

  (void) loop; (void) revents;
  if (read (e->efd, &v, sizeof v) < 0 && errno != EAGAIN) {
    /* Nothing to do: the CQ is drained regardless. */
  }
  pthread_mutex_lock (&e->sched_lock);
  direct_reap (e);
  pump (e);
  pthread_mutex_unlock (&e->sched_lock);
  poll_briefly (e);
}

static void
on_timer (struct ev_loop *loop, ev_timer *w, int revents)
{
  struct engine *e = w->data;

  (void) loop; (void) revents;
  pthread_mutex_lock (&e->sched_lock);
  pump (e);
  pthread_mutex_unlock (&e->sched_lock);
}

/* Periodic counters, only when something happened since the last. */
static void
on_stats (struct ev_loop *loop, ev_timer *w, int revents)
{
  struct engine *e = w->data;
  struct engine_stats st;

  (void) loop; (void) revents;
  engine_get_stats (e, &st);
  if (st.completed != e->stats_last_completed) {
    e->stats_last_completed = st.completed;
    e->p.stats_cb (&st, e->p.stats_opaque);
  }
}

static void *
loop_thread (void *arg)
{
  struct engine *e = arg;

  if (e->p.loop_init_cb)
    e->p.loop_init_cb (e->loop, e->p.loop_init_opaque);
  ev_run (e->loop, 0);
  return NULL;
}

int
engine_start (struct engine *e)
{
  char err[256];
  int r;

  if (e->started)
    return 0;
  e->loop = ev_loop_new (EVFLAG_AUTO | EVFLAG_NOSIGMASK);
  if (e->loop == NULL)
    return -ENOMEM;
  ev_async_init (&e->wake, on_wake);
  e->wake.data = e;
  ev_async_start (e->loop, &e->wake);
  ev_init (&e->sched_timer, on_timer);
  e->sched_timer.data = e;
  if (e->p.stats_cb && e->p.stats_interval_ns) {
    double t = e->p.stats_interval_ns / 1e9;
    ev_timer_init (&e->stats_timer, on_stats, t, t);
    e->stats_timer.data = e;
    ev_timer_start (e->loop, &e->stats_timer);
    /* It must not keep ev_run alive at shutdown: ev_break ends it. */
  }

  r = e->disp->start (e, unit_done, err, sizeof err);
  if (r < 0)
    return r;
  if (e->p.dispatch == ENGINE_DIRECT) {
    ev_io_init (&e->ring_io, on_ring, e->efd, EV_READ);
    e->ring_io.data = e;
    ev_io_start (e->loop, &e->ring_io);
  }

  r = pthread_create (&e->thread, NULL, loop_thread, e);
  if (r != 0) {
    e->disp->stop (e);
    return -r;
  }
  pthread_mutex_lock (&e->sched_lock);
  e->loop_live = true;
  pthread_mutex_unlock (&e->sched_lock);
  pthread_mutex_lock (&e->lock);
  e->started = true;
  pthread_mutex_unlock (&e->lock);
  return 0;
}

int
engine_submit_async (struct engine *e, struct engine_req *r,
                     void (*cb) (struct engine_req *, void *), void *opaque)
{
  return inbox_put (e, r, cb, opaque);
}

static void
own_done (struct engine_req *r, void *opaque)
{
  (void) r; (void) opaque;      /* its own thread: nobody to wake */
}

/* The loop must look again: units to issue, a slot free that the core
 * keeps empty for now (its timer: anticipation, pieces), or a stopping
 * loop waiting for the last unit.
 */
static bool
loop_needed (struct engine *e)
{
  return e->handoff_head != NULL || e->draining || e->paused != NULL ||
    (e->inflight < e->depth && dl_classes_waiting (e->sched) > 0);
}

/* r was handed out to this thread (hand_out): do it, complete it, and
 * hand out what its slot lets go (to the loop).
 */
static int
own_io (struct engine *e, struct engine_req *r)
{
  int result = syncio_rw (e, r);

  pthread_mutex_lock (&e->sched_lock);
  e->inflight_own--;
  r->result = result;
  unit_done (e, &r->dl, result, true);
  dispatch_free_slots (e, engine_now_ns (), false, NULL);
  /* Woken under the lock: the loop cannot end (and the engine be
   * freed) before the call.
   */
  if (loop_needed (e))
    ev_async_send (e->loop, &e->wake);
  pthread_mutex_unlock (&e->sched_lock);
  return result;
}

/* Requests of threads that wait for them (engine_submit), each one
 * plain enough for its thread to do (syncio_fits), are inserted by
 * that thread itself (see the top of this file).  The core decides as
 * for any request; when it hands r out at once, alone, this thread does
 * it, and everything else goes to the loop, which has the ring.  false:
 * r was not taken (the inbox's then).
 */
static bool
submit_shared (struct engine *e, struct engine_req *r, int *result)
{
  uint64_t now;
  bool wake;

  if (!e->p.inline_io || !syncio_fits (e, r))
    return false;
  pthread_mutex_lock (&e->sched_lock);
  /* A request in the inbox came first (a write already answered, with
   * deadline-writeback): r must not pass it, so it goes behind it.
   */
  if (!e->loop_live || e->draining ||
      __atomic_load_n (&e->inbox_head, __ATOMIC_ACQUIRE) != NULL) {
    pthread_mutex_unlock (&e->sched_lock);
    return false;               /* the inbox's (which refuses it if stopping) */
  }
  inbox_req_init (e, r, NULL, NULL);
  __atomic_add_fetch (&e->submitted, 1, __ATOMIC_RELAXED);
  now = r->t_submit;
  r->t_insert = now;
  if (dl_classes_insert (e->sched, &r->dl, now) != 0) {
    /* The core has no room for it: it fails here, as in the loop. */
    r->result = -ENOMEM;
    complete_req (e, r, now);
    pthread_mutex_unlock (&e->sched_lock);
    *result = -ENOMEM;
    return true;
  }
  if (modifies (r->op))
    racache_taken (&e->ra);
  dispatch_free_slots (e, now, false, r);
  wake = loop_needed (e);
  if (wake)
    ev_async_send (e->loop, &e->wake);
  pthread_mutex_unlock (&e->sched_lock);

  /* 2: handed out to this thread; 1: completed by the loop. */
  futex_wait_while (&r->done, 0);
  if (__atomic_load_n (&r->done, __ATOMIC_ACQUIRE) == 2)
    *result = own_io (e, r);
  else
    *result = r->result;
  return true;
}

int
engine_submit (struct engine *e, struct engine_req *r)
{
  int rc, wb_err = 0;

  /* Read ahead already (ahead.c, racache.c): no scheduler, no device.
   * Still a request submitted and completed (engine_get_stats counts
   * the hits among the completed).
   */
  if (r->op == DL_OP_READ &&
      racache_lookup (&e->ra, r->export_id, r->buf, r->offset, r->length,
                      engine_now_ns ())) {
    __atomic_add_fetch (&e->submitted, 1, __ATOMIC_RELAXED);
    return 0;
  }
  if (wb_applies (e, r)) {
    rc = wb_submit (e, r);
    if (rc != 0)
      return rc > 0 ? 0 : rc;
  }
  if (r->op == DL_OP_FLUSH)
    wb_err = wb_before_flush (e);

  if (submit_shared (e, r, &rc))
    return rc == 0 ? wb_err : rc;
  rc = inbox_put (e, r, NULL, NULL);
  if (rc == 0) {
    futex_wait_while (&r->done, 0);
    rc = r->result;
  }
  return rc == 0 ? wb_err : rc;
}

int
engine_set_tunables (struct engine *e, const struct dl_tunables *t,
                     char *err, size_t errlen)
{
  if (dl_tunables_validate (t, err, errlen) != 0)
    return -EINVAL;
  pthread_mutex_lock (&e->lock);
  e->new_tunables = *t;
  e->tunables_pending = true;
  e->p.tunables = *t;           /* what engine_get_tunables reports */
  pthread_mutex_unlock (&e->lock);
  if (e->started)
    ev_async_send (e->loop, &e->wake);
  else
    dl_classes_set_tunables (e->sched, t, err, errlen);
  return 0;
}

void
engine_get_tunables (struct engine *e, struct dl_tunables *t)
{
  pthread_mutex_lock (&e->lock);
  *t = e->p.tunables;
  pthread_mutex_unlock (&e->lock);
}

void
engine_stop (struct engine *e)
{
  bool was_started;

  if (e == NULL)
    return;
  /* Writes already answered must reach the device first. */
  pthread_mutex_lock (&e->lock);
  was_started = e->started && !e->stopped;
  pthread_mutex_unlock (&e->lock);
  if (was_started)
    wb_close (e);

  pthread_mutex_lock (&e->lock);
  was_started = e->started && !e->stopped;
  e->stopping = true;
  e->stopped = true;
  pthread_mutex_unlock (&e->lock);
  if (!was_started)
    return;

  ev_async_send (e->loop, &e->wake);
  pthread_join (e->thread, NULL);
  e->disp->stop (e);
}

void
engine_free (struct engine *e)
{
  if (e == NULL)
    return;
  engine_stop (e);
  if (e->loop)
    ev_loop_destroy (e->loop);
  if (e->sched)
    dl_classes_free (e->sched);
  backing_close (&e->b);
  bufpool_destroy (&e->own_pool);
  pthread_mutex_destroy (&e->own_pool_lock);
  racache_destroy (&e->ra);
  pthread_mutex_destroy (&e->lock);
  pthread_mutex_destroy (&e->sched_lock);
  exports_fini (&e->exports);
  pthread_mutex_destroy (&e->stats_lock);
  pthread_mutex_destroy (&e->wb_lock);
  pthread_cond_destroy (&e->wb_cond);
  pthread_mutex_destroy (&e->wq_lock);
  pthread_cond_destroy (&e->wq_cond);
  free (e);
}

void
engine_note_connection_full (struct engine *e)
{
  __atomic_add_fetch (&e->conn_full, 1, __ATOMIC_RELAXED);
}

void
engine_get_stats (struct engine *e, struct engine_stats *st)
{
  /* The core's counters as they are now: submitting threads use the
   * core between the loop's turns.
   */
  pthread_mutex_lock (&e->sched_lock);
  pthread_mutex_lock (&e->stats_lock);
  *st = e->st;
  pthread_mutex_unlock (&e->stats_lock);
  dl_classes_stats (e->sched, &st->sched);
  for (int i = 0; i < DL_NPRIO; i++)
    dl_classes_class_stats (e->sched, (enum dl_prio) i, &st->class_sched[i]);
  st->waiting_max = e->waiting_peak;
  pthread_mutex_unlock (&e->sched_lock);
  st->submitted = __atomic_load_n (&e->submitted, __ATOMIC_RELAXED);
  st->conn_full = __atomic_load_n (&e->conn_full, __ATOMIC_RELAXED);
  pthread_mutex_lock (&e->ra.lock);
  st->ra_hits = e->ra.hits;
  st->ra_fills = e->ra.fills;
  st->ra_dropped = e->ra.dropped;
  pthread_mutex_unlock (&e->ra.lock);
  st->completed += st->ra_hits;
  pthread_mutex_lock (&e->wb_lock);
  st->wb_answered = e->wb_answered;
  st->wb_bytes_max = e->wb_bytes_max;
  st->wb_failed = e->wb_failed;
  pthread_mutex_unlock (&e->wb_lock);
}

static void
fmt_hist (char **p, size_t *left, const char *name, const struct dl_hist *h)
{
  int n;

  if (h->count == 0)
    return;
  n = snprintf (*p, *left, " %s[n=%" PRIu64 " p50=%.1fus p99=%.1fus max=%.1fus]",
                name, h->count,
                dl_hist_percentile (h, 50) / 1e3,
                dl_hist_percentile (h, 99) / 1e3, h->max / 1e3);
  if (n > 0 && (size_t) n < *left) {
    *p += n;
    *left -= n;
  }
}

void
engine_format_stats (const struct engine_stats *st, char *buf, size_t len)
{
  char *p = buf;
  size_t left = len;
  int n;

  n = snprintf (p, left,
                "requests=%" PRIu64 " failed=%" PRIu64 " units=%" PRIu64
                " members=%" PRIu64 " reads=%" PRIu64 " writes=%" PRIu64
                " flushes=%" PRIu64 " merged_back=%" PRIu64
                " merged_front=%" PRIu64 " batches=%" PRIu64 "/%" PRIu64
                " expired=%" PRIu64 "/%" PRIu64 " starved=%" PRIu64
                " seeks=%" PRIu64 " hazard_holds=%" PRIu64
                " preemptions=%" PRIu64 " write_holds=%" PRIu64
                " antic=%" PRIu64 "/%" PRIu64 "/%" PRIu64
                " pieced=%" PRIu64 "/%" PRIu64 " behind=%" PRIu64
                " ahead=%" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64
                " slices=%" PRIu64 "/%" PRIu64
                " device_rate=%" PRIu64 "/%" PRIu64
                " device_access_ns=%" PRIu64 "/%" PRIu64
                " rmw=%" PRIu64
                " short_io=%" PRIu64 " zero_fallback=%" PRIu64
                " inflight_max=%" PRIu64 " waiting_max=%" PRIu64
                " depth_now=%" PRIu64
                " wb_answered=%" PRIu64 " wb_max=%" PRIu64
                " wb_failed=%" PRIu64 " conn_full=%" PRIu64,
                st->completed, st->failed, st->units, st->unit_members,
                st->sched.inserted[DL_READ], st->sched.inserted[DL_WRITE],
                st->sched.flushes, st->sched.merged_back,
                st->sched.merged_front,
                st->sched.batches[DL_READ], st->sched.batches[DL_WRITE],
                st->sched.expired[DL_READ], st->sched.expired[DL_WRITE],
                st->sched.starved_switches, st->sched.seeks,
                st->sched.hazard_holds, st->sched.preemptions,
                st->sched.write_holds, st->sched.antic_waits, st->sched.antic_hits,
                st->sched.antic_misses, st->sched.write_pieced,
                st->sched.piece_waits, st->reads_behind_write,
                st->sched.read_ahead, st->ra_fills, st->ra_hits, st->ra_dropped,
                st->sched.slices[DL_READ], st->sched.slices[DL_WRITE],
                st->sched.device_rate[DL_READ], st->sched.device_rate[DL_WRITE],
                st->sched.device_access_ns[DL_READ],
                st->sched.device_access_ns[DL_WRITE], st->rmw, st->short_io,
                st->zero_fallback, st->inflight_max, st->waiting_max,
                st->depth,
                st->wb_answered, st->wb_bytes_max, st->wb_failed, st->conn_full);
  if (n < 0 || (size_t) n >= left)
    return;
  p += n;
  left -= n;
  fmt_hist (&p, &left, "inbox", &st->inbox);
  fmt_hist (&p, &left, "sched", &st->queue);
  fmt_hist (&p, &left, "device", &st->device);
  fmt_hist (&p, &left, "read", &st->total[DL_READ]);
  fmt_hist (&p, &left, "write", &st->total[DL_WRITE]);
}

int
engine_export (struct engine *e, const char *name, enum dl_prio prio,
               uint64_t sort_base, uint32_t *id)
{
  struct backing b, *bp = NULL;
  char *path, err[256];
  int r;

  if ((unsigned) prio >= DL_NPRIO)
    return -EINVAL;
  /* DIRECT serves one file: every name is the same bytes, and must keep
   * one place on the disk (hazards between names hold only so).
   */
  if (e->p.dispatch == ENGINE_DIRECT && !e->multi)
    sort_base = 0;
  if (e->multi && exports_find (&e->exports, name) < 0) {
    /* Its own file of the directory, O_DIRECT, as the single backing
     * would be; never a path out of the directory.
     */
    if (name[0] == '\0' || strchr (name, '/') != NULL || strcmp (name, "..") == 0 ||
        strcmp (name, ".") == 0)
      return -ENOENT;
    if (asprintf (&path, "%s/%s", e->p.dir, name) < 0)
      return -ENOMEM;
    r = backing_open (&b, path, e->p.readonly, err, sizeof err);
    free (path);
    if (r < 0)
      return r;
    if (b.align > e->align) {
      backing_close (&b);
      return -EINVAL;
    }
    bp = &b;
  }
  return exports_add (&e->exports, name, prio, sort_base, bp, id);
}

bool
engine_export_backing (struct engine *e, uint32_t id, uint64_t *size, bool *readonly)
{
  struct export_entry *x = exports_get (&e->exports, id);

  if (!e->multi || x == NULL || x->b.fd < 0)
    return false;
  *size = x->b.size;
  *readonly = x->b.readonly;
  return true;
}

int
engine_export_find (struct engine *e, const char *name, uint32_t *id)
{
  int r = exports_find (&e->exports, name);

  if (r < 0)
    return r;
  *id = (uint32_t) r;
  return 0;
}

void
engine_req_export (struct engine *e, struct engine_req *r, uint32_t id)
{
  struct export_entry *x = exports_get (&e->exports, id);

  r->export_id = id;
  r->prio = x ? (enum dl_prio) __atomic_load_n (&x->prio, __ATOMIC_RELAXED) : DL_PRIO_BE;
  r->sort_base = x ? x->sort_base : 0;
}

int
engine_set_export_class (struct engine *e, const char *name, enum dl_prio p)
{
  int id = exports_find (&e->exports, name);

  if (id < 0)
    return id;
  if ((unsigned) p >= DL_NPRIO)
    return -EINVAL;
  __atomic_store_n (&e->exports.ent[id]->prio, (uint8_t) p, __ATOMIC_RELAXED);
  return 0;
}

int
engine_export_stats (struct engine *e, uint32_t id, struct engine_export_stats *st)
{
  struct export_entry *x = exports_get (&e->exports, id);
  int d;

  if (x == NULL)
    return -ENOENT;
  st->name = x->name;
  st->prio = (enum dl_prio) __atomic_load_n (&x->prio, __ATOMIC_RELAXED);
  for (d = 0; d < 2; d++) {
    st->requests[d] = __atomic_load_n (&x->requests[d], __ATOMIC_RELAXED);
    st->bytes[d] = __atomic_load_n (&x->bytes[d], __ATOMIC_RELAXED);
  }
  return 0;
}
