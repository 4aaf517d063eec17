/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: one turn of some libnbd handles' state machines, for
 * the test clients that drive them with the aio API (order-probe.c,
 * overlap.c, pieces.c).
 */
#ifndef NBD_DEADLINE_AIO_PUMP_H
#define NBD_DEADLINE_AIO_PUMP_H

#include <poll.h>

#include <libnbd.h>

#define AIO_PUMP_MAX 16

/* Waits at most timeout_ms for any of the n (at most AIO_PUMP_MAX)
 * handles.  Returns 0, -1 if poll failed (errno), -2 if a handle's
 * state machine did (nbd_get_error).
 */
static inline int
aio_pump (struct nbd_handle **h, int n, int timeout_ms)
{
  struct pollfd pfd[AIO_PUMP_MAX];
  int i;

  for (i = 0; i < n; ++i) {
    unsigned dir = nbd_aio_get_direction (h[i]);
    pfd[i].fd = nbd_aio_get_fd (h[i]);
    pfd[i].events = ((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0) |
                    ((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0);
  }
  if (poll (pfd, n, timeout_ms) < 0)
    return -1;
  for (i = 0; i < n; ++i) {
    int r = 0;

    if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
      r = nbd_aio_notify_read (h[i]);
    else if (pfd[i].revents & POLLOUT)
      r = nbd_aio_notify_write (h[i]);
    if (r == -1)
      return -2;
  }
  return 0;
}

#endif
