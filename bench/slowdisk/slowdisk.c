/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: slowdisk, an nbdkit plugin that models one spindle.
 *
 * The data lives in memory (allocated in chunks on first write, so an
 * untouched disk costs nothing and reads of it return zeroes), or in a
 * file (file=PATH, e.g. on tmpfs, so that it outlives the process):
 * what is written is what is read back.  Time is what the plugin fakes: every
 * request waits for "the head" (one request at a time, in arrival order
 * like a disk without command queueing, except that a waiter starting
 * exactly where the head is goes first: stream=on) and then holds it
 * for
 *
 *   seek      0 if the request starts where the previous one ended,
 *             or if it starts less than a revolution's worth of sectors
 *             ahead (then the head waits for those sectors to pass),
 *             else settle + (seek_ms - settle) * sqrt(distance / size)
 *   rotation  0 if contiguous, else a deterministic pseudo-random
 *             fraction of one revolution (60000 / rpm ms)
 *   transfer  length / rate
 *
 * With a write cache (wcache=SIZE, off by default) a write is taken into
 * the cache at no media cost; the cached extents are written out, in
 * ascending order with the same seek model, when the cache is full, on
 * flush, and on FUA.  A read of data still in the cache costs the media
 * model as usual (the model is about the head, not about the cache hit).
 *
 * See slowdisk.pod for the model, its parameters and its figures.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#define CHUNK_SHIFT 16                  /* 64 KiB chunks */
#define CHUNK_SIZE  ((uint64_t) 1 << CHUNK_SHIFT)
#define QHIST_MAX   64                  /* queue length histogram buckets */

/* ---- parameters ------------------------------------------------------- */

static uint64_t size = UINT64_C (1) << 30;     /* size=1G */
static double seek_ms = 8.0;                   /* full-stroke seek */
static double settle_ms = 0.5;                 /* shortest seek */
static unsigned rpm = 7200;                    /* 0: no rotational delay */
static bool rot_half = false;                  /* rotation=half|random */
static double rate = 100.0 * 1024 * 1024;      /* bytes per second */
static uint64_t wcache = 0;                    /* write cache bytes, 0 = off */
static uint64_t seed = 1;                      /* rotation PRNG seed */
static const char *stats_file = NULL;          /* stats=FILE at unload */
static const char *data_file = NULL;           /* file=PATH: data kept there */
static int data_fd = -1;

/* ---- state (all under lock, except the data chunks) ------------------ */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cv = PTHREAD_COND_INITIALIZER;
/* Requests waiting for the head, in arrival order.  The head goes to
 * the oldest, except that a waiter starting exactly where the head is
 * goes first when stream=on (sequential stream detection: the pieces of
 * one large write, split and reordered by the layers above, are
 * streamed as a real drive's look-ahead and write combining would).
 */
struct waiter { struct waiter *next; uint64_t off; bool chosen; };
static struct waiter *wq_head, **wq_tail = &wq_head;
static size_t wq_len;
static bool head_busy;
static bool stream = true;                     /* stream=on|off */
static uint64_t st_streamed;                   /* served out of order by stream */
static uint64_t head_pos;                      /* where the last request ended */
static uint64_t busy_until_ns;                 /* the disk's own clock */
static uint64_t prng;

/* A write cache: extents waiting to be written to the media. */
struct extent { uint64_t off, len; };
static struct extent *dirty;
static size_t ndirty, dirty_cap;
static uint64_t dirty_bytes;

/* Statistics. */
static uint64_t st_req[5];                     /* read, write, zero, flush, trim */
static uint64_t st_bytes[2];
static uint64_t st_seeks, st_contig, st_destaged, st_skips;
static double st_seek_ms, st_rot_ms, st_xfer_ms;
static double st_wait_ms, st_wait_max_ms;      /* waiting for the head */
static uint64_t st_qlen_max, st_qhist[QHIST_MAX + 1];
static uint64_t st_first_ns, st_last_ns;

/* The data: size / CHUNK_SIZE pointers, each NULL (zeroes) or a chunk.
 * Chunks are allocated under chunk_lock; the bytes of a chunk are
 * copied without it (NBD clients must not rely on the order of
 * overlapping concurrent requests, and the head lock serialises every
 * request anyway).
 */
