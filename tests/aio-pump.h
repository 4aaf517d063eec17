/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: one turn of two libnbd handles' state machines, for
 * the test clients that drive them with the aio API (order-probe.c,
 * pieces.c).
 */
#ifndef NBD_DEADLINE_AIO_PUMP_H
#define NBD_DEADLINE_AIO_PUMP_H

#include <poll.h>

#include <libnbd.h>

/* Waits at most timeout_ms for any of the n (at most 2) handles. */
static inline void
aio_pump (struct nbd_handle **h, int n, int timeout_ms)
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

#endif
