/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the filter's deadline-* parameters. */
#ifndef NBD_DEADLINE_PARAMS_H
#define NBD_DEADLINE_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dl-sched.h"

enum dispatch_mode { DISPATCH_AUTO = 0, DISPATCH_DIRECT, DISPATCH_NEXT };

/* The tunables given one by one, kept so that a profile given after
 * them does not undo them: the profile applies first, then these, in
 * the order given, whatever the order on the command line.
 */
#define PARAMS_MAX_SET 32
/* deadline-depth=auto climbs from 2 to at most this. */
#define PARAMS_AUTO_DEPTH_MAX 64
/* deadline-class=EXPORT:CLASS, at most this many. */
#define PARAMS_MAX_CLASS 64
struct filter_params {
  struct dl_tunables tunables;
  char *set_key[PARAMS_MAX_SET], *set_value[PARAMS_MAX_SET];
  size_t nset;
  uint32_t depth;               /* with depth_auto, the ceiling */
  bool depth_auto;              /* deadline-depth=auto (autodepth.c) */
  uint64_t max_inflight;        /* bytes; 0 = derived from depth and max_merge */
  uint64_t writeback;           /* bytes of writes answered early; 0 = off */
  enum dispatch_mode dispatch;
  bool no_inline;               /* deadline-inline=off: always via the loop */
  char *control;                /* control socket path (malloc'd), or NULL */
  enum dl_prio class_default;   /* deadline-class=CLASS (classes.c) */
  char *class_export[PARAMS_MAX_CLASS]; /* deadline-class=EXPORT:CLASS */
  enum dl_prio class_prio[PARAMS_MAX_CLASS];
  size_t nclass;
};

#define PARAMS_PREFIX "deadline-"
#define DEFAULT_WRITEBACK 0

void params_default (struct filter_params *p);
/* key is the whole key ("deadline-read-expire").  Returns 1 if taken,
 * 0 if not ours, -EINVAL with a one-line reason in err.
 */
int params_set (struct filter_params *p, const char *key, const char *value,
                char *err, size_t errlen);
const char *dispatch_name (enum dispatch_mode d);
/* An export's class: its own deadline-class=EXPORT:CLASS, the last
 * given, else deadline-class=CLASS, else be.
 */
enum dl_prio params_class_of (const struct filter_params *p, const char *export);
void params_free (struct filter_params *p);

#endif
