/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: a write flood beside a reader that waits for each read
 * (test-pieces.sh, src/core/piece.c).
 *
 *   pieces [-t SECONDS] SOCKET
 *
 * Connection 1 keeps 4 writes of 256 KiB in flight over the first
 * 32 MiB of the export, one slot of 256 KiB after the other, each slot's
 * data naming the write that filled it, every fourth write with FUA.
 * Connection 2 is cat: one 4 KiB read at a time, ascending from 64 MiB,
 * the next sent when the last has come back.  After SECONDS (3) both
 * stop; every slot is read back and must hold what its last write sent.
 * Prints
 *
 *   writes=W fua=F reads=R mismatches=M
 *
 * and exits 1 if any request failed or any slot differs.  The export
 * must hold at least 80 MiB (the reads go round 16 MiB above 64 MiB).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libnbd.h>

#include "aio-pump.h"

#define WSIZE (256 * 1024)
#define SLOTS 128               /* 32 MiB of writes */
#define WDEPTH 4
#define RBASE (64ULL << 20)
#define RSIZE 4096

static uint64_t slot_seq[SLOTS];        /* the write that last filled each slot */
static int failures, reads_out;
static uint64_t writes, fua_writes, reads;

struct wslot {
  char *buf;
  int busy;
  uint64_t slot, seq;
};

static uint64_t
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

/* A slot's data names its write: word i is (seq << 32 | slot << 20 | i). */
static void
fill (char *buf, uint64_t slot, uint64_t seq)
{
  uint64_t *w = (uint64_t *) buf;
  size_t i;

  for (i = 0; i < WSIZE / 8; i++)
    w[i] = seq << 32 | slot << 20 | i;
}

static int
on_write (void *ud, int *error)
{
  struct wslot *ws = ud;

  if (*error) {
    fprintf (stderr, "pieces: write of slot %" PRIu64 " failed: %s\n",
             ws->slot, strerror (*error));
    failures++;
  }
  slot_seq[ws->slot] = ws->seq;
  ws->busy = 0;
  return 1;
}

static int
on_read (void *ud, int *error)
{
  (void) ud;
  if (*error) {
    fprintf (stderr, "pieces: read failed: %s\n", strerror (*error));
    failures++;
  }
  reads_out = 0;
  return 1;
}

static int
verify (struct nbd_handle *h)
{
  static char got[WSIZE], want[WSIZE];
  int bad = 0;
  uint64_t s;

  for (s = 0; s < SLOTS; s++) {
    if (slot_seq[s] == 0)
      continue;
    if (nbd_pread (h, got, WSIZE, s * WSIZE, 0) == -1) {
      fprintf (stderr, "pieces: reading back: %s\n", nbd_get_error ());
      return -1;
    }
    fill (want, s, slot_seq[s]);
    if (memcmp (got, want, WSIZE) != 0) {
      fprintf (stderr, "pieces: slot %" PRIu64 " (write %" PRIu64 ") differs\n",
               s, slot_seq[s]);
      bad++;
    }
  }
  return bad;
}

int
main (int argc, char *argv[])
{
  static char rbuf[RSIZE];
  struct wslot ws[WDEPTH];
  struct nbd_handle *h[2];
  uint64_t seconds = 3, end, seq = 0, roff = RBASE;
  int opt, i, bad, busy;

  while ((opt = getopt (argc, argv, "t:")) != -1) {
    if (opt == 't')
      seconds = strtoull (optarg, NULL, 10);
    else
      goto usage;
  }
  if (optind != argc - 1) {
  usage:
    fprintf (stderr, "usage: pieces [-t SECONDS] SOCKET\n");
    return 2;
  }
  for (i = 0; i < 2; ++i) {
    h[i] = nbd_create ();
    if (h[i] == NULL || nbd_connect_unix (h[i], argv[optind]) == -1) {
      fprintf (stderr, "pieces: %s\n", nbd_get_error ());
      return 1;
    }
  }
  if (nbd_get_size (h[0]) < (int64_t) (RBASE + (16ULL << 20))) {
    fprintf (stderr, "pieces: the export is too small\n");
    return 2;
  }
  for (i = 0; i < WDEPTH; i++) {
    ws[i].buf = malloc (WSIZE);
    ws[i].busy = 0;
    if (ws[i].buf == NULL)
      return 1;
  }

  end = now_ms () + seconds * 1000;
  do {
    busy = 0;
    for (i = 0; i < WDEPTH; i++) {
      if (ws[i].busy) {
        busy = 1;
        continue;
      }
      if (now_ms () >= end || failures)
        continue;
      nbd_completion_callback cb = { .callback = on_write, .user_data = &ws[i] };
      uint32_t fl = seq % 4 == 3 ? LIBNBD_CMD_FLAG_FUA : 0;

      ws[i].seq = ++seq;
      ws[i].slot = seq % SLOTS;
      fill (ws[i].buf, ws[i].slot, ws[i].seq);
      if (nbd_aio_pwrite (h[0], ws[i].buf, WSIZE, ws[i].slot * WSIZE, cb, fl) == -1) {
        fprintf (stderr, "pieces: %s\n", nbd_get_error ());
        return 1;
      }
      ws[i].busy = busy = 1;
      writes++;
      fua_writes += fl != 0;
    }
    if (reads_out)
      busy = 1;
    else if (now_ms () < end && !failures) {
      nbd_completion_callback cb = { .callback = on_read };
      if (nbd_aio_pread (h[1], rbuf, RSIZE, roff, cb, 0) == -1) {
        fprintf (stderr, "pieces: %s\n", nbd_get_error ());
        return 1;
      }
      roff += RSIZE;
      if (roff + RSIZE > RBASE + (16ULL << 20))
        roff = RBASE;
      reads_out = busy = 1;
      reads++;
    }
    if (busy)
      aio_pump (h, 2, 100);
  } while (busy);

  bad = verify (h[0]);
  printf ("writes=%" PRIu64 " fua=%" PRIu64 " reads=%" PRIu64 " mismatches=%d\n",
          writes, fua_writes, reads, bad);
  for (i = 0; i < 2; ++i) {
    nbd_shutdown (h[i], 0);
    nbd_close (h[i]);
  }
  for (i = 0; i < WDEPTH; i++)
    free (ws[i].buf);
  return failures || bad != 0 ? 1 : 0;
}
