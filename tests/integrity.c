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
 *   integrity [-c CONNS] [-d DEPTH] [-n OPS] [-s SEED] [-m MODEL] [-Z ALIGN] SOCKET
 *       exit 0 if no mismatch; -m writes the model to MODEL and the
 *       known-byte mask to MODEL.mask for a later --compare; -Z keeps
 *       zero and trim ranges aligned (for layers below that need it).
 *   integrity --compare FILE MODEL
 *       checks a backing file against a saved model (known bytes only).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libnbd.h>

#define MAX_CONNS 16
#define MAX_INFLIGHT 1024

enum kind { K_READ, K_WRITE, K_TRIM, K_ZERO, K_FLUSH };
static const char *const kind_name[] = { "read", "write", "trim", "zero", "flush" };

struct op {
  bool busy;
  enum kind kind;
  int conn;
  uint64_t off, len;
  uint8_t *buf;
  uint32_t flags;
};

static uint64_t size;
static uint8_t *model, *known;
static struct op ops[MAX_INFLIGHT];
static int inflight_conn[MAX_CONNS];
static uint64_t mismatches, errors, done_by_kind[5], unaligned_ops;
static uint64_t rng_state;
static bool can_fua, can_trim, can_zero, can_flush;

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

  for (i = 0; i < MAX_INFLIGHT; ++i)
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

  if (*error) {
    errors++;
    fprintf (stderr, "integrity: %s %" PRIu64 "+%" PRIu64 " failed: %s\n",
             kind_name[o->kind], o->off, o->len, strerror (*error));
  }
  else {
    switch (o->kind) {
    case K_READ: check_read (o); break;
    case K_WRITE:
      memcpy (model + o->off, o->buf, o->len);
      memset (known + o->off, 1, o->len);
      break;
    case K_ZERO:
      memset (model + o->off, 0, o->len);
      memset (known + o->off, 1, o->len);
      break;
    case K_TRIM:
      memset (known + o->off, 0, o->len);
      break;
    case K_FLUSH: break;
    }
  }
  done_by_kind[o->kind]++;
  free (o->buf);
  o->buf = NULL;
  o->busy = false;
  inflight_conn[o->conn]--;
  return 1;                     /* retire the command */
}

/* Pick a range not overlapping anything in flight. */
static uint64_t zalign;          /* -Z: zero/trim ranges aligned to this */

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
      unaligned_ops++;
    }
    else {                      /* large, aligned to 512 */
      l = 512 * (1 + rnd_below (2048));
      o = 512 * rnd_below (size / 512);
    }
    if (o + l > size)
      l = size - o;
    if (l == 0)
      continue;
    if (!overlaps_inflight (o, l)) {
      *off = o;
      *len = l;
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
  memset (o, 0, sizeof *o);
  o->conn = conn;

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
    cookie = nbd_aio_pread (h, o->buf, o->len, o->off, cb, 0);
    break;
  case K_WRITE:
    o->buf = malloc (o->len);
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
    if (c == 1 && a != b && bad++ < 5)
      fprintf (stderr, "integrity: %s differs from the model at %" PRIu64 "\n", file, pos);
    pos++;
  }
  printf ("integrity: compared %" PRIu64 " bytes of %s with the model: %" PRIu64 " differ\n",
          pos, file, bad);
  return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}

