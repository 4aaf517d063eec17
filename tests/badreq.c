/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: requests a well-behaved client never sends.
 *
 *   badreq SOCKET
 *   badreq --readonly SOCKET
 *
 * With libnbd's client-side checks off, sends requests beyond the end
 * of the export, straddling it, with offsets that overflow, of zero
 * length, and of huge lengths (reads and writes up to libnbd's 64 MiB
 * limit, trims and zeroes up to 4 GiB - 1), and checks that each gets a
 * clean answer: an error where the request is invalid (never success
 * beyond the end), and that the connection and the server still serve
 * a valid request afterwards (checked by reading and writing a known
 * pattern).  A request that the server answers by dropping the
 * connection is reported and retried on a new connection, and counts
 * as a failure.  One line per case; exit 0 if every case passed.
 *
 * --readonly: the export must refuse every write, trim and zero (sent
 * with libnbd's client-side checks off, so that the server is asked)
 * with EPERM or EROFS, and still serve reads.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libnbd.h>

enum kind { READ, WRITE, TRIM, ZERO, CACHE };
static const char *const kind_name[] = { "read", "write", "trim", "zero", "cache" };

/* What a case may get: an error, or either (valid but odd). */
enum want { MUST_FAIL, MAY_SUCCEED, MUST_SUCCEED };

static const char *sock;
static struct nbd_handle *h;
static int64_t size;
static int fails;

static struct nbd_handle *
connect_one (void)
{
  struct nbd_handle *n = nbd_create ();

  if (n == NULL || nbd_set_strict_mode (n, 0) == -1 ||
      nbd_connect_unix (n, sock) == -1) {
    fprintf (stderr, "badreq: connect %s: %s\n", sock, nbd_get_error ());
    exit (EXIT_FAILURE);
  }
  return n;
}

/* A valid write then read of a pattern near the end: the connection
 * still works and returns this request's data, not another's.
 */
static bool
still_serves (void)
{
  static uint8_t out[8192], in[8192];
  static unsigned gen;
  size_t i;

  gen++;
  for (i = 0; i < sizeof out; ++i)
    out[i] = (uint8_t) (i * 7 + gen);
  if (nbd_pwrite (h, out, sizeof out, size - sizeof out - 100, 0) == -1 ||
      nbd_pread (h, in, sizeof in, size - sizeof in - 100, 0) == -1)
    return false;
  return memcmp (in, out, sizeof in) == 0;
}

static void
one (const char *what, enum kind k, uint64_t len, uint64_t off, enum want want)
{
  static uint8_t *buf;
  int r = 0, err;
  char got[128];
  bool ok;

  if (buf == NULL && (buf = calloc (1, 64 << 20)) == NULL) {
    perror ("calloc");
    exit (EXIT_FAILURE);
  }
  switch (k) {
  case READ:  r = nbd_pread (h, buf, len, off, 0); break;
  case WRITE: r = nbd_pwrite (h, buf, len, off, 0); break;
  case TRIM:  r = nbd_trim (h, len, off, 0); break;
  case ZERO:  r = nbd_zero (h, len, off, 0); break;
  case CACHE: r = nbd_cache (h, len, off, 0); break;
  }
  err = nbd_get_errno ();
  if (r == -1)
    snprintf (got, sizeof got, "error %s", err ? strerror (err) : "(client-side)");
  else
    snprintf (got, sizeof got, "success");

  ok = want == MUST_FAIL ? r == -1 : want == MUST_SUCCEED ? r == 0 : true;
  if (!still_serves ()) {
    printf ("FAIL: %-40s %s %" PRIu64 "+%" PRIu64 ": %s; then the connection "
            "stopped serving (%s)\n", what, kind_name[k], off, len, got, nbd_get_error ());
    fails++;
    nbd_close (h);
    h = connect_one ();
    if (!still_serves ()) {
      printf ("FAIL: the server no longer serves a new connection\n");
      exit (EXIT_FAILURE);
    }
    return;
  }
  printf ("%s: %-40s %s %" PRIu64 "+%" PRIu64 ": %s\n", ok ? "ok" : "FAIL", what,
          kind_name[k], off, len, got);
  if (!ok)
    fails++;
}

/* A write-like request to a read-only export: refused as read-only. */
static void
refused (const char *what, enum kind k, uint64_t len, uint64_t off)
{
  static uint8_t buf[65536], in[4096];
  int r = 0, err;

  memset (buf, 0xa5, sizeof buf);
  switch (k) {
  case WRITE: r = nbd_pwrite (h, buf, len, off, 0); break;
  case TRIM:  r = nbd_trim (h, len, off, 0); break;
  case ZERO:  r = nbd_zero (h, len, off, 0); break;
  default: abort ();
  }
  err = nbd_get_errno ();
  if (r == 0) {
    printf ("FAIL: %-30s %s %" PRIu64 "+%" PRIu64 ": succeeded on a read-only export\n",
            what, kind_name[k], off, len);
    fails++;
  }
  else if (err != EPERM && err != EROFS) {
    printf ("FAIL: %-30s %s %" PRIu64 "+%" PRIu64 ": %s, not the read-only refusal "
            "(EPERM or EROFS)\n", what, kind_name[k], off, len,
            err ? strerror (err) : nbd_get_error ());
    fails++;
  }
  else
    printf ("ok: %-30s %s %" PRIu64 "+%" PRIu64 ": refused: %s\n", what, kind_name[k],
            off, len, strerror (err));
  if (nbd_pread (h, in, sizeof in, 0, 0) == -1) {
    printf ("FAIL: a read after the refusal: %s\n", nbd_get_error ());
    fails++;
  }
}

int
main (int argc, char *argv[])
{
  uint64_t s;

  if (argc == 3 && strcmp (argv[1], "--readonly") == 0) {
    sock = argv[2];
    h = connect_one ();
    if (!nbd_is_read_only (h)) {
      printf ("FAIL: the export does not say it is read-only\n");
      fails++;
    }
    refused ("write", WRITE, 4096, 0);
    refused ("unaligned write", WRITE, 1000, 4097);
    refused ("FUA-less large write", WRITE, 65536, 1 << 20);
    refused ("trim", TRIM, 65536, 0);
    refused ("zero", ZERO, 65536, 0);
    nbd_shutdown (h, 0);
    nbd_close (h);
    printf ("badreq --readonly: %d failures\n", fails);
    return fails ? EXIT_FAILURE : EXIT_SUCCESS;
  }
  if (argc != 2) {
    fprintf (stderr, "usage: badreq [--readonly] SOCKET\n");
    return EXIT_FAILURE;
  }
  sock = argv[1];
  h = connect_one ();
  size = nbd_get_size (h);
  if (size < (1 << 20)) {
    fprintf (stderr, "badreq: export too small\n");
    return EXIT_FAILURE;
  }
  s = size;

  one ("read at the end", READ, 512, s, MUST_FAIL);
  one ("read straddling the end", READ, 4096, s - 512, MUST_FAIL);
  one ("read far beyond the end", READ, 4096, s * 4, MUST_FAIL);
  one ("write at the end", WRITE, 512, s, MUST_FAIL);
  one ("write straddling the end", WRITE, 8192, s - 100, MUST_FAIL);
  one ("trim straddling the end", TRIM, 1 << 20, s - 4096, MUST_FAIL);
  one ("zero straddling the end", ZERO, 1 << 20, s - 4096, MUST_FAIL);
  one ("read with offset+length overflowing", READ, 4096, UINT64_MAX - 1024, MUST_FAIL);
  one ("write with offset+length overflowing", WRITE, 4096, UINT64_MAX - 1024, MUST_FAIL);
  one ("zero with offset+length overflowing", ZERO, 65536, UINT64_MAX - 4095, MUST_FAIL);
  one ("read at offset 2^63", READ, 512, 1ULL << 63, MUST_FAIL);
  one ("trim of 4G-1 bytes", TRIM, UINT32_MAX, 0, MUST_FAIL);
  one ("zero of 4G-1 bytes", ZERO, UINT32_MAX, 0, MUST_FAIL);
  one ("zero of 4G-1 bytes at the end", ZERO, UINT32_MAX, s, MUST_FAIL);
  one ("zero-length read", READ, 0, 0, MAY_SUCCEED);
  one ("zero-length write", WRITE, 0, 4096, MAY_SUCCEED);
  one ("zero-length trim", TRIM, 0, 4096, MAY_SUCCEED);
  one ("zero-length zero", ZERO, 0, 4096, MAY_SUCCEED);
  one ("zero-length read at the end", READ, 0, s, MAY_SUCCEED);
  one ("zero-length read beyond the end", READ, 0, s + 4096, MAY_SUCCEED);
  one ("cache beyond the end", CACHE, 4096, s, MAY_SUCCEED);
  /* Valid but unusual: the last byte, an unaligned tail. */
  one ("last byte", READ, 1, s - 1, MUST_SUCCEED);
  one ("last byte written", WRITE, 1, s - 1, MUST_SUCCEED);
  one ("unaligned tail", READ, 4097, s - 4097, MUST_SUCCEED);
  /* Huge: 64 MiB (libnbd's limit) reads and writes, larger than the
   * filter's 32 MiB request limit; within the export if it is big
   * enough, else beyond its end.
   */
  if (s >= (64u << 20)) {
    one ("read of 64M", READ, 64 << 20, 0, MAY_SUCCEED);
    one ("write of 64M", WRITE, 64 << 20, 0, MAY_SUCCEED);
    one ("read of 33M", READ, 33 << 20, 4096, MAY_SUCCEED);
    one ("write of 33M", WRITE, 33 << 20, 4096, MAY_SUCCEED);
  }
  one ("read of 64M beyond the end", READ, 64 << 20, s - 4096, MUST_FAIL);
  one ("write of 64M beyond the end", WRITE, 64 << 20, s - 4096, MUST_FAIL);

  nbd_shutdown (h, 0);
  nbd_close (h);
  printf ("badreq: %d failures\n", fails);
  return fails ? EXIT_FAILURE : EXIT_SUCCESS;
}
