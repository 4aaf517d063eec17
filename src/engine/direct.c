/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: issuing units through io_uring on the O_DIRECT backing.
 *
 * Each unit in flight has an xfer: a small state machine driven by its
 * completions.  A unit always reaches the device as one I/O over one
 * aligned bounce buffer covering its extent rounded out to the
 * alignment:
 *
 *   read   read [lo, hi) into the buffer, copy each member out;
 *   write  if an edge block is partial, first read the edge block(s)
 *          (read-modify-write; the core orders every request whose
 *          rounded extent overlaps, so nothing can change the block
 *          meanwhile), copy the members in, write [lo, hi), RWF_DSYNC
 *          for FUA;
 *   zero   fallocate(ZERO_RANGE); where refused (block devices want
 *          aligned ranges) write zeroes through the write path, 1 MiB
 *          at a time;
 *   trim   fallocate(PUNCH_HOLE) (rounded in on block devices; trim is
 *          advisory, so refusal is not an error);
 *   flush  fsync with IORING_FSYNC_DATASYNC.
 *
 * A file whose size is not a multiple of the alignment has a partial
 * last block that O_DIRECT cannot write without growing the file;
 * writes touching it use the ordinary descriptor at exact offsets.
 * Short reads and writes are resumed where they stopped.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <linux/falloc.h>
#include <linux/fs.h>

#include "internal.h"

/* The kernel fills read buffers behind valgrind's back (io_uring):
 * tell it the bytes are defined, or every read looks uninitialised.
 * The client request is a few no-op instructions outside valgrind.
 */
#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define MARK_DEFINED(p, n) VALGRIND_MAKE_MEM_DEFINED ((p), (n))
#endif
#endif
#ifndef MARK_DEFINED
#define MARK_DEFINED(p, n) ((void) 0)
#endif

#define ZCHUNK (1u << 20)

enum phase {
  X_READ,                       /* main read of [lo, hi) */
  X_RMW,                        /* reading edge blocks before a write */
  X_WRITE,                      /* main write of [lo, hi) */
  X_FALLOC,
  X_FSYNC,
};

struct xfer {
  struct engine *e;
  struct dl_req *unit;
  enum phase phase;
  int fd;
  char *buf;
  size_t buflen;
  uint64_t lo, hi;              /* current I/O extent */
  uint64_t done;                /* bytes of it done */
  int pending;                  /* SQEs outstanding */
  int result;
  bool zeroing;                 /* writing zeroes from zcur to zend */
  bool fsync_after;             /* FUA on zero/trim */
  uint64_t zcur, zend;
  uint64_t cstart, cend;        /* exact range of the current write */
  uint64_t piece;               /* a write in pieces of this (0: whole) */
  struct ra_token ra;           /* a read's extent read ahead, to fill */
  uint64_t ra_lo;
  uint32_t asked;               /* length of the last read or write sent */
  uint64_t paused_ns;           /* waiting before its next piece since */
  struct xfer *next_free;       /* on e->xfer_free, or on e->paused */
  struct backing *bk;           /* the unit's export's (backing_for) */
  uint64_t base;                /* ... and its sort_base: device offset =
                                   the core's offset - base */
  uint32_t sync_next;           /* a flush with a directory: the next
                                   export to fsync */
};

/* user_data tags in the low bits of the xfer pointer */
#define TAG_MAIN 0
#define TAG_EDGE 1
#define TAG_MASK 3


static void
ring_close (struct engine *e)
{
  io_uring_queue_exit (&e->ring);
  close (e->efd);
  e->efd = -1;
}

/* A ring deep enough for every slot's SQEs (a write with two edge
 * reads takes three), with completions signalled on an eventfd that
 * the loop watches.
 */
