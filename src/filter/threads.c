/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: nbdkit's threads per connection (threads.h says why). */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "threads.h"

/* nbdkit 1.32's default --threads for parallel plugins. */
#define NBDKIT_DEFAULT_THREADS 16

/* nbdkit's short options that take a value (nbdkit --short-options
 * marks none of them; these are from nbdkit(1)).
 */
static const char short_with_value[] = "DegiPptUu";

/* nbdkit's long options that take a value, when not given as
 * --name=value.
 */
static const char *const long_with_value[] = {
  "debug", "export", "export-name", "exportname", "filter", "group",
  "ip-addr", "ipaddr", "log", "mask-handshake", "pid-file", "pidfile",
  "port", "run", "selinux-label", "threads", "tls", "tls-certificates",
  "tls-psk", "unix", "user", NULL
};

static int
parse_count (const char *s)
{
  char *end;
  long n;

  errno = 0;
  n = strtol (s, &end, 10);
  if (errno || end == s || *end || n < 0 || n > 1 << 20)
    return -1;
  return n;
}

static int
long_takes_value (const char *name, size_t len)
{
  int i;

  for (i = 0; long_with_value[i]; i++)
    if (strlen (long_with_value[i]) == len && strncmp (long_with_value[i], name, len) == 0)
      return 1;
  return 0;
}

int
threads_of_args (int argc, char *const argv[])
{
  int threads = NBDKIT_DEFAULT_THREADS, i;

  /* nbdkit's options end at the first word that is not one: the
   * plugin (what follows is the plugin's key=value).
   */
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];

    if (strcmp (a, "--") == 0 || a[0] != '-' || a[1] == '\0')
      break;
    if (a[1] == '-') {
      const char *name = a + 2, *eq = strchr (name, '=');
      size_t len = eq ? (size_t) (eq - name) : strlen (name);
      const char *value = eq ? eq + 1 : NULL;

      if (value == NULL && long_takes_value (name, len)) {
        if (i + 1 >= argc)
          return -1;
        value = argv[++i];
      }
      if (len == 7 && strncmp (name, "threads", 7) == 0 &&
          (threads = parse_count (value)) < 0)
        return -1;
      continue;
    }
    /* Bundled short options: -fvt 128, -t128. */
    for (a++; *a; a++) {
      const char *value;

      if (strchr (short_with_value, *a) == NULL)
        continue;
      value = a[1] ? a + 1 : (i + 1 < argc ? argv[++i] : NULL);
      if (value == NULL)
        return -1;
      if (*a == 't' && (threads = parse_count (value)) < 0)
        return -1;
      break;
    }
  }
  /* nbdkit takes 0 as its default. */
  return threads == 0 ? NBDKIT_DEFAULT_THREADS : threads;
}

int
threads_of_nbdkit (void)
{
  char buf[65536], *argv[1024];
  size_t len, off;
  int argc = 0, i;
  FILE *f = fopen ("/proc/self/cmdline", "r");

  if (f == NULL)
    return -1;
  len = fread (buf, 1, sizeof buf - 1, f);
  fclose (f);
  if (len == 0 || len == sizeof buf - 1)
    return -1;
  buf[len] = '\0';
  for (off = 0; off < len && argc < 1024; off += strlen (buf + off) + 1)
    argv[argc++] = buf + off;
  /* nbdkit's own arguments: under valgrind (or another runner) they
   * follow the runner's.
   */
  for (i = 0; i < argc; i++) {
    const char *base = strrchr (argv[i], '/');

    base = base ? base + 1 : argv[i];
    if (strcmp (base, "nbdkit") == 0)
      return threads_of_args (argc - i, argv + i);
  }
  return -1;
}
