/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the filter's deadline-* parameters.
 *
 * Scheduler tunables are handed to the core's own parser (one source of
 * truth for names, units and ranges); the filter adds only what belongs
 * to the engine: depth, in-flight bytes and the dispatch path.
 * deadline-profile=NAME sets every tunable but the scheduler to the
 * core's preset NAME (default, seed) before the tunables given one by
 * one, wherever it stands on the command line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"

/* deadline-depth=auto: measured from 2 up to this ceiling (autodepth.c). */
static void
depth_auto (struct filter_params *p)
{
  p->depth_auto = true;
  p->depth = PARAMS_AUTO_DEPTH_MAX;
}

void
params_default (struct filter_params *p)
{
  memset (p, 0, sizeof *p);
  dl_tunables_default (&p->tunables);
  /* deadline-depth=auto: on a disk with one head it stays at 2, where
   * a fixed depth was measured best for readers beside writes; a disk
   * that serves several at once gets the depth it needs without the
   * user finding the parameter (bench/results, sections P and R).
   */
  depth_auto (p);
  p->max_inflight = 0;
  p->writeback = DEFAULT_WRITEBACK;
  p->dispatch = DISPATCH_AUTO;
  p->no_inline = false;
}

void
params_free (struct filter_params *p)
{
  size_t i;

  free (p->control);
  p->control = NULL;
  for (i = 0; i < p->nset; i++) {
    free (p->set_key[i]);
    free (p->set_value[i]);
  }
  p->nset = 0;
  for (i = 0; i < p->nclass; i++)
    free (p->class_export[i]);
  p->nclass = 0;
}

/* Remember a tunable given by name (the last value of a key wins). */
static int
remember (struct filter_params *p, const char *name, const char *value)
{
  size_t i;
  char *v = strdup (value);

  if (v == NULL)
    return -ENOMEM;
  for (i = 0; i < p->nset; i++)
    if (strcmp (p->set_key[i], name) == 0) {
      free (p->set_value[i]);
      p->set_value[i] = v;
      return 0;
    }
  if (p->nset == PARAMS_MAX_SET || (p->set_key[p->nset] = strdup (name)) == NULL) {
    free (v);
    return -ENOMEM;
  }
  p->set_value[p->nset++] = v;
  return 0;
}

/* deadline-profile: the preset, then every tunable given by name again
 * on top of it.
 */
static int
set_profile (struct filter_params *p, const char *key, const char *value,
             char *err, size_t errlen)
{
  struct dl_tunables t = p->tunables;
  char msg[200];
  size_t i;

  if (dl_tunables_profile (&t, value, msg, sizeof msg) != 0) {
    snprintf (err, errlen, "%s: '%s' is not default or seed", key, value);
    return -EINVAL;
  }
  for (i = 0; i < p->nset; i++)
    if (dl_tunable_set (&t, p->set_key[i], p->set_value[i], msg, sizeof msg) != 0) {
      snprintf (err, errlen, "%s=%s: with %s=%s: %s", key, value,
                p->set_key[i], p->set_value[i], msg);
      return -EINVAL;
    }
  p->tunables = t;
  return 1;
}

const char *
dispatch_name (enum dispatch_mode d)
{
  switch (d) {
  case DISPATCH_AUTO: return "auto";
  case DISPATCH_DIRECT: return "direct";
  case DISPATCH_NEXT: return "next";
  }
  return "?";
}

static int
parse_u32 (const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
  char *end;
  unsigned long v;

  if (s == NULL || *s < '0' || *s > '9')
    return -EINVAL;
  errno = 0;
  v = strtoul (s, &end, 10);
  if (errno || *end || v < lo || v > hi)
    return -EINVAL;
  *out = v;
  return 0;
}

static int
set_depth (struct filter_params *p, const char *key, const char *value,
           char *err, size_t errlen)
{
  if (value && strcmp (value, "auto") == 0) {
    depth_auto (p);
    return 1;
  }
  if (parse_u32 (value, 1, 1024, &p->depth) < 0) {
    snprintf (err, errlen, "%s: '%s' is neither auto nor an integer in 1..1024", key, value);
    return -EINVAL;
  }
  p->depth_auto = false;
  return 1;
}

static int
set_max_inflight (struct filter_params *p, const char *key, const char *value,
                  char *err, size_t errlen)
{
  uint64_t v;

  if (dl_parse_size (value, &v) < 0 || v < 4096 || v > (1ULL << 32)) {
    snprintf (err, errlen, "%s: '%s' is not a size in 4k..4G", key, value);
    return -EINVAL;
  }
  p->max_inflight = v;
  return 1;
}

static int
set_writeback (struct filter_params *p, const char *key, const char *value,
               char *err, size_t errlen)
{
  uint64_t v;

  if (dl_parse_size (value, &v) < 0 || v > (1ULL << 32)) {
    snprintf (err, errlen, "%s: '%s' is not a size in 0..4G", key, value);
    return -EINVAL;
  }
  p->writeback = v;
  return 1;
}

