/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: overlapping requests from several connections in flight
 * together, checked against the filter's hazard rule (test-overlap.sh).
 *
 *   overlap [-c CONNS] [-r ROUNDS] [-n OPS] [-w WINDOWS] [-s SEED] CTL SOCKET
 *
 * NBD alone lets a server run requests that are in flight together in
 * any order.  The filter promises more (src/core/hazard.c, "THE
 * SCHEDULER" in nbdkit-deadline-filter(1)): a request that overlaps an
 * earlier one not yet completed, where either is a write (write, zero,
 * trim), is held until that one completes, "so reordering never changes
 * what a client reads or what ends up on disk".  "Earlier" is the order
 * in which requests reach the filter.  So whatever the scheduler and the
 * device do, the result must be that of running the requests one after
 * the other in arrival order.
 *
 * Each round sends OPS requests (reads, writes, zeroes; aligned and
 * unaligned, some of a few bytes into the same few blocks; a few FUA)
 * into WINDOWS small regions, rotating over CONNS
 * connections, all without waiting for answers.  Before sending the next
 * request it waits until the filter's requests_total (control socket
 * CTL) shows the last one arrived, so the arrival order is the sending
 * order.  Below the filter a delay holds each request at the device, so
 * a round's requests are in flight together.  When every answer is in,
 * each read is compared with what the serial execution in arrival order
 * gives; after the last round the windows are read back and compared
 * with it too (the final contents).
 *
 * It prints one line:
 *
 *   overlap: rounds=R ops=N reads=K conflicts_in_flight=P raw_in_flight=Q
 *            holds=H held_max=M inflight_max=I mismatched_reads=X final=ok|BAD
 *
 * conflicts_in_flight counts pairs of conflicting overlapping requests
 * where the earlier was not yet answered when the later was sent;
 * raw_in_flight those where the earlier is a write or zero and the later
 * a read (the read must return the unanswered write's data); holds is
 * the growth of the filter's hazard_holds_total; held_max and
 * inflight_max the largest "held" and "inflight" seen after a round was
 * sent.  Exit 0 if every read and the final contents match, 1 if not,
 * 2 on a setup or transport error.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libnbd.h>

#include "aio-pump.h"
#include "ctl-stat.h"

#define MAX_CONNS AIO_PUMP_MAX
#define WINDOW (64 * 1024)
#define STRIDE (1024 * 1024)    /* window i at STRIDE * (i + 1) */
#define MAX_LEN (16 * 1024)

enum kind { K_READ, K_WRITE, K_ZERO };
static const char *const kind_name[] = { "read", "write", "zero" };

struct op {
  enum kind kind;
  int conn;
  uint64_t off;
  uint32_t len;
  bool fua;
  unsigned char *buf;           /* write data, or where a read lands */
  bool done;
  int error;
};

static struct nbd_handle *h[MAX_CONNS];
static int nconns = 4;
static uint64_t rng;

static uint64_t
rnd (void)
{
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545F4914F6CDD1DULL;
}

static uint64_t
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

static int
on_done (void *ud, int *error)
{
  struct op *o = ud;

  o->done = true;
  o->error = *error;
  return 1;
}

/* One turn of every handle's state machine (at most timeout_ms). */
static int
pump (int timeout_ms)
{
  int r = aio_pump (h, nconns, timeout_ms);

  if (r == -2)
    fprintf (stderr, "overlap: %s\n", nbd_get_error ());
  return r < 0 ? -1 : 0;
}

static bool
overlapping (const struct op *a, const struct op *b)
{
  return a->off < b->off + b->len && b->off < a->off + a->len;
}

static bool
conflicting (const struct op *a, const struct op *b)
{
  return (a->kind != K_READ || b->kind != K_READ) && overlapping (a, b);
}

/* A random request inside one of the windows. */
static void
make_op (struct op *o, int windows, uint64_t id)
{
  uint64_t base = STRIDE * (1 + rnd () % windows);
  unsigned k = rnd () % 100, a = rnd () % 100;
  uint32_t len;
  uint64_t off;
  size_t i;

  o->kind = k < 40 ? K_READ : k < 85 ? K_WRITE : K_ZERO;
  if (a < 25) {                 /* a few bytes in one of the window's
                                   first two 512 byte blocks: requests into
                                   the same block that seldom overlap byte
                                   for byte (read-modify-write on the
                                   direct path) */
    len = 1 + rnd () % 24;
    off = 512 * (rnd () % 2) + rnd () % (512 - len + 1);
  }
  else if (a < 55) {            /* whole 4 KiB blocks */
    len = 4096 * (1 + rnd () % 4);
    off = 4096 * (rnd () % ((WINDOW - len) / 4096 + 1));
  }
  else if (a < 80) {            /* whole 512 byte sectors */
    len = 512 * (1 + rnd () % 16);
    off = 512 * (rnd () % ((WINDOW - len) / 512 + 1));
  }
  else {                        /* any bytes */
    len = 1 + rnd () % 6000;
    off = rnd () % (WINDOW - len + 1);
  }
  o->off = base + off;
  o->len = len;
  o->fua = o->kind != K_READ && rnd () % 5 == 0;
  o->buf = malloc (len);
  if (o->buf == NULL) {
    perror ("malloc");
    exit (2);
  }
  if (o->kind == K_WRITE) {
    /* Bytes that name the request: a mismatch shows whose data it got. */
    for (i = 0; i < len; ++i)
      o->buf[i] = (unsigned char) (rnd () ^ id);
  }
  else
    memset (o->buf, 0xee, len);
}

static int
issue (struct op *o)
{
  nbd_completion_callback cb = { .callback = on_done, .user_data = o };
  struct nbd_handle *hh = h[o->conn];
  uint32_t f = o->fua ? LIBNBD_CMD_FLAG_FUA : 0;
  int64_t r = -1;

  switch (o->kind) {
  case K_READ:  r = nbd_aio_pread (hh, o->buf, o->len, o->off, cb, 0); break;
  case K_WRITE: r = nbd_aio_pwrite (hh, o->buf, o->len, o->off, cb, f); break;
  case K_ZERO:  r = nbd_aio_zero (hh, o->len, o->off, cb, f); break;
  }
  if (r == -1) {
    fprintf (stderr, "overlap: %s: %s\n", kind_name[o->kind], nbd_get_error ());
    return -1;
  }
  return 0;
}

/* Until requests_total reaches want (the request sent last arrived). */
static int
wait_arrived (const char *ctl, int64_t want)
{
  uint64_t t0 = now_ms ();

  for (;;) {
    int64_t n = ctl_counter (ctl, "requests_total");

    if (n < 0) {
      fprintf (stderr, "overlap: cannot read requests_total from %s\n", ctl);
      return -1;
    }
    if (n >= want)
      return 0;
    if (now_ms () - t0 > 20000) {
      fprintf (stderr, "overlap: a request did not reach the filter in 20 s "
               "(requests_total %" PRId64 ", want %" PRId64 ")\n", n, want);
      return -1;
    }
    if (pump (1) == -1)
      return -1;
  }
}

static void
describe (const char *what, int i, const struct op *o)
{
  fprintf (stderr, "overlap: %s op %d: %s%s conn %d [%" PRIu64 ", +%" PRIu32 ")\n",
           what, i, kind_name[o->kind], o->fua ? "+fua" : "", o->conn, o->off,
           o->len);
}

int
main (int argc, char *argv[])
{
  int rounds = 6, nops = 24, windows = 3, opt, i, j, c, round;
  uint64_t seed = 1, pairs = 0, raw = 0, reads = 0, mismatched = 0, t0;
  int64_t holds0, holds1, held_max = 0, inflight_max = 0, total;
  unsigned char *model, *back;
  const char *ctl, *sock;
  uint64_t size, span;
  struct op *ops;
  static char stats[16384];
  bool final_ok = true;

  while ((opt = getopt (argc, argv, "c:r:n:w:s:")) != -1) {
    switch (opt) {
    case 'c': nconns = atoi (optarg); break;
    case 'r': rounds = atoi (optarg); break;
    case 'n': nops = atoi (optarg); break;
    case 'w': windows = atoi (optarg); break;
    case 's': seed = strtoull (optarg, NULL, 0); break;
    default: goto usage;
    }
  }
  if (optind != argc - 2 || nconns < 1 || nconns > MAX_CONNS || nops < 2 ||
      windows < 1 || rounds < 1) {
  usage:
    fprintf (stderr, "usage: overlap [-c CONNS] [-r ROUNDS] [-n OPS] [-w WINDOWS] "
             "[-s SEED] CTL SOCKET\n");
    return 2;
  }
  ctl = argv[optind];
  sock = argv[optind + 1];
  rng = seed * 0x9E3779B97F4A7C15ULL + 1;

  for (c = 0; c < nconns; ++c) {
    h[c] = nbd_create ();
    if (h[c] == NULL || nbd_connect_unix (h[c], sock) == -1) {
      fprintf (stderr, "overlap: %s\n", nbd_get_error ());
      return 2;
    }
  }
  size = nbd_get_size (h[0]);
  span = STRIDE * (windows + 1);
  if (size < span || nbd_can_zero (h[0]) != 1) {
    fprintf (stderr, "overlap: the export must be at least %" PRIu64
             " bytes and support zero\n", span);
    return 2;
  }

  /* The windows start with known random bytes (the model of the span). */
  model = malloc (span);
  back = malloc (WINDOW);
  ops = calloc (nops, sizeof *ops);
  if (model == NULL || back == NULL || ops == NULL) {
    perror ("malloc");
    return 2;
  }
  for (i = 0; i < windows; ++i) {
    unsigned char *w = model + STRIDE * (i + 1);
    for (j = 0; j < WINDOW; ++j)
      w[j] = rnd ();
    if (nbd_pwrite (h[0], w, WINDOW, STRIDE * (i + 1), 0) == -1) {
      fprintf (stderr, "overlap: %s\n", nbd_get_error ());
      return 2;
    }
  }
  if (nbd_flush (h[0], 0) == -1) {
    fprintf (stderr, "overlap: %s\n", nbd_get_error ());
    return 2;
  }

  if (ctl_stats (ctl, stats, sizeof stats) != 0) {
    fprintf (stderr, "overlap: no answer from the control socket %s\n", ctl);
    return 2;
  }
  holds0 = ctl_value (stats, "hazard_holds_total");

  for (round = 0; round < rounds; ++round) {
    total = ctl_counter (ctl, "requests_total");
    if (total < 0) {
      fprintf (stderr, "overlap: cannot read requests_total\n");
      return 2;
    }
    for (i = 0; i < nops; ++i) {
      make_op (&ops[i], windows, (uint64_t) round * nops + i);
      ops[i].conn = i % nconns;
      /* What is it sent beside? */
      for (j = 0; j < i; ++j)
        if (!ops[j].done && conflicting (&ops[j], &ops[i])) {
          pairs++;
          if (ops[j].kind != K_READ && ops[i].kind == K_READ)
            raw++;
        }
      if (issue (&ops[i]) == -1 || wait_arrived (ctl, total + i + 1) == -1)
        return 2;
    }
    if (ctl_stats (ctl, stats, sizeof stats) == 0) {
      int64_t v = ctl_value (stats, "held");
      if (v > held_max) held_max = v;
      v = ctl_value (stats, "inflight");
      if (v > inflight_max) inflight_max = v;
    }

    t0 = now_ms ();
    for (;;) {
      for (i = 0; i < nops && ops[i].done; ++i)
        ;
      if (i == nops)
        break;
      if (now_ms () - t0 > 60000) {
        fprintf (stderr, "overlap: round %d: no answer to every request in 60 s\n",
                 round);
        return 2;
      }
      if (pump (100) == -1)
        return 2;
    }

    /* The serial execution in arrival order. */
    for (i = 0; i < nops; ++i) {
      struct op *o = &ops[i];
      unsigned char *m = model + o->off;

      if (o->error) {
        describe ("failed", i, o);
        fprintf (stderr, "overlap: error %s\n", strerror (o->error));
        return 2;
      }
      switch (o->kind) {
      case K_WRITE: memcpy (m, o->buf, o->len); break;
      case K_ZERO: memset (m, 0, o->len); break;
      case K_READ:
        reads++;
        if (memcmp (m, o->buf, o->len) != 0) {
          uint32_t b;
          for (b = 0; m[b] == o->buf[b]; ++b)
            ;
          mismatched++;
          fprintf (stderr, "overlap: round %d: read %d differs from the serial "
                   "order at byte %" PRIu64 " (expected 0x%02x, got 0x%02x); "
                   "earlier conflicting requests of the round:\n",
                   round, i, o->off + b, m[b], o->buf[b]);
          describe ("  this", i, o);
          for (j = 0; j < i; ++j)
            if (conflicting (&ops[j], o))
              describe ("  earlier", j, &ops[j]);
        }
        break;
      }
      free (o->buf);
      o->buf = NULL;
      o->done = false;
    }
  }

  /* The final contents. */
  for (i = 0; i < windows; ++i) {
    uint64_t off = STRIDE * (i + 1);
    if (nbd_pread (h[i % nconns], back, WINDOW, off, 0) == -1) {
      fprintf (stderr, "overlap: %s\n", nbd_get_error ());
      return 2;
    }
    if (memcmp (back, model + off, WINDOW) != 0) {
      for (j = 0; back[j] == model[off + j]; ++j)
        ;
      fprintf (stderr, "overlap: final contents differ from the serial order "
               "at byte %" PRIu64 " (expected 0x%02x, got 0x%02x)\n",
               off + j, model[off + j], back[j]);
      final_ok = false;
    }
  }

  holds1 = ctl_counter (ctl, "hazard_holds_total");
  printf ("overlap: rounds=%d ops=%d reads=%" PRIu64 " conflicts_in_flight=%" PRIu64
          " raw_in_flight=%" PRIu64 " holds=%" PRId64 " held_max=%" PRId64
          " inflight_max=%" PRId64 " mismatched_reads=%" PRIu64 " final=%s\n",
          rounds, rounds * nops, reads, pairs, raw,
          holds0 >= 0 && holds1 >= 0 ? holds1 - holds0 : -1, held_max,
          inflight_max, mismatched, final_ok ? "ok" : "BAD");
  for (c = 0; c < nconns; ++c) {
    nbd_shutdown (h[c], 0);
    nbd_close (h[c]);
  }
  free (ops);
  free (model);
  free (back);
  return mismatched == 0 && final_ok ? 0 : 1;
}
