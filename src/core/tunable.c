/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the tunables, their defaults, limits and parsers.
 *
 * Every tunable is checked here and only here, with a one-line reason
 * naming it, so the filter, the control socket and the tests all refuse
 * the same values with the same words.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dl-sched.h"

/* The kinds of DL_TUNABLES (dl-sched.h): K_##kind reads and writes a
 * field of the type DL_TUNABLE_TYPE_##kind gave it.
 */
enum kind { K_POLICY, K_DURATION, K_COUNT, K_BOOL, K_SIZE };

struct tunable {
  const char *name;
  enum kind kind;
  size_t off;                   /* of the field in struct dl_tunables */
  uint64_t def, min, max;
  const char *range;            /* why a value outside min..max is refused */
};

#define DESCRIBE_(field, name, kind, def, min, max, range, doc)         \
  { name, K_##kind, offsetof (struct dl_tunables, field),               \
    def, min, max, range },
static const struct tunable tunables[] = { DL_TUNABLES (DESCRIBE_) };
#define NTUNABLES (sizeof tunables / sizeof tunables[0])

#define NAME_(field, name, kind, def, min, max, range, doc) name,
const char *const dl_tunable_names[] = { DL_TUNABLES (NAME_) NULL };

static uint64_t
get_value (const struct dl_tunables *t, const struct tunable *d)
{
  const char *p = (const char *) t + d->off;

  switch (d->kind) {
  case K_POLICY: return *(const enum dl_policy *) p;
  case K_COUNT: return *(const uint32_t *) p;
  case K_BOOL: return *(const bool *) p;
  case K_DURATION: case K_SIZE: break;
  }
  return *(const uint64_t *) p;
}

/* v is in range for the kind: parse_value and the defaults make it so. */
static void
set_value (struct dl_tunables *t, const struct tunable *d, uint64_t v)
{
  char *p = (char *) t + d->off;

  switch (d->kind) {
  case K_POLICY: *(enum dl_policy *) p = (enum dl_policy) v; return;
  case K_COUNT: *(uint32_t *) p = (uint32_t) v; return;
  case K_BOOL: *(bool *) p = v != 0; return;
  case K_DURATION: case K_SIZE: break;
  }
  *(uint64_t *) p = v;
}

const char *const dl_profile_names[] = { "default", "seed", NULL };

void
dl_tunables_default (struct dl_tunables *t)
{
  size_t i;

  for (i = 0; i < NTUNABLES; i++)
    set_value (t, &tunables[i], tunables[i].def);
}

/* The 2002 patch (shared/seeds/001), and nothing beyond it:
 *   read_expire 500 ms, fifo_batch 64, seek_cost 16, writes_starved 2
 *     (its four tunables, with its defaults);
 *   write_expire 0: only reads have a deadline (deadline_add_request
 *     sets expires for READ only);
 *   seed_batches on: a batch is chosen whole when it starts, at the
 *     head of the sorted list or at the expired read, and a new batch
 *     starts at the list's head, not at the oldest (select.c);
 *   size_cost off: a request costs 1 or seek_cost, whatever its size
 *     (deadline_move_requests);
 *   anticipate 0, preempt off (which also turns off the write hold),
 *     write_piece 0 and piece_wait 0, readahead 0, read_slice 0:
 *     none of them existed;
 *   max_merge 255 sectors (130560 bytes): 2.5's request limit
 *     (MAX_SECTORS, which ll_back_merge_fn and ll_front_merge_fn check
 *     against the sum of the two);
 *   front_merges on: deadline_merge always tries them.
 * The scheduler (policy) is left as it is.
 */
static void
profile_seed (struct dl_tunables *t)
{
  enum dl_policy p = t->policy;

  dl_tunables_default (t);
  t->policy = p;
  t->write_expire_ns = 0;
  t->max_merge = 255 * 512;
  t->anticipate_ns = 0;
  t->preempt = false;
  t->size_cost = false;
  t->seed_batches = true;
  t->write_piece_ns = 0;
  t->piece_wait_ns = 0;
  t->readahead = 0;
  t->read_slice_ns = 0;
}

static void
profile_default (struct dl_tunables *t)
{
  enum dl_policy p = t->policy;

  dl_tunables_default (t);
  t->policy = p;
}

/* Field by field: padding bytes are not part of the value. */
static bool
same_tunables (const struct dl_tunables *a, const struct dl_tunables *b)
{
  size_t i;

  for (i = 0; i < NTUNABLES; i++)
    if (get_value (a, &tunables[i]) != get_value (b, &tunables[i]))
      return false;
  return true;
}

const char *
dl_tunables_profile_name (const struct dl_tunables *t)
{
  struct dl_tunables d = *t, s = *t;

  profile_default (&d);
  profile_seed (&s);
  if (same_tunables (&d, t))
    return "default";
  if (same_tunables (&s, t))
    return "seed";
  return "custom";
}

static int
fail (char *err, size_t errlen, const char *fmt, ...)
{
  va_list ap;

  if (err && errlen) {
    va_start (ap, fmt);
    vsnprintf (err, errlen, fmt, ap);
    va_end (ap);
  }
  return -EINVAL;
}

