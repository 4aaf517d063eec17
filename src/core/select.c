/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: which unit goes to the device next (the seed's
 * deadline_next_request), one unit per call.
 *
 * The seed moves a whole batch to a dispatch list at once; here the
 * engine asks for one unit each time the device has a free slot, as
 * mq-deadline does, so that a request arriving during a batch can still
 * join it if it lies ahead in the sweep.  The order of the rules is the
 * seed's:
 *
 *   0. Flushes first.  A flush covers only writes already completed, so
 *      it never waits behind queued writes (NBD semantics); it has no
 *      deadline to compute and cannot jump ahead of anything it needed.
 *   1. A batch in progress continues along the sorted queue of its
 *      direction, ascending, until it has spent fifo_batch cost units:
 *      a unit contiguous with the previous one costs 1, a seek costs
 *      seek_cost, and a large merged unit 1 more per 128 KiB
 *      (cost.c).  (The seed's dispatch list.)
 *   2. Otherwise a new batch.  Writes if they have been starved for
 *      writes_starved read batches, or if the oldest write has passed
 *      write_expire (mq-deadline's write deadline; 0 turns it off, as
 *      the seed), or if there are no reads.
 *   3. Else reads.  The batch starts at the oldest read if it has
 *      expired (read_expire) ...
 *   4. ... or if the direction changed: starting a new direction at its
 *      lowest offset, as the seed did, starves high offsets; starting at
 *      the oldest is mq-deadline's fix.  Otherwise the sweep continues
 *      from where the last batch of this direction stopped.
 *
 * With seed_batches (profile seed), rules 1, 3 and 4 are the seed's own
 * instead (seed_batch below): a batch is chosen whole when it starts and
 * new arrivals wait for the next one; a batch that is not expired starts
 * at the head of the seed's sorted list, which is where the last batch
 * taken from the head stopped; and the size of a unit costs nothing
 * (size_cost off).
 *
 * Beyond the seed (both on by default, off in profile seed): a read
 * of a reader that waits for each read (cat; antic_read_preempts) may
 * preempt a write batch (continue_batch), writes take at most half of
 * the device while such a reader is about (write_held), and a read batch
 * may wait for such a reader instead of ending (anticipate.c).
 * Preemption is on because it was the one mechanism that shortened the
 * AMIW cat on every client path (bench/results/README).  preempt_min is
 * 16, one seek's worth: a write batch that starts with a seek still
 * writes its first unit, and writes_starved still gives the writes a
 * batch after every two read batches; a larger value gives the writes
 * more and the reader less.  The writer pays where a dependent reader
 * keeps coming; a reader that keeps reads queued never preempts, so
 * beside it both sides get what the seed gives them.  (The runs behind
 * these choices: bench/results/tuning.md, "preempt".)
 *
 * The comparison policies use the same queues: noop serves units in
 * arrival order, elevator sweeps one C-LOOK over both directions with no
 * deadline at all (the behaviour the seed shows starving reads).
 */
#include <config.h>

#include "sched-internal.h"

/* Beyond the seed, a veto on rule 1: a read of a dependent reader
 * arriving during a write batch ends it once the batch has spent
 * preempt_min cost units, so that writes still progress and
 * writes_starved still counts batches.  Off in profile seed.
 */
static bool
preempt_ends_batch (struct dl_sched *s)
{
  if (s->batch_dir != DL_WRITE || !s->t.preempt ||
      s->batch_cost < s->t.preempt_min || s->st.queued_preempting == 0)
    return false;
  s->st.preemptions++;
  return true;
}

/* Rule 1: the batch in progress goes on along the sorted queue of its
 * direction while it has cost units left.  Beyond the seed, when the
 * read sweep has run out, anticipation may hand it the reader's next
 * read instead (anticipate.c).
 */
static struct dl_req *
continue_batch (struct dl_sched *s)
{
  struct dl_req *u;

  if (!s->batching || s->batch_cost >= s->t.fifo_batch)
    return NULL;
  if (preempt_ends_batch (s))
    return NULL;
  u = sortq_at_or_after (s, s->batch_dir, s->last_end[s->batch_dir]);
  if (u == NULL && s->batch_dir == DL_READ && antic_extends_batch (s))
    u = fifo_oldest (s, DL_READ); /* a dependent reader's next read */
  return u;
}

/* Beyond the seed: writes take at most half of the device's slots
 * beside a dependent reader.  A read cannot overtake a unit already at
 * the device, so a read of cat arriving during a write batch waits for
 * every write in flight there (deadline-depth of them) before
 * preemption can help it.  While such a reader has been seen within
 * DL_READER_RECENT_NS and no read is queued, writes are held back once
 * they fill half of the caller's depth (at least one): on a disk at the
 * default depth of 2, one write at a time, and the other slot waits for
 * the reader's next read; an SSD at depth 32 keeps 16 writes going.
 * Writes lose little on a disk that streams contiguous writes back to
 * back, and the rule is gone as soon as the reader is: a write flood
 * alone keeps every slot.  (The kernel's writeback throttling lowers
 * the write depth when reads suffer, for the same reason.)  Part of
 * preemption: off with it (profile seed).
 */
static bool
write_held (struct dl_sched *s, uint64_t now)
{
  uint32_t room = s->depth > 2 ? s->depth / 2 : 1;  /* unset: depth 2 */

  /* The free slot is kept for a read yet to come.  A read already
   * queued behind the write batch is preemption's business (after
   * preempt_min): holding the slot for it would only leave it idle.
   */
  if (!s->t.preempt || !sortq_empty (s, DL_READ) ||
      s->st.inflight_writes < room || !dl_reader_recent (s, now))
    return false;
  s->st.write_holds++;
  return true;
}

/* Rules 2 and 3: would a new batch be of writes? */
static bool
writes_next (struct dl_sched *s, uint64_t now)
{
  bool reads = !sortq_empty (s, DL_READ);
  bool writes = !sortq_empty (s, DL_WRITE);

  return writes && (!reads || s->starved >= s->t.writes_starved ||
                    fifo_expired (s, DL_WRITE, now));
}

/* ... and its direction, counted (writes: what writes_next said). */
static enum dl_dir
batch_direction (struct dl_sched *s, bool writes)
{
  if (writes) {
    if (!sortq_empty (s, DL_READ))
      s->st.starved_switches++;
    s->starved = 0;
    return DL_WRITE;
  }
  if (!sortq_empty (s, DL_WRITE))
    s->starved++;
  return DL_READ;
}

/* Rules 3 and 4: where a new batch starts. */
static struct dl_req *
batch_start (struct dl_sched *s, enum dl_dir d, uint64_t now)
{
  struct dl_req *u;

  if (fifo_expired (s, d, now)) {
    s->st.expired[d]++;
    return fifo_oldest (s, d);
  }
  if (s->batch_dir != (int) d)
    return fifo_oldest (s, d);
  u = sortq_at_or_after (s, d, s->last_end[d]);
  return u ? u : fifo_oldest (s, d);
}

/* seed_batches: the seed's sort_list.  deadline_add_request inserts a
 * request after the one the elevator's scan (bio_rq_in_between) names,
 * else at the tail, so the list is ascending from its head, then wraps
 * once to the lowest offsets, ascending again (C-LOOK from the head):
 * a request above the head goes into the first lap, one below it into
 * the second.  The head is the request that went in first after the
 * list was last empty (unit.c, unit_relink) until a batch takes it.
 * Here the sorted queue holds the units by offset, and the list order is
 * the queue read from the head, wrapping once.  (Equal offsets: by
 * arrival, where the seed put a request equal to its neighbour after
 * the wrap; overlapping reads only.)
 */
static bool
seed_second_lap (const struct dl_sched *s, enum dl_dir d, const struct dl_req *u)
{
  return u->unit_offset < s->seed_head[d].off ||
    (u->unit_offset == s->seed_head[d].off && u->seq < s->seed_head[d].seq);
}

static struct dl_req *
seed_list_first (struct dl_sched *s, enum dl_dir d)
{
  struct dl_req *u = sortq_at_or_after (s, d, s->seed_head[d].off);

  while (u && seed_second_lap (s, d, u))
    u = sortq_next (u);
  return u ? u : sortq_first (s, d);
}

/* The request after u in the list, or NULL at its tail. */
static struct dl_req *
seed_list_next (struct dl_sched *s, enum dl_dir d, struct dl_req *u)
{
  struct dl_req *n = sortq_next (u);

  if (seed_second_lap (s, d, u))
    return n && seed_second_lap (s, d, n) ? n : NULL;
  if (n)
    return n;
  n = sortq_first (s, d);       /* the wrap, if there is a second lap */
  return n && seed_second_lap (s, d, n) ? n : NULL;
}

/* deadline_move_requests: from u along the list to its tail, while the
 * batch has cost units left (fifo_batch, minus 1 for a request that
 * starts where the last one ended, seek_cost for any other), all moved
 * at once to the dispatch list.  A batch that took the head leaves the
 * list's head where it stopped.  Returns the first unit of the batch.
 */
static struct dl_req *
seed_batch (struct dl_sched *s, enum dl_dir d, struct dl_req *u)
{
  struct dl_req *first = u, *next;
  bool from_head = u == seed_list_first (s, d);
  uint64_t last = s->head_pos;
  int64_t count = s->t.fifo_batch;

  do {
    next = seed_list_next (s, d, u);
    unit_unlink (s, u);
    hazard_busy_add (s, u);     /* it holds overlapping requests */
    u->state = DL_S_BATCHED;
    TAILQ_INSERT_TAIL (&s->batch, u, fifo_link);
    s->batch_n++;
    count -= u->unit_offset == last ? 1 : (int64_t) s->t.seek_cost;
    last = dl_end (u);
    u = next;
  } while (u && count > 0);
  if (from_head) {
    s->seed_head[d].valid = u != NULL;
    if (u) {
      s->seed_head[d].off = u->unit_offset;
      s->seed_head[d].seq = u->seq;
    }
  }
  return first;
}

/* seed_batches: a new batch, chosen whole (rules 3 and 4 as the seed
 * has them): from the expired request, else from the list's head.
 */
static struct dl_req *
seed_batch_start (struct dl_sched *s, enum dl_dir d, uint64_t now)
{
  struct dl_req *u;

  if (fifo_expired (s, d, now)) {
    s->st.expired[d]++;
    u = seed_batch (s, d, fifo_oldest (s, d));
  }
  else
    u = seed_batch (s, d, seed_list_first (s, d));
  s->batch_dir = d;
  s->st.batches[d]++;
  return u;                     /* s->batching stays false */
}

/* A new batch, unit by unit (rules 3 and 4): where it starts. */
static struct dl_req *
new_batch_start (struct dl_sched *s, enum dl_dir d, uint64_t now)
{
  struct dl_req *u = batch_start (s, d, now);

  s->batching = true;
  s->batch_dir = d;
  s->batch_cost = 0;
  s->st.batches[d]++;
  return u;
}

/* Beyond the seed, a hook before rule 1: beside a dependent reader the
 * device goes in time slices (slice.c), and within a slice only its
 * direction is served, ascending from where that direction last ended
 * (the oldest first once it has expired).  A read slice with no read
 * queued keeps the device for the reader's next one; a write slice
 * sends no write that would run past its end.  Off by default
 * (read_slice 0) and in profile seed.
 */
static struct dl_req *
slice_next (struct dl_sched *s, enum dl_dir d, uint64_t now)
{
  struct dl_req *u;

  s->batching = false;          /* after the slices, a batch starts afresh */
  if (sortq_empty (s, d))
    return NULL;
  if (fifo_expired (s, d, now))
    u = fifo_oldest (s, d);
  else {
    u = sortq_at_or_after (s, d, s->last_end[d]);
    if (u == NULL)
      u = fifo_oldest (s, d);
  }
  if (d == DL_WRITE && !slice_write_fits (s, u, now)) {
    /* Writes at the device finish the slice; once they have, the rest
     * goes to the next one.
     */
    if (s->st.inflight_writes > 0)
      return NULL;
    slice_cut (s, now);
    d = slice_direction (s, now);
    return d >= 0 ? slice_next (s, d, now) : NULL; /* (a new slice's
                                                       first unit fits) */
  }
  slice_sent (s);
  s->batch_dir = d;
  return u;
}

/* The seed's deadline_next_request, one unit per call.  The extensions
 * enter at four marked points, each a function of its own and each off
 * in profile seed: time slices (slice_next, and off by default),
 * preemption inside continue_batch, the write hold (write_held) and
 * anticipation (antic_hold).
 */
static struct dl_req *
deadline_next (struct dl_sched *s, uint64_t now)
{
  struct dl_req *u;
  bool writes;
  int slice = slice_direction (s, now);

  if (slice >= 0)
    return slice_next (s, slice, now);  /* hook: time slices */

  /* Rule 1: a batch in progress continues. */
  u = s->t.seed_batches ? NULL : continue_batch (s);
  if (u)
    return u->dir == DL_WRITE && write_held (s, now) ? NULL : u; /* veto */
  if (antic_hold (s, now))
    return NULL;                /* hook: the reader will be back */
  s->batching = false;
  if (sortq_empty (s, DL_READ) && sortq_empty (s, DL_WRITE))
    return NULL;

  /* Rules 2 and 3: the direction of the new batch. */
  writes = writes_next (s, now);
  if (writes && write_held (s, now))
    return NULL;                /* veto: the write batch starts when a
                                   write at the device completes (nothing
                                   counted yet) */

  /* Rules 3 and 4: where it starts. */
  if (s->t.seed_batches)
    return seed_batch_start (s, batch_direction (s, writes), now);
  return new_batch_start (s, batch_direction (s, writes), now);
}

static struct dl_req *
noop_next (struct dl_sched *s)
{
  struct dl_req *r = fifo_oldest (s, DL_READ);
  struct dl_req *w = fifo_oldest (s, DL_WRITE);

  if (r == NULL)
    return w;
  if (w == NULL)
    return r;
  return w->seq < r->seq ? w : r;
}

static struct dl_req *
lower (struct dl_req *a, struct dl_req *b)
{
  if (a == NULL)
    return b;
  if (b == NULL)
    return a;
  if (a->unit_offset != b->unit_offset)
    return a->unit_offset < b->unit_offset ? a : b;
  return a->seq < b->seq ? a : b;
}

static struct dl_req *
elevator_next (struct dl_sched *s)
{
  struct dl_req *u = lower (sortq_at_or_after (s, DL_READ, s->head_pos),
                            sortq_at_or_after (s, DL_WRITE, s->head_pos));

  if (u == NULL)                /* end of the sweep: back to the lowest */
    u = lower (sortq_first (s, DL_READ), sortq_first (s, DL_WRITE));
  return u;
}

struct dl_req *
select_next (struct dl_sched *s, uint64_t now)
{
  if (s->pending_flush)
    return s->pending_flush;
  if (!TAILQ_EMPTY (&s->batch))
    return TAILQ_FIRST (&s->batch);     /* seed_batches */

  switch (s->t.policy) {
  case DL_POLICY_NOOP:
    return noop_next (s);
  case DL_POLICY_ELEVATOR:
    return elevator_next (s);
  case DL_POLICY_DEADLINE:
  default:
    return deadline_next (s, now);
  }
}
