/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the engine on its own, without nbdkit.
 *
 *  1. bad parameters are refused with a reason;
 *  2. direct: async and blocking requests on a scratch file, aligned and
 *     not, checked against a model; read-modify-write was exercised;
 *  3. next: the callback never sees more than `depth` units at once;
 *  4. stop with requests queued: every one completes or fails, none is
 *     lost;
 *  5. direct, with threads doing their own reads and writes (engine.c,
 *     submit_shared): six threads on their own regions, checked against
 *     models; the depth holds, progress never stops, some units are done
 *     by their own threads (those handed out at once) and the rest by the
 *     loop; a lone reader does every one of its reads itself; with
 *     inline_io off, none;
 *  6. a unit only the loop can issue (two writes merged), handed out
 *     by a thread whose own unit completed, still completes;
 *  7. with deadline-writeback, a read right after a write was answered
 *     sees it (the read's thread must not insert it before the write,
 *     still in the inbox);
 *  8. a sequential reader read ahead of, beside threads writing where it
 *     reads, their writes done at once by their own threads: no read
 *     returns data older than a write answered before it was sent (the
 *     extent read ahead must be reserved when the core hands out the
 *     read, not when the loop issues it).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"

static int failures;
#define CHECK(c, ...) do {                                   \
    if (!(c)) {                                              \
      failures++;                                            \
      fprintf (stderr, "test-engine: FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf (stderr, __VA_ARGS__);                         \
      fputc ('\n', stderr);                                  \
    }                                                        \
  } while (0)

static uint64_t rng = 88172645463325252ULL;
static uint64_t
rnd (void)
{
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return rng;
}

static void
test_bad_params (void)
{
  struct engine_params p;
  char err[256];

  engine_params_default (&p);
  p.path = "/nonexistent/nbd-deadline";
  CHECK (engine_new (&p, err, sizeof err) == NULL && errno == ENOENT,
         "missing file accepted");
  CHECK (strstr (err, "/nonexistent") != NULL, "reason lacks the path: %s", err);

  p.path = "/";
  CHECK (engine_new (&p, err, sizeof err) == NULL, "directory accepted");

  engine_params_default (&p);
  p.path = "/dev/null";
  p.depth = 0;
  CHECK (engine_new (&p, err, sizeof err) == NULL && errno == EINVAL, "depth 0 accepted");

  engine_params_default (&p);
  p.dispatch = ENGINE_NEXT;
  CHECK (engine_new (&p, err, sizeof err) == NULL, "next without callback accepted");
}

/* --- direct ----------------------------------------------------------- */

#define FSIZE (4u << 20)
#define NASYNC 256

struct areq {
  struct engine_req r;
  char *data;
  int done;
};

static pthread_mutex_t alock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t acond = PTHREAD_COND_INITIALIZER;
static int adone;

static void
on_done (struct engine_req *r, void *opaque)
{
  struct areq *a = opaque;

  pthread_mutex_lock (&alock);
  a->done = 1;
  adone++;
  pthread_cond_broadcast (&acond);
  pthread_mutex_unlock (&alock);
}

static void
wait_all (int n)
{
  pthread_mutex_lock (&alock);
  while (adone < n)
    pthread_cond_wait (&acond, &alock);
  pthread_mutex_unlock (&alock);
}

static int direct_skipped;

/* Makes the file named by the mkstemp template path, size bytes long. */
static void
scratch_file (char *path, off_t size)
{
  int fd = mkstemp (path);

  if (fd < 0 || ftruncate (fd, size) < 0) {
    perror ("test-engine: scratch file");
    exit (EXIT_FAILURE);
  }
  close (fd);
}

/* A started engine for p, or NULL (a failure counted, the scratch
 * file path, if any, removed).
 */
static struct engine *
started_engine (const struct engine_params *p, const char *what, const char *path)
{
  char err[256];
  struct engine *e = engine_new (p, err, sizeof err);

  CHECK (e != NULL, "engine_new (%s): %s", what, err);
  if (e == NULL) {
    if (path)
      unlink (path);
    return NULL;
  }
  CHECK (engine_start (e) == 0, "start (%s)", what);
  return e;
}

static void
test_direct (void)
{
  char path[] = "/tmp/test-engine.XXXXXX";
  struct engine_params p;
  struct engine_stats st;
  struct engine *e;
  static struct areq a[NASYNC];
  unsigned char *model = calloc (FSIZE, 1), *buf = malloc (FSIZE);
  char err[256];
  int fd, i, rc;

  scratch_file (path, FSIZE);

  engine_params_default (&p);
  p.path = path;
  p.depth = 4;
  e = engine_new (&p, err, sizeof err);
  if (e == NULL) {
    /* Only a file system without O_DIRECT (EINVAL from open) is a
     * reason not to run this part; then the whole test is a skip (77),
     * never a pass.  Anything else is a failure.
     */
    if (errno == EINVAL) {
      fprintf (stderr, "test-engine: direct cannot run here: %s\n", err);
      direct_skipped = 1;
    }
    else
      CHECK (0, "engine_new (direct): %s", err);
    unlink (path);
    free (model); free (buf);
    return;
  }
  CHECK (engine_size (e) == FSIZE, "size %llu", (unsigned long long) engine_size (e));
  CHECK (engine_start (e) == 0, "start");

  /* Non-overlapping writes, many unaligned: slot i owns [i*16k, i*16k+16k). */
  adone = 0;
  for (i = 0; i < NASYNC; ++i) {
    uint64_t base = (uint64_t) i * 16384;
    uint32_t off = rnd () % 8192, len = 1 + rnd () % 8000;
    a[i].data = malloc (len);
    for (uint32_t j = 0; j < len; ++j)
      a[i].data[j] = rnd ();
    memcpy (model + base + off, a[i].data, len);
    a[i].r = (struct engine_req) {
      .op = DL_OP_WRITE, .offset = base + off, .length = len,
      .buf = a[i].data, .stream = 1 + i % 4,
      .flags = (i % 7 == 0) ? ENGINE_F_FUA : 0,
    };
    rc = engine_submit_async (e, &a[i].r, on_done, &a[i]);
    CHECK (rc == 0, "submit_async: %s", strerror (-rc));
  }
  wait_all (NASYNC);
  for (i = 0; i < NASYNC; ++i) {
    CHECK (a[i].r.result == 0, "write %d: %s", i, strerror (-a[i].r.result));
    free (a[i].data);
  }

  /* Zero and trim a few slots (trim leaves contents unspecified: the
   * model forgets them by copying what is read back there).
   */
  {
    struct engine_req z = { .op = DL_OP_ZERO, .offset = 3 * 16384 + 100, .length = 20000 };
    CHECK (engine_submit (e, &z) == 0, "zero");
    memset (model + z.offset, 0, z.length);
  }
  {
    struct engine_req f = { .op = DL_OP_FLUSH };
    CHECK (engine_submit (e, &f) == 0, "flush");
  }

  /* Read everything back in unaligned pieces. */
  for (uint64_t off = 0; off < FSIZE;) {
    uint32_t len = 1 + rnd () % 100000;
    struct engine_req r;
    if (off + len > FSIZE)
      len = FSIZE - off;
    r = (struct engine_req) { .op = DL_OP_READ, .offset = off, .length = len, .buf = buf + off };
    rc = engine_submit (e, &r);
    CHECK (rc == 0, "read %llu+%u: %s", (unsigned long long) off, len, strerror (-rc));
    off += len;
  }
  CHECK (memcmp (buf, model, FSIZE) == 0, "data read back differs from the model");

  engine_get_stats (e, &st);
  CHECK (st.rmw > 0, "no read-modify-write happened");
  CHECK (st.inflight_max <= 4, "inflight_max %llu > depth", (unsigned long long) st.inflight_max);
  CHECK (st.failed == 0, "%llu failed", (unsigned long long) st.failed);
  engine_free (e);

  /* And the file itself. */
  fd = open (path, O_RDONLY);
  CHECK (fd >= 0 && pread (fd, buf, FSIZE, 0) == FSIZE, "reading the file");
  CHECK (memcmp (buf, model, FSIZE) == 0, "file differs from the model");
  close (fd);
  unlink (path);
  free (model);
  free (buf);
}

/* --- next ------------------------------------------------------------- */

static int concurrent, max_concurrent;
static pthread_mutex_t clock_ = PTHREAD_MUTEX_INITIALIZER;

static int
slow_perform (void *opaque, struct engine_req *r)
{
  struct timespec ts = { 0, 2000000 };  /* 2 ms */

  pthread_mutex_lock (&clock_);
  if (++concurrent > max_concurrent)
    max_concurrent = concurrent;
  pthread_mutex_unlock (&clock_);
  nanosleep (&ts, NULL);
  if (r->op == DL_OP_READ)
    memset (r->buf, 0x5a, r->length);
  pthread_mutex_lock (&clock_);
  concurrent--;
  pthread_mutex_unlock (&clock_);
  return r->offset == 999 * 4096 ? -EIO : 0;    /* one error, passed through */
}

static void
test_next (int stop_early)
{
  struct engine_params p;
  struct engine *e;
  static struct areq a[200];
  static char bufs[200][4096];
  int i, n = 200, ok = 0, shut = 0;

  engine_params_default (&p);
  p.dispatch = ENGINE_NEXT;
  p.perform = slow_perform;
  p.depth = 3;
  e = started_engine (&p, "next", NULL);
  if (e == NULL)
    return;
  max_concurrent = 0;
  adone = 0;
  for (i = 0; i < n; ++i) {
    a[i].done = 0;
    a[i].r = (struct engine_req) {
      .op = (i % 3) ? DL_OP_WRITE : DL_OP_READ,
      .offset = (uint64_t) (i == 50 ? 999 : i * 2) * 4096, .length = 4096,
      .buf = bufs[i], .stream = 1 + i % 5,
    };
    CHECK (engine_submit_async (e, &a[i].r, on_done, &a[i]) == 0, "submit next");
  }
  if (stop_early) {
    /* Stop once a few are done (not after a fixed time: on a loaded
     * machine the loop may not have run yet), with most still queued.
     */
    pthread_mutex_lock (&alock);
    while (adone < 5)
      pthread_cond_wait (&acond, &alock);
    pthread_mutex_unlock (&alock);
    engine_stop (e);
    /* Every request was answered, one way or the other. */
    CHECK (adone == n, "after stop only %d of %d completed", adone, n);
    for (i = 0; i < n; ++i) {
      if (a[i].r.result == 0) ok++;
      else if (a[i].r.result == -ESHUTDOWN) shut++;
    }
    CHECK (shut > 0 && ok > 0, "stop: %d ok, %d shut down", ok, shut);
    {
      struct engine_req r = { .op = DL_OP_FLUSH };
      CHECK (engine_submit (e, &r) == -ESHUTDOWN, "submit after stop");
    }
  }
  else {
    wait_all (n);
    CHECK (a[50].r.result == -EIO, "error not passed through: %d", a[50].r.result);
    CHECK (a[0].r.result == 0 && bufs[0][0] == 0x5a, "read not performed");
  }
  CHECK (max_concurrent <= 3, "%d units at once with depth 3", max_concurrent);
  engine_free (e);
}

/* Liveness: depth 1, a layer below that answers at once, four threads
 * submitting as fast as they can for 3 s.  No request may be stranded
 * (a review found that skipping the loop's wake-up while every slot was
 * taken could leave one in the inbox with the loop asleep): progress
 * must never stop for 2 s.
 */
static struct engine *live_e;
static unsigned long live_done;
static int live_stop;

static int
instant_perform (void *opaque, struct engine_req *r)
{
  (void) opaque; (void) r;
  return 0;
}

static void *
live_submitter (void *arg)
{
  long id = (long) arg;
  char buf[4096];
  unsigned long i;

  for (i = 0; !__atomic_load_n (&live_stop, __ATOMIC_RELAXED); i++) {
    struct engine_req r;

    memset (&r, 0, sizeof r);
    r.op = (i % 5 == 4) ? DL_OP_WRITE : DL_OP_READ;
    r.offset = ((i * 7919 + (unsigned long) id * 104729) % 1024) * 4096;
    r.length = 4096;
    r.buf = buf;
    r.stream = id + 1;
    if (engine_submit (live_e, &r) != 0)
      break;
    __atomic_add_fetch (&live_done, 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

static void
test_liveness (void)
{
  struct engine_params p;
  pthread_t t[4];
  unsigned long last = 0;
  int still = 0, ticks;
  long i;

  engine_params_default (&p);
  p.dispatch = ENGINE_NEXT;
  p.perform = instant_perform;
  p.depth = 1;
  p.inline_io = true;            /* threads and the loop both dispatch */
  live_e = started_engine (&p, "liveness", NULL);
  if (live_e == NULL)
    return;
  for (i = 0; i < 4; i++)
    pthread_create (&t[i], NULL, live_submitter, (void *) i);
  for (ticks = 0; ticks < 30 && still < 20; ticks++) {
    unsigned long c;

    usleep (100000);
    c = __atomic_load_n (&live_done, __ATOMIC_RELAXED);
    still = c == last ? still + 1 : 0;
    last = c;
  }
  CHECK (still < 20, "no progress for 2 s after %lu requests", last);
  __atomic_store_n (&live_stop, 1, __ATOMIC_RELAXED);
  engine_stop (live_e);
  for (i = 0; i < 4; i++)
    pthread_join (t[i], NULL);
  engine_free (live_e);
}

/* --- direct, threads doing their own I/O --------------------------------- */

#define OWN_THREADS 6
#define OWN_REGION (1u << 20)   /* each thread's, in a file of 6 MiB */

static struct engine *own_e;
static int own_stop;
static unsigned long own_done, own_errors;

/* Writes of 4 KiB..64 KiB, aligned (its own thread's) or not (the
 * loop's, read-modify-write); reads of any extent into a buffer that
 * is aligned or not; FUA now and then.  Each read is checked against
 * the thread's model of its region.
 */
static void *
own_submitter (void *arg)
{
  long id = (long) arg;
  uint64_t base = (uint64_t) id * OWN_REGION, x = 0x9e3779b97f4a7c15ULL * (id + 1);
  unsigned char *model = calloc (OWN_REGION, 1);
  unsigned char *buf;
  unsigned long i;

  if (model == NULL || posix_memalign ((void **) &buf, 4096, 65536 + 4096) != 0)
    abort ();
  for (i = 0; !__atomic_load_n (&own_stop, __ATOMIC_RELAXED); i++) {
    struct engine_req r;
    uint32_t off, len;
    int rc, k;
    unsigned char *b;

    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    memset (&r, 0, sizeof r);
    r.stream = id + 1;
    if (x % 3 == 0) {                   /* write */
      if (x % 5 == 0) {                 /* unaligned: the loop's */
        len = 1 + (x >> 8) % 20000;
        off = (x >> 24) % (OWN_REGION - len);
      }
      else {
        len = 4096 * (1 + (x >> 8) % 16);
        off = 4096 * ((x >> 24) % (OWN_REGION / 4096 - 16));
      }
      b = buf + ((x >> 40) % 2 ? 0 : 1);
      for (k = 0; k < (int) len; k++)
        b[k] = (unsigned char) (i * 31 + k + id);
      memcpy (model + off, b, len);
      r.op = DL_OP_WRITE;
      r.flags = x % 11 == 0 ? ENGINE_F_FUA : 0;
    }
    else {                              /* read, any extent */
      len = 1 + (x >> 8) % 65536;
      off = (x >> 24) % (OWN_REGION - len);
      if (x % 4 == 0) {                 /* aligned extent and buffer */
        off &= ~4095u;
        len = (len + 4095) & ~4095u;
        if (off + len > OWN_REGION)
          off = OWN_REGION - len;
      }
      b = buf + ((x >> 40) % 2 ? 0 : 3);
      r.op = DL_OP_READ;
    }
    r.offset = base + off;
    r.length = len;
    r.buf = b;
    rc = engine_submit (own_e, &r);
    if (rc != 0 || (r.op == DL_OP_READ && memcmp (b, model + off, len) != 0))
      __atomic_add_fetch (&own_errors, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch (&own_done, 1, __ATOMIC_RELAXED);
  }
  free (model);
  free (buf);
  return NULL;
}

static void
test_own_io (bool inline_io)
{
  char path[] = "/tmp/test-engine-own.XXXXXX";
  struct engine_params p;
  struct engine_stats st, st2;
  pthread_t t[OWN_THREADS];
  unsigned long last = 0;
  int still = 0, ticks, i;
  char err[256];
  static char lone[4096] __attribute__ ((aligned (4096)));

  scratch_file (path, OWN_THREADS * OWN_REGION);
  engine_params_default (&p);
  p.path = path;
  p.depth = 3;
  p.inline_io = inline_io;
  own_e = started_engine (&p, "own", path);
  if (own_e == NULL)
    return;
  CHECK (engine_align (own_e) <= 4096, "alignment %u", engine_align (own_e));
  own_stop = 0;
  own_done = own_errors = 0;
  for (i = 0; i < OWN_THREADS; i++)
    pthread_create (&t[i], NULL, own_submitter, (void *) (long) i);
  for (ticks = 0; ticks < 20 && still < 20; ticks++) {
    unsigned long c;

    usleep (100000);
    c = __atomic_load_n (&own_done, __ATOMIC_RELAXED);
    still = c == last ? still + 1 : 0;
    last = c;
  }
  CHECK (still < 20, "inline %d: no progress for 2 s after %lu requests",
         inline_io, last);
  __atomic_store_n (&own_stop, 1, __ATOMIC_RELAXED);
  for (i = 0; i < OWN_THREADS; i++)
    pthread_join (t[i], NULL);
  CHECK (own_errors == 0, "inline %d: %lu of %lu requests failed or read back "
         "wrong", inline_io, own_errors, own_done);

  engine_get_stats (own_e, &st);
  CHECK (st.inflight_max <= 3, "inline %d: inflight_max %llu > depth 3",
         inline_io, (unsigned long long) st.inflight_max);
  CHECK (st.completed == st.submitted && st.failed == 0,
         "inline %d: %llu submitted, %llu completed, %llu failed", inline_io,
         (unsigned long long) st.submitted, (unsigned long long) st.completed,
         (unsigned long long) st.failed);
  if (inline_io)
    CHECK (st.units_inline > 0 && st.units_inline < st.units &&
           st.rmw > 0, "inline: %llu of %llu units done by their thread, "
           "%llu read-modify-write", (unsigned long long) st.units_inline,
           (unsigned long long) st.units, (unsigned long long) st.rmw);
  else
    CHECK (st.units_inline == 0, "inline off: %llu units done by their thread",
           (unsigned long long) st.units_inline);

  /* A lone reader: nothing ever waits, so with inline_io its thread
   * does every read itself (readahead off first, or the core asks for
   * more than the read, which the loop does; the flush, through the
   * loop, makes sure the loop has taken the new tunables).
   */
  {
    struct dl_tunables tu;
    struct engine_req f = { .op = DL_OP_FLUSH };

    engine_get_tunables (own_e, &tu);
    tu.readahead = 0;
    CHECK (engine_set_tunables (own_e, &tu, err, sizeof err) == 0, "%s", err);
    CHECK (engine_submit (own_e, &f) == 0, "flush");
  }
  engine_get_stats (own_e, &st);
  for (i = 0; i < 400; i++) {
    struct engine_req r = { .op = DL_OP_READ, .offset = (uint64_t) (i * 389 % 1500) * 4096,
                            .length = 4096, .buf = lone, .stream = 99 };
    CHECK (engine_submit (own_e, &r) == 0, "lone read %d", i);
  }
  engine_get_stats (own_e, &st2);
  /* (Reads answered from what the threads' reads brought in ahead
   * never reach the core.)
   */
  CHECK (st2.units - st.units >= 50 &&
         st2.units_inline - st.units_inline ==
         (inline_io ? st2.units - st.units : 0),
         "inline %d: %llu of the lone reader's %llu units done by its thread",
         inline_io, (unsigned long long) (st2.units_inline - st.units_inline),
         (unsigned long long) (st2.units - st.units));
  engine_free (own_e);
  unlink (path);
}

/* --- a unit for the loop, handed out by a thread ------------------------ */

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open, gate_entered;

/* Holds the read at offset 1 MiB until the gate opens. */
static int
gated_perform (void *opaque, struct engine_req *r)
{
  (void) opaque;
  if (r->op == DL_OP_READ && r->offset == 1u << 20) {
    pthread_mutex_lock (&gate_lock);
    gate_entered = 1;
    pthread_cond_broadcast (&gate_cond);
    while (!gate_open)
      pthread_cond_wait (&gate_cond, &gate_lock);
    pthread_mutex_unlock (&gate_lock);
  }
  return 0;
}

static struct engine *gate_e;

static void *
gated_submit (void *arg)
{
  struct engine_req *r = arg;

  r->result = engine_submit (gate_e, r);
  return NULL;
}

/* Depth 1, the layer below: a thread's own read holds the only slot
 * while two adjacent writes arrive and are merged into one unit, which
 * only the loop's workers issue.  When the read completes, its thread
 * hands the merged unit out: the loop must hear of it, though nothing
 * else will ever arrive.
 */
static void
test_own_handoff (void)
{
  struct engine_params p;
  struct engine_stats st;
  static char rbuf[4096], wbuf[2][4096];
  struct engine_req rd = { .op = DL_OP_READ, .offset = 1u << 20, .length = 4096,
                           .buf = rbuf, .stream = 1 };
  struct engine_req wr[2] = {
    { .op = DL_OP_WRITE, .offset = 0, .length = 4096, .buf = wbuf[0], .stream = 2 },
    { .op = DL_OP_WRITE, .offset = 4096, .length = 4096, .buf = wbuf[1], .stream = 3 },
  };
  pthread_t t[3];
  int i, waited;

  engine_params_default (&p);
  p.dispatch = ENGINE_NEXT;
  p.perform = gated_perform;
  p.depth = 1;
  p.inline_io = true;
  gate_e = started_engine (&p, "handoff", NULL);
  if (gate_e == NULL)
    return;
  gate_open = gate_entered = 0;
  pthread_create (&t[0], NULL, gated_submit, &rd);
  pthread_mutex_lock (&gate_lock);
  while (!gate_entered)
    pthread_cond_wait (&gate_cond, &gate_lock);
  pthread_mutex_unlock (&gate_lock);
  pthread_create (&t[1], NULL, gated_submit, &wr[0]);
  pthread_create (&t[2], NULL, gated_submit, &wr[1]);
  for (waited = 0; waited < 200; waited++) {   /* both queued, merged */
    engine_get_stats (gate_e, &st);
    if (st.sched.inserted[DL_WRITE] == 2)
      break;
    usleep (10000);
  }
  CHECK (st.sched.inserted[DL_WRITE] == 2 && st.sched.merged_back +
         st.sched.merged_front == 1, "writes not queued and merged: %llu "
         "inserted, %llu merged", (unsigned long long) st.sched.inserted[DL_WRITE],
         (unsigned long long) (st.sched.merged_back + st.sched.merged_front));
  pthread_mutex_lock (&gate_lock);
  gate_open = 1;
  pthread_cond_broadcast (&gate_cond);
  pthread_mutex_unlock (&gate_lock);
  for (waited = 0; waited < 200; waited++) {
    engine_get_stats (gate_e, &st);
    if (st.completed == 3)
      break;
    usleep (10000);
  }
  CHECK (st.completed == 3, "2 s after the read: %llu of 3 requests "
         "completed (the merged writes were never issued)",
         (unsigned long long) st.completed);
  engine_stop (gate_e);               /* fails what is stranded, if any */
  for (i = 0; i < 3; i++)
    pthread_join (t[i], NULL);
  CHECK (st.units_inline == 1, "%llu units done by their thread, not 1",
         (unsigned long long) st.units_inline);
  engine_free (gate_e);
}

/* --- writeback, then a read of it --------------------------------------- */

static void
test_read_after_answered_write (void)
{
  char path[] = "/tmp/test-engine-wb.XXXXXX";
  struct engine_params p;
  struct engine_stats st;
  struct engine *e;
  static char wbuf[4096] __attribute__ ((aligned (4096)));
  static char rbuf[4096] __attribute__ ((aligned (4096)));
  int i, stale = 0;

  scratch_file (path, 1 << 20);
  engine_params_default (&p);
  p.path = path;
  p.depth = 2;
  p.writeback_bytes = 1 << 20;
  p.inline_io = true;
  e = started_engine (&p, "writeback", path);
  if (e == NULL)
    return;
  for (i = 0; i < 2000; i++) {
    struct engine_req w = { .op = DL_OP_WRITE, .offset = (uint64_t) (i % 64) * 4096,
                            .length = 4096, .buf = wbuf, .stream = 1 };
    struct engine_req r = { .op = DL_OP_READ, .offset = w.offset, .length = 4096,
                            .buf = rbuf, .stream = 2 };

    memset (wbuf, i & 0xff, sizeof wbuf);
    CHECK (engine_submit (e, &w) == 0, "write %d", i);
    CHECK (engine_submit (e, &r) == 0, "read %d", i);
    if (memcmp (rbuf, wbuf, sizeof rbuf) != 0)
      stale++;
  }
  engine_get_stats (e, &st);
  CHECK (stale == 0, "%d of 2000 reads right after an answered write read "
         "the old data", stale);
  CHECK (st.wb_answered > 0, "no write was answered early");
  engine_free (e);
  unlink (path);
}

/* --- read ahead beside writes done at once ----------------------------- */

#define RA_PAGES 510              /* a multiple of RA_WRITERS */
#define RA_WRITERS 3

static struct engine *ra_e;
static int ra_stop;
static uint64_t ra_committed[RA_PAGES];  /* newest version answered */
static unsigned long ra_writes;
static uint64_t ra_reader_at;           /* the page being read */

/* Page p holds its number and a version in its first 16 bytes. */
static void *
ra_writer (void *arg)
{
  long id = (long) arg;
  uint64_t x = 0x2545f4914f6cdd1dULL * (id + 1), version = 0;
  uint64_t *page;

  if (posix_memalign ((void **) &page, 4096, 4096) != 0)
    abort ();
  memset (page, 0, 4096);
  while (!__atomic_load_n (&ra_stop, __ATOMIC_RELAXED)) {
    uint64_t p;
    struct engine_req w;

    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    /* Its own pages, mostly just ahead of the reader, where it reads
     * ahead: the race this part is for.
     */
    p = __atomic_load_n (&ra_reader_at, __ATOMIC_RELAXED);
    if (x % 4 != 0)
      p += 1 + (x >> 8) % 64;
    else
      p += (x >> 8) % RA_PAGES;
    p %= RA_PAGES;
    p -= p % RA_WRITERS;
    p += id;
    page[0] = p;
    page[1] = ++version;
    memset (&w, 0, sizeof w);
    w.op = DL_OP_WRITE;
    w.offset = p * 4096;
    w.length = 4096;
    w.buf = page;
    w.stream = 10 + id;
    if (engine_submit (ra_e, &w) != 0)
      abort ();
    __atomic_store_n (&ra_committed[p], version, __ATOMIC_RELEASE);
    __atomic_add_fetch (&ra_writes, 1, __ATOMIC_RELAXED);
  }
  free (page);
  return NULL;
}

static void
test_ahead_beside_writes (void)
{
  char path[] = "/tmp/test-engine-ra.XXXXXX";
  struct engine_params p;
  struct engine_stats st;
  pthread_t t[RA_WRITERS];
  uint64_t *page;
  unsigned long reads = 0, stale = 0;
  struct timespec t0, now;
  int i;

  scratch_file (path, RA_PAGES * 4096);
  engine_params_default (&p);
  p.path = path;
  p.depth = 4;
  p.inline_io = true;
  ra_e = started_engine (&p, "ahead", path);
  if (ra_e == NULL)
    return;
  if (posix_memalign ((void **) &page, 4096, 4096) != 0)
    abort ();
  memset (ra_committed, 0, sizeof ra_committed);
  ra_stop = 0;
  for (i = 0; i < RA_WRITERS; i++)
    pthread_create (&t[i], NULL, ra_writer, (void *) (long) i);
  clock_gettime (CLOCK_MONOTONIC, &t0);
  do {
    uint64_t pg = reads % RA_PAGES;
    uint64_t before;

    __atomic_store_n (&ra_reader_at, pg, __ATOMIC_RELAXED);
    before = __atomic_load_n (&ra_committed[pg], __ATOMIC_ACQUIRE);
    struct engine_req r = { .op = DL_OP_READ, .offset = pg * 4096,
                            .length = 4096, .buf = page, .stream = 1 };

    CHECK (engine_submit (ra_e, &r) == 0, "read of page %llu",
           (unsigned long long) pg);
    if ((page[1] != 0 && page[0] != pg) || page[1] < before)
      stale++;
    reads++;
    clock_gettime (CLOCK_MONOTONIC, &now);
  } while (now.tv_sec - t0.tv_sec < 3);
  __atomic_store_n (&ra_stop, 1, __ATOMIC_RELAXED);
  for (i = 0; i < RA_WRITERS; i++)
    pthread_join (t[i], NULL);
  engine_get_stats (ra_e, &st);
  CHECK (stale == 0, "%lu of %lu reads returned data older than a write "
         "answered before them (%llu answered from read-ahead)", stale, reads,
         (unsigned long long) st.ra_hits);
  /* Otherwise the race was not run. */
  CHECK (st.ra_hits > 0 && st.units_inline > 0,
         "%llu reads answered from read-ahead, %llu units done at once by "
         "their threads, in %lu reads and %lu writes",
         (unsigned long long) st.ra_hits, (unsigned long long) st.units_inline,
         reads, ra_writes);
  fprintf (stderr, "test-engine: ahead beside writes: %lu reads (%llu from "
           "read-ahead), %lu writes (%llu units at once)\n", reads,
           (unsigned long long) st.ra_hits, ra_writes,
           (unsigned long long) st.units_inline);
  free (page);
  engine_free (ra_e);
  unlink (path);
}

int
main (void)
{
  test_bad_params ();
  test_direct ();
  test_next (0);
  test_next (1);
  test_liveness ();
  test_own_handoff ();
  if (!direct_skipped) {
    test_own_io (true);
    test_own_io (false);
    test_read_after_answered_write ();
    test_ahead_beside_writes ();
  }
  if (failures) {
    fprintf (stderr, "test-engine: %d failures\n", failures);
    return EXIT_FAILURE;
  }
  if (direct_skipped) {
    printf ("test-engine: SKIP: the direct part could not run (no O_DIRECT in /tmp)\n");
    return 77;
  }
  printf ("test-engine: PASS\n");
  return EXIT_SUCCESS;
}