static int
ring_open (struct engine *e, char *err, size_t errlen)
{
  unsigned entries = 8;
  int r;

  while (entries < 2 * e->p.depth + 8)
    entries <<= 1;
  r = io_uring_queue_init (entries, &e->ring, 0);
  if (r < 0) {
    snprintf (err, errlen, "io_uring_queue_init: %s", strerror (-r));
    return r;
  }
  e->efd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (e->efd == -1) {
    r = -errno;
    snprintf (err, errlen, "eventfd: %s", strerror (errno));
    io_uring_queue_exit (&e->ring);
    return r;
  }
  r = io_uring_register_eventfd (&e->ring, e->efd);
  if (r < 0) {
    snprintf (err, errlen, "io_uring_register_eventfd: %s", strerror (-r));
    ring_close (e);
    return r;
  }
  return 0;
}

static int
direct_start (struct engine *e, unit_done_fn *done, char *err, size_t errlen)
{
  int r;

  e->direct_done = done;
  r = ring_open (e, err, errlen);
  if (r < 0)
    return r;
  if (posix_memalign (&e->zeroes, e->align < 4096 ? 4096 : e->align, ZCHUNK) != 0) {
    snprintf (err, errlen, "posix_memalign: out of memory");
    ring_close (e);
    return -ENOMEM;
  }
  memset (e->zeroes, 0, ZCHUNK);
  /* Keep enough cached for every slot to hold a max-size merged unit. */
  bufpool_init (&e->pool, e->align,
                (uint64_t) e->p.depth * (e->p.tunables.max_merge + 2 * 65536) + (4u << 20));
  e->ring_ready = true;
  return 0;
}

static void
direct_stop (struct engine *e)
{
  struct xfer *x;

  if (!e->ring_ready)
    return;
  ring_close (e);
  while ((x = e->xfer_free) != NULL) {
    e->xfer_free = x->next_free;
    free (x);
  }
  bufpool_destroy (&e->pool);
  free (e->zeroes);
  e->zeroes = NULL;
  e->ring_ready = false;
}

static void
direct_push (struct engine *e)
{
  if (e->ring_ready && io_uring_sq_ready (&e->ring) > 0)
    io_uring_submit (&e->ring);
}

static struct io_uring_sqe *
get_sqe (struct engine *e)
{
  struct io_uring_sqe *sqe = io_uring_get_sqe (&e->ring);

  if (sqe == NULL) {            /* SQ full: push what is there first */
    io_uring_submit (&e->ring);
    sqe = io_uring_get_sqe (&e->ring);
  }
  return sqe;
}

static struct xfer *
xfer_get (struct engine *e)
{
  struct xfer *x = e->xfer_free;

  if (x)
    e->xfer_free = x->next_free;
  else if ((x = malloc (sizeof *x)) == NULL)
    return NULL;
  memset (x, 0, sizeof *x);
  x->e = e;
  return x;
}

static void
buf_release (struct xfer *x)
{
  if (x->buf) {
    bufpool_put (&x->e->pool, x->buf, x->buflen);
    x->buf = NULL;
    x->buflen = 0;
  }
}

/* The extent reserved for reading ahead (ahead) stays empty. */
static void
ahead_abandon (struct xfer *x)
{
  if (x->ra.idx < 0)
    return;
  racache_fill (&x->e->ra, x->ra, NULL, 0, 0);
  x->ra.idx = -1;
  x->unit->ra_length = 0;
}

static void
finish (struct xfer *x)
{
  struct engine *e = x->e;
  struct dl_req *unit = x->unit;
  int result = x->result;

  ahead_abandon (x);            /* not filled: the read failed */
  buf_release (x);
  x->next_free = e->xfer_free;
  e->xfer_free = x;
  e->direct_done (e, unit, result, false);
}

/* Fail x with err: nothing more of it goes to the device. */
static void
fail (struct xfer *x, int err)
{
  x->result = err;
  finish (x);
}

/* One of the engine's counters (under stats_lock: the loop's). */
static void
count (struct engine *e, uint64_t *counter)
{
  pthread_mutex_lock (&e->stats_lock);
  (*counter)++;
  pthread_mutex_unlock (&e->stats_lock);
}