int
dl_tunables_profile (struct dl_tunables *t, const char *name,
                     char *err, size_t errlen)
{
  if (name && strcmp (name, "default") == 0)
    profile_default (t);
  else if (name && strcmp (name, "seed") == 0)
    profile_seed (t);
  else
    return fail (err, errlen, "profile: '%s' is not default or seed",
                 name ? name : "");
  return 0;
}

/* The first tunable out of range, in the table's order. */
int
dl_tunables_validate (const struct dl_tunables *t, char *err, size_t errlen)
{
  size_t i;

  for (i = 0; i < NTUNABLES; i++) {
    const struct tunable *d = &tunables[i];
    uint64_t v = get_value (t, d);

    if (v >= d->min && v <= d->max)
      continue;
    if (d->kind == K_POLICY)
      return fail (err, errlen, "%s: %s %d", d->name, d->range, (int) t->policy);
    return fail (err, errlen, "%s: %s", d->name, d->range);
  }
  return 0;
}

/* Digits with an optional fraction, then the rest of the string. */
static int
parse_number (const char *s, double *v, const char **rest)
{
  const char *p;
  char *end;

  while (*s == ' ')
    s++;
  if (*s < '0' || *s > '9')
    return -EINVAL;             /* no sign, no "inf" */
  /* Plain decimal only: strtod would also take "0x10" and "1e3". */
  for (p = s; (*p >= '0' && *p <= '9') || *p == '.'; p++)
    ;
  if ((*p == 'x' || *p == 'X') || ((*p == 'e' || *p == 'E') && p[1] != '\0' &&
                                   ((p[1] >= '0' && p[1] <= '9') || p[1] == '+' || p[1] == '-')))
    return -EINVAL;
  errno = 0;
  *v = strtod (s, &end);
  if (errno != 0 || end != p)
    return -EINVAL;
  *rest = end;
  return 0;
}

int
dl_parse_duration (const char *s, uint64_t *ns)
{
  static const struct { const char *unit; double scale; } units[] = {
    { "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "", 1e6 },
  };
  const char *rest;
  double v;
  size_t i;

  if (s == NULL || parse_number (s, &v, &rest) != 0)
    return -EINVAL;
  for (i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcmp (rest, units[i].unit) == 0) {
      double r = v * units[i].scale;

      if (r >= 18e18)
        return -EINVAL;
      *ns = (uint64_t) (r + 0.5);
      return 0;
    }
  }
  return -EINVAL;
}

int
dl_parse_size (const char *s, uint64_t *bytes)
{
  const char *rest;
  unsigned long long v;
  char *end;
  int shift = 0;

  if (s == NULL)
    return -EINVAL;
  while (*s == ' ')
    s++;
  if (*s < '0' || *s > '9')
    return -EINVAL;
  errno = 0;
  v = strtoull (s, &end, 10);
  if (errno != 0)
    return -EINVAL;
  rest = end;
  switch (*rest) {
  case '\0': break;
  case 'k': case 'K': shift = 10; rest++; break;
  case 'm': case 'M': shift = 20; rest++; break;
  case 'g': case 'G': shift = 30; rest++; break;
  case 't': case 'T': shift = 40; rest++; break;
  case 'b': case 'B': break;
  default: return -EINVAL;
  }
  if (shift && (strcmp (rest, "iB") == 0 || strcmp (rest, "B") == 0))
    rest += strlen (rest);
  else if (strcmp (rest, "B") == 0 || strcmp (rest, "b") == 0)
    rest++;
  if (*rest != '\0')
    return -EINVAL;
  if (shift && v > (UINT64_MAX >> shift))
    return -EINVAL;
  *bytes = (uint64_t) v << shift;
  return 0;
}

static const char *const policy_names[] = {
  [DL_POLICY_DEADLINE] = "deadline",
  [DL_POLICY_NOOP] = "noop",
  [DL_POLICY_ELEVATOR] = "elevator",
};

int
dl_parse_policy (const char *s, enum dl_policy *p)
{
  size_t i;

  for (i = 0; s && i < sizeof policy_names / sizeof policy_names[0]; i++) {
    if (strcmp (s, policy_names[i]) == 0) {
      *p = (enum dl_policy) i;
      return 0;
    }
  }
  return -EINVAL;
}

const char *
dl_policy_name (enum dl_policy p)
{
  if ((unsigned) p < sizeof policy_names / sizeof policy_names[0])
    return policy_names[p];
  return "unknown";
}

static int
parse_bool (const char *s, bool *b)
{
  static const char *const yes[] = { "1", "on", "yes", "true", NULL };
  static const char *const no[] = { "0", "off", "no", "false", NULL };
  size_t i;

  for (i = 0; yes[i]; i++)
    if (strcasecmp (s, yes[i]) == 0) {
      *b = true;
      return 0;
    }
  for (i = 0; no[i]; i++)
    if (strcasecmp (s, no[i]) == 0) {
      *b = false;
      return 0;
    }
  return -EINVAL;
}

