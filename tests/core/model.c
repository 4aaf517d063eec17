/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the reference model (see model.h).
 *
 * Everything here is deliberately naive (linear scans over the live
 * requests) so that it is obviously right; the callers keep the number
 * of live requests small.
 *
 * The read-deadline bound checked here, and why it holds.  Under the
 * deadline policy with write_expire = 0 (the seed), writes_starved >= 1
 * and seek_cost >= 1, take the oldest waiting read R that nothing holds,
 * once it has expired.  Every unit costs at least 1, so the batch in
 * progress ends within fifo_batch units.  The next batch is either a
 * write batch forced by starvation (at most fifo_batch units, after
 * which starved = 0 < writes_starved), or a read batch, which starts at
 * the oldest read because it has expired: R.  So at most 2 * fifo_batch
 * other units (flushes aside) go to the device before R.  In time, with
 * a device that completes one unit per tick and is never idle while R
 * waits: R is dispatched at most read_expire + 2 * fifo_batch ticks (+1
 * per flush) after it became the oldest read.  If an older read is
 * released by a hazard meanwhile, it becomes the one watched.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

void
model_fail (const char *fmt, ...)
{
  va_list ap;

  fprintf (stderr, "model: violation: ");
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fprintf (stderr, "\n");
  abort ();
}

#define FAIL_IF(cond, ...) do { m->n_checks++; if (cond) model_fail (__VA_ARGS__); } while (0)

static struct mreq *
M (struct dl_req *r)
{
  return (struct mreq *) r->priv;
}

static int
dir_of (enum dl_op op)
{
  return op == DL_OP_READ ? DL_READ : DL_WRITE;
}

/* Rounded-out overlap where at least one is a write (hazard.c's rule). */
static bool
conflicts (const struct model *m, const struct mreq *a, const struct mreq *b)
{
  uint64_t al = m->align, alo, ahi, blo, bhi;

  if (a->r.op == DL_OP_FLUSH || b->r.op == DL_OP_FLUSH)
    return false;
  if (dir_of (a->r.op) == DL_READ && dir_of (b->r.op) == DL_READ)
    return false;
  alo = a->r.offset & ~(al - 1);
  ahi = (a->r.offset + a->r.length + al - 1) & ~(al - 1);
  blo = b->r.offset & ~(al - 1);
  bhi = (b->r.offset + b->r.length + al - 1) & ~(al - 1);
  return alo < bhi && blo < ahi;
}

/* Is live request i held by an earlier live one? */
static bool
blocked (const struct model *m, size_t i)
{
  size_t j;

  for (j = 0; j < i; j++)
    if (conflicts (m, m->live[j], m->live[i]))
      return true;
  return false;
}

static bool
expired (const struct model *m, const struct mreq *x)
{
  uint64_t e = dir_of (x->r.op) == DL_READ ?
    m->t.read_expire_ns : m->t.write_expire_ns;
  return e != 0 && m->now >= x->ins_ns && m->now - x->ins_ns >= e;
}

static void
check_gauges (struct model *m)
{
  struct dl_stats st;
  size_t i, waiting = 0, writes = 0;

  /* The core's own structures agree with one another (it asserts). */
  dl_sched_check (m->s);
  dl_sched_stats (m->s, &st);
  for (i = 0; i < m->nlive; i++)
    waiting += m->live[i]->st == M_WAIT;
  for (i = 0; i < m->ninflight; i++)
    writes += m->inflight[i]->op != DL_OP_FLUSH && m->inflight[i]->op != DL_OP_READ;
  FAIL_IF (dl_inflight (m->s) != m->ninflight || st.inflight != m->ninflight,
           "inflight %lu, model %zu", (unsigned long) dl_inflight (m->s),
           m->ninflight);
  FAIL_IF (st.inflight_writes != writes, "inflight writes %lu, model %zu",
           (unsigned long) st.inflight_writes, writes);
  FAIL_IF ((dl_waiting (m->s) == 0) != (waiting == 0),
           "waiting %lu, model %zu requests", (unsigned long) dl_waiting (m->s),
           waiting);
  FAIL_IF (dl_waiting (m->s) > waiting, "more waiting units than requests");
}

