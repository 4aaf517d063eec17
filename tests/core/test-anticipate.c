/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (beyond the seed: anticipation, anticipate.c): after a dependent
 * reader's read completes, a read batch with budget left waits up to
 * `anticipate` for its next read instead of ending and letting a write
 * batch in; the next read ends the wait at once and continues the
 * batch.  Readers that do not pay (long think time, far away, several
 * reads in flight, unknown stream) never make the device wait, and an
 * expired write ends any wait.  anticipate = 0 is the seed.
 */
#include "testlib.h"

#define READER 7                /* the stream of the dependent reader */

static struct dl_req *
read_from (struct dl_sched *s, uint64_t stream, uint64_t offset)
{
  struct dl_req *r = mkreq (DL_OP_READ, offset, 4 * KiB, 0);

  r->stream = stream;
  dl_insert (s, r, now);
  return r;
}

/* Writes far from the reader, enough for several batches. */
static void
flood (struct dl_sched *s, int n)
{
  int i;

  for (i = 0; i < n; i++)
    ins (s, DL_OP_WRITE, (1ULL << 40) + (uint64_t) i * (1 << 20), 4 * KiB);
}

/* The reader reads, the device serves it in 1 ms: returns the unit. */
static struct dl_req *
serve_read (struct dl_sched *s, uint64_t offset, uint64_t stream)
{
  struct dl_req *u;

  read_from (s, stream, offset);
  u = dl_dispatch (s, now);
  REQUIRE (u != NULL);
  CHECK_EQ (u->op, DL_OP_READ);
  now += 1 * MS;
  dl_complete (s, u, now);
  return u;
}

/* The device does not wait: the next unit is a write.  Then done. */
static void
writes_go_next (struct dl_sched *s)
{
  struct dl_req *u = dl_dispatch (s, now);

  REQUIRE (u != NULL);
  CHECK_EQ (u->op, DL_OP_WRITE);
  dl_complete (s, u, now);
  finish (s);
}

/* Dispatch and complete up to n units, or until the core waits. */
static void
serve_some (struct dl_sched *s, int n)
{
  struct dl_req *u;

  while (n-- > 0 && (u = dl_dispatch (s, now)) != NULL)
    dl_complete (s, u, now);
}