static int
buf_ensure (struct xfer *x, size_t len)
{
  if (x->buf && x->buflen >= len)
    return 0;
  buf_release (x);
  x->buf = bufpool_get (&x->e->pool, len);
  if (x->buf == NULL)
    return -ENOMEM;
  x->buflen = len;
  return 0;
}

static int
prep_rw (struct xfer *x, bool write, int fd, void *buf, uint32_t len,
         uint64_t off, int tag)
{
  struct io_uring_sqe *sqe = get_sqe (x->e);

  if (sqe == NULL)
    return -EAGAIN;
  if (write)
    io_uring_prep_write (sqe, fd, buf, len, off);
  else
    io_uring_prep_read (sqe, fd, buf, len, off);
  if (write && (x->unit->flags & DL_F_FUA))
    sqe->rw_flags = RWF_DSYNC;
  io_uring_sqe_set_data (sqe, (void *) ((uintptr_t) x | tag));
  x->pending++;
  return 0;
}

static void
submit_main (struct xfer *x)
{
  bool write = x->phase == X_WRITE;
  uint64_t len = x->hi - x->lo - x->done;
  int r;

  /* The core's pieces (piece.c): a read sent meanwhile waits for one
   * piece at the device, not for the whole unit.
   */
  if (write && x->piece != 0 && len > x->piece)
    len = x->piece;
  x->asked = (uint32_t) len;
  r = prep_rw (x, write, x->fd, x->buf + x->done, x->asked, x->lo + x->done,
               TAG_MAIN);
  if (r < 0)
    fail (x, r);
  else if (write)
    x->e->writes_at_device++;
}

/* An SQE for a one-step phase of x (no buffer, no tag), or NULL after
 * failing x: the ring is full.
 */
static struct io_uring_sqe *
phase_sqe (struct xfer *x, enum phase phase)
{
  struct io_uring_sqe *sqe = get_sqe (x->e);

  if (sqe == NULL) {
    x->result = -EAGAIN;
    finish (x);
    return NULL;
  }
  x->phase = phase;
  io_uring_sqe_set_data (sqe, x); /* the io_uring_prep_* leave it alone */
  x->pending++;
  return sqe;
}

static void
prep_falloc (struct xfer *x, int mode, uint64_t off, uint64_t len)
{
  struct io_uring_sqe *sqe = phase_sqe (x, X_FALLOC);

  if (sqe)
    io_uring_prep_fallocate (sqe, x->fd, mode, off, len);
}

static void
prep_fsync_fd (struct xfer *x, int fd)
{
  struct io_uring_sqe *sqe = phase_sqe (x, X_FSYNC);

  if (sqe)
    io_uring_prep_fsync (sqe, fd, IORING_FSYNC_DATASYNC);
}

static void
prep_fsync (struct xfer *x)
{
  prep_fsync_fd (x, x->bk->fd);
}

/* A flush with a directory: an NBD flush covers every write completed
 * before it, of whichever export (merged flushes are of several), so
 * each export's file is synced, one after the other.  false when all
 * are.
 */
static bool
fsync_next_export (struct xfer *x)
{
  struct export_entry *ent;

  while ((ent = exports_get (&x->e->exports, x->sync_next)) != NULL) {
    x->sync_next++;
    if (ent->b.fd >= 0 && !ent->b.readonly) {
      prep_fsync_fd (x, ent->b.fd);
      return true;
    }
  }
  return false;
}

/* Copy what the write carries into the buffer at its place in [lo, hi). */
static void
fill_write (struct xfer *x)
{
  struct dl_req *m, *tmp;

  if (x->zeroing) {
    memset (x->buf + (x->cstart - x->lo), 0, x->cend - x->cstart);
    return;
  }
  DL_FOREACH_MEMBER (m, x->unit, tmp)
    memcpy (x->buf + (m->offset - x->base - x->lo), req_of (m)->buf, m->length);
}

