/* SPDX-License-Identifier: BSD-3-Clause */
/* bench-engine: the engine on its own, driven as the filter drives it,
 * without NBD (issue 17: the engine against fio io_uring on the same
 * file; bench-engine.sh runs both and prints the table).
 *
 *   bench-engine [-t SECONDS] JOB FILE [deadline-KEY=VALUE...]
 *   bench-engine --smoke [DIR]
 *
 * The engine gets its parameters as src/filter/deadline.c gives them:
 * the filter's own parser and defaults (params.c) with the deadline-*
 * parameters given here, and the rest of struct engine_params filled as
 * deadline_get_ready fills it (filter_engine_params below).  N threads
 * each keep one request outstanding with engine_submit(), as nbdkit's
 * threads of one connection do, so a job's depth is its thread count.
 * Each thread has its own buffer, aligned as nbdkit's are.  JOB:
 *
 *   seqread, seqwrite    64 KiB at depth 8, the threads taking
 *                        consecutive offsets from one shared cursor (one
 *                        sequential stream), wrapping at the end
 *   randread, randwrite  4 KiB at random aligned offsets, depth 32
 *   lat1                 4 KiB random reads at depth 1
 *
 * Writes end with a flush, counted in the time (fio's end_fsync).  A
 * run is RAMP_S untimed, then SECONDS timed (default 4).  One line of
 * results on stdout, after one line of settings: requests, IOPS, MiB/s,
 * the median latency (submit to return), the process's CPU time (user
 * + system, getrusage) per request over the timed part and the flush,
 * and the engine's counters over it (units, those done inline by their
 * own thread, the depth at the end).
 *
 * --smoke (make check): a small file in DIR (default .) written with a
 * pattern and read back through every job, briefly, with the defaults
 * and with deadline-scheduler=noop: every request must complete,
 * without error, counted by the engine as by us, with the data last
 * written, and both the threads' own I/O and the ring must have served
 * some; and the check must fail a block compared with other data.  Exit
 * 77 where DIR's file system refuses O_DIRECT.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include "engine.h"
#include "params.h"

#define RAMP_S 0.5
#define ALIGN 4096              /* nbdkit's buffers are page-aligned */
#define STREAM 1                /* the filter's first connection */

static const struct job {
  const char *name;
  enum dl_op op;
  uint32_t bs;
  unsigned threads;
  bool sequential;
} jobs[] = {
  { "seqread",   DL_OP_READ,  65536, 8,  true },
  { "seqwrite",  DL_OP_WRITE, 65536, 8,  true },
  { "randread",  DL_OP_READ,  4096,  32, false },
  { "randwrite", DL_OP_WRITE, 4096,  32, false },
  { "lat1",      DL_OP_READ,  4096,  1,  false },
};
#define NJOBS (sizeof jobs / sizeof jobs[0])
#define MAX_THREADS 32          /* the deepest job's */

enum phase { RAMP, TIMED, STOP };

/* What the threads of one run share. */
struct run {
  struct engine *e;
  const struct job *job;
  uint64_t size;                /* the backing, rounded down to job->bs */
  _Atomic uint64_t cursor;      /* sequential jobs: the next offset */
  _Atomic int phase;
  _Atomic int failed;           /* the first error (-errno) stops the run */
  /* --smoke: writes carry a pattern of (offset, gen) and reads are
   * checked against the gen each 4 KiB block was last written with.
   * one_pass: a sequential job ends at the end of the file.
   */
  bool verify, one_pass;
  uint8_t gen;
  _Atomic uint8_t *block_gen;
  _Atomic uint64_t bad_blocks;
};

struct worker {
  pthread_t tid;
  struct run *run;
  char *buf;
  uint64_t rng;
  uint64_t timed, bytes;        /* completed while the run was timed */
  uint64_t done;                /* completed at all */
  uint64_t *lat;                /* ns, of the timed requests */
  size_t nlat, cap;
};

