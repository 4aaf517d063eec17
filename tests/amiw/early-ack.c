/* SPDX-License-Identifier: BSD-3-Clause */
/* The "early write ack" filter: answers a write without FUA once its
 * data is copied, performs it later on a pool of threads (keeping
 * overlapping writes in order), makes flush wait for all of them.  So
 * a crash loses writes that were acknowledged, which is what it is for:
 *
 *   - the negative control of the crash test (tests/test-crash-control.sh,
 *     built by make check as tests/.libs/early-ack.so): above the
 *     deadline filter, test-crash.sh must find acknowledged bytes lost;
 *   - the experiment measured in tests/amiw/README:
 *       PRE_FILTERS=--filter=$PWD/build/tests/.libs/early-ack.so bench/amiw.sh ...
 *
 * A test fixture, not for data anyone cares about.  Its limits: at most
 * wb-limit bytes (default 64M) are pending; a write that fails after
 * its answer is reported by the next flush on any connection; finalize
 * (a connection closing) waits for every connection's pending writes,
 * so that no worker uses a connection's context after it is gone;
 * unload stops and joins the workers.  A request it cannot copy (no
 * memory) fails with ENOMEM.  Reads, zeroes, trims and FUA writes wait
 * for the pending writes they overlap, but a write arriving while an
 * overlapping zero, trim or FUA write runs is not held back: its
 * clients (tests/integrity.c, a file system) never send overlapping
 * requests in flight together.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <nbdkit-filter.h>

#define NTHREADS 32
static uint64_t limit = 64 << 20;
static pthread_t threads[NTHREADS];
static int nthreads;
static bool stopping;

struct job { struct job *next; nbdkit_next *nx; void *buf; uint32_t count; uint64_t off; bool running; };
static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;      /* job queued */
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER; /* job done */
static struct job *jobs;            /* all pending (queued or running) */
static uint64_t bytes;
static int failed;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *
worker (void *arg)
{
  pthread_mutex_lock (&lk);
  while (!stopping) {
    struct job *j;
    /* the oldest job not running that no earlier job overlaps */
    for (j = jobs; j; j = j->next) {
      if (j->running) continue;
      bool blocked = false;
      for (struct job *e = jobs; e != j; e = e->next)
        if (e->off < j->off + j->count && j->off < e->off + e->count) { blocked = true; break; }
      if (!blocked) break;
    }
    if (!j) { pthread_cond_wait (&cv, &lk); continue; }
    j->running = true;
    pthread_mutex_unlock (&lk);
    int err = 0;
    int r = j->nx->pwrite (j->nx, j->buf, j->count, j->off, 0, &err);
    pthread_mutex_lock (&lk);
    if (r == -1) failed = err ? err : EIO;
    struct job **pp;
    for (pp = &jobs; *pp != j; pp = &(*pp)->next) ;
    *pp = j->next;
    bytes -= j->count;
    free (j->buf); free (j);
    pthread_cond_broadcast (&done_cv);
  }
  pthread_mutex_unlock (&lk);
  return NULL;
}

static void
start (void)
{
  for (int i = 0; i < NTHREADS; i++)
    if (pthread_create (&threads[nthreads], NULL, worker, NULL) == 0)
      nthreads++;
}

/* After every connection is gone (finalize drained the jobs). */
static void
wb_unload (void)
{
  pthread_mutex_lock (&lk);
  stopping = true;
  pthread_cond_broadcast (&cv);
  pthread_mutex_unlock (&lk);
  for (int i = 0; i < nthreads; i++)
    pthread_join (threads[i], NULL);
}

static int
wb_config (nbdkit_next_config *next, nbdkit_backend *nxdata, const char *key, const char *value)
{
  if (strcmp (key, "wb-limit") == 0) {
    int64_t v = nbdkit_parse_size (value);
    if (v <= 0) { nbdkit_error ("wb-limit: give a size above 0"); return -1; }
    limit = v;
    return 0;
  }
  return next (nxdata, key, value);
}

static bool
overlaps (uint64_t off, uint64_t len)
{
  for (struct job *j = jobs; j; j = j->next)
    if (j->off < off + len && off < j->off + j->count) return true;
  return false;
}

static void
wait_overlap (uint64_t off, uint64_t len)
{
  pthread_mutex_lock (&lk);
  while (overlaps (off, len)) pthread_cond_wait (&done_cv, &lk);
  pthread_mutex_unlock (&lk);
}

static int
wb_pwrite (nbdkit_next *next, void *h, const void *buf, uint32_t count, uint64_t off,
           uint32_t flags, int *err)
{
  if (flags & NBDKIT_FLAG_FUA) {
    wait_overlap (off, count);
    return next->pwrite (next, buf, count, off, flags, err);
  }
  pthread_once (&once, start);
  if (nthreads == 0) {
    nbdkit_error ("early-ack: no worker thread could be started");
    *err = EIO;
    return -1;
  }
  struct job *j = calloc (1, sizeof *j);
  if (j) j->buf = malloc (count ? count : 1);
  if (j == NULL || j->buf == NULL) {
    free (j);
    *err = ENOMEM;
    return -1;
  }
  memcpy (j->buf, buf, count);
  j->nx = next; j->count = count; j->off = off;
  pthread_mutex_lock (&lk);
  /* a write overlapping a pending one waits (keeps order), and the byte bound */
  while (bytes && bytes + count > limit)
    pthread_cond_wait (&done_cv, &lk);
  struct job **pp;
  for (pp = &jobs; *pp; pp = &(*pp)->next) ;
  *pp = j;
  bytes += count;
  pthread_cond_signal (&cv);
  pthread_mutex_unlock (&lk);
  return 0;
}

static int
wb_pread (nbdkit_next *next, void *h, void *buf, uint32_t count, uint64_t off,
          uint32_t flags, int *err)
{
  wait_overlap (off, count);
  return next->pread (next, buf, count, off, flags, err);
}

static int
drain (int *err)
{
  pthread_mutex_lock (&lk);
  while (jobs) pthread_cond_wait (&done_cv, &lk);
  int f = failed; failed = 0;
  pthread_mutex_unlock (&lk);
  if (f) { *err = f; return -1; }
  return 0;
}

static int
wb_flush (nbdkit_next *next, void *h, uint32_t flags, int *err)
{
  if (drain (err) == -1) return -1;
  return next->flush (next, flags, err);
}

static int
wb_trim (nbdkit_next *next, void *h, uint32_t count, uint64_t off, uint32_t flags, int *err)
{
  wait_overlap (off, count);
  return next->trim (next, count, off, flags, err);
}

static int
wb_zero (nbdkit_next *next, void *h, uint32_t count, uint64_t off, uint32_t flags, int *err)
{
  wait_overlap (off, count);
  return next->zero (next, count, off, flags, err);
}

static int
wb_finalize (nbdkit_next *next, void *h)
{
  int err;
  return drain (&err);
}

static struct nbdkit_filter filter = {
  .name = "wb",
  .longname = "experiment: early write ack",
  .config = wb_config,
  .unload = wb_unload,
  .finalize = wb_finalize,
  .pwrite = wb_pwrite,
  .pread = wb_pread,
  .flush = wb_flush,
  .trim = wb_trim,
  .zero = wb_zero,
};

NBDKIT_REGISTER_FILTER (filter)
