/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: integrity tester.
 *
 * Drives an NBD export with random reads, writes, trims, zeroes, flushes
 * and FUA writes, aligned and unaligned, many in flight over several
 * connections (libnbd's async API, one thread polling every handle), and
 * checks every read against an in-memory model of the disk.
 *
 * The model stays exact because the tester never has two overlapping
 * requests in flight at once: a new request's range is drawn until it
 * misses everything in flight.  Trimmed bytes become "unknown" (NBD
 * leaves their contents unspecified) until written again.
 *
 *   integrity [-c CONNS] [-d DEPTH] [-n OPS] [-s SEED] [-m MODEL] [-Z ALIGN]
 *             [-x EXPORT] [-M LEN] SOCKET
 *       -x opens EXPORT; -M makes every request at most LEN bytes (a
 *       multiple of 4096) and aligned to 4096, so that each is one
 *       request at the device (tests/test-shared-disk.sh).
 *       exit 0 if no mismatch; -m writes the model to MODEL and the
 *       known-byte mask to MODEL.mask for a later --compare; -Z keeps
 *       zero and trim ranges aligned (for layers below that need it).
 *   integrity --compare FILE MODEL
 *       checks a backing file against a saved model (known bytes only).
 *
 * Modes for the reliability tests (tests/test-crash.sh, test-faults-*.sh,
 * test-overload.sh, test-torture.sh):
 *
 *   -C STATE  crash mode: the server is expected to be killed.  Prints
 *             "integrity: workload started" once the workload runs; when
 *             every connection is gone (or the ops are done) it writes
 *             STATE (the model) and STATE.mask: 0 = unknown (never
 *             acknowledged, or in flight when the server died), 1 =
 *             acknowledged, 2 = acknowledged and made durable by a FUA
 *             write or a flush that completed and was sent after the
 *             acknowledgement.  Exit 0, or 3 if the server died before
 *             the workload started (nothing written then).  Also
 *             printed with -E.
 *   -V STATE  verify only: read the whole export and check it against
 *             STATE (bytes with a non-zero mask); prints the bytes lost.
 *             With -D only durable bytes (mask 2) must match: for a
 *             server with a volatile write cache (deadline-writeback)
 *             answered writes that no flush covered may be lost.
 *   -E        errors expected (fault injection): a failed request is
 *             counted, not a failure; a failed write, zero or trim makes
 *             its range unknown.  Exit 0 unless a read mismatched.
 *   -L MS     fail if any request took longer than MS milliseconds.
 *   -q        no per-error lines (with -E).
 *   -r OFF,LEN  only this region (requests and checks), so that other
 *             clients may write elsewhere at the same time.
 */
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <time.h>

#include <libnbd.h>

#define MAX_CONNS 1024
#define MAX_INFLIGHT 16384

enum kind { K_READ, K_WRITE, K_TRIM, K_ZERO, K_FLUSH };
static const char *const kind_name[] = { "read", "write", "trim", "zero", "flush" };

struct op {
  bool busy;
  enum kind kind;
  int conn;
  uint64_t off, len;
  uint8_t *buf;
  uint32_t flags;
  struct nbd_handle *h;
  uint64_t t_issue;             /* ns, CLOCK_MONOTONIC */
  uint64_t ack_at_issue;        /* flush: acknowledgements before it was sent */
};

static uint64_t size;
static uint8_t *model, *known;
static struct op ops[MAX_INFLIGHT];
static int inflight_conn[MAX_CONNS];
static uint64_t mismatches, errors, done_by_kind[5], unaligned_ops;
static uint64_t rng_state;
static bool can_fua, can_trim, can_zero, can_flush;
static int ops_hwm;              /* ops[] slots in use are below this */
/* Bytes of read and write payload in flight, and the most at once (the
 * memory a server needs for the data it holds; test-overload.sh). */
static uint64_t payload_inflight, payload_max;

/* -C: crash mode.  ackseq[p] is the acknowledgement number of the last
 * request that set byte p (0 = none since the start); durable[p] is set
 * by an acknowledged FUA write or zero.  A flush that completes makes
 * durable every acknowledgement numbered up to ack_at_issue.
 */
static const char *crash_state;
static uint32_t *ackseq;
static uint8_t *durable;
static uint64_t ack_counter, durable_upto;
static bool expect_errors, quiet, started, durable_only;
static uint64_t lost_conn_ops, max_lat_ns[5], lat_limit_ns, slow_ops;
static uint64_t errors_by_kind[5];

static uint64_t
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The range of o may or may not have reached the disk. */
static void
forget_range (struct op *o)
{
  if (o->kind == K_WRITE || o->kind == K_ZERO || o->kind == K_TRIM) {
    memset (known + o->off, 0, o->len);
    if (ackseq)
      memset (durable + o->off, 0, o->len);
  }
}

static void
mark_acked (struct op *o)
{
  uint64_t i, seq;

  if (!ackseq)
    return;
  seq = ++ack_counter;
  for (i = o->off; i < o->off + o->len; ++i)
    ackseq[i] = seq > UINT32_MAX ? UINT32_MAX : seq;
  memset (durable + o->off, (o->flags & LIBNBD_CMD_FLAG_FUA) ? 1 : 0, o->len);
}

static uint64_t
rnd (void)
{
  /* xorshift64*: reproducible from -s */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ULL;
}

static uint64_t rnd_below (uint64_t n) { return n ? rnd () % n : 0; }

static bool
overlaps_inflight (uint64_t off, uint64_t len)
{
  int i;

  for (i = 0; i < ops_hwm; ++i)
    if (ops[i].busy && ops[i].kind != K_FLUSH &&
        off < ops[i].off + ops[i].len && ops[i].off < off + len)
      return true;
  return false;
}

static void
check_read (struct op *o)
{
  uint64_t i, bad = 0, first = 0;

  for (i = 0; i < o->len; ++i) {
    uint64_t p = o->off + i;
    if (known[p] && model[p] != o->buf[i]) {
      if (bad++ == 0)
        first = p;
    }
  }
  if (bad) {
    mismatches += bad;
    fprintf (stderr, "integrity: MISMATCH: read %" PRIu64 "+%" PRIu64
             " on conn %d: %" PRIu64 " bytes differ, first at %" PRIu64
             " (got 0x%02x want 0x%02x)\n", o->off, o->len, o->conn, bad,
             first, o->buf[first - o->off], model[first]);
  }
}

static int
on_done (void *user_data, int *error)
{
  struct op *o = user_data;
  uint64_t lat = now_ns () - o->t_issue;

  if (*error && crash_state &&
      (*error == ENOTCONN || *error == ECONNRESET || *error == EPIPE ||
       *error == ESHUTDOWN ||
       nbd_aio_is_dead (o->h) || nbd_aio_is_closed (o->h))) {
    /* The server went away with this request in flight. */
    lost_conn_ops++;
    forget_range (o);
  }
  else if (*error) {
    errors++;
    errors_by_kind[o->kind]++;
    if (!quiet)
      fprintf (stderr, "integrity: %s %" PRIu64 "+%" PRIu64 " failed: %s\n",
               kind_name[o->kind], o->off, o->len, strerror (*error));
    forget_range (o);
  }
  else {
    if (lat > max_lat_ns[o->kind])
      max_lat_ns[o->kind] = lat;
    if (lat_limit_ns && lat > lat_limit_ns && slow_ops++ < 5)
      fprintf (stderr, "integrity: SLOW: %s %" PRIu64 "+%" PRIu64 " took %.1f ms\n",
               kind_name[o->kind], o->off, o->len, lat / 1e6);
    switch (o->kind) {
    case K_READ: check_read (o); break;
    case K_WRITE:
      memcpy (model + o->off, o->buf, o->len);
      memset (known + o->off, 1, o->len);
      mark_acked (o);
      break;
    case K_ZERO:
      memset (model + o->off, 0, o->len);
      memset (known + o->off, 1, o->len);
      mark_acked (o);
      break;
    case K_TRIM:
      memset (known + o->off, 0, o->len);
      break;
    case K_FLUSH:
      if (o->ack_at_issue > durable_upto)
        durable_upto = o->ack_at_issue;
      break;
    }
  }
  done_by_kind[o->kind]++;
  if (o->buf)
    payload_inflight -= o->len;
  free (o->buf);
  o->buf = NULL;
  o->busy = false;
  inflight_conn[o->conn]--;
  return 1;                     /* retire the command */
}

/* Pick a range not overlapping anything in flight. */
static uint64_t zalign;          /* -Z: zero/trim ranges aligned to this */
static uint64_t rbase, rlen;     /* -r: the region (default: everything) */
static uint64_t maxlen;          /* -M: longest request (0: any) */

static bool
pick_range (uint64_t *off, uint64_t *len, bool zero_or_trim)
{
  int tries;

  for (tries = 0; tries < 64; ++tries) {
    uint64_t l, o;
    unsigned shape = rnd_below (10);

    if (zero_or_trim && zalign) {
      l = zalign * (1 + rnd_below (16));
      o = zalign * rnd_below (size / zalign);
    }
    else if (shape < 5) {            /* aligned 4k multiples */
      l = 4096 * (1 + rnd_below (32));
      o = 4096 * rnd_below (size / 4096);
    }
    else if (shape < 9) {       /* unaligned anywhere */
      l = 1 + rnd_below (70000);
      o = rnd_below (size);
    }
    else {                      /* large, aligned to 512 */
      l = 512 * (1 + rnd_below (2048));
      o = 512 * rnd_below (size / 512);
    }
    if (maxlen) {               /* -M: short and aligned to 4096 */
      o &= ~UINT64_C (4095);
      l = l > maxlen ? maxlen : (l + 4095) & ~UINT64_C (4095);
    }
    if (rlen) {                 /* -r: fold into the region */
      o = rbase + o % rlen;
      if (o + l > rbase + rlen)
        l = rbase + rlen - o;
    }
    if (o + l > size)
      l = size - o;
    if (l == 0)
      continue;
    if (!overlaps_inflight (o, l)) {
      *off = o;
      *len = l;
      if ((o | l) % 512)
        unaligned_ops++;
      return true;
    }
  }
  return false;
}

static bool
issue (struct nbd_handle *h, int conn)
{
  struct op *o = NULL;
  nbd_completion_callback cb;
  int i, kind_roll;
  int64_t cookie;

  for (i = 0; i < MAX_INFLIGHT; ++i)
    if (!ops[i].busy) { o = &ops[i]; break; }
  if (o == NULL)
    return false;
  if (i >= ops_hwm)
    ops_hwm = i + 1;
  memset (o, 0, sizeof *o);
  o->conn = conn;
  o->h = h;
  o->t_issue = now_ns ();
  o->ack_at_issue = ack_counter;

  kind_roll = rnd_below (100);
  if (kind_roll < 40) o->kind = K_READ;
  else if (kind_roll < 80) o->kind = K_WRITE;
  else if (kind_roll < 88) o->kind = can_zero ? K_ZERO : K_WRITE;
  else if (kind_roll < 95) o->kind = can_trim ? K_TRIM : K_READ;
  else o->kind = can_flush ? K_FLUSH : K_READ;

  if (o->kind != K_FLUSH &&
      !pick_range (&o->off, &o->len, o->kind == K_ZERO || o->kind == K_TRIM))
    return false;
  o->busy = true;
  inflight_conn[conn]++;
  cb = (nbd_completion_callback) { .callback = on_done, .user_data = o };

  switch (o->kind) {
  case K_READ:
    o->buf = malloc (o->len);
    payload_inflight += o->len;
    if (payload_inflight > payload_max)
      payload_max = payload_inflight;
    cookie = nbd_aio_pread (h, o->buf, o->len, o->off, cb, 0);
    break;
  case K_WRITE:
    o->buf = malloc (o->len);
    payload_inflight += o->len;
    if (payload_inflight > payload_max)
      payload_max = payload_inflight;
    for (i = 0; (uint64_t) i < o->len; ++i)
      o->buf[i] = rnd () >> 56;
    if (can_fua && rnd_below (4) == 0)
      o->flags = LIBNBD_CMD_FLAG_FUA;
    cookie = nbd_aio_pwrite (h, o->buf, o->len, o->off, cb, o->flags);
    break;
  case K_ZERO:
    if (can_fua && rnd_below (4) == 0)
      o->flags |= LIBNBD_CMD_FLAG_FUA;
    if (rnd_below (2) == 0)      /* without NO_HOLE the server may punch */
      o->flags |= LIBNBD_CMD_FLAG_NO_HOLE;
    cookie = nbd_aio_zero (h, o->len, o->off, cb, o->flags);
    break;
  case K_TRIM:
    cookie = nbd_aio_trim (h, o->len, o->off, cb, 0);
    break;
  case K_FLUSH:
  default:
    cookie = nbd_aio_flush (h, cb, 0);
    break;
  }
  if (cookie == -1) {
    if (crash_state || expect_errors) {
      /* The connection is gone (the server was killed). */
      lost_conn_ops++;
      forget_range (o);
      if (o->buf)
        payload_inflight -= o->len;
      free (o->buf);
      o->buf = NULL;
      o->busy = false;
      inflight_conn[conn]--;
      return false;
    }
    fprintf (stderr, "integrity: issuing %s: %s\n", kind_name[o->kind], nbd_get_error ());
    exit (EXIT_FAILURE);
  }
  return true;
}

static int
compare_file (const char *file, const char *modelpath)
{
  char maskpath[4096];
  FILE *f, *m, *k;
  uint64_t pos = 0, bad = 0;
  int a, b, c;

  snprintf (maskpath, sizeof maskpath, "%s.mask", modelpath);
  f = fopen (file, "rb");
  m = fopen (modelpath, "rb");
  k = fopen (maskpath, "rb");
  if (!f || !m || !k) {
    perror ("integrity --compare: fopen");
    return EXIT_FAILURE;
  }
  while ((b = getc (m)) != EOF) {
    c = getc (k);
    a = getc (f);
    if (a == EOF) {
      fprintf (stderr, "integrity: %s is shorter than the model\n", file);
      return EXIT_FAILURE;
    }
    if (c != 0 && a != b && bad++ < 5)
      fprintf (stderr, "integrity: %s differs from the model at %" PRIu64 "\n", file, pos);
    pos++;
  }
  printf ("integrity: compared %" PRIu64 " bytes of %s with the model: %" PRIu64 " differ\n",
          pos, file, bad);
  return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* Writes PATH (bytes) and PATH.mask (mask). */
static int
save_pair (const char *path, const uint8_t *bytes, const uint8_t *mask)
{
  char maskpath[4096];
  FILE *f;

  snprintf (maskpath, sizeof maskpath, "%s.mask", path);
  if ((f = fopen (path, "wb")) == NULL || fwrite (bytes, 1, size, f) != size || fclose (f)) {
    perror (path);
    return -1;
  }
  if ((f = fopen (maskpath, "wb")) == NULL || fwrite (mask, 1, size, f) != size || fclose (f)) {
    perror (maskpath);
    return -1;
  }
  return 0;
}

/* -C: the state after the server died: what was acknowledged, and what
 * of that a flush or FUA made durable.
 */
static int
save_crash_state (void)
{
  uint8_t *mask = malloc (size);
  uint64_t p, acked = 0, covered = 0;

  if (mask == NULL)
    return -1;
  for (p = 0; p < size; ++p) {
    if (!known[p])
      mask[p] = 0;
    else if (durable[p] || (ackseq[p] && ackseq[p] <= durable_upto))
      mask[p] = 2;
    else
      mask[p] = 1;
    if (known[p] && ackseq[p]) {
      acked++;
      covered += mask[p] == 2;
    }
  }
  printf ("integrity: crash state: %" PRIu64 " acknowledged writes; %" PRIu64
          " bytes written and acknowledged, %" PRIu64 " of them durable "
          "(flush/FUA); %" PRIu64 " requests lost with the connection\n",
          ack_counter, acked, covered, lost_conn_ops);
  if (save_pair (crash_state, model, mask) == -1)
    return -1;
  free (mask);
  return 0;
}

/* -V: read the export and compare with a saved state. */
static int
verify_state (struct nbd_handle *h, const char *path)
{
  char maskpath[4096];
  FILE *m, *k;
  uint8_t *want = malloc (size), *mask = malloc (size), *buf = malloc (1 << 20);
  uint64_t off, i, checked = 0, durable_n = 0, lost = 0, lost_durable = 0;
  uint64_t volatile_lost = 0;

  snprintf (maskpath, sizeof maskpath, "%s.mask", path);
  m = fopen (path, "rb");
  k = fopen (maskpath, "rb");
  if (!want || !mask || !buf || !m || !k ||
      fread (want, 1, size, m) != size || fread (mask, 1, size, k) != size) {
    fprintf (stderr, "integrity -V: %s: cannot read a state of %" PRIu64 " bytes\n",
             path, size);
    return EXIT_FAILURE;
  }
  fclose (m);
  fclose (k);
  for (off = 0; off < size; off += 1 << 20) {
    uint64_t l = size - off < (1 << 20) ? size - off : (1 << 20);
    if (nbd_pread (h, buf, l, off, 0) == -1) {
      fprintf (stderr, "integrity -V: read at %" PRIu64 ": %s\n", off, nbd_get_error ());
      return EXIT_FAILURE;
    }
    for (i = 0; i < l; ++i) {
      uint8_t c = mask[off + i];
      if (c == 0)
        continue;
      checked++;
      durable_n += c == 2;
      if (buf[i] != want[off + i] && durable_only && c != 2)
        volatile_lost++;          /* allowed: never made durable */
      else if (buf[i] != want[off + i]) {
        if (lost++ < 5)
          fprintf (stderr, "integrity -V: LOST: byte %" PRIu64 " is 0x%02x, "
                   "acknowledged 0x%02x%s\n", off + i, buf[i], want[off + i],
                   c == 2 ? " (durable)" : "");
        lost_durable += c == 2;
      }
    }
  }
  printf ("integrity: verified %" PRIu64 " known bytes (%" PRIu64
          " durable): %" PRIu64 " bytes lost (%" PRIu64 " durable)\n",
          checked, durable_n, lost, lost_durable);
  if (durable_only)
    printf ("integrity: %" PRIu64 " answered bytes that no flush or FUA covered "
            "differ (allowed with a volatile cache)\n", volatile_lost);
  free (want);
  free (mask);
  free (buf);
  return lost ? EXIT_FAILURE : EXIT_SUCCESS;
}

static bool
conn_gone (struct nbd_handle *h)
{
  return nbd_aio_is_dead (h) || nbd_aio_is_closed (h);
}

/* A crash of the client itself (not of the server it tests) is rare
 * and random: leave a backtrace in its log, so that one seen once in a
 * CI run can be read.  Only async-signal-safe calls; then die of the
 * signal as before.
 */
static void
crash_backtrace (int sig)
{
  static const char msg[] = "integrity: crashed; backtrace:\n";
  void *frames[64];
  int n;

  if (write (2, msg, sizeof msg - 1) < 0) { /* nothing more to do */ }
  n = backtrace (frames, 64);
  backtrace_symbols_fd (frames, n, 2);
  signal (sig, SIG_DFL);
  raise (sig);
}

int
main (int argc, char *argv[])
{
  static struct nbd_handle *h[MAX_CONNS];
  static struct pollfd pfd[MAX_CONNS];
  int conns = 4, depth = 16, i;
  uint64_t nops = 20000, issued = 0, seed = 1;
  const char *sock, *dump = NULL, *verify = NULL, *export = NULL;
  int opt;
  bool server_gone = false;

  if (argc == 4 && strcmp (argv[1], "--compare") == 0)
    return compare_file (argv[2], argv[3]);

  while ((opt = getopt (argc, argv, "c:d:n:s:m:Z:C:V:DEL:qr:x:M:")) != -1) {
    switch (opt) {
    case 'c': conns = atoi (optarg); break;
    case 'd': depth = atoi (optarg); break;
    case 'n': nops = strtoull (optarg, NULL, 10); break;
    case 's': seed = strtoull (optarg, NULL, 10); break;
    case 'm': dump = optarg; break;
    case 'Z': zalign = strtoull (optarg, NULL, 10); break;
    case 'C': crash_state = optarg; break;
    case 'V': verify = optarg; break;
    case 'D': durable_only = true; break;
    case 'E': expect_errors = true; break;
    case 'L': lat_limit_ns = strtoull (optarg, NULL, 10) * 1000000ULL; break;
    case 'q': quiet = true; break;
    case 'x': export = optarg; break;
    case 'M': maxlen = strtoull (optarg, NULL, 10) & ~UINT64_C (4095); break;
    case 'r':
      if (sscanf (optarg, "%" SCNu64 ",%" SCNu64, &rbase, &rlen) != 2 || rlen == 0)
        goto usage;
      break;
    default: goto usage;
    }
  }
  if (optind != argc - 1 || conns < 1 || conns > MAX_CONNS ||
      depth < 1 || conns * depth > MAX_INFLIGHT) {
  usage:
    fprintf (stderr, "usage: integrity [-c CONNS] [-d DEPTH] [-n OPS] [-s SEED] [-m MODEL] [-Z ALIGN]\n"
                     "                 [-C STATE] [-E] [-L MS] [-q] [-r OFF,LEN] [-x EXPORT] [-M LEN] SOCKET\n"
                     "       integrity -V STATE [-D] SOCKET\n"
                     "       integrity --compare FILE MODEL\n");
    return EXIT_FAILURE;
  }
  sock = argv[optind];
  rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
#ifndef __SANITIZE_ADDRESS__
  /* (ASan reports a crash better; it keeps its own handler.)  The first
   * backtrace loads what it needs now, not in the handler.
   */
  {
    void *frame;
    backtrace (&frame, 1);
    signal (SIGSEGV, crash_backtrace);
    signal (SIGBUS, crash_backtrace);
    signal (SIGABRT, crash_backtrace);
  }
#endif
  if (verify)
    conns = 1;

  for (i = 0; i < conns; ++i) {
    h[i] = nbd_create ();
    if (h[i] == NULL || (export && nbd_set_export_name (h[i], export) == -1) ||
        nbd_connect_unix (h[i], sock) == -1) {
      fprintf (stderr, "integrity: connect %s: %s\n", sock, nbd_get_error ());
      return crash_state ? 3 : EXIT_FAILURE;
    }
  }
  size = nbd_get_size (h[0]);
  can_fua = nbd_can_fua (h[0]) == 1;
  can_trim = nbd_can_trim (h[0]) == 1;
  can_zero = nbd_can_zero (h[0]) == 1;
  can_flush = nbd_can_flush (h[0]) == 1;
  if (size <= 0 || size > (1ULL << 31)) {
    fprintf (stderr, "integrity: export size %" PRIu64 " not in 1..2G\n", size);
    return EXIT_FAILURE;
  }
  if (verify)
    return verify_state (h[0], verify);

  model = calloc (size, 1);
  known = calloc (size, 1);
  if (crash_state) {
    ackseq = calloc (size, sizeof *ackseq);
    durable = calloc (size, 1);
    if (!ackseq || !durable) {
      perror ("calloc");
      return EXIT_FAILURE;
    }
  }

  /* Start from the disk's actual contents: read it all once. */
  for (uint64_t off = 0; off < size; off += 1 << 20) {
    uint64_t l = size - off < (1 << 20) ? size - off : (1 << 20);
    if (nbd_pread (h[0], model + off, l, off, 0) == -1) {
      fprintf (stderr, "integrity: initial read: %s\n", nbd_get_error ());
      return crash_state ? 3 : EXIT_FAILURE;
    }
  }
  memset (known, 1, size);
  if (rlen) {
    if (rbase >= size || rlen > size - rbase) {
      fprintf (stderr, "integrity: -r %" PRIu64 ",%" PRIu64 " is not inside the export\n",
               rbase, rlen);
      return EXIT_FAILURE;
    }
    memset (known, 0, rbase);
    memset (known + rbase + rlen, 0, size - rbase - rlen);
  }
  if (crash_state || expect_errors) {
    printf ("integrity: workload started\n");
    fflush (stdout);
  }
  started = true;

  {
    int maxinfl = 0, alive;
    for (;;) {
      int total = 0;

      for (i = 0; i < conns; ++i)
        while (issued < nops && inflight_conn[i] < depth && !conn_gone (h[i]) &&
               issue (h[i], i))
          issued++;
      for (i = 0; i < conns; ++i)
        total += inflight_conn[i];
      if (total > maxinfl)
        maxinfl = total;
      alive = 0;
      for (i = 0; i < conns; ++i) {
        unsigned dir;
        pfd[i].fd = -1;
        pfd[i].events = 0;
        pfd[i].revents = 0;
        if (conn_gone (h[i]))
          continue;
        alive++;
        dir = nbd_aio_get_direction (h[i]);
        pfd[i].fd = nbd_aio_get_fd (h[i]);
        if (dir & LIBNBD_AIO_DIRECTION_READ) pfd[i].events |= POLLIN;
        if (dir & LIBNBD_AIO_DIRECTION_WRITE) pfd[i].events |= POLLOUT;
      }
      if (total == 0 && (issued >= nops || alive == 0))
        break;
      if (alive == 0) {
        fprintf (stderr, "integrity: every connection is gone with %d in flight\n", total);
        return EXIT_FAILURE;
      }
      if (poll (pfd, conns, 30000) <= 0) {
        fprintf (stderr, "integrity: no progress for 30s (%d in flight)\n", total);
        return EXIT_FAILURE;
      }
      for (i = 0; i < conns; ++i) {
        if (pfd[i].fd < 0)
          continue;
        if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
          nbd_aio_notify_read (h[i]);
        else if (pfd[i].revents & POLLOUT)
          nbd_aio_notify_write (h[i]);
      }
    }
    for (i = 0; i < conns; ++i)
      if (conn_gone (h[i]))
        server_gone = true;
    printf ("integrity: %" PRIu64 " ops over %d connections, max %d in flight "
            "(reads %" PRIu64 " writes %" PRIu64 " zeroes %" PRIu64 " trims %"
            PRIu64 " flushes %" PRIu64 ", %" PRIu64 " unaligned)\n",
            issued, conns, maxinfl, done_by_kind[K_READ], done_by_kind[K_WRITE],
            done_by_kind[K_ZERO], done_by_kind[K_TRIM], done_by_kind[K_FLUSH],
            unaligned_ops);
    printf ("integrity: max payload in flight: %" PRIu64 " bytes\n", payload_max);
    printf ("integrity: max latency ms: read %.1f write %.1f zero %.1f trim %.1f flush %.1f\n",
            max_lat_ns[K_READ] / 1e6, max_lat_ns[K_WRITE] / 1e6, max_lat_ns[K_ZERO] / 1e6,
            max_lat_ns[K_TRIM] / 1e6, max_lat_ns[K_FLUSH] / 1e6);
    if (expect_errors || errors)
      printf ("integrity: failed requests: %" PRIu64 " (read %" PRIu64 " write %" PRIu64
              " zero %" PRIu64 " trim %" PRIu64 " flush %" PRIu64 ")\n", errors,
              errors_by_kind[K_READ], errors_by_kind[K_WRITE], errors_by_kind[K_ZERO],
              errors_by_kind[K_TRIM], errors_by_kind[K_FLUSH]);
  }

  if (crash_state) {
    /* If the server survived the whole run, a last flush makes
     * everything durable.
     */
    if (!server_gone && can_flush && nbd_flush (h[0], 0) == 0)
      durable_upto = ack_counter;
    if (save_crash_state () == -1)
      return EXIT_FAILURE;
    printf ("integrity: %" PRIu64 " mismatched bytes, %" PRIu64 " errors%s\n",
            mismatches, errors, server_gone ? " (server gone)" : "");
    for (i = 0; i < conns; ++i)
      nbd_close (h[i]);
    return mismatches || errors ? EXIT_FAILURE : EXIT_SUCCESS;
  }
  if (server_gone) {
    fprintf (stderr, "integrity: the server went away\n");
    return EXIT_FAILURE;
  }

  /* Everything once more, in order, on another connection (in 64 KiB
   * pieces under fault injection, so that one error skips little).
   */
  {
    uint64_t chunk = expect_errors ? 65536 : maxlen ? maxlen : 1 << 20, read_fail = 0;
    struct op o = { .kind = K_READ, .conn = conns - 1, .len = 0 };
    uint8_t *buf = malloc (chunk);
    for (uint64_t off = 0; off < size; off += chunk) {
      o.off = off;
      o.len = size - off < chunk ? size - off : chunk;
      o.buf = buf;
      if (nbd_pread (h[conns - 1], buf, o.len, off, 0) == -1) {
        if (expect_errors) {
          read_fail++;
          continue;
        }
        fprintf (stderr, "integrity: final read: %s\n", nbd_get_error ());
        return EXIT_FAILURE;
      }
      check_read (&o);
    }
    free (buf);
    if (read_fail)
      printf ("integrity: final pass: %" PRIu64 " reads of %" PRIu64 " bytes failed\n",
              read_fail, chunk);
  }
  if (can_flush)
    nbd_flush (h[0], 0);
  for (i = 0; i < conns; ++i) {
    nbd_shutdown (h[i], 0);
    nbd_close (h[i]);
  }

  if (dump && save_pair (dump, model, known) == -1)
    return EXIT_FAILURE;

  printf ("integrity: %" PRIu64 " mismatched bytes, %" PRIu64 " errors\n",
          mismatches, errors);
  if (slow_ops) {
    printf ("integrity: %" PRIu64 " requests took longer than %" PRIu64 " ms\n",
            slow_ops, lat_limit_ns / 1000000);
    return EXIT_FAILURE;
  }
  if (expect_errors)
    return mismatches ? EXIT_FAILURE : EXIT_SUCCESS;
  return mismatches || errors ? EXIT_FAILURE : EXIT_SUCCESS;
}
