/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: observe the scheduler's order end to end.
 *
 *   order-probe [-w WRITES] [-g GAP] [-t MS] [-f] [-1] [-c CTL] SOCKET
 *
 * Floods the export with WRITES 4 KiB writes at ascending offsets GAP
 * apart (one connection, all in flight at once), waits MS milliseconds
 * so that they are queued in the scheduler, then reads 4 KiB above all
 * of them on a second connection, and prints how many writes completed
 * before the read did:
 *
 *   writes_before_read=N writes=W read_us=T
 *
 * Over a slow layer below, a deadline scheduler serves the read after a
 * few writes; FIFO (noop) and a one-way sweep (elevator) serve it last.
 * With -c the read also waits until the filter's control socket CTL
 * counts every write arrived (requests_total).
 * With -f a flush is sent instead of the read (writes_before_flush=N):
 * it covers only completed writes, so it should not wait behind them.
 * With -1 the read goes on the writes' connection, behind them, as a
 * kernel client sends everything on one: the server sees it only once
 * it has read every write before it off the socket (test-threads.sh).
 *
 *   order-probe -c CTL -S SEQ [-g GAP] SOCKET
 *
 * Sends the 4 KiB requests of SEQ, e.g. "w0,w7,w3,r8,r4" (a write or a
 * read at GAP * N; writes on one connection, reads on the other), each
 * only once the filter's control socket CTL shows the previous one
 * arrived (requests_total), so that the arrival order is SEQ's, then
 * waits for every answer and prints the order of the answers:
 *
 *   answered=w0,w3,w7,r4,r8
 *
 * With a slow layer below and deadline-depth=1 the first request holds
 * the device while the rest queue in the scheduler; the order in which
 * they reach the device (the caller traces it there, e.g. with nbdkit's
 * log filter) is the scheduler's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libnbd.h>

#include "aio-pump.h"
#include "ctl-stat.h"

static int writes_done, read_done, writes_before_read = -1, failures;

#define MAX_SEQ 256
static char answered[MAX_SEQ * 8];
static int nanswered;

static uint64_t
now_us (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
}

static int
on_write (void *ud, int *error)
{
  if (*error) failures++;
  writes_done++;
  return 1;
}

static int
on_read (void *ud, int *error)
{
  if (*error) failures++;
  read_done = 1;
  writes_before_read = writes_done;
  return 1;
}

static int
on_seq (void *ud, int *error)
{
  const char *name = ud;

  if (*error) {
    fprintf (stderr, "order-probe: %s failed: %s\n", name, strerror (*error));
    failures++;
  }
  if (nanswered++)
    strcat (answered, ",");
  strcat (answered, name);
  return 1;
}

