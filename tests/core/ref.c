/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the model's reference scheduler (see model.h).
 *
 * A second, naive implementation of the core's rules, written from the
 * rules (dl-sched.h, select.c's header, merge.c, hazard.c, fifo.c, the
 * seed patch for seed_batches), not from the core's data structures:
 * every unit is an array of members in one flat list, and every lookup
 * ("the lowest queued write at or after x", "the oldest read") is a
 * linear scan.  It predicts the exact unit each dl_dispatch returns
 * (head, offset, length, op, members in order, or nothing), for every
 * policy (deadline, noop, elevator), profile (default, seed) and
 * tunable, including seed_batches, size_cost, write_expire, merges and
 * hazards, as long as anticipate is 0 and preempt is off.
 *
 * Not modelled exactly: anticipation and preemption (with the write
 * hold), whose state follows each reader's think time and distances
 * (anticipate.c).  With either on, the reference stops predicting for
 * the rest of the run (model.c's invariant checks still run).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

enum { RU_QUEUED = 1, RU_HELD, RU_BATCHED, RU_INFLIGHT, RU_FLUSH };

struct runit {
  struct mreq **mem;
  size_t n, cap;
  uint64_t off, len, arrival, seq;
  enum dl_op op;
  uint32_t flags;
  int dir, st;
};

#define COST_BYTES (128 * 1024)

static int
rdir (enum dl_op op)
{
  return op == DL_OP_READ ? DL_READ : DL_WRITE;
}

static uint64_t
rend (const struct runit *u)
{
  uint64_t e = u->off + u->len;
  return e < u->off ? UINT64_MAX : e;
}

static void
extent (const struct model *m, const struct runit *u, uint64_t *lo, uint64_t *hi)
{
  uint64_t mask = (uint64_t) m->align - 1, e = rend (u);

  *lo = u->off & ~mask;
  *hi = e > UINT64_MAX - mask ? UINT64_MAX : (e + mask) & ~mask;
  if (u->len == 0)
    *hi = *lo;
}

static void
add_member (struct runit *u, struct mreq *x)
{
  if (u->n == u->cap) {
    u->cap = u->cap ? 2 * u->cap : 4;
    u->mem = realloc (u->mem, u->cap * sizeof *u->mem);
    if (u->mem == NULL)
      abort ();
  }
  u->mem[u->n++] = x;
}

static struct runit *
unit_new (struct model *m, struct mreq *x)
{
  struct runit *u = calloc (1, sizeof *u);

  if (u == NULL)
    abort ();
  add_member (u, x);
  u->off = x->r.offset;
  u->len = x->r.length;
  u->arrival = x->ins_ns;
  u->seq = x->seq;
  u->op = x->r.op;
  u->flags = x->r.flags;
  u->dir = rdir (x->r.op);
  if (m->nru == m->capru) {
    m->capru = m->capru ? 2 * m->capru : 64;
    m->ru = realloc (m->ru, m->capru * sizeof *m->ru);
    if (m->ru == NULL)
      abort ();
  }
  m->ru[m->nru++] = u;
  return u;
}

static void
unit_free (struct model *m, struct runit *u)
{
  size_t i;

  for (i = 0; i < m->nru && m->ru[i] != u; i++)
    ;
  if (i == m->nru)
    model_fail ("reference: freeing a unit it does not have");
  memmove (&m->ru[i], &m->ru[i + 1], (m->nru - i - 1) * sizeof *m->ru);
  m->nru--;
  free (u->mem);
  free (u);
}

/* Sorted-queue order: offset, then arrival sequence. */
static bool
key_less (const struct runit *a, const struct runit *b)
{
  return a->off != b->off ? a->off < b->off : a->seq < b->seq;
}

/* The queued unit of direction d with the least key satisfying pred. */
#define FIND_MIN(m, d, var, pred, less)                                    \
  ({ struct runit *best_ = NULL; size_t i_;                                \
     for (i_ = 0; i_ < (m)->nru; i_++) {                                   \
       struct runit *var = (m)->ru[i_];                                    \
       if (var->st == RU_QUEUED && var->dir == (d) && (pred) &&            \
           (best_ == NULL || less (var, best_)))                           \
         best_ = var;                                                      \
     }                                                                     \
     best_; })

static bool
key_greater (const struct runit *a, const struct runit *b)
{
  return key_less (b, a);
}

static bool
fifo_less (const struct runit *a, const struct runit *b)
{
  return a->arrival != b->arrival ? a->arrival < b->arrival : a->seq < b->seq;
}

static struct runit *
at_or_after (struct model *m, int d, uint64_t off)
{
  return FIND_MIN (m, d, v, v->off >= off, key_less);
}

static struct runit *
first (struct model *m, int d)
{
  return FIND_MIN (m, d, v, true, key_less);
}

static struct runit *
next_of (struct model *m, struct runit *u)
{
  return FIND_MIN (m, u->dir, v, key_less (u, v), key_less);
}

static struct runit *
prev_of (struct model *m, struct runit *u)
{
  return FIND_MIN (m, u->dir, v, key_less (v, u), key_greater);
}

static struct runit *
oldest (struct model *m, int d)
{
  return FIND_MIN (m, d, v, true, fifo_less);
}

static bool
queue_empty (struct model *m, int d)
{
  return first (m, d) == NULL;
}

static bool
expired_dir (struct model *m, int d)
{
  uint64_t e = d == DL_READ ? m->t.read_expire_ns : m->t.write_expire_ns;
  struct runit *o = oldest (m, d);

  return e != 0 && o && m->now >= o->arrival && m->now - o->arrival >= e;
}

/* merge.c's rule: same op and flags, both with data, at most max_merge
 * together.
 */
static bool
mergeable (const struct model *m, const struct runit *a, const struct runit *b)
{
  return a->op == b->op && a->flags == b->flags && a->len > 0 && b->len > 0 &&
    a->len <= m->t.max_merge && b->len <= m->t.max_merge - a->len;
}

/* a takes b (which ends where... b starts where a ends). */
static void
absorb (struct model *m, struct runit *a, struct runit *b)
{
  size_t i;

  for (i = 0; i < b->n; i++)
    add_member (a, b->mem[i]);
  a->len += b->len;
  if (b->arrival < a->arrival)
    a->arrival = b->arrival;
  if (b->seq < a->seq)
    a->seq = b->seq;
  unit_free (m, b);
}

static void
enqueue (struct model *m, struct runit *u)
{
  u->st = RU_QUEUED;
  if (!m->r_seed[u->dir].valid) {
    m->r_seed[u->dir].valid = true;
    m->r_seed[u->dir].off = u->off;
    m->r_seed[u->dir].seq = u->seq;
  }
}

/* A unit nothing holds: merge it into a queued one, or queue it.  (r
 * may be a held unit released, or a new request.)
 */
static void
queue_or_merge (struct model *m, struct runit *r)
{
  struct runit *u, *n;
  int d = r->dir;

  r->st = 0;
  if (m->t.max_merge > 0) {
    /* Back: the queued unit just before r in offset order ends at r. */
    u = FIND_MIN (m, d, v, v->off < r->off, key_greater);
    if (u && rend (u) == r->off && mergeable (m, u, r)) {
      absorb (m, u, r);
      n = next_of (m, u);
      if (n && n->off == rend (u) && mergeable (m, u, n))
        absorb (m, u, n);
      return;
    }
    /* Front: the queued unit starting where r ends. */
    if (m->t.front_merges) {
      u = at_or_after (m, d, r->off);
      if (u && u->off < rend (r))
        u = at_or_after (m, d, rend (r));
      if (u && u->off == rend (r) && mergeable (m, r, u)) {
        absorb (m, r, u);
        enqueue (m, r);
        u = prev_of (m, r);
        if (u && rend (u) == r->off && mergeable (m, u, r))
          absorb (m, u, r);
        return;
      }
    }
  }
  enqueue (m, r);
}

/* hazard.c: an earlier (by unit sequence), overlapping unit, not yet
 * completed, one of the two a write.
 */
static bool
blocked (struct model *m, struct runit *u)
{
  uint64_t lo, hi, vlo, vhi;
  size_t i;

  extent (m, u, &lo, &hi);
  if (lo >= hi)
    return false;
  for (i = 0; i < m->nru; i++) {
    struct runit *v = m->ru[i];
    if (v == u || v->st == RU_FLUSH || v->st == 0 || v->seq >= u->seq ||
        (u->dir != DL_WRITE && v->dir != DL_WRITE))
      continue;
    extent (m, v, &vlo, &vhi);
    if (vlo < vhi && vlo < hi && lo < vhi)
      return true;
  }
  return false;
}

void
ref_insert (struct model *m, struct mreq *x)
{
  struct runit *u;

  if (!m->ref_on)
    return;
  if (x->r.op == DL_OP_FLUSH) {
    if (m->r_flush)
      add_member (m->r_flush, x);
    else {
      m->r_flush = unit_new (m, x);
      m->r_flush->st = RU_FLUSH;
    }
    return;
  }
  u = unit_new (m, x);
  if (blocked (m, u))
    u->st = RU_HELD;
  else
    queue_or_merge (m, u);
}

/* The seed's sort_list (select.c, seed_batches): ascending from its
 * head, then once more from the lowest offset up to the head.
 */
static bool
second_lap (struct model *m, int d, const struct runit *u)
{
  return u->off < m->r_seed[d].off ||
    (u->off == m->r_seed[d].off && u->seq < m->r_seed[d].seq);
}

static struct runit *
seed_first (struct model *m, int d)
{
  struct runit *u = FIND_MIN (m, d, v, !second_lap (m, d, v), key_less);
  return u ? u : first (m, d);
}

static struct runit *
seed_next (struct model *m, int d, struct runit *u)
{
  if (second_lap (m, d, u))
    return FIND_MIN (m, d, v, key_less (u, v) && second_lap (m, d, v), key_less);
  {
    struct runit *n = next_of (m, u);
    if (n)
      return n;
  }
  return FIND_MIN (m, d, v, second_lap (m, d, v), key_less);
}

static void
seed_batch (struct model *m, int d, struct runit *u)
{
  bool from_head = u == seed_first (m, d);
  uint64_t last = m->r_head;
  int64_t count = m->t.fifo_batch;
  struct runit *nx;

  do {
    nx = seed_next (m, d, u);
    u->st = RU_BATCHED;
    if (m->nbatch == m->capbatch) {
      m->capbatch = m->capbatch ? 2 * m->capbatch : 16;
      m->r_batch = realloc (m->r_batch, m->capbatch * sizeof *m->r_batch);
      if (m->r_batch == NULL)
        abort ();
    }
    m->r_batch[m->nbatch++] = u;
    count -= u->off == last ? 1 : (int64_t) m->t.seek_cost;
    last = rend (u);
    u = nx;
  } while (u && count > 0);
  if (from_head) {
    m->r_seed[d].valid = u != NULL;
    if (u) {
      m->r_seed[d].off = u->off;
      m->r_seed[d].seq = u->seq;
    }
  }
}

static struct runit *
lower (struct runit *a, struct runit *b)
{
  if (a == NULL)
    return b;
  if (b == NULL)
    return a;
  if (a->off != b->off)
    return a->off < b->off ? a : b;
  return a->seq < b->seq ? a : b;
}

static struct runit *
deadline_pick (struct model *m)
{
  struct runit *u;
  bool reads, writes, w;
  int d;

  if (!m->t.seed_batches && m->r_batching && m->r_batch_cost < m->t.fifo_batch) {
    u = at_or_after (m, m->r_batch_dir, m->r_last_end[m->r_batch_dir]);
    if (u)
      return u;
  }
  m->r_batching = false;
  reads = !queue_empty (m, DL_READ);
  writes = !queue_empty (m, DL_WRITE);
  if (!reads && !writes)
    return NULL;
  w = writes && (!reads || m->r_starved >= m->t.writes_starved ||
                 expired_dir (m, DL_WRITE));
  if (w) {
    m->r_starved = 0;
    d = DL_WRITE;
  }
  else {
    if (writes)
      m->r_starved++;
    d = DL_READ;
  }
  if (m->t.seed_batches) {
    seed_batch (m, d, expired_dir (m, d) ? oldest (m, d) : seed_first (m, d));
    m->r_batch_dir = d;
    return m->r_batch[0];
  }
  if (expired_dir (m, d) || m->r_batch_dir != d)
    u = oldest (m, d);
  else {
    u = at_or_after (m, d, m->r_last_end[d]);
    if (u == NULL)
      u = oldest (m, d);
  }
  m->r_batching = true;
  m->r_batch_dir = d;
  m->r_batch_cost = 0;
  return u;
}

static struct runit *
pick (struct model *m)
{
  struct runit *r, *w;

  if (m->r_flush)
    return m->r_flush;
  if (m->nbatch)
    return m->r_batch[0];
  switch (m->t.policy) {
  case DL_POLICY_NOOP:
    r = oldest (m, DL_READ);
    w = oldest (m, DL_WRITE);
    if (r == NULL)
      return w;
    if (w == NULL)
      return r;
    return w->seq < r->seq ? w : r;
  case DL_POLICY_ELEVATOR:
    r = lower (at_or_after (m, DL_READ, m->r_head),
               at_or_after (m, DL_WRITE, m->r_head));
    return r ? r : lower (first (m, DL_READ), first (m, DL_WRITE));
  default:
    return deadline_pick (m);
  }
}

static bool
exact (const struct model *m)
{
  return m->t.anticipate_ns == 0 && !m->t.preempt;
}

/* Before dl_dispatch: the unit the reference says comes next. */
void
ref_predict (struct model *m)
{
  if (m->ref_on && !exact (m)) {
    m->ref_on = false;          /* see the top of this file */
    m->ref_stopped = true;
  }
  if (!m->ref_on)
    return;
  m->r_pick = pick (m);
}

static void
describe (const struct runit *u, char *buf, size_t len)
{
  if (u == NULL)
    snprintf (buf, len, "nothing");
  else
    snprintf (buf, len, "%s [%lu+%lu] %zu member(s), first seq %lu",
              u->op == DL_OP_READ ? "read" : u->op == DL_OP_FLUSH ? "flush" : "write",
              (unsigned long) u->off, (unsigned long) u->len, u->n,
              (unsigned long) u->mem[0]->seq);
}

/* After dl_dispatch returned c: compare, then apply. */
void
ref_dispatched (struct model *m, struct dl_req *c)
{
  struct runit *u = m->r_pick;
  const struct dl_req *r;
  char want[160];
  size_t i;

  if (!m->ref_on)
    return;
  m->n_predicted++;
  describe (u, want, sizeof want);
  if ((u == NULL) != (c == NULL))
    model_fail ("reference: the core dispatched %s [%lu+%lu], the rules say %s",
                c ? "a unit" : "nothing", c ? (unsigned long) c->unit_offset : 0,
                c ? (unsigned long) c->unit_length : 0, want);
  if (u == NULL)
    return;
  if (c->op != u->op || (u->op != DL_OP_FLUSH &&
                         (c->unit_offset != u->off || c->unit_length != u->len))
      || c->nr_members != u->n)
    model_fail ("reference: the core dispatched op %d [%lu+%lu] with %u "
                "member(s), first seq %lu; the rules say %s", c->op,
                (unsigned long) c->unit_offset, (unsigned long) c->unit_length,
                c->nr_members, (unsigned long) ((struct mreq *) c->priv)->seq,
                want);
  for (r = c, i = 0; r; r = r->next_member, i++)
    if (i >= u->n || r->priv != u->mem[i])
      model_fail ("reference: member %zu of the unit differs (the rules say %s)",
                  i, want);

  /* Apply. */
  if (u == m->r_flush) {
    m->r_flush = NULL;
    u->st = RU_INFLIGHT;
    return;
  }
  if (m->nbatch && u == m->r_batch[0])
    memmove (m->r_batch, m->r_batch + 1, --m->nbatch * sizeof *m->r_batch);
  u->st = RU_INFLIGHT;
  if (m->r_batching && u->dir == m->r_batch_dir) {
    uint64_t cost = (u->off == m->r_head ? 1 : m->t.seek_cost) +
      (m->t.size_cost && u->len ? (u->len - 1) / COST_BYTES : 0);
    m->r_batch_cost += cost;
  }
  m->r_head = rend (u);
  m->r_last_end[u->dir] = rend (u);
}

static struct runit *
unit_of (struct model *m, struct mreq *x)
{
  size_t i, j;

  for (i = 0; i < m->nru; i++)
    for (j = 0; j < m->ru[i]->n; j++)
      if (m->ru[i]->mem[j] == x)
        return m->ru[i];
  return NULL;
}

static bool
by_seq_less (const struct runit *a, const struct runit *b)
{
  return a->seq < b->seq;
}

void
ref_completed (struct model *m, struct dl_req *c)
{
  struct runit *done = m->ref_on ? unit_of (m, c->priv) : NULL;
  uint64_t dlo, dhi, vlo, vhi, after = 0;
  int dir;

  if (!m->ref_on)
    return;
  if (done == NULL || done->st != RU_INFLIGHT)
    model_fail ("reference: completed a unit it does not have in flight");
  extent (m, done, &dlo, &dhi);
  dir = done->dir;
  {
    bool flush = done->op == DL_OP_FLUSH;
    uint64_t seq = done->seq;
    unit_free (m, done);
    if (flush || dlo >= dhi)
      return;
    /* Held units that it held, in arrival order, each queued unless
     * something else still holds it.
     */
    for (;;) {
      struct runit *v = NULL;
      size_t i;
      for (i = 0; i < m->nru; i++) {
        struct runit *x = m->ru[i];
        if (x->st != RU_HELD || x->seq < seq || x->seq < after ||
            (x->dir != DL_WRITE && dir != DL_WRITE))
          continue;
        extent (m, x, &vlo, &vhi);
        if (!(vlo < vhi && vlo < dhi && dlo < vhi))
          continue;
        if (v == NULL || by_seq_less (x, v))
          v = x;
      }
      if (v == NULL)
        break;
      after = v->seq + 1;
      if (!blocked (m, v))
        queue_or_merge (m, v);
    }
  }
}

void
ref_drained (struct model *m)
{
  size_t i;

  if (!m->ref_on)
    return;
  /* dl_drain takes every waiting unit; the rest of the state stays. */
  m->nbatch = 0;
  m->r_flush = NULL;
  for (i = m->nru; i-- > 0;)
    if (m->ru[i]->st != RU_INFLIGHT)
      unit_free (m, m->ru[i]);
}

void
ref_tunables (struct model *m, const struct dl_tunables *old,
              const struct dl_tunables *t)
{
  size_t i;

  if (t->policy != old->policy)
    m->r_batching = false;
  if (m->ref_on && (t->policy != old->policy || !t->seed_batches)) {
    for (i = 0; i < m->nbatch; i++)
      enqueue (m, m->r_batch[i]);
    m->nbatch = 0;
  }
}

void
ref_free (struct model *m)
{
  while (m->nru)
    unit_free (m, m->ru[m->nru - 1]);
  free (m->ru);
  free (m->r_batch);
}
