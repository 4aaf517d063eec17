/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: priority classes over one device.
 *
 * Beyond the seed, which has one queue per direction for everyone:
 * each class (rt, be, idle) is a whole scheduler of its own (sched.c,
 * with every rule of the seed and beyond inside it), and this file
 * holds only the rules between classes.  Why whole schedulers and not
 * one more key in the sorted queues: a class's batches, deadlines and
 * anticipation are about its own requests (an idle flood's expired
 * write must not end an rt reader's batch), and with every request in
 * be the order is exactly one dl_sched's, which the order digests pin.
 *
 * The rules, each in one function below:
 *
 *   class_aged     a be or idle unit that has waited prio_aging goes
 *                  before every class above it: the bound on starvation
 *                  (mq-deadline's prio_aging_expire, 10 s as there);
 *   rt_held        after an rt read completes with no rt work left, no
 *                  lower class starts a unit for `anticipate`: the
 *                  device waits for rt's next read, as anticipation
 *                  does within a class (anticipate.c), but for any rt
 *                  reader, learned or not: rt's readers may come over
 *                  several connections (nbdfuse, a kernel client),
 *                  where no one reader is learned (aging still bounds
 *                  the others);
 *   rt_busy        while rt has work (waiting or at the device), no
 *                  lower class starts a unit: a disk without command
 *                  queueing serves what it holds in order, so each unit
 *                  of another class beside rt's is a wait (and a seek)
 *                  before rt's next (bench/results: with half the depth
 *                  for be, rt's reads waited at the device behind it);
 *   lower_capped   and for RT_RECENT_NS after rt's last request, the
 *                  lower classes keep at most half the depth (at least
 *                  one unit): rt's next request then finds a free slot;
 *   idle_quiet     idle units go only when no rt or be request has
 *                  arrived for idle_grace and none is at the device:
 *                  idle work uses a disk that is otherwise idle, and a
 *                  reader's next read, coming within the grace, finds no
 *                  idle unit before it; and until rt and be have been
 *                  quiet for IDLE_RAMP idle_graces, idle keeps at most
 *                  half the depth, so that the read that ends a short
 *                  quiet spell waits for fewer of its units, while an
 *                  idle class alone on the disk for long has all of it;
 *   cross holds    a request overlapping a conflicting unit of another
 *                  class (possible when an export changes class while
 *                  its requests wait, or two exports share a file)
 *                  waits in this file's list, in arrival order, until
 *                  no other class holds such a unit.
 *
 * Classes are chosen by the caller per request (dl_req.prio); the
 * engine sets it from the export's class.
 */
#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sched-internal.h"

/* An rt reader's think time is at most this (a dependent reader that
 * thinks longer is not waited for by anticipation either).
 */
#define RT_RECENT_NS DL_READER_RECENT_NS

/* Idle has the whole depth once rt and be have been quiet this many
 * idle_graces (before, half).
 */
#define IDLE_RAMP 10

/* Service order. */
static const enum dl_prio order[DL_NPRIO] = { DL_PRIO_RT, DL_PRIO_BE, DL_PRIO_IDLE };
static const char *const prio_names[DL_NPRIO] = {
  [DL_PRIO_BE] = "be", [DL_PRIO_RT] = "rt", [DL_PRIO_IDLE] = "idle",
};

struct dl_classes {
  struct dl_sched *cls[DL_NPRIO];
  struct dl_tunables t;
  uint32_t depth;
  uint64_t last_busy_ns;        /* last arrival of an rt or be request */
  uint64_t rt_last_ns;          /* last arrival or completion of an rt one */
  uint64_t rt_read_done_ns;     /* last completion of an rt read */
  struct dl_list crossed;       /* requests held for another class's */
  uint64_t ncrossed;
  uint64_t prio_aged, class_holds;
};

int
dl_parse_prio (const char *s, enum dl_prio *p)
{
  int i;

  for (i = 0; i < DL_NPRIO; i++)
    if (strcasecmp (s, prio_names[i]) == 0) {
      *p = (enum dl_prio) i;
      return 0;
    }
  return -EINVAL;
}

const char *
dl_prio_name (enum dl_prio p)
{
  return (unsigned) p < DL_NPRIO ? prio_names[p] : "?";
}

struct dl_classes *
dl_classes_new (const struct dl_tunables *t, uint32_t align)
{
  struct dl_classes *c = calloc (1, sizeof *c);
  int i;

  if (c == NULL)
    return NULL;
  for (i = 0; i < DL_NPRIO; i++)
    if ((c->cls[i] = dl_sched_new (t, align)) == NULL) {
      int e = errno;

      dl_classes_free (c);
      errno = e;
      return NULL;
    }
  c->t = *t;
  TAILQ_INIT (&c->crossed);
  return c;
}

void
dl_classes_free (struct dl_classes *c)
{
  int i;

  if (c == NULL)
    return;
  for (i = 0; i < DL_NPRIO; i++)
    dl_sched_free (c->cls[i]);
  free (c);
}

int
dl_classes_set_tunables (struct dl_classes *c, const struct dl_tunables *t,
                         char *err, size_t errlen)
{
  int i, r = dl_tunables_validate (t, err, errlen);

  if (r != 0)
    return r;
  for (i = 0; i < DL_NPRIO; i++)
    dl_sched_set_tunables (c->cls[i], t, NULL, 0);
  c->t = *t;
  return 0;
}

void
dl_classes_get_tunables (const struct dl_classes *c, struct dl_tunables *t)
{
  *t = c->t;
}

void
dl_classes_set_depth (struct dl_classes *c, uint32_t depth)
{
  int i;

  c->depth = depth;
  for (i = 0; i < DL_NPRIO; i++)
    dl_sched_set_depth (c->cls[i], depth);
}

static struct dl_sched *
class_of (const struct dl_classes *c, const struct dl_req *r)
{
  assert (r->prio < DL_NPRIO);
  return c->cls[r->prio];
}

/* Does r overlap a conflicting unit of another class, or (if
 * new) a request already held here, which it must not pass?
 */
static bool
crosses (struct dl_classes *c, struct dl_req *r, bool new)
{
  struct dl_req *h;
  int i;

  if (r->op == DL_OP_FLUSH)
    return false;
  r->unit_offset = r->offset;
  r->unit_length = r->length;
  r->dir = dl_op_dir (r->op);
  dl_set_live (c->cls[0], r);
  for (i = 0; i < DL_NPRIO; i++)
    if (i != r->prio && hazard_conflicts (c->cls[i], r))
      return true;
  if (!new)
    return false;
  TAILQ_FOREACH (h, &c->crossed, fifo_link)
    if (h->live_lo < r->live_hi && r->live_lo < h->live_hi &&
        (h->dir == DL_WRITE || r->dir == DL_WRITE))
      return true;
  return false;
}

int
dl_classes_insert (struct dl_classes *c, struct dl_req *r, uint64_t now)
{
  if (r->prio >= DL_NPRIO)
    return -EINVAL;
  if (r->prio != DL_PRIO_IDLE)
    c->last_busy_ns = now;
  if (r->prio == DL_PRIO_RT)
    c->rt_last_ns = now;
  if (crosses (c, r, true)) {
    r->arrival_ns = now;
    r->state = DL_S_NEW;
    TAILQ_INSERT_TAIL (&c->crossed, r, fifo_link);
    c->ncrossed++;
    c->class_holds++;
    return 0;
  }
  return dl_insert (class_of (c, r), r, now);
}

/* Cross holds: after a completion, the held requests go to their
 * classes in arrival order, up to the first still overlapping.
 */
static void
release_crossed (struct dl_classes *c, uint64_t now)
{
  struct dl_req *r;

  while ((r = TAILQ_FIRST (&c->crossed)) != NULL) {
    TAILQ_REMOVE (&c->crossed, r, fifo_link);
    c->ncrossed--;
    if (crosses (c, r, false) || dl_insert (class_of (c, r), r, now) != 0) {
      /* Still overlapping (or no room yet: the next completion tries
       * again).
       */
      TAILQ_INSERT_HEAD (&c->crossed, r, fifo_link);
      c->ncrossed++;
      return;
    }
  }
}

/* The arrival of the oldest unit waiting in s (queued or a flush). */
static uint64_t
oldest_waiting (struct dl_sched *s)
{
  uint64_t t = UINT64_MAX;
  struct dl_req *u;
  int d;

  for (d = DL_READ; d <= DL_WRITE; d++)
    if ((u = fifo_oldest (s, d)) != NULL && u->unit_arrival_ns < t)
      t = u->unit_arrival_ns;
  if (s->pending_flush && s->pending_flush->arrival_ns < t)
    t = s->pending_flush->arrival_ns;
  return t;
}

static bool
class_aged (const struct dl_classes *c, enum dl_prio p, uint64_t now)
{
  uint64_t t = oldest_waiting (c->cls[p]);

  return t != UINT64_MAX && now >= t && now - t >= c->t.prio_aging_ns;
}

/* The lower classes' share of the depth beside rt, and idle's. */
static uint64_t
half_depth (const struct dl_classes *c)
{
  uint32_t depth = c->depth ? c->depth : 2;

  return depth / 2 ? depth / 2 : 1;
}

static bool
rt_busy (const struct dl_classes *c)
{
  const struct dl_sched *rt = c->cls[DL_PRIO_RT];

  return dl_waiting (rt) != 0 || rt->st.inflight != 0;
}

static bool
lower_capped (const struct dl_classes *c, uint64_t now)
{
  uint64_t lower = c->cls[DL_PRIO_BE]->st.inflight + c->cls[DL_PRIO_IDLE]->st.inflight;

  if (c->rt_last_ns == 0 || now >= c->rt_last_ns + RT_RECENT_NS)
    return false;
  return lower >= half_depth (c);
}

/* The end of the wait for rt's next read, or 0 if none is in force. */
static uint64_t
rt_held_until (const struct dl_classes *c, uint64_t now)
{
  uint64_t until = c->rt_read_done_ns + c->t.anticipate_ns;

  if (c->rt_read_done_ns == 0 || c->t.anticipate_ns == 0 || now >= until ||
      rt_busy (c))
    return 0;
  return until;
}

static bool
idle_quiet (const struct dl_classes *c, uint64_t now)
{
  if (c->cls[DL_PRIO_RT]->st.inflight || c->cls[DL_PRIO_BE]->st.inflight)
    return false;
  if (c->last_busy_ns == 0)
    return true;                /* never anything else: the disk is idle's */
  if (now < c->last_busy_ns + c->t.idle_grace_ns)
    return false;
  return now >= c->last_busy_ns + IDLE_RAMP * c->t.idle_grace_ns ||
    c->cls[DL_PRIO_IDLE]->st.inflight < half_depth (c);
}

/* May the class at position k of the service order start a unit now,
 * by the rules between classes (its own rules are its own)?
 */
static bool
class_may_start (const struct dl_classes *c, int k, uint64_t now)
{
  if (k == 0)
    return true;
  if (rt_busy (c) || rt_held_until (c, now) || lower_capped (c, now))
    return false;
  return order[k] != DL_PRIO_IDLE || idle_quiet (c, now);
}

struct dl_req *
dl_classes_dispatch (struct dl_classes *c, uint64_t now)
{
  struct dl_req *u;
  int k;

  /* The bound first: the lowest class's aged units are the oldest. */
  for (k = DL_NPRIO - 1; k > 0; k--)
    if (class_aged (c, order[k], now) &&
        (u = dl_dispatch (c->cls[order[k]], now)) != NULL) {
      c->prio_aged++;
      return u;
    }
  for (k = 0; k < DL_NPRIO; k++) {
    enum dl_prio p = order[k];

    if (dl_waiting (c->cls[p]) == 0)
      continue;
    if (!class_may_start (c, k, now))
      return NULL;
    if ((u = dl_dispatch (c->cls[p], now)) != NULL)
      return u;
  }
  return NULL;
}

struct dl_req *
dl_classes_dispatch_flush (struct dl_classes *c, uint64_t now)
{
  int k;

  for (k = 0; k < DL_NPRIO; k++) {
    struct dl_sched *s = c->cls[order[k]];

    if (s->pending_flush == NULL)
      continue;
    if (!class_may_start (c, k, now) && !class_aged (c, order[k], now))
      return NULL;
    return dl_dispatch (s, now);        /* a class hands its flush out first */
  }
  return NULL;
}

void
dl_classes_complete (struct dl_classes *c, struct dl_req *u, uint64_t now)
{
  dl_complete (class_of (c, u), u, now);
  if (u->prio == DL_PRIO_RT) {
    c->rt_last_ns = now;
    if (u->op == DL_OP_READ)
      c->rt_read_done_ns = now;
  }
  if (c->ncrossed)
    release_crossed (c, now);
}

uint64_t
dl_classes_waiting (const struct dl_classes *c)
{
  uint64_t n = c->ncrossed;
  int i;

  for (i = 0; i < DL_NPRIO; i++)
    n += dl_waiting (c->cls[i]);
  return n;
}

uint64_t
dl_classes_inflight (const struct dl_classes *c)
{
  uint64_t n = 0;
  int i;

  for (i = 0; i < DL_NPRIO; i++)
    n += dl_inflight (c->cls[i]);
  return n;
}

struct dl_req *
dl_classes_drain (struct dl_classes *c)
{
  struct dl_req *u;
  int i;

  if ((u = TAILQ_FIRST (&c->crossed)) != NULL) {
    TAILQ_REMOVE (&c->crossed, u, fifo_link);
    c->ncrossed--;
    u->unit_offset = u->offset;
    u->unit_length = u->length;
    u->nr_members = 1;
    u->next_member = NULL;
    u->state = DL_S_DONE;
    return u;
  }
  for (i = 0; i < DL_NPRIO; i++)
    if ((u = dl_drain (c->cls[i])) != NULL)
      return u;
  return NULL;
}

static uint64_t
earliest (uint64_t a, uint64_t b)
{
  if (a == 0)
    return b;
  return b != 0 && b < a ? b : a;
}

uint64_t
dl_classes_next_timer (const struct dl_classes *c, uint64_t now)
{
  uint64_t t = 0;
  int i;

  /* A lower class is held back only by something that ends with a
   * completion or with one of these timers (the classes' own, and
   * idle's grace): aging needs no timer of its own
   * (tests/core/test-classes-random checks that one always comes).
   */
  for (i = 0; i < DL_NPRIO; i++)
    t = earliest (t, dl_next_timer (c->cls[i], now));
  t = earliest (t, rt_held_until (c, now));
  if (dl_waiting (c->cls[DL_PRIO_IDLE]) && c->last_busy_ns + c->t.idle_grace_ns > now)
    t = earliest (t, c->last_busy_ns + c->t.idle_grace_ns);
  return t;
}

uint64_t
dl_classes_piece_wait (struct dl_classes *c, uint64_t paused_ns, uint64_t now)
{
  uint64_t w;
  int k;

  for (k = 0; k < DL_NPRIO; k++)
    if ((w = dl_piece_wait (c->cls[order[k]], paused_ns, now)) != 0)
      return w;
  return 0;
}

#define ADD_(field, name, doc) st->field += one.field;
#define ADD2_(field, rname, wname, doc) \
  st->field[0] += one.field[0];         \
  st->field[1] += one.field[1];

void
dl_classes_stats (const struct dl_classes *c, struct dl_stats *st)
{
  uint64_t most = 0;
  int i;

  memset (st, 0, sizeof *st);
  for (i = 0; i < DL_NPRIO; i++) {
    struct dl_stats one = c->cls[i]->st;
    uint64_t sent = one.dispatched[0] + one.dispatched[1];

    DL_STATS_REQUESTS (ADD_, ADD2_)
    DL_STATS_EVENTS (ADD_, ADD2_)
    DL_STATS_GAUGES (ADD_, ADD2_)
    if (i == 0 || sent > most) {
      /* What the device takes is one figure, not a sum. */
      memcpy (st->device_access_ns, one.device_access_ns, sizeof one.device_access_ns);
      memcpy (st->device_rate, one.device_rate, sizeof one.device_rate);
      most = sent;
    }
  }
  st->held += c->ncrossed;
  st->prio_aged = c->prio_aged;
  st->class_holds = c->class_holds;
}

void
dl_classes_class_stats (const struct dl_classes *c, enum dl_prio p,
                        struct dl_stats *st)
{
  assert ((unsigned) p < DL_NPRIO);
  *st = c->cls[p]->st;
}

void
dl_classes_check (const struct dl_classes *c)
{
  const struct dl_req *r;
  uint64_t n = 0;
  int i;

  for (i = 0; i < DL_NPRIO; i++)
    dl_sched_check (c->cls[i]);
  TAILQ_FOREACH (r, &c->crossed, fifo_link) {
    assert (r->state == DL_S_NEW && r->prio < DL_NPRIO);
    n++;
  }
  assert (n == c->ncrossed);
}
