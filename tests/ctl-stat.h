/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: read one counter from the filter's control socket, for
 * the end-to-end clients (overlap.c, order-probe.c).  One request per
 * connection ("stats\n"); the server answers "ok" then "NAME VALUE"
 * lines and closes (src/engine/control.h).
 *
 * The clients use requests_total to know that a request has reached
 * the scheduler before they send the next one: the engine counts a
 * request when it is appended to its inbox, and the inbox is taken in
 * order, so "requests_total went up" means "this request arrived, and
 * every later one will arrive after it".
 */
#ifndef NBD_DEADLINE_CTL_STAT_H
#define NBD_DEADLINE_CTL_STAT_H

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* The whole answer to "stats" into buf (NUL-terminated); 0 or -1. */
static int
ctl_stats (const char *path, char *buf, size_t len)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  size_t got = 0;
  int fd;

  if (strlen (path) >= sizeof sa.sun_path)
    return -1;
  strcpy (sa.sun_path, path);
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  if (connect (fd, (struct sockaddr *) &sa, sizeof sa) < 0 ||
      write (fd, "stats\n", 6) != 6)
    goto fail;
  for (;;) {
    struct pollfd p = { .fd = fd, .events = POLLIN };
    ssize_t n;

    if (poll (&p, 1, 5000) <= 0)
      goto fail;                /* no answer within 5 s */
    if (got + 1 >= len)
      goto fail;
    n = read (fd, buf + got, len - 1 - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      goto fail;
    if (n == 0)
      break;
    got += n;
  }
  close (fd);
  buf[got] = '\0';
  return strncmp (buf, "ok\n", 3) == 0 ? 0 : -1;
 fail:
  close (fd);
  return -1;
}

/* The value of "NAME VALUE" in an answer; -1 if absent. */
static int64_t
ctl_value (const char *answer, const char *name)
{
  size_t n = strlen (name);
  const char *p = answer;

  while ((p = strstr (p, name)) != NULL) {
    if ((p == answer || p[-1] == '\n') && p[n] == ' ')
      return strtoll (p + n + 1, NULL, 10);
    p += n;
  }
  return -1;
}

/* One counter now; -1 on any error. */
static int64_t
ctl_counter (const char *path, const char *name)
{
  static char buf[16384];

  if (ctl_stats (path, buf, sizeof buf) != 0)
    return -1;
  return ctl_value (buf, name);
}

#endif
