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
 *     learned per stream (the caller's connection), so a random reader
 *     or a writer never makes the disk idle.  A new reader is given the
 *     benefit of the doubt for its first reads, as in the 2003 design.
 *   - An expired write ends any wait: deadlines come first.
 *
 * The default, 5 ms (the 2003 scheduler used about 6), was measured on
 * the slow-disk fixture: a sequential reader at depth 1 under a deep
 * sequential writer went from 13 to 462 reads/s (median 90 ms to
 * 0.2 ms), the writer from 77 to 66 MiB/s; a random reader at depth 32
 * was unchanged.  The man page has the whole table.
 */
#include <config.h>

#include <string.h>

#include "sched-internal.h"

/* A reader whose next read lands farther than this on average seeks
 * anyway: keeping the head for it saves nothing.
 */
#define ANTIC_NEAR (64ULL << 20)
/* Reads needed before a reader's pattern is trusted. */
#define ANTIC_LEARN 2

static uint64_t
ewma (uint64_t mean, uint64_t sample, uint32_t n)
{
  return n == 0 ? sample : mean - mean / 8 + sample / 8;
}

static bool
enabled (const struct dl_sched *s)
{
  return s->t.anticipate_ns > 0 && s->t.policy == DL_POLICY_DEADLINE;
}

/* The stream's slot; with create, a free or the least recent one. */
static struct dl_stream *
stream_slot (struct dl_sched *s, uint64_t id, bool create)
{
  struct dl_stream *victim = NULL;
  size_t i;

  for (i = 0; i < DL_STREAMS; i++) {
    struct dl_stream *st = &s->streams[i];
    uint64_t seen = st->last_arrival_ns > st->last_done_ns
      ? st->last_arrival_ns : st->last_done_ns;

    if (st->id == id)
      return st;
    if (victim == NULL || st->id == 0 ||
        (victim->id != 0 && seen < (victim->last_arrival_ns > victim->last_done_ns
                                    ? victim->last_arrival_ns : victim->last_done_ns)))
      victim = st;
  }
  if (!create)
    return NULL;
  memset (victim, 0, sizeof *victim);
  victim->id = id;
  return victim;
}

static bool
pays (const struct dl_sched *s, const struct dl_stream *st)
{
  if (st->dependent + st->overlapped < ANTIC_LEARN)
    return true;
  if (st->overlapped > st->dependent)
    return false;
  return st->think_ns <= s->t.anticipate_ns && st->seek <= ANTIC_NEAR;
}

/* A read arrived: learn the reader's think time and distance, and end
 * a wait for it.
 */
void
antic_read_arrived (struct dl_sched *s, struct dl_req *r, uint64_t now)
{
  struct dl_stream *st;

  if (r->stream == 0 || !enabled (s))
    return;
  st = stream_slot (s, r->stream, true);
  if (st->last_done_ns != 0 && st->last_done_ns >= st->last_arrival_ns) {
    /* Its previous read had completed: a dependent read. */
    uint64_t think = now >= st->last_done_ns ? now - st->last_done_ns : 0;
    uint64_t dist = r->offset >= st->last_end ? r->offset - st->last_end
                                              : st->last_end - r->offset;

    st->think_ns = ewma (st->think_ns, think, st->dependent);
    st->seek = ewma (st->seek, dist, st->dependent);
    st->dependent++;
  }
  else if (st->last_arrival_ns != 0)
    st->overlapped++;
  if (st->dependent + st->overlapped > 1000) {
    st->dependent /= 2;         /* let old behaviour fade */
    st->overlapped /= 2;
  }
  st->last_arrival_ns = now;

  if (s->antic.on && s->antic.stream == r->stream) {
    if (s->antic.counted)
      s->st.antic_hits++;
    s->antic.on = false;
    s->antic.extend = true;     /* the batch goes on with this read */
  }
}

/* A read goes to the device: wait for its reader's next one if it pays. */
void
antic_read_dispatched (struct dl_sched *s, struct dl_req *u)
{
  struct dl_stream *st;

  s->antic.extend = false;
  if (!enabled (s) || u->stream == 0)
    return;
  st = stream_slot (s, u->stream, false);
  if (st == NULL || !pays (s, st)) {
    if (s->antic.on && s->antic.stream == u->stream)
      s->antic.on = false;
    return;
  }
  s->antic.on = true;
  s->antic.stream = u->stream;
  s->antic.unit = u;
  s->antic.until = UINT64_MAX;
  s->antic.counted = false;
}

/* A read completed: the wait, if it is for this read, starts now. */
void
antic_read_done (struct dl_sched *s, struct dl_req *u, uint64_t now)
{
  struct dl_req *m;

  if (!enabled (s))
    return;
  for (m = u; m; m = m->next_member) {
    struct dl_stream *st = m->stream ? stream_slot (s, m->stream, false) : NULL;

    if (st) {
      st->last_done_ns = now;
      st->last_end = m->offset + m->length;
    }
  }
  if (s->antic.on && s->antic.unit == u) {
    s->antic.unit = NULL;
    s->antic.until = now + s->t.anticipate_ns;
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

uint64_t
antic_timer (const struct dl_sched *s, uint64_t now)
{
  if (s->antic.on && s->antic.unit == NULL && s->antic.until > now)
    return s->antic.until;
  return 0;
}