void
model_init (struct model *m, const struct dl_tunables *t, uint32_t align)
{
  memset (m, 0, sizeof *m);
  m->s = dl_sched_new (t, align);
  if (m->s == NULL)
    model_fail ("dl_sched_new refused valid tunables");
  m->t = *t;
  m->align = align;
  m->synced = true;
  m->batch_dir = -1;
  m->max_merge_hwm = t->max_merge;
  m->ref_on = true;
  m->r_batch_dir = -1;
}

void
model_advance (struct model *m, uint64_t ns)
{
  m->now += ns;
}

size_t
model_waiting (const struct model *m)
{
  size_t i, n = 0;
  for (i = 0; i < m->nlive; i++)
    n += m->live[i]->st == M_WAIT;
  return n;
}

void
model_insert (struct model *m, enum dl_op op, uint64_t offset,
              uint64_t length, uint32_t flags)
{
  struct mreq *x = calloc (1, sizeof *x);
  struct dl_stats a, b;

  if (x == NULL)
    abort ();
  x->r.op = op;
  x->r.offset = op == DL_OP_FLUSH ? 0 : offset;
  x->r.length = op == DL_OP_FLUSH ? 0 : length;
  x->r.flags = flags;
  x->r.priv = x;
  x->seq = m->next_seq++;
  x->ins_ns = m->now;
  x->st = M_WAIT;
  if (m->nlive == m->caplive) {
    m->caplive = m->caplive ? 2 * m->caplive : 64;
    m->live = realloc (m->live, m->caplive * sizeof *m->live);
    if (m->live == NULL)
      abort ();
  }
  m->live[m->nlive++] = x;
  x->was_held = blocked (m, m->nlive - 1);

  dl_sched_stats (m->s, &a);
  dl_insert (m->s, &x->r, m->now);
  dl_sched_stats (m->s, &b);
  m->n_inserted++;
  ref_insert (m, x);

  FAIL_IF (x->r.arrival_ns != m->now, "arrival_ns not the insert time");
  FAIL_IF (b.hazard_holds - a.hazard_holds != (x->was_held ? 1u : 0u),
           "seq %lu [%lu+%lu] op %d: held %d, model says %d",
           (unsigned long) x->seq, (unsigned long) offset,
           (unsigned long) length, op,
           (int) (b.hazard_holds - a.hazard_holds), x->was_held);
  FAIL_IF (!m->t.front_merges && b.merged_front != a.merged_front,
           "front merge with front_merges off");
  FAIL_IF (m->t.max_merge == 0 &&
           (b.merged_front != a.merged_front || b.merged_back != a.merged_back
            || b.merged_units != a.merged_units),
           "merge with max_merge 0");
  FAIL_IF (x->was_held && b.merged_front + b.merged_back !=
           a.merged_front + a.merged_back, "a held request merged");
  if (op == DL_OP_FLUSH)
    FAIL_IF (b.flushes != a.flushes + 1, "flushes counter");
  else
    FAIL_IF (b.inserted[dir_of (op)] != a.inserted[dir_of (op)] + 1,
             "inserted counter");
  check_gauges (m);
}

/* Does unit u contain live request x? */
static bool
in_unit (const struct dl_req *u, const struct mreq *x)
{
  const struct dl_req *r;
  for (r = u; r; r = r->next_member)
    if (r == &x->r)
      return true;
  return false;
}