static int
parse_count (const char *s, uint32_t *v)
{
  unsigned long long n;
  char *end;

  if (*s < '0' || *s > '9')
    return -EINVAL;
  errno = 0;
  n = strtoull (s, &end, 10);
  if (errno != 0 || *end != '\0' || n > UINT32_MAX)
    return -EINVAL;
  *v = (uint32_t) n;
  return 0;
}

/* "read-expire" and "read_expire" are the same key. */
static bool
key_is (const char *key, const char *name)
{
  for (; *key && *name; key++, name++)
    if (*key != *name && !(*key == '-' && *name == '_'))
      return false;
  return *key == '\0' && *name == '\0';
}

static const struct tunable *
find_tunable (const char *key)
{
  size_t i;

  for (i = 0; i < NTUNABLES; i++)
    if (key_is (key, tunables[i].name))
      return &tunables[i];
  return NULL;
}

/* Parses value as d's kind, or says why not.  The messages are as they
 * always were: the scheduler's and max_merge's name the tunable as the
 * core spells it, the others as the caller did (key).
 */
static int
parse_value (const struct tunable *d, const char *key, const char *value,
             uint64_t *v, char *err, size_t errlen)
{
  enum dl_policy p;
  uint32_t n;
  bool b;

  switch (d->kind) {
  case K_POLICY:
    if (dl_parse_policy (value, &p) != 0)
      return fail (err, errlen, "%s: '%s' is not deadline, noop or elevator",
                   d->name, value);
    *v = p;
    return 0;
  case K_DURATION:
    if (dl_parse_duration (value, v) != 0)
      return fail (err, errlen,
                   "%s: '%s' is not a duration (e.g. 500ms, 5s, 250us)",
                   key, value);
    return 0;
  case K_COUNT:
    if (parse_count (value, &n) != 0)
      return fail (err, errlen, "%s: '%s' is not a whole number", key, value);
    *v = n;
    return 0;
  case K_BOOL:
    if (parse_bool (value, &b) != 0)
      return fail (err, errlen, "%s: '%s' is not on or off", key, value);
    *v = b;
    return 0;
  case K_SIZE:
    if (dl_parse_size (value, v) != 0)
      return fail (err, errlen, "%s: '%s' is not a size (e.g. 1M, 512k, 0)",
                   d->name, value);
    return 0;
  }
  return fail (err, errlen, "%s: unknown kind", d->name);
}

int
dl_tunable_set (struct dl_tunables *t, const char *key, const char *value,
                char *err, size_t errlen)
{
  struct dl_tunables n = *t;
  const struct tunable *d;
  uint64_t v;
  int r;

  if (key == NULL || value == NULL)
    return fail (err, errlen, "missing key or value");

  if (key_is (key, "profile")) {
    if (dl_tunables_profile (&n, value, err, errlen) != 0)
      return -EINVAL;
  }
  else if ((d = find_tunable (key)) != NULL) {
    if (parse_value (d, key, value, &v, err, errlen) != 0)
      return -EINVAL;
    set_value (&n, d, v);
  }
  else
    return fail (err, errlen, "unknown tunable '%s'", key);

  r = dl_tunables_validate (&n, err, errlen);
  if (r == 0)
    *t = n;
  return r;
}

static void
format_duration (uint64_t ns, char *buf, size_t len)
{
  if (ns % DL_SEC == 0)
    snprintf (buf, len, "%" PRIu64 "s", ns / DL_SEC);
  else if (ns % DL_MS == 0)
    snprintf (buf, len, "%" PRIu64 "ms", ns / DL_MS);
  else if (ns % 1000 == 0)
    snprintf (buf, len, "%" PRIu64 "us", ns / 1000);
  else
    snprintf (buf, len, "%" PRIu64 "ns", ns);
}

static void
format_size (uint64_t b, char *buf, size_t len)
{
  if (b && b % (1 << 30) == 0)
    snprintf (buf, len, "%" PRIu64 "G", b >> 30);
  else if (b && b % (1 << 20) == 0)
    snprintf (buf, len, "%" PRIu64 "M", b >> 20);
  else if (b && b % 1024 == 0)
    snprintf (buf, len, "%" PRIu64 "k", b >> 10);
  else
    snprintf (buf, len, "%" PRIu64, b);
}

int
dl_tunable_get (const struct dl_tunables *t, const char *key,
                char *buf, size_t len)
{
  const struct tunable *d;
  uint64_t v;

  if (key_is (key, "profile")) {
    snprintf (buf, len, "%s", dl_tunables_profile_name (t));
    return 0;
  }
  d = find_tunable (key);
  if (d == NULL)
    return -EINVAL;
  v = get_value (t, d);
  switch (d->kind) {
  case K_POLICY: snprintf (buf, len, "%s", dl_policy_name (t->policy)); break;
  case K_DURATION: format_duration (v, buf, len); break;
  case K_COUNT: snprintf (buf, len, "%" PRIu64, v); break;
  case K_BOOL: snprintf (buf, len, "%s", v ? "on" : "off"); break;
  case K_SIZE: format_size (v, buf, len); break;
  }
  return 0;
}
