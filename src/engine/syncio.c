/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: a request's own thread doing its I/O.
 *
 * When the core hands out a request alone the moment it arrives, the
 * thread that submitted it does the I/O itself with one pread or
 * pwrite on the O_DIRECT descriptor, instead of a trip through the
 * loop and the ring and back (engine.c, submit_shared).  Only the plain cases come here:
 * a read or an aligned write inside the aligned part of the backing.
 * Everything else (read-modify-write, the partial last block, zero,
 * trim, flush, pieces, reading ahead) stays with direct.c.  With the
 * layer below, the thread calls the layer itself, as a worker would
 * (nextpool.c), for every request but a flush.
 *
 * The client's buffer is used as it is when its address meets the
 * backing's alignment; otherwise a bounce buffer from a pool shared by
 * the threads (a buffer per thread would cost memory with every one of
 * nbdkit's threads, thousands with many connections).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>

#include "internal.h"

/* A bounce buffer from the engine's pool for the threads (at most
 * `depth` of them do I/O at once, so it holds few), or NULL.
 */
static void *
buf_get (struct engine *e, size_t len)
{
  void *p;

  pthread_mutex_lock (&e->own_pool_lock);
  p = bufpool_get (&e->own_pool, len);
  pthread_mutex_unlock (&e->own_pool_lock);
  return p;
}

static void
buf_put (struct engine *e, void *p, size_t len)
{
  pthread_mutex_lock (&e->own_pool_lock);
  bufpool_put (&e->own_pool, p, len);
  pthread_mutex_unlock (&e->own_pool_lock);
}

bool
syncio_fits (struct engine *e, const struct engine_req *r)
{
  const struct backing *bk = backing_for (e, r->export_id);
  uint32_t a = e->align;
  uint64_t lo = round_down (r->offset, a), hi = round_up (r->offset + r->length, a);

  if (r->length == 0)
    return false;
  /* The layer below: the callback its workers would call, here. */
  if (e->p.dispatch == ENGINE_NEXT)
    return r->op != DL_OP_FLUSH && (r->flags & ENGINE_F_AHEAD) == 0;
  /* The partial last block of a file needs the buffered descriptor. */
  if (hi > round_down (bk->size, a))
    return false;
  if (hi - lo > SYNCIO_MAX)
    return false;
  switch (r->op) {
  case DL_OP_READ:
    return true;
  case DL_OP_WRITE:
    /* An edge block partly written would need reading first. */
    return !bk->readonly && is_aligned (r->offset | r->length, a);
  default:
    return false;
  }
}

/* All of [off, off + len) or -errno; a device that returns nothing
 * more before the end is an I/O error (the extent lies inside it).
 */
static int
rw_all (int fd, bool write, char *buf, size_t len, uint64_t off, int flags)
{
  size_t done = 0;
  ssize_t n;

  while (done < len) {
    struct iovec iov = { buf + done, len - done };
    n = write ? pwritev2 (fd, &iov, 1, off + done, flags)
              : preadv2 (fd, &iov, 1, off + done, 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    if (n == 0)
      return -EIO;
    done += n;
  }
  return 0;
}

int
syncio_rw (struct engine *e, struct engine_req *r)
{
  uint32_t a = e->align;
  uint64_t lo = round_down (r->offset, a), hi = round_up (r->offset + r->length, a);
  bool write = r->op == DL_OP_WRITE;
  bool direct = lo == r->offset && hi == r->offset + r->length &&
    is_aligned ((uintptr_t) r->buf, a);
  char *buf;
  int res;

  if (e->p.dispatch == ENGINE_NEXT)
    return e->p.perform (e->p.perform_opaque, r);
  buf = direct ? r->buf : buf_get (e, hi - lo);
  if (buf == NULL)
    return -ENOMEM;
  if (write && !direct)
    memcpy (buf, r->buf, r->length);    /* aligned: lo == offset */
  res = rw_all (backing_for (e, r->export_id)->fd, write, buf, hi - lo, lo,
                write && (r->flags & DL_F_FUA) ? RWF_DSYNC : 0);
  if (!direct) {
    if (res == 0 && !write)
      memcpy (r->buf, buf + (r->offset - lo), r->length);
    buf_put (e, buf, hi - lo);
  }
  return res;
}