static void
check_unit_shape (struct model *m, struct dl_req *u)
{
  struct dl_req *r;
  uint64_t end = u->unit_offset, n = 0;

  for (r = u; r; r = r->next_member) {
    n++;
    FAIL_IF (M (r)->st != M_WAIT, "seq %lu dispatched twice or after drain",
             (unsigned long) M (r)->seq);
    if (u->op == DL_OP_FLUSH) {
      FAIL_IF (r->op != DL_OP_FLUSH, "flush unit with a non-flush member");
      continue;
    }
    FAIL_IF (r->op != u->op || r->flags != u->flags,
             "unit mixes op/flags (%d/%u with %d/%u)", u->op, u->flags,
             r->op, r->flags);
    FAIL_IF (r->offset != end, "members not contiguous ascending");
    end = r->offset + r->length;
  }
  FAIL_IF (n != u->nr_members, "nr_members %u, counted %lu", u->nr_members,
           (unsigned long) n);
  if (u->op != DL_OP_FLUSH) {
    FAIL_IF (end - u->unit_offset != u->unit_length, "unit_length wrong");
    FAIL_IF (u->offset != u->unit_offset, "head is not the lowest member");
    FAIL_IF (n > 1 && u->unit_length > m->max_merge_hwm,
             "merged unit of %lu bytes > max_merge %lu",
             (unsigned long) u->unit_length,
             (unsigned long) m->max_merge_hwm);
  }
}

/* The deadline policy's rules, as far as the model can see them. */
static void
check_deadline (struct model *m, struct dl_req *u, const struct dl_stats *a,
                const struct dl_stats *b, struct mreq *oldest[2],
                bool expired_head[2], bool queued[2])
{
  int d = dir_of (u->op);
  uint64_t nb = (b->batches[0] + b->batches[1]) - (a->batches[0] + a->batches[1]);
  /* 1 if contiguous, else seek_cost; plus 1 per further 128 KiB. */
  uint64_t cost = (u->unit_offset == m->head_pos ? 1 : m->t.seek_cost) +
    (u->unit_length && m->t.size_cost ? (u->unit_length - 1) / (128 * 1024) : 0);

  FAIL_IF (nb > 1, "two batches started by one dispatch");
  /* seed_batches: a batch is chosen whole and walks the seed's list,
   * which wraps, from its head; the reference (ref.c) checks its order.
   */
  if (nb == 0 && m->seed_batch)
    return;
  if (nb == 0) {
    /* Continuing a batch: same direction, ascending, budget left. */
    FAIL_IF (m->synced && !m->batching, "a batch continued that had ended");
    if (m->batching) {
      FAIL_IF (d != m->batch_dir, "batch changed direction");
      FAIL_IF (u->unit_offset < m->last_end[d],
               "batch not ascending: %lu after end %lu",
               (unsigned long) u->unit_offset, (unsigned long) m->last_end[d]);
      FAIL_IF (m->synced && m->batch_cost >= m->t.fifo_batch,
               "batch went past fifo_batch (cost %lu)",
               (unsigned long) m->batch_cost);
    }
    m->batch_cost += cost;
    return;
  }

  FAIL_IF (b->batches[d] != a->batches[d] + 1, "batch counted in wrong dir");
  FAIL_IF (!queued[d], "batch of a direction with nothing queued");
  if (m->synced) {
    int want = queued[DL_WRITE] &&
      (!queued[DL_READ] || m->starved >= m->t.writes_starved ||
       expired_head[DL_WRITE]) ? DL_WRITE : DL_READ;
    FAIL_IF (d != want, "new batch is %s, rules say %s (starved %u)",
             d ? "write" : "read", want ? "write" : "read", m->starved);
    if (m->t.seed_batches)
      ;                         /* from the list's head: ref.c */
    else if (d != m->batch_dir || expired_head[d])
      FAIL_IF (!in_unit (u, oldest[d]),
               "new %s batch does not start at the oldest (seq %lu)",
               d ? "write" : "read", (unsigned long) oldest[d]->seq);
    else
      FAIL_IF (u->unit_offset < m->last_end[d] && !in_unit (u, oldest[d]),
               "new batch neither continues the sweep nor starts at the oldest");
  }
  if (d == DL_WRITE) {
    m->starved = 0;
    m->consec_reads = 0;
    m->synced = true;
  }
  else if (queued[DL_WRITE]) {
    m->starved++;
    m->consec_reads++;
    FAIL_IF (m->consec_reads > m->t.writes_starved,
             "%u read batches in a row while writes waited (writes_starved %u)",
             m->consec_reads, m->t.writes_starved);
  }
  m->batching = true;
  m->batch_dir = d;
  m->batch_cost = cost;
  m->seed_batch = m->t.seed_batches;
}

