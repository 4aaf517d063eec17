/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: what sits below the filter (a heuristic). */
#ifndef NBD_DEADLINE_BELOW_H
#define NBD_DEADLINE_BELOW_H

#include <stdbool.h>
#include <stddef.h>

struct below {
  bool scanned;
  bool file_plugin;             /* the plugin is nbdkit-file-plugin.so */
  int filters_below;            /* other nbdkit filters loaded before us */
  char plugin[64];              /* basename of the plugin, if found */
  char filter[64];              /* basename of one filter below, if any */
};

/* Called from .load: nbdkit loads the plugin, then the filters from the
 * innermost outwards, calling each .load right after its dlopen, so the
 * nbdkit objects mapped now are the plugin and the filters below us.
 * self is any address inside this filter.
 */
void below_scan (struct below *b, const void *self);

#endif