int
main (void)
{
  struct dl_tunables t;
  struct dl_sched *s;
  struct dl_req *u;
  uint64_t batches;
  int i;

  /* anticipate = 0 (the seed): the write batch starts at once. */
  dl_tunables_default (&t);
  CHECK_EQ (t.anticipate_ns, 20 * MS);
  t.preempt = false;            /* anticipation alone (test-preempt: both) */
  t.anticipate_ns = 0;
  now = 1000 * MS;
  s = mksched (&t, 1);
  flood (s, 8);
  serve_read (s, 0, READER);
  u = dl_dispatch (s, now);
  REQUIRE (u != NULL);
  CHECK_EQ (u->op, DL_OP_WRITE);
  CHECK_EQ (dl_next_timer (s, now), 0);
  dl_complete (s, u, now);
  finish (s);

  /* anticipate = 5 ms: the device waits; the next read ends the wait
   * and belongs to the same read batch.
   */
  t.anticipate_ns = 5 * MS;
  s = mksched (&t, 1);
  flood (s, 8);
  serve_read (s, 0, READER);
  batches = stats (s).batches[DL_READ];
  CHECK (dl_dispatch (s, now) == NULL);
  CHECK_EQ (dl_next_timer (s, now), now + 5 * MS);
  CHECK_EQ (stats (s).antic_waits, 1);
  now += 1 * MS;                /* the reader thinks for 1 ms */
  CHECK (dl_dispatch (s, now) == NULL);
  read_from (s, READER, 8 * KiB);
  u = dl_dispatch (s, now);
  REQUIRE (u != NULL);
  CHECK_EQ (u->op, DL_OP_READ);
  CHECK_EQ (u->offset, 8 * KiB);
  CHECK_EQ (stats (s).batches[DL_READ], batches);
  CHECK_EQ (stats (s).antic_hits, 1);
  now += 1 * MS;
  dl_complete (s, u, now);

  /* The reader does not come back: at the timer, the writes go. */
  CHECK (dl_dispatch (s, now) == NULL);
  now = dl_next_timer (s, now);
  u = dl_dispatch (s, now);
  REQUIRE (u != NULL);
  CHECK_EQ (u->op, DL_OP_WRITE);
  CHECK_EQ (stats (s).antic_misses, 1);
  dl_complete (s, u, now);
  finish (s);

  /* A reader that thinks longer than anticipate stops being waited for
   * once its pattern is known.
   */
  s = mksched (&t, 1);
  flood (s, 64);
  for (i = 0; i < 4; i++) {
    serve_read (s, (uint64_t) i * 8 * KiB, READER);
    /* The device does a few writes meanwhile; the reader takes 20 ms. */
    serve_some (s, 4);
    now += 20 * MS;
  }
  serve_read (s, 64 * KiB, READER);
  writes_go_next (s);

  /* anticipate is a ceiling: once a reader is known to come back in
   * 1 ms, the device waits for it 1.5 x 1 ms + 1 ms, not 5 ms.  (Its
   * reads are contiguous, so that the batch's budget lasts.)
   */
  s = mksched (&t, 1);
  flood (s, 64);
  for (i = 0; i < 8; i++) {
    serve_read (s, (uint64_t) i * 4 * KiB, READER);
    if (i < 2)
      CHECK_EQ (dl_next_timer (s, now), now + 5 * MS);   /* not known yet */
    now += 1 * MS;
  }
  serve_read (s, 8 * 4 * KiB, READER);
  CHECK (dl_dispatch (s, now) == NULL);
  CHECK_EQ (dl_next_timer (s, now), now + 2500 * 1000);
  now += 3 * MS;
  writes_go_next (s);

  /* ... and it bounds the wait: a reader known to come back in 4 ms is
   * waited for 5 ms, not 1.5 x 4 ms + 1 ms = 7 ms.
   */
  s = mksched (&t, 1);
  flood (s, 64);
  for (i = 0; i < 8; i++) {
    serve_read (s, (uint64_t) i * 4 * KiB, READER);
    now += 4 * MS;
  }
  serve_read (s, 8 * 4 * KiB, READER);
  CHECK (dl_dispatch (s, now) == NULL);
  CHECK_EQ (dl_next_timer (s, now), now + 5 * MS);
  now += 5 * MS;
  writes_go_next (s);

  /* The device's idle time is the read batch's too: each wait that a
   * read ends costs the batch a quarter of a seek, so a reader that
   * always comes back ends its batch after fifo_batch / (1 + seek_cost
   * / 4) = 64 / 5 reads, not 64; after writes_starved (2) such batches
   * the writes go: after 26 reads, not 128.
   */
  s = mksched (&t, 1);
  flood (s, 64);
  for (i = 0; i < 64; i++) {
    read_from (s, READER, (uint64_t) i * 4 * KiB);
    u = dl_dispatch (s, now);
    REQUIRE (u != NULL);
    if (u->op == DL_OP_WRITE)
      break;
    now += 1 * MS;
    dl_complete (s, u, now);
    CHECK (dl_dispatch (s, now) == NULL);   /* the device waits */
    now += 100 * 1000;          /* the reader thinks 0.1 ms */
  }
  printf ("reads before the first write: %d\n", i);
  CHECK_EQ (i, 26);
  dl_complete (s, u, now);
  finish (s);

  /* A reader far away each time is random: not waited for either. */
  s = mksched (&t, 1);
  flood (s, 64);
  for (i = 0; i < 4; i++) {
    serve_read (s, (uint64_t) i * (512ULL << 20), READER);
    serve_some (s, 4);
    now += 1 * MS;
  }
  serve_read (s, 4 * (512ULL << 20), READER);
  writes_go_next (s);

  /* A reader is followed by where it reads, not by the connection that
   * brings its reads: nbdfuse and the kernel's client spread one cat
   * over several connections.  Each read here comes on another of four
   * connections, close to the last: the device still waits, and each
   * read ends the wait (a hit).
   */
  s = mksched (&t, 1);
  flood (s, 8);
  serve_read (s, 0, 1);
  for (i = 1; i <= 3; i++) {
    CHECK (dl_dispatch (s, now) == NULL);
    now += 1 * MS;
    read_from (s, 1 + i % 4, (uint64_t) i * 8 * KiB);
    u = dl_dispatch (s, now);
    REQUIRE (u != NULL);
    CHECK_EQ (u->op, DL_OP_READ);
    now += 1 * MS;
    dl_complete (s, u, now);
  }
  CHECK_EQ (stats (s).antic_hits, 3);
  serve_some (s, 100);          /* the timer passes: the writes go */
  now = dl_next_timer (s, now);
  serve_some (s, 100);
  finish (s);

  /* A reader that keeps several reads in flight (fio at depth 8, random
   * offsets, one connection) is never waited for, even though another
   * reader's next read may land near one of its reads.
   */
  s = mksched (&t, 1);
  flood (s, 64);
  {
    struct dl_req *inflight[8];
    int k;

    for (i = 0; i < 6; i++) {
      for (k = 0; k < 8; k++)
        read_from (s, 9, ((uint64_t) (i * 8 + k) * 2654435761u % 4096) << 20);
      for (k = 0; k < 8; k++) {
        inflight[k] = dl_dispatch (s, now);
        REQUIRE (inflight[k] != NULL);
        if (inflight[k]->op != DL_OP_READ) {  /* a write batch: let it be */
          dl_complete (s, inflight[k], now);
          k--;
        }
      }
      now += 1 * MS;
      for (k = 0; k < 8; k++)
        dl_complete (s, inflight[k], now);
    }
  }
  writes_go_next (s);

  /* Requests of unknown origin (stream 0) never make the device wait. */
  s = mksched (&t, 1);
  flood (s, 8);
  serve_read (s, 0, 0);
  writes_go_next (s);

  /* An expired write ends the wait: deadlines come first. */
  t.write_expire_ns = 100 * MS;
  s = mksched (&t, 1);
  flood (s, 8);
  now += 99 * MS;
  serve_read (s, 0, READER);    /* completes at +100 ms: writes expired */
  writes_go_next (s);
  t.write_expire_ns = 5000 * MS;

  /* Writes still progress under a reader that always comes back in
   * time.  A small event simulation: a device of depth 1 takes 1 ms a
   * unit; the reader issues its next read 0.1 ms after the previous one
   * completed.  The read batch ends when its budget is spent, and no
   * more than writes_starved read batches start while writes wait.
   */
  s = mksched (&t, 1);
  flood (s, 256);
  {
    struct dl_req *busy = NULL;
    uint64_t busy_until = 0, reader_at = now, rb = 0, wb = 0;
    int reads = 0, run = 0, max_run = 0;

    while (reads < 400 || busy) {
      uint64_t next = UINT64_MAX, timer;
      struct dl_stats st;

      if (busy && busy_until <= now) {
        dl_complete (s, busy, now);
        if (busy->op == DL_OP_READ)
          reader_at = now + 100000;
        busy = NULL;
      }
      if (reader_at <= now && reads < 400) {
        read_from (s, READER, (uint64_t) reads++ * 64 * KiB); /* a seek each */
        reader_at = UINT64_MAX;
      }
      if (busy == NULL && (busy = dl_dispatch (s, now)) != NULL) {
        busy_until = now + 1 * MS;
        st = stats (s);
        if (st.batches[DL_WRITE] != wb)
          run = 0;
        else if (st.batches[DL_READ] != rb && st.queued[DL_WRITE] > 0)
          run++;
        if (run > max_run)
          max_run = run;
        rb = st.batches[DL_READ];
        wb = st.batches[DL_WRITE];
      }
      /* Advance to the next event. */
      if (busy)
        next = busy_until;
      if (reader_at < next)
        next = reader_at;
      timer = dl_next_timer (s, now);
      if (timer && timer < next)
        next = timer;
      if (next == UINT64_MAX)
        break;
      if (next > now)
        now = next;
    }
    printf ("read batches %" PRIu64 ", write batches %" PRIu64
            ", longest read run %d, hits %" PRIu64 ", misses %" PRIu64 "\n",
            rb, wb, max_run, stats (s).antic_hits, stats (s).antic_misses);
    CHECK (wb >= 20);
    CHECK (max_run <= (int) t.writes_starved);
    CHECK (stats (s).antic_hits > 100);
  }
  finish (s);

  /* Switching it off at run time ends a wait at once. */
  s = mksched (&t, 1);
  flood (s, 8);
  serve_read (s, 0, READER);
  CHECK (dl_dispatch (s, now) == NULL);
  t.anticipate_ns = 0;
  CHECK_EQ (dl_sched_set_tunables (s, &t, NULL, 0), 0);
  writes_go_next (s);

  return test_result ("anticipate");
}