int
main (int argc, char *argv[])
{
  struct nbd_handle *h[MAX_CONNS];
  int conns = 4, depth = 16, i;
  uint64_t nops = 20000, issued = 0, seed = 1;
  const char *sock, *dump = NULL;
  int opt;

  if (argc == 4 && strcmp (argv[1], "--compare") == 0)
    return compare_file (argv[2], argv[3]);

  while ((opt = getopt (argc, argv, "c:d:n:s:m:Z:")) != -1) {
    switch (opt) {
    case 'c': conns = atoi (optarg); break;
    case 'd': depth = atoi (optarg); break;
    case 'n': nops = strtoull (optarg, NULL, 10); break;
    case 's': seed = strtoull (optarg, NULL, 10); break;
    case 'm': dump = optarg; break;
    case 'Z': zalign = strtoull (optarg, NULL, 10); break;
    default: goto usage;
    }
  }
  if (optind != argc - 1 || conns < 1 || conns > MAX_CONNS ||
      depth < 1 || conns * depth > MAX_INFLIGHT) {
  usage:
    fprintf (stderr, "usage: integrity [-c CONNS] [-d DEPTH] [-n OPS] [-s SEED] [-m MODEL] [-Z ALIGN] SOCKET\n"
                     "       integrity --compare FILE MODEL\n");
    return EXIT_FAILURE;
  }
  sock = argv[optind];
  rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;

  for (i = 0; i < conns; ++i) {
    h[i] = nbd_create ();
    if (h[i] == NULL || nbd_connect_unix (h[i], sock) == -1) {
      fprintf (stderr, "integrity: connect %s: %s\n", sock, nbd_get_error ());
      return EXIT_FAILURE;
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
  model = calloc (size, 1);
  known = calloc (size, 1);

  /* Start from the disk's actual contents: read it all once. */
  for (uint64_t off = 0; off < size; off += 1 << 20) {
    uint64_t l = size - off < (1 << 20) ? size - off : (1 << 20);
    if (nbd_pread (h[0], model + off, l, off, 0) == -1) {
      fprintf (stderr, "integrity: initial read: %s\n", nbd_get_error ());
      return EXIT_FAILURE;
    }
  }
  memset (known, 1, size);

  {
    int maxinfl = 0;
    for (;;) {
      struct pollfd pfd[MAX_CONNS];
      int total = 0;

      for (i = 0; i < conns; ++i)
        while (issued < nops && inflight_conn[i] < depth && issue (h[i], i))
          issued++;
      for (i = 0; i < conns; ++i)
        total += inflight_conn[i];
      if (total > maxinfl)
        maxinfl = total;
      if (total == 0 && issued >= nops)
        break;
      for (i = 0; i < conns; ++i) {
        unsigned dir = nbd_aio_get_direction (h[i]);
        pfd[i].fd = nbd_aio_get_fd (h[i]);
        pfd[i].events = 0;
        if (dir & LIBNBD_AIO_DIRECTION_READ) pfd[i].events |= POLLIN;
        if (dir & LIBNBD_AIO_DIRECTION_WRITE) pfd[i].events |= POLLOUT;
      }
      if (poll (pfd, conns, 30000) <= 0) {
        fprintf (stderr, "integrity: no progress for 30s (%d in flight)\n", total);
        return EXIT_FAILURE;
      }
      for (i = 0; i < conns; ++i) {
        if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
          nbd_aio_notify_read (h[i]);
        else if (pfd[i].revents & POLLOUT)
          nbd_aio_notify_write (h[i]);
      }
    }
    printf ("integrity: %" PRIu64 " ops over %d connections, max %d in flight "
            "(reads %" PRIu64 " writes %" PRIu64 " zeroes %" PRIu64 " trims %"
            PRIu64 " flushes %" PRIu64 ", %" PRIu64 " unaligned)\n",
            issued, conns, maxinfl, done_by_kind[K_READ], done_by_kind[K_WRITE],
            done_by_kind[K_ZERO], done_by_kind[K_TRIM], done_by_kind[K_FLUSH],
            unaligned_ops);
  }

  /* Everything once more, in order, on another connection. */
  {
    struct op o = { .kind = K_READ, .conn = conns - 1, .len = 0 };
    uint8_t *buf = malloc (1 << 20);
    for (uint64_t off = 0; off < size; off += 1 << 20) {
      o.off = off;
      o.len = size - off < (1 << 20) ? size - off : (1 << 20);
      o.buf = buf;
      if (nbd_pread (h[conns - 1], buf, o.len, off, 0) == -1) {
        fprintf (stderr, "integrity: final read: %s\n", nbd_get_error ());
        return EXIT_FAILURE;
      }
      check_read (&o);
    }
    free (buf);
  }
  if (can_flush)
    nbd_flush (h[0], 0);
  for (i = 0; i < conns; ++i) {
    nbd_shutdown (h[i], 0);
    nbd_close (h[i]);
  }

  if (dump) {
    char maskpath[4096];
    FILE *f;
    snprintf (maskpath, sizeof maskpath, "%s.mask", dump);
    if ((f = fopen (dump, "wb")) == NULL || fwrite (model, 1, size, f) != size || fclose (f)) {
      perror (dump);
      return EXIT_FAILURE;
    }
    if ((f = fopen (maskpath, "wb")) == NULL || fwrite (known, 1, size, f) != size || fclose (f)) {
      perror (maskpath);
      return EXIT_FAILURE;
    }
  }

  printf ("integrity: %" PRIu64 " mismatched bytes, %" PRIu64 " errors\n",
          mismatches, errors);
  return mismatches || errors ? EXIT_FAILURE : EXIT_SUCCESS;
}
