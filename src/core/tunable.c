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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dl-sched.h"

#define MS UINT64_C (1000000)
#define SEC UINT64_C (1000000000)
#define MAX_EXPIRE (3600 * SEC)       /* an hour: beyond it, a typo */
#define MAX_COUNT 1000000
#define MAX_MERGE_LIMIT (64ULL << 20) /* the largest unit a buffer holds */
#define MAX_ANTICIPATE SEC            /* longer, and the disk just idles */

const char *const dl_tunable_names[] = {
  "scheduler", "read_expire", "write_expire", "fifo_batch", "seek_cost",
  "writes_starved", "front_merges", "max_merge", "anticipate", "preempt",
  "preempt_min", "size_cost", "seed_batches", NULL
};

const char *const dl_profile_names[] = { "default", "seed", NULL };

void
dl_tunables_default (struct dl_tunables *t)
{
  t->policy = DL_POLICY_DEADLINE;
  t->read_expire_ns = 500 * MS;
  t->write_expire_ns = 5 * SEC;
  t->fifo_batch = 64;
  t->seek_cost = 16;
  t->writes_starved = 2;
  t->front_merges = true;
  t->max_merge = 256 << 10;      /* why: merge.c */
  t->anticipate_ns = 20 * MS;     /* a ceiling; why: anticipate.c */
  t->preempt = true;             /* why: select.c */
  t->preempt_min = 16;           /* a seek's worth: see select.c */
  t->size_cost = true;           /* see cost.c, cost_unit */
  t->seed_batches = false;
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
 *   anticipate 0, preempt off (which also turns off the write hold):
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
  return a->policy == b->policy && a->read_expire_ns == b->read_expire_ns &&
    a->write_expire_ns == b->write_expire_ns &&
    a->fifo_batch == b->fifo_batch && a->seek_cost == b->seek_cost &&
    a->writes_starved == b->writes_starved &&
    a->front_merges == b->front_merges && a->max_merge == b->max_merge &&
    a->anticipate_ns == b->anticipate_ns && a->preempt == b->preempt &&
    a->preempt_min == b->preempt_min && a->size_cost == b->size_cost &&
    a->seed_batches == b->seed_batches;
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

int
dl_tunables_validate (const struct dl_tunables *t, char *err, size_t errlen)
{
  if (t->policy != DL_POLICY_DEADLINE && t->policy != DL_POLICY_NOOP &&
      t->policy != DL_POLICY_ELEVATOR)
    return fail (err, errlen, "scheduler: unknown policy %d", (int) t->policy);
  if (t->read_expire_ns == 0 || t->read_expire_ns > MAX_EXPIRE)
    return fail (err, errlen, "read_expire: must be more than 0 and at most 1h");
  if (t->write_expire_ns > MAX_EXPIRE)
    return fail (err, errlen, "write_expire: must be at most 1h (0 = none)");
  if (t->fifo_batch < 1 || t->fifo_batch > MAX_COUNT)
    return fail (err, errlen, "fifo_batch: must be between 1 and %d", MAX_COUNT);
  if (t->seek_cost < 1 || t->seek_cost > MAX_COUNT)
    return fail (err, errlen, "seek_cost: must be between 1 and %d", MAX_COUNT);
  if (t->writes_starved > MAX_COUNT)
    return fail (err, errlen, "writes_starved: must be at most %d", MAX_COUNT);
  if (t->max_merge > MAX_MERGE_LIMIT)
    return fail (err, errlen, "max_merge: must be at most 64M (0 = no merging)");
  if (t->anticipate_ns > MAX_ANTICIPATE)
    return fail (err, errlen, "anticipate: must be at most 1s (0 = off)");
  if (t->preempt_min > MAX_COUNT)
    return fail (err, errlen, "preempt_min: must be at most %d", MAX_COUNT);
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

int
dl_tunable_set (struct dl_tunables *t, const char *key, const char *value,
                char *err, size_t errlen)
{
  struct dl_tunables n = *t;
  int r;

  if (key == NULL || value == NULL)
    return fail (err, errlen, "missing key or value");

  if (key_is (key, "profile")) {
    if (dl_tunables_profile (&n, value, err, errlen) != 0)
      return -EINVAL;
  }
  else if (key_is (key, "scheduler")) {
    if (dl_parse_policy (value, &n.policy) != 0)
      return fail (err, errlen,
                   "scheduler: '%s' is not deadline, noop or elevator", value);
  }
  else if (key_is (key, "read_expire") || key_is (key, "write_expire") ||
           key_is (key, "anticipate")) {
    uint64_t *p = key_is (key, "read_expire") ? &n.read_expire_ns
                : key_is (key, "write_expire") ? &n.write_expire_ns
                : &n.anticipate_ns;
    if (dl_parse_duration (value, p) != 0)
      return fail (err, errlen,
                   "%s: '%s' is not a duration (e.g. 500ms, 5s, 250us)",
                   key, value);
  }
  else if (key_is (key, "fifo_batch") || key_is (key, "seek_cost") ||
           key_is (key, "writes_starved") || key_is (key, "preempt_min")) {
    uint32_t *p = key_is (key, "fifo_batch") ? &n.fifo_batch
                : key_is (key, "seek_cost") ? &n.seek_cost
                : key_is (key, "writes_starved") ? &n.writes_starved
                : &n.preempt_min;
    if (parse_count (value, p) != 0)
      return fail (err, errlen, "%s: '%s' is not a whole number", key, value);
  }
  else if (key_is (key, "front_merges") || key_is (key, "preempt") ||
           key_is (key, "size_cost") || key_is (key, "seed_batches")) {
    bool *p = key_is (key, "preempt") ? &n.preempt
            : key_is (key, "size_cost") ? &n.size_cost
            : key_is (key, "seed_batches") ? &n.seed_batches
            : &n.front_merges;
    if (parse_bool (value, p) != 0)
      return fail (err, errlen, "%s: '%s' is not on or off", key, value);
  }
  else if (key_is (key, "max_merge")) {
    if (dl_parse_size (value, &n.max_merge) != 0)
      return fail (err, errlen,
                   "max_merge: '%s' is not a size (e.g. 1M, 512k, 0)", value);
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
  if (ns % SEC == 0)
    snprintf (buf, len, "%" PRIu64 "s", ns / SEC);
  else if (ns % MS == 0)
    snprintf (buf, len, "%" PRIu64 "ms", ns / MS);
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
  if (key_is (key, "profile"))
    snprintf (buf, len, "%s", dl_tunables_profile_name (t));
  else if (key_is (key, "scheduler"))
    snprintf (buf, len, "%s", dl_policy_name (t->policy));
  else if (key_is (key, "read_expire"))
    format_duration (t->read_expire_ns, buf, len);
  else if (key_is (key, "write_expire"))
    format_duration (t->write_expire_ns, buf, len);
  else if (key_is (key, "fifo_batch"))
    snprintf (buf, len, "%" PRIu32, t->fifo_batch);
  else if (key_is (key, "seek_cost"))
    snprintf (buf, len, "%" PRIu32, t->seek_cost);
  else if (key_is (key, "writes_starved"))
    snprintf (buf, len, "%" PRIu32, t->writes_starved);
  else if (key_is (key, "front_merges"))
    snprintf (buf, len, "%s", t->front_merges ? "on" : "off");
  else if (key_is (key, "anticipate"))
    format_duration (t->anticipate_ns, buf, len);
  else if (key_is (key, "preempt"))
    snprintf (buf, len, "%s", t->preempt ? "on" : "off");
  else if (key_is (key, "preempt_min"))
    snprintf (buf, len, "%" PRIu32, t->preempt_min);
  else if (key_is (key, "size_cost"))
    snprintf (buf, len, "%s", t->size_cost ? "on" : "off");
  else if (key_is (key, "seed_batches"))
    snprintf (buf, len, "%s", t->seed_batches ? "on" : "off");
  else if (key_is (key, "max_merge"))
    format_size (t->max_merge, buf, len);
  else
    return -EINVAL;
  return 0;
}
