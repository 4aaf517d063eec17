/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: anticipation (beyond the seed: "deceptive idleness").
 *
 * A reader such as cat has one read at the device at a time.  When it
 * completes, the read queue is empty for the moment it takes the
 * reader to ask for the next one, so the seed's scheduler ends the read
 * batch and starts a write batch, and that next read waits behind up to
 * fifo_batch cost units of writes.  read_expire only bounds the worst
 * case.  The anticipatory scheduler (2003) answered this by idling the
 * disk briefly after a read; so do we, within the read batch:
 *
 *   - While a read of a reader that "pays" is at the device, and for up
 *     to anticipate after it completes, a read batch with budget left
 *     is not ended for lack of reads: the device waits (dl_dispatch
 *     returns nothing and dl_next_timer says until when).  The reader's
 *     next read ends the wait at once and continues the batch, paying
 *     its seek cost like any other, so writes_starved still counts
 *     batches and writes still get theirs.
 *   - A reader pays if its next read has come soon after the previous
 *     completed (mean think time within anticipate) and near it (mean
 *     distance within ANTIC_NEAR), and if it does not keep several reads
 *     in flight (then it is never idle and needs no waiting).  This is
 *     learned per reader (followed by locality: see reader_for), so a
 *     random reader or a writer never makes the disk idle.  A new reader
 *     is given the benefit of the doubt for its first reads, as in the
 *     2003 design.
 *   - The wait is the reader's usual think time with a margin, and
 *     anticipate only its ceiling (hold_for); the time the device idles
 *     is charged to the read batch (a quarter of a seek per wait), so
 *     writes_starved still bounds what the reader takes from the writes.
 *   - An expired write ends any wait: deadlines come first.
 *
 * The default ceiling, 20 ms, is longer than the 2003 scheduler's 6 ms
 * because a loaded machine or a deep client stack (loop, FUSE, a file
 * system) makes think times longer; since the wait is the reader's own
 * think time with a margin (hold_for), a long ceiling costs a quick
 * reader nothing.  (The runs behind it: bench/results/tuning.md,
 * "anticipate".)
 */
#include <config.h>

#include <string.h>

#include "sched-internal.h"

/* A reader whose next read lands farther than this on average seeks
 * anyway: keeping the head for it saves nothing.
 */
#define ANTIC_NEAR (64ULL << 20)
/* Added to a reader's think time margin (hold_for): scheduling noise. */
#define ANTIC_SLACK_NS 1000000ULL
/* Reads needed before a reader's pattern is trusted. */
#define ANTIC_LEARN 2

static uint64_t
ewma (uint64_t mean, uint64_t sample, uint32_t n)
{
  return n == 0 ? sample : mean - mean / 8 + sample / 8;
}

/* Waiting for a reader needs anticipate; knowing the readers is needed
 * by preemption too (antic_read_preempts).
 */
static bool
enabled (const struct dl_sched *s)
{
  return s->t.anticipate_ns > 0 && s->t.policy == DL_POLICY_DEADLINE;
}

static bool
learning (const struct dl_sched *s)
{
  return s->t.policy == DL_POLICY_DEADLINE &&
    (s->t.anticipate_ns > 0 || s->t.preempt);
}

static uint64_t
last_seen (const struct dl_stream *st)
{
  return st->last_arrival_ns > st->last_done_ns
    ? st->last_arrival_ns : st->last_done_ns;
}

static uint64_t
distance (uint64_t a, uint64_t b)
{
  return a > b ? a - b : b - a;
}

/* A reader's slot from the key its reads carry (O(1): the key holds the
 * slot's index), or NULL if the slot has since gone to another reader.
 */
static struct dl_stream *
reader_slot (struct dl_sched *s, uint64_t key)
{
  struct dl_stream *st;

  if (key == 0)
    return NULL;
  st = &s->streams[key % DL_STREAMS];
  return st->key == key ? st : NULL;
}

/* Who sent this read?  NBD says only which connection brought it, and
 * that is a poor name for a reader: nbdfuse and the kernel's client
 * spread one reader's reads over several connections, and one kernel
 * connection carries every process's.  What the disk cares about is
 * where the next read lands, so a reader is followed by locality first:
 *
 *   1. the reader last seen on this connection, if the read lands near
 *      where its last read ended;
 *   2. else the nearest reader idle since a recent completion (its
 *      next read may come on any connection): the reader waited for
 *      wins a tie;
 *   3. else the connection's reader, farther away (a reader that seeks:
 *      its mean distance will say that waiting for it does not pay; a
 *      random reader on one connection thus stays one reader, who keeps
 *      reads in flight and never makes the device wait);
 *   4. else a new reader, in a free or the least recently seen slot.
 */