static int
set_control (struct filter_params *p, const char *key, const char *value,
             char *err, size_t errlen)
{
  /* A UNIX socket path: sun_path holds 107 bytes and a NUL. */
  if (value[0] == '\0' || strlen (value) > 107) {
    snprintf (err, errlen, "%s: '%s' is not a socket path of 1..107 bytes",
              key, value);
    return -EINVAL;
  }
  free (p->control);
  p->control = strdup (value);
  if (p->control == NULL) {
    snprintf (err, errlen, "%s: out of memory", key);
    return -ENOMEM;
  }
  return 1;
}

static int
set_dispatch (struct filter_params *p, const char *key, const char *value,
              char *err, size_t errlen)
{
  if (strcmp (value, "auto") == 0) p->dispatch = DISPATCH_AUTO;
  else if (strcmp (value, "direct") == 0) p->dispatch = DISPATCH_DIRECT;
  else if (strcmp (value, "next") == 0) p->dispatch = DISPATCH_NEXT;
  else {
    snprintf (err, errlen, "%s: '%s' is not auto, direct or next", key, value);
    return -EINVAL;
  }
  return 1;
}

static int
set_inline (struct filter_params *p, const char *key, const char *value,
            char *err, size_t errlen)
{
  if (strcmp (value, "on") == 0) p->no_inline = false;
  else if (strcmp (value, "off") == 0) p->no_inline = true;
  else {
    snprintf (err, errlen, "%s: '%s' is not on or off", key, value);
    return -EINVAL;
  }
  return 1;
}

/* deadline-class=CLASS or EXPORT:CLASS (the last colon: an export
 * name may hold colons, a class name does not; ":CLASS" is the
 * default export "").
 */
static int
set_class (struct filter_params *p, const char *key, const char *value,
           char *err, size_t errlen)
{
  const char *colon = strrchr (value, ':');
  const char *cls = colon ? colon + 1 : value;
  enum dl_prio prio;
  char *name;

  if (dl_parse_prio (cls, &prio) != 0) {
    snprintf (err, errlen, "%s: '%s' is not rt, be or idle (or EXPORT:CLASS)", key, value);
    return -EINVAL;
  }
  if (colon == NULL) {
    p->class_default = prio;
    return 1;
  }
  if (p->nclass == PARAMS_MAX_CLASS) {
    snprintf (err, errlen, "%s: more than %d exports given a class", key, PARAMS_MAX_CLASS);
    return -EINVAL;
  }
  name = strndup (value, (size_t) (colon - value));
  if (name == NULL) {
    snprintf (err, errlen, "%s: out of memory", key);
    return -ENOMEM;
  }
  p->class_export[p->nclass] = name;
  p->class_prio[p->nclass++] = prio;
  return 1;
}

enum dl_prio
params_class_of (const struct filter_params *p, const char *export)
{
  size_t i;

  for (i = p->nclass; i-- > 0;)
    if (strcmp (p->class_export[i], export) == 0)
      return p->class_prio[i];
  return p->class_default;
}

/* The filter's own parameters (deadline-NAME); every other name is the
 * core's (set_tunable).
 */
static const struct {
  const char *name;
  int (*set) (struct filter_params *p, const char *key, const char *value,
              char *err, size_t errlen);
} filter_params[] = {
  { "depth", set_depth },
  { "max-inflight", set_max_inflight },
  { "writeback", set_writeback },
  { "control", set_control },
  { "profile", set_profile },
  { "dispatch", set_dispatch },
  { "inline", set_inline },
  { "class", set_class },
};

/* A core tunable: only the names the core knows, spelled with dashes
 * (k is key without the prefix).  0 if it is not one.
 */
static int
set_tunable (struct filter_params *p, const char *key, const char *k,
             const char *value, char *err, size_t errlen)
{
  size_t i;
  char name[64];
  char msg[200];

  if (strlen (k) >= sizeof name || strchr (k, '_') != NULL)
    return 0;
  for (i = 0; k[i]; ++i)
    name[i] = k[i] == '-' ? '_' : k[i];
  name[i] = '\0';
  for (i = 0; dl_tunable_names[i]; ++i)
    if (strcmp (dl_tunable_names[i], name) == 0)
      break;
  if (dl_tunable_names[i] == NULL)
    return 0;
  if (dl_tunable_set (&p->tunables, name, value, msg, sizeof msg) != 0) {
    snprintf (err, errlen, "%s=%s: %s", key, value, msg);
    return -EINVAL;
  }
  if (remember (p, name, value) != 0) {
    snprintf (err, errlen, "%s: too many tunables or out of memory", key);
    return -ENOMEM;
  }
  return 1;
}

int
params_set (struct filter_params *p, const char *key, const char *value,
            char *err, size_t errlen)
{
  const char *k;
  size_t i;
  int r;

  if (strncmp (key, PARAMS_PREFIX, strlen (PARAMS_PREFIX)) != 0)
    return 0;
  k = key + strlen (PARAMS_PREFIX);

  for (i = 0; i < sizeof filter_params / sizeof filter_params[0]; ++i)
    if (strcmp (k, filter_params[i].name) == 0)
      return filter_params[i].set (p, key, value, err, errlen);
  r = set_tunable (p, key, k, value, err, errlen);
  if (r != 0)
    return r;
  snprintf (err, errlen, "unknown parameter %s (see nbdkit --filter=deadline --help)", key);
  return -EINVAL;
}
