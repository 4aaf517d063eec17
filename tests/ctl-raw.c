/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: a raw client of the control socket, for test-ctl-raw.sh.
 *
 *   ctl-raw SOCKET send BYTES     send BYTES as they are (no newline
 *                                 added), half-close, print the answer
 *   ctl-raw SOCKET hold N SECS    open N connections that send nothing;
 *                                 print how many the server closed within
 *                                 SECS and the first line any of them got
 *
 * Every wait is bounded; exit 1 on a connection error.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int
dial (const char *path)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

  if (fd < 0 || strlen (path) >= sizeof sa.sun_path)
    return -1;
  strcpy (sa.sun_path, path);
  if (connect (fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
    close (fd);
    return -1;
  }
  return fd;
}

static double
now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main (int argc, char **argv)
{
  if (argc == 4 && strcmp (argv[2], "send") == 0) {
    struct pollfd p;
    char buf[65536];
    size_t len = strlen (argv[3]);
    ssize_t n;
    int fd = dial (argv[1]);

    if (fd < 0) {
      perror (argv[1]);
      return 1;
    }
    if (write (fd, argv[3], len) != (ssize_t) len)
      perror ("write");
    shutdown (fd, SHUT_WR);
    p.fd = fd;
    p.events = POLLIN;
    for (;;) {
      if (poll (&p, 1, 10000) != 1) {
        fprintf (stderr, "ctl-raw: no answer within 10 s\n");
        return 1;
      }
      n = read (fd, buf, sizeof buf);
      if (n <= 0)
        break;
      fwrite (buf, 1, n, stdout);
    }
    close (fd);
    return 0;
  }
  if (argc == 5 && strcmp (argv[2], "hold") == 0) {
    int n = atoi (argv[3]), i, closed = 0;
    double until = now () + atof (argv[4]);
    struct pollfd *p = calloc (n, sizeof *p);
    char first[256] = "", buf[256];

    for (i = 0; i < n; ++i) {
      p[i].fd = dial (argv[1]);
      p[i].events = POLLIN;
      if (p[i].fd < 0) {
        perror (argv[1]);
        return 1;
      }
    }
    while (closed < n && now () < until) {
      int left = (int) ((until - now ()) * 1000) + 1;

      if (poll (p, n, left) <= 0)
        continue;
      for (i = 0; i < n; ++i) {
        ssize_t r;

        if (p[i].fd < 0 || p[i].revents == 0)
          continue;
        r = read (p[i].fd, buf, sizeof buf - 1);
        if (r > 0 && first[0] == '\0') {
          buf[r] = '\0';
          buf[strcspn (buf, "\n")] = '\0';
          snprintf (first, sizeof first, "%s", buf);
        }
        if (r <= 0 || r < (ssize_t) sizeof buf - 1) {
          close (p[i].fd);
          p[i].fd = -1;         /* poll ignores negative fds */
          closed++;
        }
      }
    }
    printf ("closed %d of %d\n%s\n", closed, n, first);
    for (i = 0; i < n; ++i)
      if (p[i].fd >= 0)
        close (p[i].fd);
    free (p);
    return 0;
  }
  fprintf (stderr, "usage: ctl-raw SOCKET send BYTES | hold N SECS\n");
  return 2;
}