static struct dl_stream *
reader_for (struct dl_sched *s, const struct dl_req *r, uint64_t now)
{
  const uint64_t adopt_ns = 10 * s->t.anticipate_ns;
  struct dl_stream *same_conn = NULL, *near = NULL, *victim = NULL;
  uint64_t near_dist = UINT64_MAX;
  size_t i;

  if (r->stream == 0)
    return NULL;                /* unknown origin: not followed */
  for (i = 0; i < DL_STREAMS; i++) {
    struct dl_stream *st = &s->streams[i];
    uint64_t d;

    if (st->key == 0) {
      if (victim == NULL || victim->key != 0)
        victim = st;
      continue;
    }
    if (victim == NULL || (victim->key != 0 && last_seen (st) < last_seen (victim)))
      victim = st;
    d = distance (r->offset, st->last_end);
    if (st->conn == r->stream &&
        (same_conn == NULL || last_seen (st) > last_seen (same_conn)))
      same_conn = st;
    if (d <= ANTIC_NEAR && st->outstanding == 0 &&
        st->last_done_ns != 0 && now - st->last_done_ns <= adopt_ns &&
        (d < near_dist ||
         (d == near_dist && s->antic.on && s->antic.reader == st->key))) {
      near = st;
      near_dist = d;
    }
  }
  if (same_conn && distance (r->offset, same_conn->last_end) <= ANTIC_NEAR)
    return same_conn;
  if (near)
    return near;
  if (same_conn)
    return same_conn;
  memset (victim, 0, sizeof *victim);
  victim->conn = r->stream;
  s->stream_gen++;
  victim->key = s->stream_gen * DL_STREAMS + (uint64_t) (victim - s->streams);
  return victim;
}

/* How long to hold the device for this reader: its usual think time
 * with a margin, within anticipate.  anticipate is thus a ceiling, not
 * the wait: a reader that comes back quickly costs the writes only its
 * own think time and the slack when it does not come, while one behind
 * a deep stack (loop device, FUSE, a file system) can still be waited
 * for.  Until its pattern is known, the whole ceiling.
 */
static uint64_t
hold_for (const struct dl_sched *s, const struct dl_stream *st)
{
  uint64_t h;

  if (st->dependent < ANTIC_LEARN)
    return s->t.anticipate_ns;
  h = st->think_ns + st->think_ns / 2 + ANTIC_SLACK_NS;
  return h < s->t.anticipate_ns ? h : s->t.anticipate_ns;
}

/* Does the reader wait for each read before it sends the next (not yet
 * known: assume so)?  Both anticipation and preemption ask this.
 */
static bool
learned (const struct dl_stream *st)
{
  return st->dependent + st->overlapped >= ANTIC_LEARN;
}

static bool
waits_for_each_read (const struct dl_stream *st)
{
  return !learned (st) || st->overlapped <= st->dependent;
}

static bool
pays (const struct dl_sched *s, const struct dl_stream *st)
{
  if (!waits_for_each_read (st))
    return false;
  return !learned (st) ||
    (st->think_ns <= s->t.anticipate_ns && st->seek <= ANTIC_NEAR);
}

/* A read arrived: learn the reader's think time and distance, and end
 * a wait for it.
 */
void
antic_read_arrived (struct dl_sched *s, struct dl_req *r, uint64_t now)
{
  struct dl_stream *st;

  r->reader = 0;
  if (!learning (s))
    return;
  st = reader_for (s, r, now);
  if (st == NULL)
    return;
  r->reader = st->key;
  /* A reader keeps the connection it was first seen on: a read from
   * another connection that it adopts (rule 2) must not take that
   * reader's next read away from it (rule 1).
   */
  if (st->conn == 0)
    st->conn = r->stream;
  /* Whether the reader had another read outstanding, not whether its
   * last one had completed: a reader at depth 32 sends each read just
   * after a completion too, but 31 others are still waiting.
   */
  if (st->outstanding == 0 && st->last_done_ns != 0) {
    /* Every read of its had completed: a dependent read. */
    uint64_t think = now >= st->last_done_ns ? now - st->last_done_ns : 0;

    st->think_ns = ewma (st->think_ns, think, st->dependent);
    st->seek = ewma (st->seek, distance (r->offset, st->last_end), st->dependent);
    st->dependent++;
  }
  else if (st->outstanding > 0)
    st->overlapped++;
  st->outstanding++;
  if (st->dependent + st->overlapped > 1000) {
    st->dependent /= 2;         /* let old behaviour fade */
    st->overlapped /= 2;
  }
  st->last_arrival_ns = now;
  /* For slices (slice.c) a reader that waits for each read is enough:
   * a read slice gives it the device whether or not idling for it
   * pays, as it does not on a disk whose seeks are short.
   */
  if (learned (st) && waits_for_each_read (st))
    s->antic.dependent_ns = now;

  if (s->antic.on && s->antic.reader == st->key) {
    if (s->antic.counted) {
      s->st.antic_hits++;
      /* The device idled for it: that time is the batch's too. */
      if (s->batching && s->batch_dir == DL_READ)
        cost_charge (s, s->t.seek_cost / 4 ? s->t.seek_cost / 4 : 1);
    }
    s->antic.on = false;
    s->antic.extend = true;     /* the batch goes on with this read */
  }
}

