/* nbd-deadline: observe the scheduler's order end to end.
 *
 *   order-probe [-w WRITES] [-g GAP] [-t MS] [-f] SOCKET
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
 * With -f a flush is sent instead of the read (writes_before_flush=N):
 * it covers only completed writes, so it should not wait behind them.
 */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libnbd.h>

static int writes_done, read_done, writes_before_read = -1, failures;

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

static void
pump (struct nbd_handle **h, int n, int timeout_ms)
{
  struct pollfd pfd[2];
  int i;

  for (i = 0; i < n; ++i) {
    unsigned dir = nbd_aio_get_direction (h[i]);
    pfd[i].fd = nbd_aio_get_fd (h[i]);
    pfd[i].events = ((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0) |
                    ((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0);
  }
  if (poll (pfd, n, timeout_ms) < 0)
    return;
  for (i = 0; i < n; ++i) {
    if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
      nbd_aio_notify_read (h[i]);
    else if (pfd[i].revents & POLLOUT)
      nbd_aio_notify_write (h[i]);
  }
}

int
main (int argc, char *argv[])
{
  int nwrites = 64, wait_ms = 30, opt, i, flush = 0;
  uint64_t gap = 1 << 20, t0, tr = 0, tread = 0;
  struct nbd_handle *h[2];
  static char wbuf[4096], rbuf[4096];

  while ((opt = getopt (argc, argv, "w:g:t:f")) != -1) {
    switch (opt) {
    case 'f': flush = 1; break;
    case 'w': nwrites = atoi (optarg); break;
    case 'g': gap = strtoull (optarg, NULL, 10); break;
    case 't': wait_ms = atoi (optarg); break;
    default: goto usage;
    }
  }
  if (optind != argc - 1) {
  usage:
    fprintf (stderr, "usage: order-probe [-w WRITES] [-g GAP] [-t MS] [-f] SOCKET\n");
    return EXIT_FAILURE;
  }
  for (i = 0; i < 2; ++i) {
    h[i] = nbd_create ();
    if (h[i] == NULL || nbd_connect_unix (h[i], argv[optind]) == -1) {
      fprintf (stderr, "order-probe: %s\n", nbd_get_error ());
      return EXIT_FAILURE;
    }
  }
  if ((uint64_t) nbd_get_size (h[0]) < gap * (nwrites + 2)) {
    fprintf (stderr, "order-probe: export too small\n");
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
    pump (h, 2, 5);
  if (writes_done >= nwrites / 2) {
    fprintf (stderr, "order-probe: %d writes already done: the layer below is not slow enough\n",
             writes_done);
    return 2;
  }
  {
    nbd_completion_callback cb = { .callback = on_read };
    tr = now_us ();
    if ((flush ? nbd_aio_flush (h[1], cb, 0)
               : nbd_aio_pread (h[1], rbuf, sizeof rbuf, gap * (nwrites + 1), cb, 0)) == -1) {
      fprintf (stderr, "order-probe: %s\n", nbd_get_error ());
      return EXIT_FAILURE;
    }
  }
  while (writes_done < nwrites || !read_done) {
    pump (h, 2, 100);
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
