/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: a cat of small files with writes just ahead of it
 * (test-readahead.sh, src/core/ahead.c, src/engine/racache.c).
 *
 *   ahead [-n READS] [-s SEED] SOCKET
 *
 * Fills the first 32 MiB of the export with a known pattern, then reads
 * on connection 2 like cat over small files: 4 to 16 KiB at a time,
 * ascending with a 4 KiB gap between "files", every eighth read in the
 * first MiB instead ("metadata": a seek).  Before every third read,
 * connection 1 writes 4 KiB just ahead of the reader, where the filter
 * may have read ahead, and waits for the answer.  Every read must
 * return what the last write before it wrote; one answered from data
 * read ahead before that write is a mismatch.  Prints
 *
 *   reads=R writes=W mismatches=M
 *
 * and exits 1 on a mismatch or a failed request.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libnbd.h>

#define AREA (32ULL << 20)
#define META (1ULL << 20)

static unsigned char *model;

static void
pattern (unsigned char *p, uint64_t off, uint64_t len, uint32_t tag)
{
  uint64_t i;

  for (i = 0; i < len; i++)
    p[i] = (unsigned char) ((off + i) * 31 + tag * 7 + ((off + i) >> 12));
}

static int
put (struct nbd_handle *h, uint64_t off, uint64_t len, uint32_t tag)
{
  pattern (model + off, off, len, tag);
  if (nbd_pwrite (h, model + off, len, off, 0) == -1) {
    fprintf (stderr, "ahead: write at %" PRIu64 ": %s\n", off, nbd_get_error ());
    return -1;
  }
  return 0;
}

int
main (int argc, char *argv[])
{
  static unsigned char buf[16384];
  struct nbd_handle *h[2];
  uint64_t reads = 2000, nread = 0, nwrite = 0, cur = META, off, len;
  unsigned seed = 1;
  int opt, i, bad = 0;

  while ((opt = getopt (argc, argv, "n:s:")) != -1) {
    if (opt == 'n')
      reads = strtoull (optarg, NULL, 10);
    else if (opt == 's')
      seed = (unsigned) strtoul (optarg, NULL, 10);
    else
      goto usage;
  }
  if (optind != argc - 1) {
  usage:
    fprintf (stderr, "usage: ahead [-n READS] [-s SEED] SOCKET\n");
    return 2;
  }
  srandom (seed);
  model = malloc (AREA);
  if (model == NULL)
    return 1;
  for (i = 0; i < 2; ++i) {
    h[i] = nbd_create ();
    if (h[i] == NULL || nbd_connect_unix (h[i], argv[optind]) == -1) {
      fprintf (stderr, "ahead: %s\n", nbd_get_error ());
      return 1;
    }
  }
  if (nbd_get_size (h[0]) < (int64_t) AREA) {
    fprintf (stderr, "ahead: the export is smaller than 32 MiB\n");
    return 2;
  }
  for (off = 0; off < AREA; off += 1 << 20)
    if (put (h[0], off, 1 << 20, 0) == -1)
      return 1;

  while (nread < reads) {
    len = 4096 * (1 + random () % 4);
    if (nread % 8 == 7)
      off = (random () % (META / 4096 - 4)) * 4096;
    else {
      off = cur;
      cur += len + 4096;
      if (cur + 16384 + 8192 > AREA)
        cur = META;
    }
    if (nread % 3 == 2) {
      if (put (h[0], cur + 8192, 4096, (uint32_t) ++nwrite) == -1)
        return 1;
    }
    if (nbd_pread (h[1], buf, len, off, 0) == -1) {
      fprintf (stderr, "ahead: read at %" PRIu64 ": %s\n", off, nbd_get_error ());
      return 1;
    }
    nread++;
    if (memcmp (buf, model + off, len) != 0) {
      if (bad < 5)
        fprintf (stderr, "ahead: read %" PRIu64 " at %" PRIu64 "+%" PRIu64
                 " differs from the last write\n", nread, off, len);
      bad++;
    }
  }
  printf ("reads=%" PRIu64 " writes=%" PRIu64 " mismatches=%d\n", nread, nwrite, bad);
  for (i = 0; i < 2; ++i) {
    nbd_shutdown (h[i], 0);
    nbd_close (h[i]);
  }
  free (model);
  return bad ? 1 : 0;
}