struct dl_req *
model_dispatch (struct model *m)
{
  struct dl_stats a, b;
  struct dl_req *u, *r, *tmp;
  struct mreq *oldest[2] = { NULL, NULL }, *oldest_any = NULL;
  bool expired_head[2] = { false, false }, queued[2] = { false, false };
  bool flush_waits = false, ready_any = false;
  size_t i;

  /* What is ready, as the model sees it. */
  for (i = 0; i < m->nlive; i++) {
    struct mreq *x = m->live[i];
    int d;
    if (x->st != M_WAIT)
      continue;
    if (x->r.op == DL_OP_FLUSH) {
      flush_waits = ready_any = true;
      continue;
    }
    if (blocked (m, i))
      continue;
    ready_any = true;
    d = dir_of (x->r.op);
    queued[d] = true;
    if (oldest[d] == NULL)
      oldest[d] = x;
    if (oldest_any == NULL)
      oldest_any = x;
  }
  for (i = 0; i < 2; i++)
    expired_head[i] = oldest[i] && expired (m, oldest[i]);

  dl_sched_stats (m->s, &a);
  ref_predict (m);
  u = dl_dispatch (m->s, m->now);
  dl_sched_stats (m->s, &b);
  ref_dispatched (m, u);

  if (u == NULL) {
    /* Beyond the seed (select.c, write_held): beside a dependent reader
     * a write waits while another is at the device.  Only then, and
     * only under deadline with preemption on, may a ready request wait.
     */
    bool held = b.write_holds == a.write_holds + 1;
    FAIL_IF (held && !(m->t.policy == DL_POLICY_DEADLINE && m->t.preempt &&
                       a.inflight_writes > 0 && queued[DL_WRITE]),
             "a write held without a write at the device (preempt %d, %lu in flight)",
             m->t.preempt, (unsigned long) a.inflight_writes);
    FAIL_IF (held && queued[DL_READ], "a write held while a read waits");
    FAIL_IF (ready_any && !held, "dispatch returned nothing while a request was ready");
    check_gauges (m);
    return NULL;
  }
  check_unit_shape (m, u);

  if (u->op == DL_OP_FLUSH) {
    /* Every waiting flush is in this one unit. */
    for (i = 0; i < m->nlive; i++)
      if (m->live[i]->st == M_WAIT && m->live[i]->r.op == DL_OP_FLUSH)
        FAIL_IF (!in_unit (u, m->live[i]), "a waiting flush left behind");
  }
  else {
    FAIL_IF (flush_waits, "a unit went before a waiting flush");
    /* Hazards: no member passes an earlier overlapping conflicting one. */
    for (r = u; r; r = r->next_member) {
      size_t k;
      for (k = 0; k < m->nlive && m->live[k] != M (r); k++)
        ;
      FAIL_IF (k == m->nlive, "dispatched a request the model never saw");
      FAIL_IF (blocked (m, k), "hazard: seq %lu [%lu+%lu] dispatched before an "
               "earlier overlapping request completed",
               (unsigned long) M (r)->seq, (unsigned long) r->offset,
               (unsigned long) r->length);
    }
    if (m->t.policy == DL_POLICY_NOOP)
      FAIL_IF (!in_unit (u, oldest_any), "noop: not the oldest unit");
    if (m->t.policy == DL_POLICY_DEADLINE)
      check_deadline (m, u, &a, &b, oldest, expired_head, queued);
    else
      m->batching = false;
    FAIL_IF (b.dispatched[u->dir] != a.dispatched[u->dir] + 1,
             "dispatched counter");

    /* The read deadline bound (see the top of this file). */
    if (m->t.policy == DL_POLICY_DEADLINE && m->t.write_expire_ns == 0 &&
        m->t.writes_starved >= 1 && m->t.seek_cost >= 1 && m->synced &&
        oldest[DL_READ] && expired_head[DL_READ]) {
      if (m->watch_seq != oldest[DL_READ]->seq + 1) {
        m->watch_seq = oldest[DL_READ]->seq + 1;
        m->watch_count = 0;
      }
      if (in_unit (u, oldest[DL_READ]))
        m->watch_seq = 0;
      else
        FAIL_IF (++m->watch_count > 2 * (uint64_t) m->t.fifo_batch,
                 "expired oldest read seq %lu passed by %lu units",
                 (unsigned long) oldest[DL_READ]->seq,
                 (unsigned long) m->watch_count);
    }
    else
      m->watch_seq = 0;

    m->head_pos = u->unit_offset + u->unit_length;
    m->last_end[u->dir] = m->head_pos;
  }

  DL_FOREACH_MEMBER (r, u, tmp) {
    M (r)->st = M_INFLIGHT;
    M (r)->disp_ns = m->now;
    if (r->op == DL_OP_READ && m->now - M (r)->ins_ns > m->max_read_wait_ns)
      m->max_read_wait_ns = m->now - M (r)->ins_ns;
  }
  if (m->ninflight == m->capinflight) {
    m->capinflight = m->capinflight ? 2 * m->capinflight : 16;
    m->inflight = realloc (m->inflight, m->capinflight * sizeof *m->inflight);
    if (m->inflight == NULL)
      abort ();
  }
  m->inflight[m->ninflight++] = u;
  m->n_dispatched_units++;
  check_gauges (m);
  return u;
}