/* -S: send SEQ in order of arrival, print the order of the answers. */
static int
sequence (struct nbd_handle **h, const char *ctl, char *seq, uint64_t gap)
{
  static char buf[MAX_SEQ][4096];
  char *tok, *save = NULL;
  int n = 0, i;
  int64_t base = ctl_counter (ctl, "requests_total");
  int64_t done0 = ctl_counter (ctl, "completed_total"), done1;
  uint64_t t0, tsend = now_us ();

  if (base < 0 || done0 < 0) {
    fprintf (stderr, "order-probe: cannot read requests_total from %s\n", ctl);
    return EXIT_FAILURE;
  }
  for (tok = strtok_r (seq, ",", &save); tok; tok = strtok_r (NULL, ",", &save)) {
    nbd_completion_callback cb = { .callback = on_seq, .user_data = tok };
    uint64_t off = gap * strtoull (tok + 1, NULL, 10);
    int64_t r;

    if (n == MAX_SEQ || strchr ("wrz", tok[0]) == NULL || tok[1] == '\0' ||
        off + 4096 > (uint64_t) nbd_get_size (h[0])) {
      fprintf (stderr, "order-probe: bad request '%s' in the sequence\n", tok);
      return EXIT_FAILURE;
    }
    memset (buf[n], 0x40 + n % 64, sizeof buf[n]);
    r = tok[0] == 'w' ? nbd_aio_pwrite (h[0], buf[n], 4096, off, cb, 0)
      : tok[0] == 'z' ? nbd_aio_zero (h[0], 4096, off, cb, 0)
      : nbd_aio_pread (h[1], buf[n], 4096, off, cb, 0);
    if (r == -1) {
      fprintf (stderr, "order-probe: %s\n", nbd_get_error ());
      return EXIT_FAILURE;
    }
    n++;
    /* Until it has arrived: the next one must arrive after it. */
    t0 = now_us ();
    for (;;) {
      int64_t got = ctl_counter (ctl, "requests_total");
      if (got < 0) {
        fprintf (stderr, "order-probe: cannot read requests_total from %s\n", ctl);
        return EXIT_FAILURE;
      }
      if (got >= base + n)
        break;
      if (now_us () - t0 > 20000000) {
        fprintf (stderr, "order-probe: %s did not reach the filter in 20 s\n", tok);
        return EXIT_FAILURE;
      }
      aio_pump (h, 2, 1);
    }
  }
  /* Only if the first request still held the device when the last one
   * arrived were they all queued together in the scheduler.
   */
  done1 = ctl_counter (ctl, "completed_total");
  if (done1 != done0) {
    fprintf (stderr, "order-probe: %" PRId64 " requests completed before the last "
             "one arrived (%.0f ms to send): the layer below is not slow enough\n",
             done1 - done0, (now_us () - tsend) / 1000.);
    return 2;
  }
  t0 = now_us ();
  while (nanswered < n) {
    aio_pump (h, 2, 100);
    if (now_us () - t0 > 60000000) {
      fprintf (stderr, "order-probe: timed out (%d of %d answered)\n", nanswered, n);
      return EXIT_FAILURE;
    }
  }
  printf ("answered=%s sent_ms=%.0f\n", answered, (t0 - tsend) / 1000.);
  for (i = 0; i < 2; ++i) {
    nbd_shutdown (h[i], 0);
    nbd_close (h[i]);
  }
  return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

int
main (int argc, char *argv[])
{
  int nwrites = 64, wait_ms = 30, opt, i, flush = 0, one_conn = 0;
  uint64_t gap = 1 << 20, t0, tr = 0, tread = 0;
  int64_t base = 0;
  struct nbd_handle *h[2];
  static char wbuf[4096], rbuf[4096];
  const char *ctl = NULL;
  char *seq = NULL;

  while ((opt = getopt (argc, argv, "w:g:t:fc:S:1")) != -1) {
    switch (opt) {
    case 'c': ctl = optarg; break;
    case 'S': seq = optarg; break;
    case 'f': flush = 1; break;
    case '1': one_conn = 1; break;
    case 'w': nwrites = atoi (optarg); break;
    case 'g': gap = strtoull (optarg, NULL, 10); break;
    case 't': wait_ms = atoi (optarg); break;
    default: goto usage;
    }
  }
  if (optind != argc - 1 || (seq != NULL && ctl == NULL)) {
  usage:
    fprintf (stderr, "usage: order-probe [-w WRITES] [-g GAP] [-t MS] [-f] [-1] [-c CTL] SOCKET\n"
             "       order-probe -c CTL -S SEQ [-g GAP] SOCKET\n");
    return EXIT_FAILURE;
  }
  for (i = 0; i < 2; ++i) {
    h[i] = nbd_create ();
    if (h[i] == NULL || nbd_connect_unix (h[i], argv[optind]) == -1) {
      fprintf (stderr, "order-probe: %s\n", nbd_get_error ());
      return EXIT_FAILURE;
    }
  }
  if (seq)
    return sequence (h, ctl, seq, gap);
  if ((uint64_t) nbd_get_size (h[0]) < gap * (nwrites + 2)) {
    fprintf (stderr, "order-probe: export too small\n");
    return EXIT_FAILURE;
  }
  if (ctl && (base = ctl_counter (ctl, "requests_total")) < 0) {
    fprintf (stderr, "order-probe: cannot read requests_total from %s\n", ctl);
    return EXIT_FAILURE;
  }
  memset (wbuf, 0xab, sizeof wbuf);
  for (i = 0; i < nwrites; ++i) {
    nbd_completion_callback cb = { .callback = on_write };
    if (nbd_aio_pwrite (h[0], wbuf, sizeof wbuf, gap * i, cb, 0) == -1) {
      fprintf (stderr, "order-probe: %s\n", nbd_get_error ());
      return EXIT_FAILURE;
    }
  }
  t0 = now_us ();
  while (now_us () - t0 < (uint64_t) wait_ms * 1000)
    aio_pump (h, 2, 5);
  /* With the control socket, the read goes only once every write is in
   * the filter (a sanitizer build can take longer than MS to pass them
   * through nbdkit's threads; a read ahead of them proves nothing). */
  while (ctl && ctl_counter (ctl, "requests_total") - base < nwrites) {
    if (now_us () - t0 > 30000000) {
      fprintf (stderr, "order-probe: the writes did not all reach the filter in 30 s\n");
      return EXIT_FAILURE;
    }
    aio_pump (h, 2, 5);
  }
  if (writes_done >= nwrites / 2) {
    fprintf (stderr, "order-probe: %d writes already done: the layer below is not slow enough\n",
             writes_done);
    return 2;
  }
  {
    nbd_completion_callback cb = { .callback = on_read };
    tr = now_us ();
    struct nbd_handle *rh = h[one_conn ? 0 : 1];

    if ((flush ? nbd_aio_flush (rh, cb, 0)
               : nbd_aio_pread (rh, rbuf, sizeof rbuf, gap * (nwrites + 1), cb, 0)) == -1) {
      fprintf (stderr, "order-probe: %s\n", nbd_get_error ());
      return EXIT_FAILURE;
    }
  }
  while (writes_done < nwrites || !read_done) {
    aio_pump (h, 2, 100);
    if (read_done && tread == 0)
      tread = now_us () - tr;
    if (now_us () - t0 > 60000000) {
      fprintf (stderr, "order-probe: timed out\n");
      return EXIT_FAILURE;
    }
  }
  printf ("writes_before_%s=%d writes=%d %s_us=%" PRIu64 "\n",
          flush ? "flush" : "read", writes_before_read, nwrites,
          flush ? "flush" : "read", tread);
  for (i = 0; i < 2; ++i) {
    nbd_shutdown (h[i], 0);
    nbd_close (h[i]);
  }
  return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
