/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: what sits below the filter (a heuristic).
 *
 * nbdkit offers no API that tells a filter what is below it.  What a
 * filter can observe is load order: by the time our .load runs, the
 * plugin and every filter closer to it have been dlopened, and the
 * filters above us have not.  dl_iterate_phdr lists what is mapped; we
 * look for nbdkit-*-plugin.so and nbdkit-*-filter.so other than our own
 * object.  Used only to decide whether the direct path is safe: any
 * doubt means "not provable".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "below.h"

struct scan {
  struct below *b;
  const char *self;
};

static const char *
base (const char *path)
{
  const char *s = strrchr (path, '/');
  return s ? s + 1 : path;
}

static bool
ends_with (const char *s, const char *suffix)
{
  size_t n = strlen (s), m = strlen (suffix);
  return n >= m && strcmp (s + n - m, suffix) == 0;
}

static int
visit (struct dl_phdr_info *info, size_t size, void *arg)
{
  struct scan *sc = arg;
  const char *name = info->dlpi_name, *bn;

  (void) size;
  if (name == NULL || *name == '\0')
    return 0;
  if (sc->self && strcmp (name, sc->self) == 0)
    return 0;
  bn = base (name);
  if (strncmp (bn, "nbdkit-", 7) != 0)
    return 0;
  if (ends_with (bn, "-plugin.so")) {
    snprintf (sc->b->plugin, sizeof sc->b->plugin, "%s", bn);
    if (strcmp (bn, "nbdkit-file-plugin.so") == 0)
      sc->b->file_plugin = true;
  }
  else if (ends_with (bn, "-filter.so")) {
    sc->b->filters_below++;
    snprintf (sc->b->filter, sizeof sc->b->filter, "%s", bn);
  }
  return 0;
}

void
below_scan (struct below *b, const void *self)
{
  Dl_info di;
  struct scan sc = { .b = b, .self = NULL };

  memset (b, 0, sizeof *b);
  if (dladdr (self, &di) && di.dli_fname)
    sc.self = di.dli_fname;
  dl_iterate_phdr (visit, &sc);
  b->scanned = true;
}