/* Drop done and drained requests from the live list, keeping order. */
static void
compact (struct model *m)
{
  size_t i, j = 0;

  for (i = 0; i < m->nlive; i++) {
    struct mreq *x = m->live[i];
    if (x->st == M_DONE || x->st == M_DRAINED)
      free (x);
    else
      m->live[j++] = x;
  }
  m->nlive = j;
}

void
model_complete (struct model *m, size_t k)
{
  struct dl_req *u, *r, *tmp;

  if (m->ninflight == 0)
    return;
  k %= m->ninflight;
  u = m->inflight[k];
  m->inflight[k] = m->inflight[--m->ninflight];
  dl_complete (m->s, u, m->now);
  ref_completed (m, u);
  DL_FOREACH_MEMBER (r, u, tmp) {
    FAIL_IF (M (r)->st != M_INFLIGHT, "completed a request not in flight");
    M (r)->st = M_DONE;
    m->n_members_done++;
  }
  m->n_completed_units++;
  compact (m);
  check_gauges (m);
}

void
model_drain_all (struct model *m)
{
  struct dl_req *u, *r, *tmp;
  size_t i;

  while ((u = dl_drain (m->s)) != NULL) {
    DL_FOREACH_MEMBER (r, u, tmp) {
      FAIL_IF (M (r)->st != M_WAIT, "drained a request not waiting");
      M (r)->st = M_DRAINED;
      m->n_drained++;
    }
  }
  for (i = 0; i < m->nlive; i++)
    FAIL_IF (m->live[i]->st == M_WAIT, "a waiting request was not drained");
  FAIL_IF (dl_waiting (m->s) != 0, "waiting after drain");
  ref_drained (m);
  compact (m);
  m->batching = false;          /* drained batches cannot continue */
  m->synced = false;
  m->watch_seq = 0;
  check_gauges (m);
}

int
model_set_tunables (struct model *m, const struct dl_tunables *t)
{
  char err[256];
  int r = dl_sched_set_tunables (m->s, t, err, sizeof err);

  if (r == 0) {
    ref_tunables (m, &m->t, t);
    if (t->policy != m->t.policy)
      m->batching = false;
    m->t = *t;
    if (t->max_merge > m->max_merge_hwm)
      m->max_merge_hwm = t->max_merge;
    /* The core's starved count and batch carry over into the new
     * values: stop predicting until the next write batch.
     */
    m->synced = false;
    m->consec_reads = 0;
    m->watch_seq = 0;
  }
  return r;
}

void
model_free (struct model *m)
{
  while (m->ninflight)
    model_complete (m, 0);
  model_drain_all (m);
  while (m->ninflight)
    model_complete (m, 0);
  FAIL_IF (m->nlive != 0, "requests left over");
  ref_free (m);
  dl_sched_free (m->s);
  free (m->live);
  free (m->inflight);
}