/* A run's figures, and the engine's counters over it. */
struct result {
  uint64_t requests, bytes, done, p50_ns;
  double seconds, cpu_s;
  struct engine_stats before, after;
};

static uint64_t
mix (uint64_t x)
{
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27; x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* The word at byte offset off of a block written with gen. */
static uint64_t
pattern (uint64_t off, uint8_t gen)
{
  return mix (off ^ ((uint64_t) gen << 56));
}

static void
fill (char *buf, uint64_t off, uint32_t len, uint8_t gen)
{
  uint32_t i;

  for (i = 0; i < len; i += 8) {
    uint64_t w = pattern (off + i, gen);
    memcpy (buf + i, &w, 8);
  }
}

/* After a write: its blocks now hold gen.  After a read: count the
 * blocks that differ from what was last written there.
 */
static void
verify_done (struct run *run, const struct engine_req *r)
{
  uint64_t b;

  for (b = r->offset / 4096; b < (r->offset + r->length) / 4096; b++) {
    if (r->op == DL_OP_WRITE)
      run->block_gen[b] = run->gen;
    else {
      char want[4096];

      fill (want, b * 4096, 4096, run->block_gen[b]);
      if (memcmp ((char *) r->buf + (b * 4096 - r->offset), want, 4096) != 0)
        run->bad_blocks++;
    }
  }
}

static double
elapsed_s (const struct timespec *a, const struct timespec *b)
{
  return (b->tv_sec - a->tv_sec) + (b->tv_nsec - a->tv_nsec) / 1e9;
}

static double
cpu_now (void)
{
  struct rusage ru;

  getrusage (RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void
sleep_s (double s)
{
  struct timespec ts = { (time_t) s, (long) ((s - (time_t) s) * 1e9) };

  while (nanosleep (&ts, &ts) != 0 && errno == EINTR)
    ;
}

/* The next offset for w, or false when a one-pass job has reached the
 * end of the file.
 */
static bool
next_offset (struct worker *w, uint64_t *off)
{
  struct run *run = w->run;
  uint64_t bs = run->job->bs, o;

  if (!run->job->sequential) {
    w->rng += 0x9e3779b97f4a7c15ULL;    /* splitmix64 */
    *off = mix (w->rng) % (run->size / bs) * bs;
    return true;
  }
  o = atomic_fetch_add (&run->cursor, bs);
  if (run->one_pass && o >= run->size)
    return false;
  *off = o % run->size;
  return true;
}

static void
note_latency (struct worker *w, uint64_t ns)
{
  if (w->nlat == w->cap) {
    size_t cap = w->cap ? 2 * w->cap : 65536;
    uint64_t *p = realloc (w->lat, cap * sizeof *p);

    if (p == NULL)
      return;                   /* the median of those noted */
    w->lat = p;
    w->cap = cap;
  }
  w->lat[w->nlat++] = ns;
}

static void *
worker_main (void *arg)
{
  struct worker *w = arg;
  struct run *run = w->run;
  const struct job *j = run->job;

  while (run->phase != STOP) {
    struct engine_req r = {
      .op = j->op, .length = j->bs, .buf = w->buf, .stream = STREAM,
    };
    uint64_t t0;
    int rc;

    if (!next_offset (w, &r.offset))
      break;
    if (run->verify && j->op == DL_OP_WRITE)
      fill (w->buf, r.offset, j->bs, run->gen);
    t0 = engine_now_ns ();
    rc = engine_submit (run->e, &r);
    if (rc < 0) {
      int none = 0;

      if (atomic_compare_exchange_strong (&run->failed, &none, rc))
        fprintf (stderr, "bench-engine: %s of %" PRIu32 " bytes at %" PRIu64
                 ": %s\n", j->op == DL_OP_READ ? "read" : "write", j->bs,
                 r.offset, strerror (-rc));
      run->phase = STOP;
      break;
    }
    w->done++;
    if (run->verify)
      verify_done (run, &r);
    if (run->phase == TIMED) {
      w->timed++;
      w->bytes += j->bs;
      note_latency (w, engine_now_ns () - t0);
    }
  }
  return NULL;
}

static int
cmp_u64 (const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
  return x < y ? -1 : x > y;
}

/* The median of every worker's latencies (the workers' arrays freed). */
static uint64_t
median_latency (struct worker *w, unsigned n)
{
  size_t total = 0, k = 0, i;
  uint64_t *all, m = 0;

  for (i = 0; i < n; i++)
    total += w[i].nlat;
  all = malloc ((total ? total : 1) * sizeof *all);
  for (i = 0; i < n; i++) {
    if (all)
      memcpy (all + k, w[i].lat, w[i].nlat * sizeof *all);
    k += w[i].nlat;
    free (w[i].lat);
  }
  if (all && total) {
    qsort (all, total, sizeof *all, cmp_u64);
    m = all[total / 2];
  }
  free (all);
  return m;
}

/* Where the timed part of a run begins: the clocks and the engine's
 * counters.
 */
static void
timed_start (struct run *run, struct result *res, struct timespec *t0,
             double *cpu0)
{
  engine_get_stats (run->e, &res->before);
  clock_gettime (CLOCK_MONOTONIC, t0);
  *cpu0 = cpu_now ();
}

/* One run of run->job: the threads started, RAMP_S untimed, seconds
 * timed (or, one_pass, until the cursor passes the end), then a flush
 * for a write job.  0, or -errno after a one-line error.
 */
static int
run_job (struct run *run, double ramp, double seconds, struct result *res)
{
  const struct job *j = run->job;
  struct worker w[MAX_THREADS];
  struct timespec t0 = { 0, 0 }, t1;
  double cpu0 = 0;
  unsigned i, started;
  int rc = 0;

  memset (w, 0, sizeof w);
  memset (res, 0, sizeof *res);
  run->phase = ramp > 0 ? RAMP : TIMED;
  run->failed = 0;
  run->cursor = 0;
  if (ramp <= 0)
    timed_start (run, res, &t0, &cpu0);
  for (started = 0; started < j->threads; started++) {
    w[started].run = run;
    w[started].rng = mix (started + 1 + (uint64_t) time (NULL) * MAX_THREADS);
    rc = -posix_memalign ((void **) &w[started].buf, ALIGN, j->bs);
    if (rc < 0) {
      fprintf (stderr, "bench-engine: posix_memalign: %s\n", strerror (-rc));
      break;
    }
    memset (w[started].buf, 0xa5, j->bs);
    rc = -pthread_create (&w[started].tid, NULL, worker_main, &w[started]);
    if (rc < 0) {
      fprintf (stderr, "bench-engine: pthread_create: %s\n", strerror (-rc));
      free (w[started].buf);
      break;
    }
  }
  if (rc != 0)
    run->phase = STOP;          /* the threads started end at once */
  else if (ramp > 0) {
    sleep_s (ramp);
    run->phase = TIMED;
    timed_start (run, res, &t0, &cpu0);
  }
  if (rc == 0 && !run->one_pass) {
    sleep_s (seconds);
    run->phase = STOP;
  }
  for (i = 0; i < started; i++) {
    pthread_join (w[i].tid, NULL);
    free (w[i].buf);
    res->requests += w[i].timed;
    res->bytes += w[i].bytes;
    res->done += w[i].done;
  }
  if (rc == 0 && !run->failed && j->op == DL_OP_WRITE) {
    struct engine_req f = { .op = DL_OP_FLUSH, .stream = STREAM };
    rc = engine_submit (run->e, &f);
    if (rc < 0)
      fprintf (stderr, "bench-engine: flush: %s\n", strerror (-rc));
    res->done++;
  }
  clock_gettime (CLOCK_MONOTONIC, &t1);
  res->cpu_s = cpu_now () - cpu0;
  res->seconds = elapsed_s (&t0, &t1);
  engine_get_stats (run->e, &res->after);
  res->p50_ns = median_latency (w, started);
  return rc < 0 ? rc : run->failed;
}

/* struct engine_params as deadline_get_ready fills it for the direct
 * path from the filter's parameters (src/filter/deadline.c): no stats
 * callback (it only logs, every ten seconds) and no control socket.
 */
static void
filter_engine_params (const struct filter_params *fp, const char *path,
                      struct engine_params *ep)
{
  uint64_t need;

  engine_params_default (ep);
  ep->dispatch = ENGINE_DIRECT;
  ep->path = path;
  ep->readonly = false;
  ep->tunables = fp->tunables;
  ep->depth = fp->depth;
  ep->depth_auto = fp->depth_auto;
  ep->inline_io = !fp->no_inline;
  need = (uint64_t) fp->depth *
    (fp->tunables.max_merge ? fp->tunables.max_merge : 65536);
  ep->max_bytes = fp->max_inflight ? fp->max_inflight
                                   : (need > (8u << 20) ? need : (8u << 20));
  ep->align = 1;
  ep->writeback_bytes = fp->writeback;
}

/* The filter's parameters from "deadline-KEY=VALUE" words.  0, or -1
 * after a one-line error.
 */
static int
parse_params (struct filter_params *fp, int n, char **words)
{
  char err[256];
  int i;

  params_default (fp);
  for (i = 0; i < n; i++) {
    char *eq = strchr (words[i], '='), key[128];
    int r;

    if (eq == NULL || (size_t) (eq - words[i]) >= sizeof key) {
      fprintf (stderr, "bench-engine: %s: not deadline-KEY=VALUE\n", words[i]);
      return -1;
    }
    memcpy (key, words[i], eq - words[i]);
    key[eq - words[i]] = '\0';
    r = params_set (fp, key, eq + 1, err, sizeof err);
    if (r == 0)
      snprintf (err, sizeof err, "%s is not a deadline-* parameter", key);
    if (r <= 0) {
      fprintf (stderr, "bench-engine: %s\n", err);
      return -1;
    }
  }
  if (fp->dispatch == DISPATCH_NEXT) {
    fprintf (stderr, "bench-engine: only the direct path is measured "
             "(deadline-dispatch=next needs nbdkit's layer below)\n");
    return -1;
  }
  return 0;
}

/* A started engine for the parameters in words, or NULL after a one-line
 * error (errno EINVAL: the file system refuses O_DIRECT, or a
 * parameter is wrong).
 */
static struct engine *
start_engine (const char *path, int n, char **words, struct engine_params *ep)
{
  static struct filter_params fp;
  struct engine *e;
  char err[256];
  int r;

  params_free (&fp);
  if (parse_params (&fp, n, words) < 0) {
    errno = EINVAL;
    return NULL;
  }
  filter_engine_params (&fp, path, ep);
  e = engine_new (ep, err, sizeof err);
  if (e == NULL) {
    fprintf (stderr, "bench-engine: %s\n", err);
    return NULL;
  }
  r = engine_start (e);
  if (r < 0) {
    fprintf (stderr, "bench-engine: starting the engine: %s\n", strerror (-r));
    engine_free (e);
    errno = -r;
    return NULL;
  }
  return e;
}

/* An engine counter's growth over a run. */
#define DELTA(r, f) ((r)->after.f - (r)->before.f)

static const struct job *
job_named (const char *name)
{
  size_t i;

  for (i = 0; i < NJOBS; i++)
    if (strcmp (jobs[i].name, name) == 0)
      return &jobs[i];
  return NULL;
}

static int
bench (const char *jobname, const char *path, double seconds, int n, char **words)
{
  struct run run = { .job = job_named (jobname) };
  struct engine_params ep;
  struct result res;
  char tun[64];
  int rc;

  if (run.job == NULL) {
    fprintf (stderr, "bench-engine: unknown job %s (seqread seqwrite "
             "randread randwrite lat1)\n", jobname);
    return EXIT_FAILURE;
  }
  run.e = start_engine (path, n, words, &ep);
  if (run.e == NULL)
    return EXIT_FAILURE;
  run.size = engine_size (run.e) / run.job->bs * run.job->bs;
  if (run.size == 0) {
    fprintf (stderr, "bench-engine: %s is smaller than one %" PRIu32
             "-byte request\n", path, run.job->bs);
    engine_free (run.e);
    return EXIT_FAILURE;
  }
  dl_tunable_get (&ep.tunables, "scheduler", tun, sizeof tun);
  printf ("settings: %s %s (%" PRIu64 " bytes) threads=%u bs=%" PRIu32
          " scheduler=%s depth=%s%" PRIu32 " max_bytes=%" PRIu64
          " inline=%s writeback=%" PRIu64 "\n", run.job->name, path,
          engine_size (run.e), run.job->threads, run.job->bs, tun,
          ep.depth_auto ? "auto<=" : "", ep.depth, ep.max_bytes,
          ep.inline_io ? "on" : "off", ep.writeback_bytes);
  rc = run_job (&run, RAMP_S, seconds, &res);
  if (rc == 0)
    printf ("result: job=%s requests=%" PRIu64 " seconds=%.3f iops=%.0f "
            "mibs=%.1f p50_us=%.1f cpu_us=%.2f depth=%" PRIu64 " units=%"
            PRIu64 " inline=%" PRIu64 " members=%" PRIu64 " inflight_max=%"
            PRIu64 "\n", run.job->name, res.requests, res.seconds,
            res.requests / res.seconds, res.bytes / res.seconds / 1048576,
            res.p50_ns / 1e3,
            res.requests ? res.cpu_s * 1e6 / res.requests : 0.0,
            res.after.depth, DELTA (&res, units), DELTA (&res, units_inline),
            DELTA (&res, unit_members), res.after.inflight_max);
  engine_free (run.e);
  return rc == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* --- smoke ------------------------------------------------------------ */

#define SMOKE_SIZE (16u << 20)
#define SMOKE_S 0.1

/* The check itself must fail a block that differs: block 0, read back,
 * is compared with the data of a generation it was not written with.
 */
static bool
check_sees_a_wrong_block (struct run *run)
{
  struct engine_req r = {
    .op = DL_OP_READ, .length = 4096, .stream = STREAM,
  };
  uint8_t gen = run->block_gen[0];
  bool seen;

  if (posix_memalign (&r.buf, ALIGN, r.length) != 0 ||
      engine_submit (run->e, &r) < 0) {
    free (r.buf);
    return false;
  }
  run->block_gen[0] = gen + 1;
  run->bad_blocks = 0;
  verify_done (run, &r);
  seen = run->bad_blocks == 1;
  run->block_gen[0] = gen;
  free (r.buf);
  return seen;
}

/* Every job on the file at path with the parameters in words: the
 * pattern written in one pass, then each job briefly, checked.  The
 * number of failures (each said in one line), or -1 where the file
 * system refuses O_DIRECT.
 */
static int
smoke_config (const char *path, int n, char **words, uint64_t *units,
              uint64_t *inline_units)
{
  static _Atomic uint8_t block_gen[SMOKE_SIZE / 4096];
  struct run run = { .verify = true, .block_gen = block_gen };
  struct engine_params ep;
  struct result res;
  uint64_t ours = 0, theirs = 0, failed = 0;
  size_t i;
  int bad = 0;

  run.e = start_engine (path, n, words, &ep);
  if (run.e == NULL)
    return errno == EINVAL && n == 0 ? -1 : 1;
  for (i = 0; i <= NJOBS; i++) {
    /* First the whole file, sequentially; then every job. */
    run.job = job_named (i == 0 ? "seqwrite" : jobs[i - 1].name);
    run.one_pass = i == 0;
    run.gen = i == 0 ? 0 : 1 + i % 200;
    run.size = engine_size (run.e) / run.job->bs * run.job->bs;
    run.bad_blocks = 0;
    if (run_job (&run, 0, SMOKE_S, &res) < 0)
      bad++;
    if (run.bad_blocks) {
      fprintf (stderr, "bench-engine: smoke: %s: %" PRIu64 " blocks read back "
               "differ from what was written\n", run.job->name,
               (uint64_t) run.bad_blocks);
      bad++;
    }
    ours += res.done;
    theirs += DELTA (&res, completed);
    failed += DELTA (&res, failed);
    *units += DELTA (&res, units);
    *inline_units += DELTA (&res, units_inline);
  }
  if (ours != theirs || failed != 0) {
    fprintf (stderr, "bench-engine: smoke: %" PRIu64 " requests answered, the "
             "engine counts %" PRIu64 " completed (%" PRIu64 " failed)\n",
             ours, theirs, failed);
    bad++;
  }
  if (!check_sees_a_wrong_block (&run)) {
    fprintf (stderr, "bench-engine: smoke: the check passed a block compared "
             "with data it was not written with\n");
    bad++;
  }
  engine_free (run.e);
  return bad;
}

static int
smoke (const char *dir)
{
  static char *noop[] = { "deadline-scheduler=noop" };
  char path[4096];
  uint64_t units = 0, inline_units = 0;
  int fd, bad;

  snprintf (path, sizeof path, "%s/bench-engine-smoke.XXXXXX", dir);
  fd = mkstemp (path);
  if (fd < 0 || ftruncate (fd, SMOKE_SIZE) < 0) {
    fprintf (stderr, "bench-engine: smoke: %s: %s\n", path, strerror (errno));
    if (fd >= 0)
      unlink (path);
    return EXIT_FAILURE;
  }
  close (fd);
  bad = smoke_config (path, 0, NULL, &units, &inline_units);
  if (bad < 0) {
    fprintf (stderr, "bench-engine: smoke: skipped: %s refuses O_DIRECT\n", dir);
    unlink (path);
    return 77;
  }
  bad += smoke_config (path, 1, noop, &units, &inline_units);
  unlink (path);
  /* Each path must have carried checked data, or the check proves
   * nothing about it.
   */
  if (inline_units == 0 || inline_units == units) {
    fprintf (stderr, "bench-engine: smoke: of %" PRIu64 " units %" PRIu64
             " were done inline: both ways must serve some\n", units,
             inline_units);
    bad++;
  }
  if (bad)
    return EXIT_FAILURE;
  printf ("bench-engine: smoke: ok: %" PRIu64 " units (%" PRIu64 " inline, "
          "the rest through the ring), every request answered with the data "
          "written\n", units, inline_units);
  return EXIT_SUCCESS;
}

static void
usage (void)
{
  fprintf (stderr, "usage: bench-engine [-t SECONDS] JOB FILE "
           "[deadline-KEY=VALUE...]\n       bench-engine --smoke [DIR]\n");
  exit (EXIT_FAILURE);
}

int
main (int argc, char *argv[])
{
  double seconds = 4;
  int a = 1;

  if (argc >= 2 && strcmp (argv[1], "--smoke") == 0) {
    if (argc > 3)
      usage ();
    return smoke (argc == 3 ? argv[2] : ".");
  }
  if (argc >= 3 && strcmp (argv[1], "-t") == 0) {
    char *end;

    seconds = strtod (argv[2], &end);
    if (*end || !(seconds > 0 && seconds <= 3600))
      usage ();
    a = 3;
  }
  if (argc - a < 2)
    usage ();
  return bench (argv[a], argv[a + 1], seconds, argc - a - 2, argv + a + 2);
}