static unsigned char **chunks;
static uint64_t nchunks;
static pthread_mutex_t chunk_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t
now_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
sleep_until_ns (uint64_t t)
{
  static __thread bool slack_set;
  if (!slack_set) {             /* default timer slack is 50 us a sleep */
    prctl (PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    slack_set = true;
  }
  struct timespec ts = { .tv_sec = t / 1000000000, .tv_nsec = t % 1000000000 };
  while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
    ;
}

/* splitmix64: deterministic, cheap, good enough for rotational phase. */
static uint64_t
next_random (void)
{
  uint64_t z = (prng += UINT64_C (0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C (0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C (0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* ---- configuration ---------------------------------------------------- */

/* A duration in milliseconds: "8", "8ms", "500us", "0.5ms", "1s". */
static int
parse_ms (const char *key, const char *value, double *out)
{
  char *end;
  double v;

  errno = 0;
  v = strtod (value, &end);
  if (errno || end == value || v < 0) goto bad;
  if (*end == '\0' || strcmp (end, "ms") == 0) ;
  else if (strcmp (end, "us") == 0) v /= 1000;
  else if (strcmp (end, "s") == 0) v *= 1000;
  else goto bad;
  *out = v;
  return 0;
 bad:
  nbdkit_error ("slowdisk: %s=%s: expected a duration in ms (e.g. 8, 0.5ms, 500us)",
                key, value);
  return -1;
}

static int
slowdisk_config (const char *key, const char *value)
{
  int64_t r;

  if (strcmp (key, "size") == 0) {
    if ((r = nbdkit_parse_size (value)) == -1) return -1;
    if (r < 512) { nbdkit_error ("slowdisk: size=%s: too small", value); return -1; }
    size = r;
  }
  else if (strcmp (key, "seek-ms") == 0 || strcmp (key, "seek") == 0)
    return parse_ms (key, value, &seek_ms);
  else if (strcmp (key, "settle") == 0 || strcmp (key, "settle-ms") == 0)
    return parse_ms (key, value, &settle_ms);
  else if (strcmp (key, "rpm") == 0) {
    if (nbdkit_parse_unsigned (key, value, &rpm) == -1) return -1;
  }
  else if (strcmp (key, "rotation") == 0) {
    if (strcmp (value, "half") == 0) rot_half = true;
    else if (strcmp (value, "random") == 0) rot_half = false;
    else { nbdkit_error ("slowdisk: rotation=%s: expected half or random", value); return -1; }
  }
  else if (strcmp (key, "rate") == 0) {
    /* bytes per second, with size suffixes: rate=100M */
    if ((r = nbdkit_parse_size (value)) == -1) return -1;
    if (r <= 0) { nbdkit_error ("slowdisk: rate=%s: must be > 0", value); return -1; }
    rate = r;
  }
  else if (strcmp (key, "wcache") == 0) {
    int b = nbdkit_parse_bool (value);
    if (b == 0) wcache = 0;
    else if (b == 1) wcache = 8 * 1024 * 1024;   /* wcache=on: 8 MiB */
    else {
      if ((r = nbdkit_parse_size (value)) == -1) return -1;
      wcache = r;
    }
  }
  else if (strcmp (key, "seed") == 0) {
    if (nbdkit_parse_uint64_t (key, value, &seed) == -1) return -1;
  }
  else if (strcmp (key, "stats") == 0)
    stats_file = value;
  else if (strcmp (key, "file") == 0)
    data_file = value;
  else if (strcmp (key, "stream") == 0) {
    int b = nbdkit_parse_bool (value);
    if (b == -1) return -1;
    stream = b;
  }
  else {
    nbdkit_error ("slowdisk: unknown parameter '%s'", key);
    return -1;
  }
  return 0;
}

static int
slowdisk_config_complete (void)
{
  if (settle_ms > seek_ms) {
    nbdkit_error ("slowdisk: settle (%g ms) is longer than seek-ms (%g ms)",
                  settle_ms, seek_ms);
    return -1;
  }
  if (data_file) {
    struct stat sb;
    data_fd = open (data_file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (data_fd == -1) { nbdkit_error ("slowdisk: %s: %m", data_file); return -1; }
    if (fstat (data_fd, &sb) == -1) { nbdkit_error ("slowdisk: fstat: %m"); return -1; }
    if ((uint64_t) sb.st_size < size && ftruncate (data_fd, size) == -1) {
      nbdkit_error ("slowdisk: %s: ftruncate: %m", data_file);
      return -1;
    }
    prng = seed;
    return 0;
  }
  nchunks = (size + CHUNK_SIZE - 1) >> CHUNK_SHIFT;
  chunks = calloc (nchunks, sizeof *chunks);
  if (!chunks) { nbdkit_error ("slowdisk: calloc: %m"); return -1; }
  prng = seed;
  return 0;
}

#define slowdisk_config_help \
  "size=SIZE        Disk size (default 1G).\n" \
  "seek-ms=MS       Full-stroke seek time (default 8).\n" \
  "settle=MS        Shortest (track-to-track) seek time (default 0.5).\n" \
  "rpm=N            Rotational speed, 0 for none (default 7200).\n" \
  "rotation=random|half  Rotational delay per seek (default random).\n" \
  "rate=SIZE        Media transfer rate per second (default 100M).\n" \
  "wcache=off|on|SIZE    Write cache (default off; on = 8M).\n" \
  "seed=N           Seed of the rotational delay sequence (default 1).\n" \
  "stats=FILE       Write statistics to FILE at exit.\n" \
  "file=PATH        Keep the data in PATH (kept across runs), not in memory.\n" \
  "stream=on|off    Serve a waiter contiguous with the head first (default on)."

/* ---- the head --------------------------------------------------------- */

/* The media cost of one access at [off, off+len), moving the head.
 * Called with lock held.  Returns nanoseconds.
 */
static uint64_t
media_cost (uint64_t off, uint64_t len)
{
  double ms = 0;

  double rev = rpm ? 60000.0 / rpm : 0;
  if (off > head_pos && rpm &&
      (double) (off - head_pos) * 1000.0 / rate < rev) {
    /* A short skip forward, less than a revolution's worth of sectors
     * on the same track: the head just waits for them to pass.
     */
    double g = (double) (off - head_pos) * 1000.0 / rate;
    ms += g;
    st_rot_ms += g;
    st_skips++;
  }
  else if (off != head_pos) {
    uint64_t d = off > head_pos ? off - head_pos : head_pos - off;
    double s = settle_ms + (seek_ms - settle_ms) * sqrt ((double) d / (double) size);
    double r = rot_half ? rev / 2 : rev * ((next_random () >> 11) * 0x1.0p-53);
    ms += s + r;
    st_seeks++;
    st_seek_ms += s;
    st_rot_ms += r;
  }
  else
    st_contig++;
  double x = (double) len * 1000.0 / rate;
  ms += x;
  st_xfer_ms += x;
  head_pos = off + len;
  return (uint64_t) (ms * 1e6);
}

static int
cmp_extent (const void *a, const void *b)
{
  const struct extent *x = a, *y = b;
  return x->off < y->off ? -1 : x->off > y->off;
}

/* Write the cache out: one ascending sweep from the head, wrapping
 * once (what a drive does with its own cache).  Returns nanoseconds.
 * Adjacent extents are one access.  Called with lock held.
 */
static uint64_t
destage (void)
{
  uint64_t t = 0;
  size_t i, start = 0;

  if (ndirty == 0) return 0;
  qsort (dirty, ndirty, sizeof *dirty, cmp_extent);
  while (start < ndirty && dirty[start].off < head_pos) start++;
  for (size_t k = 0; k < ndirty; ) {
    i = (start + k) % ndirty;
    uint64_t off = dirty[i].off, end = off + dirty[i].len;
    k++;
    /* join following adjacent or overlapping extents */
    while (k < ndirty) {
      size_t j = (start + k) % ndirty;
      if (j == 0 || dirty[j].off > end) break;
      if (dirty[j].off + dirty[j].len > end) end = dirty[j].off + dirty[j].len;
      k++;
    }
    t += media_cost (off, end - off);
    st_destaged += end - off;
  }
  ndirty = 0;
  dirty_bytes = 0;
  return t;
}

static int
cache_add (uint64_t off, uint64_t len)
{
  if (ndirty == dirty_cap) {
    size_t n = dirty_cap ? 2 * dirty_cap : 256;
    struct extent *p = realloc (dirty, n * sizeof *p);
    if (!p) { nbdkit_error ("slowdisk: realloc: %m"); return -1; }
    dirty = p;
    dirty_cap = n;
  }
  dirty[ndirty++] = (struct extent) { off, len };
  dirty_bytes += len;
  return 0;
}

enum kind { K_READ, K_WRITE, K_ZERO, K_FLUSH, K_TRIM };

/* Wait for the head, charge the request's time on the disk's clock,
 * sleep until the disk has finished it.  The data copy is done by the
 * caller while it still holds the head (released by head_release).
 */
static int
head_acquire (enum kind k, uint64_t off, uint64_t len, bool fua)
{
  uint64_t arrive = now_ns (), t_start, cost = 0;
  struct waiter me = { .next = NULL, .off = off, .chosen = false };

  pthread_mutex_lock (&lock);
  {
    uint64_t qlen = wq_len + head_busy;         /* requests ahead of us */
    if (qlen > st_qlen_max) st_qlen_max = qlen;
    st_qhist[qlen < QHIST_MAX ? qlen : QHIST_MAX]++;
  }
  if (!head_busy && wq_len == 0)
    head_busy = true;
  else {
    *wq_tail = &me;
    wq_tail = &me.next;
    wq_len++;
    while (!me.chosen)
      pthread_cond_wait (&turn_cv, &lock);
  }

  t_start = now_ns ();
  if (st_first_ns == 0) st_first_ns = arrive;
  {
    double w = (t_start - arrive) / 1e6;
    st_wait_ms += w;
    if (w > st_wait_max_ms) st_wait_max_ms = w;
  }
  st_req[k]++;

  switch (k) {
  case K_READ:
    st_bytes[0] += len;
    cost = media_cost (off, len);
    break;
  case K_WRITE:
  case K_ZERO:
    if (k == K_WRITE) st_bytes[1] += len;
    if (wcache && !fua && len <= wcache) {
      if (dirty_bytes + len > wcache)
        cost += destage ();
      if (cache_add (off, len) == -1) { cost += media_cost (off, len); }
    }
    else {
      if (wcache && fua) cost += destage ();
      cost += media_cost (off, len);
    }
    break;
  case K_FLUSH:
    cost = destage ();
    break;
  case K_TRIM:
    break;
  }

  /* The disk's clock.  A request starts when the disk is free or when it
   * arrived, whichever is later: the time our threads take to hand the
   * head over is not the disk's time, so a queued request starts at
   * busy_until, not when its thread woke up.  The clock may lag real
   * time by at most 1 ms (so that overheads cannot pile up into a burst
   * of free service).
   */
  {
    uint64_t start = busy_until_ns > arrive ? busy_until_ns : arrive;
    if (start + 1000000 < t_start) start = t_start - 1000000;
    busy_until_ns = start + cost;
  }
  uint64_t until = busy_until_ns;
  pthread_mutex_unlock (&lock);

  sleep_until_ns (until);
  return 0;
}

static void
head_release (void)
{
  struct waiter **pp = &wq_head, **pick = NULL;

  pthread_mutex_lock (&lock);
  st_last_ns = now_ns ();
  if (wq_head) {
    if (stream)
      for (pp = &wq_head; *pp; pp = &(*pp)->next)
        if ((*pp)->off == head_pos) { pick = pp; break; }
    if (pick && pick != &wq_head) st_streamed++;
    if (!pick) pick = &wq_head;
    struct waiter *w = *pick;
    *pick = w->next;
    if (wq_tail == &w->next) wq_tail = pick;
    wq_len--;
    w->chosen = true;               /* head_busy stays true: handed over */
    pthread_cond_broadcast (&turn_cv);
  }
  else
    head_busy = false;
  pthread_mutex_unlock (&lock);
}

/* ---- data ------------------------------------------------------------- */

static unsigned char *
chunk_get (uint64_t i, bool alloc)
{
  unsigned char *c = __atomic_load_n (&chunks[i], __ATOMIC_ACQUIRE);
  if (c || !alloc) return c;
  pthread_mutex_lock (&chunk_lock);
  c = chunks[i];
  if (!c) {
    c = calloc (1, CHUNK_SIZE);
    if (c) __atomic_store_n (&chunks[i], c, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock (&chunk_lock);
  return c;
}

/* op: 0 read into buf, 1 write from buf, 2 write zeroes. */
static int
copy_data (int op, void *buf, uint64_t off, uint64_t len)
{
  unsigned char *p = buf;

  if (data_fd >= 0) {
    while (len > 0) {
      ssize_t n;
      if (op == 0) n = pread (data_fd, p, len, off);
      else if (op == 1) n = pwrite (data_fd, p, len, off);
      else {
        if (fallocate (data_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                       off, len) == 0)
          return 0;
        /* no hole punching: write zeroes */
        static const unsigned char zeroes[65536];
        n = pwrite (data_fd, zeroes, len < sizeof zeroes ? len : sizeof zeroes, off);
      }
      if (n == -1) { nbdkit_error ("slowdisk: %s: %m", data_file); return -1; }
      if (n == 0) {
        if (op == 0) { memset (p, 0, len); return 0; }
        errno = EIO; nbdkit_error ("slowdisk: short write"); return -1;
      }
      if (op != 2) p += n;
      off += n;
      len -= n;
    }
    return 0;
  }
  while (len > 0) {
    uint64_t i = off >> CHUNK_SHIFT, o = off & (CHUNK_SIZE - 1);
    uint64_t n = CHUNK_SIZE - o < len ? CHUNK_SIZE - o : len;
    unsigned char *c = chunk_get (i, op == 1);
    if (op == 0) {
      if (c) memcpy (p, c + o, n); else memset (p, 0, n);
      p += n;
    }
    else if (op == 1) {
      if (!c) { nbdkit_error ("slowdisk: out of memory"); errno = ENOMEM; return -1; }
      memcpy (c + o, p, n);
      p += n;
    }
    else if (c)
      memset (c + o, 0, n);
    off += n;
    len -= n;
  }
  return 0;
}

/* ---- callbacks -------------------------------------------------------- */

static void *
slowdisk_open (int readonly)
{
  return NBDKIT_HANDLE_NOT_NEEDED;
}

static int64_t
slowdisk_get_size (void *h)
{
  return size;
}

static int slowdisk_can_multi_conn (void *h) { return 1; }
static int slowdisk_can_flush (void *h) { return 1; }
static int slowdisk_can_fua (void *h) { return NBDKIT_FUA_NATIVE; }
static int slowdisk_can_trim (void *h) { return 1; }
static int slowdisk_can_zero (void *h) { return 1; }

static int
slowdisk_pread (void *h, void *buf, uint32_t count, uint64_t offset,
                uint32_t flags)
{
  head_acquire (K_READ, offset, count, false);
  int r = copy_data (0, buf, offset, count);
  head_release ();
  return r;
}

static int
slowdisk_pwrite (void *h, const void *buf, uint32_t count, uint64_t offset,
                 uint32_t flags)
{
  head_acquire (K_WRITE, offset, count, flags & NBDKIT_FLAG_FUA);
  int r = copy_data (1, (void *) buf, offset, count);
  head_release ();
  return r;
}

/* Zero is charged as a write of zeroes (no WRITE SAME shortcut). */
static int
slowdisk_zero (void *h, uint32_t count, uint64_t offset, uint32_t flags)
{
  head_acquire (K_ZERO, offset, count, flags & NBDKIT_FLAG_FUA);
  int r = copy_data (2, NULL, offset, count);
  head_release ();
  return r;
}

/* Trim only zeroes the model's memory (reads of trimmed data return
 * zeroes, which NBD allows) and costs the head nothing but its turn.
 */
static int
slowdisk_trim (void *h, uint32_t count, uint64_t offset, uint32_t flags)
{
  head_acquire (K_TRIM, offset, count, false);
  int r = copy_data (2, NULL, offset, count);
  head_release ();
  return r;
}

static int
slowdisk_flush (void *h, uint32_t flags)
{
  head_acquire (K_FLUSH, 0, 0, false);
  head_release ();
  return 0;
}

/* ---- statistics ------------------------------------------------------- */

static void
format_stats (FILE *fp)
{
  uint64_t n = st_req[0] + st_req[1] + st_req[2] + st_req[3] + st_req[4];
  double span = st_last_ns > st_first_ns ? (st_last_ns - st_first_ns) / 1e9 : 0;
  double busy = (st_seek_ms + st_rot_ms + st_xfer_ms) / 1000;

  fprintf (fp, "model size=%" PRIu64 " seek-ms=%g settle=%g rpm=%u rotation=%s "
           "rate=%.0f wcache=%" PRIu64 " stream=%s\n",
           size, seek_ms, settle_ms, rpm, rot_half ? "half" : "random", rate, wcache,
           stream ? "on" : "off");
  fprintf (fp, "requests %" PRIu64 " read %" PRIu64 " write %" PRIu64
           " zero %" PRIu64 " flush %" PRIu64 " trim %" PRIu64 "\n",
           n, st_req[0], st_req[1], st_req[2], st_req[3], st_req[4]);
  fprintf (fp, "bytes read %" PRIu64 " written %" PRIu64 " destaged %" PRIu64 "\n",
           st_bytes[0], st_bytes[1], st_destaged);
  fprintf (fp, "seeks %" PRIu64 " short_skips %" PRIu64 " contiguous %" PRIu64
           " streamed_out_of_order %" PRIu64 "\n", st_seeks, st_skips, st_contig, st_streamed);
  fprintf (fp, "busy_s %.3f (seek %.3f rotation %.3f transfer %.3f) span_s %.3f util %.0f%%\n",
           busy, st_seek_ms / 1000, st_rot_ms / 1000, st_xfer_ms / 1000, span,
           span > 0 ? 100 * busy / span : 0);
  fprintf (fp, "head_wait_ms mean %.3f max %.3f\n",
           n ? st_wait_ms / n : 0, st_wait_max_ms);
  fprintf (fp, "queue_at_arrival max %" PRIu64 " hist", st_qlen_max);
  for (int i = 0; i <= QHIST_MAX; i++)
    if (st_qhist[i])
      fprintf (fp, " %d%s:%" PRIu64, i, i == QHIST_MAX ? "+" : "", st_qhist[i]);
  fprintf (fp, "\n");
}

static void
slowdisk_unload (void)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *fp = open_memstream (&buf, &len);

  if (fp) {
    format_stats (fp);
    fclose (fp);
    /* one debug line per stats line */
    for (char *l = strtok (buf, "\n"); l; l = strtok (NULL, "\n"))
      nbdkit_debug ("slowdisk: %s", l);
    free (buf);
  }
  if (stats_file) {
    fp = fopen (stats_file, "w");
    if (fp) { format_stats (fp); fclose (fp); }
  }
  if (data_fd >= 0) close (data_fd);
  for (uint64_t i = 0; i < nchunks; i++) free (chunks[i]);
  free (chunks);
  free (dirty);
}

static struct nbdkit_plugin plugin = {
  .name              = "slowdisk",
  .longname          = "nbd-deadline slow-disk model (one spindle)",
  .version           = PACKAGE_VERSION,
  .config            = slowdisk_config,
  .config_complete   = slowdisk_config_complete,
  .config_help       = slowdisk_config_help,
  .magic_config_key  = "size",
  .unload            = slowdisk_unload,
  .open              = slowdisk_open,
  .get_size          = slowdisk_get_size,
  .can_multi_conn    = slowdisk_can_multi_conn,
  .can_flush         = slowdisk_can_flush,
  .can_fua           = slowdisk_can_fua,
  .can_trim          = slowdisk_can_trim,
  .can_zero          = slowdisk_can_zero,
  .pread             = slowdisk_pread,
  .pwrite            = slowdisk_pwrite,
  .zero              = slowdisk_zero,
  .trim              = slowdisk_trim,
  .flush             = slowdisk_flush,
  .errno_is_preserved = 1,
};

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL
NBDKIT_REGISTER_PLUGIN (plugin)