/* Start writing [off, off+len): the unit's members, or zeroes. */
static void
start_write (struct xfer *x, uint64_t off, uint64_t len)
{
  struct engine *e = x->e;
  uint32_t a = e->align;
  bool head, tail;
  int r;

  x->done = 0;
  x->cstart = off;
  x->cend = off + len;
  x->lo = round_down (off, a);
  x->hi = round_up (off + len, a);
  x->fd = x->bk->fd;
  if (x->hi > x->bk->size && !x->bk->blockdev) {
    /* The file's partial last block: exact offsets, no O_DIRECT. */
    x->fd = x->bk->fd_buffered;
    x->lo = off;
    x->hi = off + len;
  }
  if ((r = buf_ensure (x, x->hi - x->lo)) < 0) {
    fail (x, r);
    return;
  }
  head = x->lo < off;
  tail = x->hi > off + len;
  if (head || tail) {
    x->phase = X_RMW;
    count (e, &e->st.rmw);
    if (head)
      r = prep_rw (x, false, x->fd, x->buf, a, x->lo, TAG_EDGE);
    if (r == 0 && tail && (!head || x->hi - a > x->lo))
      r = prep_rw (x, false, x->fd, x->buf + (x->hi - a - x->lo), a,
                   x->hi - a, TAG_EDGE);
    if (r < 0) {
      x->result = r;
      if (x->pending == 0)
        finish (x);
    }
    return;
  }
  fill_write (x);
  x->phase = X_WRITE;
  submit_main (x);
}

/* Next chunk of a write of zeroes, or the end of it. */
static void
zero_step (struct xfer *x)
{
  uint64_t end;

  if (x->zcur >= x->zend) {
    if (x->fsync_after && x->result == 0)
      prep_fsync (x);
    else
      finish (x);
    return;
  }
  end = round_down (x->zcur, x->e->align) + ZCHUNK;
  if (end > x->zend || end <= x->zcur)
    end = x->zend;
  start_write (x, x->zcur, end - x->zcur);
  x->zcur = end;
}

static void
start_zero_write (struct xfer *x, uint64_t off, uint64_t len)
{
  count (x->e, &x->e->st.zero_fallback);
  x->zeroing = true;
  x->zcur = off;
  x->zend = off + len;
  zero_step (x);
}

/* How much to read after the unit for the readahead cache: the extent
 * reserved when the core handed the unit out (engine.c, reserve_ahead),
 * which this transfer now fills or abandons.  The unit says what was
 * read (ra_length) when it completes.
 */
static uint64_t
ahead (struct xfer *x, struct dl_req *unit)
{
  struct engine_req *r = req_of (unit);

  x->ra = r->ra;
  r->ra.idx = -1;
  if (x->ra.idx < 0)
    return 0;
  x->ra_lo = unit->unit_offset + unit->unit_length - x->base;
  return unit->ra_length;
}

static void
start_read (struct xfer *x, uint64_t off, uint64_t len)
{
  int r;

  x->phase = X_READ;
  x->lo = round_down (off, x->e->align);
  x->hi = round_up (off + len, x->e->align);
  if ((r = buf_ensure (x, x->hi - x->lo)) < 0) {
    fail (x, r);
    return;
  }
  submit_main (x);
}

/* false: nothing to do for the device (an empty range). */
static bool
start_zero (struct xfer *x, uint64_t off, uint64_t len)
{
  struct engine *e = x->e;

  if (len == 0)
    return false;
  /* Block devices take only aligned ranges for fallocate. */
  if (x->bk->blockdev && !is_aligned (off | len, e->align)) {
    start_zero_write (x, off, len);
    return true;
  }
  x->lo = off;
  x->hi = off + len;
  prep_falloc (x, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, off, len);
  return true;
}

/* false: nothing to do for the device (nothing aligned to punch). */
static bool
start_trim (struct xfer *x, uint64_t off, uint64_t len)
{
  struct engine *e = x->e;

  if (x->bk->blockdev) {
    uint64_t lo = round_up (off, e->align), hi = round_down (off + len, e->align);
    if (hi <= lo)
      return false;
    off = lo;
    len = hi - lo;
  }
  if (len == 0)
    return false;
  x->lo = off;
  x->hi = off + len;
  prep_falloc (x, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len);
  return true;
}