/* May this read end a write batch (select.c's preemption)?  Only if its
 * reader waits for each read before it asks for the next, as cat does:
 * such a reader loses a whole write batch per read, and ending the
 * batch gives it back.  A reader that keeps reads queued (fio at depth
 * 32, a database) always has one waiting, so preemption would end every
 * write batch after preempt_min and take from the writes without
 * shortening anything: its reads get their turn by the seed's rules, as
 * before.  A new reader, or one whose origin is unknown, may.
 */
bool
antic_read_preempts (struct dl_sched *s, const struct dl_req *r)
{
  const struct dl_stream *st;

  if (!s->t.preempt || s->t.policy != DL_POLICY_DEADLINE)
    return false;
  st = reader_slot (s, r->reader);
  return st == NULL || waits_for_each_read (st);
}

/* A read goes to the device: wait for its reader's next one if it pays. */
void
antic_read_dispatched (struct dl_sched *s, struct dl_req *u)
{
  struct dl_stream *st;

  s->antic.extend = false;
  if (!enabled (s))
    return;
  st = reader_slot (s, u->reader);
  if (st == NULL || !pays (s, st)) {
    if (s->antic.on && s->antic.reader == u->reader)
      s->antic.on = false;
    return;
  }
  s->antic.on = true;
  s->antic.reader = u->reader;
  s->antic.hold_ns = hold_for (s, st);
  s->antic.unit = u;
  s->antic.until = UINT64_MAX;
  s->antic.counted = false;
}

/* A read completed: the wait, if it is for this read, starts now. */
void
antic_read_done (struct dl_sched *s, struct dl_req *u, uint64_t now)
{
  struct dl_req *m;

  /* Not gated on learning(): a read taken while learning was on must be
   * uncounted even if the tunables changed since, or its reader would
   * look like one with a read outstanding forever.  Reads taken while
   * not learning carry no reader and are skipped.
   */
  for (m = u; m; m = m->next_member) {
    struct dl_stream *st = reader_slot (s, m->reader);

    if (st) {
      st->last_done_ns = now;
      st->last_end = m->offset + m->length;
      if (st->outstanding > 0)
        st->outstanding--;
    }
  }
  if (s->antic.on && s->antic.unit == u) {
    s->antic.unit = NULL;
    s->antic.until = now + s->antic.hold_ns;
  }
}

/* When the reader waited for has come back, the read batch goes on with
 * the oldest read even if it lies behind the sweep, rather than ending:
 * it is that reader's next read.
 */
bool
antic_extends_batch (struct dl_sched *s)
{
  return s->antic.extend && enabled (s);
}

/* Called when the batch in progress has nothing to continue with: true
 * to keep the device waiting for the anticipated read.
 */
bool
antic_hold (struct dl_sched *s, uint64_t now)
{
  s->antic.extend = false;
  if (!s->antic.on)
    return false;
  if (!enabled (s) || !s->batching || s->batch_dir != DL_READ ||
      s->batch_cost >= s->t.fifo_batch || fifo_expired (s, DL_WRITE, now)) {
    s->antic.on = false;        /* the batch is over: nothing to keep */
    return false;
  }
  if (s->antic.unit == NULL && now >= s->antic.until) {
    s->antic.on = false;
    s->st.antic_misses++;
    return false;
  }
  if (!sortq_empty (s, DL_READ) || sortq_empty (s, DL_WRITE))
    return false;               /* reads to serve, or nothing to keep out */
  if (!s->antic.counted) {
    s->antic.counted = true;
    s->st.antic_waits++;
  }
  return true;
}

/* Has a reader that waits for each read, and pays to wait for, been
 * seen within window?  (slice.c: time slices are for such a reader.)
 */
bool
antic_reader_recent (const struct dl_sched *s, uint64_t now, uint64_t window)
{
  return s->antic.dependent_ns != 0 && now <= s->antic.dependent_ns + window;
}

/* Is the device being kept for a reader's next read: its read at the
 * device, or completed less than its wait ago?
 */
bool
antic_expecting (const struct dl_sched *s, uint64_t now)
{
  return s->antic.on && (s->antic.unit != NULL || now < s->antic.until);
}

uint64_t
antic_timer (const struct dl_sched *s, uint64_t now)
{
  if (s->antic.on && s->antic.unit == NULL && s->antic.until > now)
    return s->antic.until;
  return 0;
}

/* Is this read's reader one that waits for each read and whose reads
 * land near each other (ahead.c: worth reading ahead of)?
 */
bool
antic_reader_near (const struct dl_sched *s, const struct dl_req *u)
{
  const struct dl_stream *st = reader_slot ((struct dl_sched *) s, u->reader);

  return st != NULL && st->dependent >= ANTIC_LEARN &&
    waits_for_each_read (st) && st->seek <= ANTIC_NEAR;
}