static void
direct_issue (struct engine *e, struct dl_req *unit)
{
  struct xfer *x = xfer_get (e);
  uint64_t off, len = unit->unit_length;
  bool started = true;

  if (x == NULL) {
    racache_fill (&e->ra, req_of (unit)->ra, NULL, 0, 0);
    unit->ra_length = 0;
    e->direct_done (e, unit, -ENOMEM, false);
    return;
  }
  x->unit = unit;
  x->ra.idx = -1;
  x->bk = backing_for (e, req_of (unit)->export_id);
  x->base = req_of (unit)->sort_base;
  x->sync_next = 0;
  off = unit->unit_offset - x->base;
  x->fd = x->bk->fd;
  x->fsync_after = (unit->flags & DL_F_FUA) != 0;
  x->piece = unit->op == DL_OP_WRITE && unit->piece_length != 0
    ? round_up (unit->piece_length, e->align) : 0;

  if (unit->op != DL_OP_READ && unit->op != DL_OP_FLUSH && x->bk->readonly) {
    fail (x, -EROFS);
    return;
  }

  switch (unit->op) {
  case DL_OP_READ:
    /* It waits at the device for the write there (reads_behind_write:
     * what pieces are for).
     */
    if (e->writes_at_device > 0)
      count (e, &e->st.reads_behind_write);
    start_read (x, off, len + ahead (x, unit));
    break;
  case DL_OP_WRITE: start_write (x, off, len); break;
  case DL_OP_ZERO:  started = start_zero (x, off, len); break;
  case DL_OP_TRIM:  started = start_trim (x, off, len); break;
  case DL_OP_FLUSH:
    x->fsync_after = false;
    if (!e->multi)
      prep_fsync (x);
    else
      started = fsync_next_export (x);
    break;
  }
  if (started)
    return;
  /* Nothing to do for the device (empty range). */
  if (x->fsync_after)
    prep_fsync (x);
  else
    finish (x);
}

/* One completion of each phase.  Each returns true while x goes on (it
 * has queued the next step), false when its phase is over; x is
 * finished once no SQE of it is outstanding.
 */
static bool
read_done (struct xfer *x, int res)
{
  struct engine *e = x->e;
  struct dl_req *m, *tmp;

  if (res < 0 && x->ra.idx >= 0) {
    /* The error may lie in what was read ahead, which nobody asked
     * for: read the unit alone again, and keep nothing ahead.
     */
    ahead_abandon (x);
    x->hi = round_up (x->unit->unit_offset + x->unit->unit_length - x->base, e->align);
    x->done = 0;
    submit_main (x);
    return true;
  }
  if (res < 0) {
    x->result = res;
    return false;
  }
  MARK_DEFINED (x->buf + x->done, res);
  x->done += res;
  if (res > 0 && x->done < x->hi - x->lo && x->lo + x->done < x->bk->size) {
    count (e, &e->st.short_io);
    submit_main (x);
    return true;
  }
  /* End of file (a partial last block): the rest reads as zeroes. */
  if (x->done < x->hi - x->lo)
    memset (x->buf + x->done, 0, x->hi - x->lo - x->done);
  DL_FOREACH_MEMBER (m, x->unit, tmp)
    memcpy (req_of (m)->buf, x->buf + (m->offset - x->base - x->lo), m->length);
  if (x->ra.idx >= 0) {
    racache_fill (&e->ra, x->ra, x->buf + (x->ra_lo - x->lo), x->unit->ra_length,
                  engine_now_ns ());
    x->ra.idx = -1;
  }
  return false;
}

static bool
rmw_done (struct xfer *x, int res)
{
  if (res < 0 && x->result == 0)
    x->result = res;
  MARK_DEFINED (x->buf, x->hi - x->lo);
  /* A short edge read can only be the end of the device: zeroes.
   * Which edge it was does not matter: each was a whole block and
   * the data about to be copied in overwrites the rest.
   */
  if (x->pending > 0)
    return true;                /* the other edge is still being read */
  if (x->result < 0)
    return false;
  fill_write (x);
  x->phase = X_WRITE;
  x->done = 0;
  submit_main (x);
  return true;
}

/* Between two pieces of a write, a dependent reader first (piece.c):
 * true if the core keeps x's next piece back, on e->paused until
 * direct_resume sends it.
 */
static bool
piece_kept_back (struct xfer *x)
{
  struct engine *e = x->e;
  uint64_t now;

  if (x->piece == 0 || e->draining)
    return false;
  now = engine_now_ns ();
  if (dl_classes_piece_wait (e->sched, 0, now) == 0)
    return false;
  x->paused_ns = now;
  x->next_free = e->paused;
  e->paused = x;
  return true;
}

static bool
write_done (struct xfer *x, int res)
{
  if (res < 0) {
    x->result = res;
    return false;
  }
  if (res == 0) {
    x->result = -EIO;
    return false;
  }
  x->done += res;
  if (x->done < x->hi - x->lo) {
    if ((uint32_t) res < x->asked)
      count (x->e, &x->e->st.short_io);
    else if (piece_kept_back (x))
      return true;
    submit_main (x);
    return true;
  }
  if (x->zeroing) {
    zero_step (x);
    return true;
  }
  return false;
}

static bool
falloc_done (struct xfer *x, int res)
{
  if (res == -EOPNOTSUPP || res == -EINVAL || res == -ENODEV) {
    if (x->unit->op == DL_OP_TRIM)
      res = 0;                  /* advisory */
    else {
      start_zero_write (x, x->lo, x->hi - x->lo);
      return true;
    }
  }
  if (res < 0) {
    x->result = res;
    return false;
  }
  if (x->fsync_after) {
    prep_fsync (x);
    return true;
  }
  return false;
}

static void
on_cqe (struct xfer *x, int res)
{
  bool goes_on = false;

  x->pending--;
  switch (x->phase) {
  case X_READ:   goes_on = read_done (x, res); break;
  case X_RMW:    goes_on = rmw_done (x, res); break;
  case X_WRITE:
    x->e->writes_at_device--;
    goes_on = write_done (x, res);
    break;
  case X_FALLOC: goes_on = falloc_done (x, res); break;
  case X_FSYNC:
    if (res < 0)
      x->result = res;
    /* A flush with a directory: the next export's file. */
    goes_on = x->e->multi && x->unit->op == DL_OP_FLUSH && x->result == 0 &&
      fsync_next_export (x);
    break;
  }
  if (!goes_on && x->pending == 0)
    finish (x);
}

void
direct_reap (struct engine *e)
{
  struct io_uring_cqe *cqe;

  if (!e->ring_ready)
    return;
  while (io_uring_peek_cqe (&e->ring, &cqe) == 0) {
    uintptr_t ud = (uintptr_t) io_uring_cqe_get_data (cqe);
    struct xfer *x = (struct xfer *) (ud & ~(uintptr_t) TAG_MASK);
    int res = cqe->res;

    /* Consume first: on_cqe may queue SQEs and submit. */
    io_uring_cqe_seen (&e->ring, cqe);
    on_cqe (x, res);
  }
}

/* The pieces kept back (write_done) that may go now; the earliest time
 * one of the others may.
 */
static uint64_t
direct_resume (struct engine *e, uint64_t now)
{
  struct xfer **p = &e->paused, *x;
  uint64_t wake = 0, w;

  while ((x = *p) != NULL) {
    w = e->draining ? 0 : dl_classes_piece_wait (e->sched, x->paused_ns, now);
    if (w != 0) {
      if (wake == 0 || w < wake)
        wake = w;
      p = &x->next_free;
      continue;
    }
    *p = x->next_free;
    x->paused_ns = 0;
    submit_main (x);
  }
  return wake;
}

const struct dispatcher direct_dispatcher = {
  .start = direct_start,
  .issue = direct_issue,
  .push = direct_push,
  .resume = direct_resume,
  .stop = direct_stop,
};
