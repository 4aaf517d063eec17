/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (beyond the seed: piece.c): beside a reader that waits for each
 * read, a write unit goes to the device in pieces of write_piece of
 * device time, at the write rate learned from completions (devtime.c),
 * so that the reader's next read waits for a piece, not a unit.  No
 * pieces without such a reader, before the rate is known, when a piece
 * would hold the whole unit, with time slices on, or in profile seed;
 * and a pieced unit teaches devtime nothing (its time was shared with
 * the reads between its pieces).
 */
#include "testlib.h"

#define UNIT (256 * KiB)
#define UNIT_NS (10 * MS)       /* the device: 256 KiB in 10 ms */

static uint64_t woff;           /* where the flood writes next */

/* One write unit of `len` through a device that takes `ns` for it;
 * returns its piece_length.
 */
static uint64_t
one_write (struct dl_sched *s, uint64_t len, uint64_t ns)
{
  struct dl_req *u;
  uint64_t piece;

  uint64_t limit = now + 1000 * MS;

  ins (s, DL_OP_WRITE, woff, len);
  woff += len;
  /* (a read slice may keep the device for the reader a while) */
  while ((u = dl_dispatch (s, now)) == NULL) {
    now += 1 * MS;
    REQUIRE (now < limit);
  }
  REQUIRE (u->op == DL_OP_WRITE);
  piece = u->piece_length;
  now += ns;
  dl_complete (s, u, now);
  return piece;
}

/* The device's write rate, learned from ten whole units. */
static void
learn_rate (struct dl_sched *s)
{
  int i;

  for (i = 0; i < 10; i++)
    CHECK_EQ (one_write (s, UNIT, UNIT_NS), 0);
}

/* cat: four reads, each sent 1 ms after the last came back. */
static void
cat_reads (struct dl_sched *s)
{
  static uint64_t roff = 1ULL << 30;
  struct dl_req *r, *u;
  int i;

  for (i = 0; i < 4; i++, roff += 64 * KiB) {
    now += 1 * MS;
    r = mkreq (DL_OP_READ, roff, 4 * KiB, 0);
    r->stream = 2;
    dl_insert (s, r, now);
    u = dl_dispatch (s, now);
    REQUIRE (u == r);
    now += 1 * MS;
    dl_complete (s, u, now);
  }
}

/* A scheduler that has learned the rate, and (reader) has seen cat. */
static struct dl_sched *
setup (const struct dl_tunables *t, bool reader)
{
  struct dl_sched *s = mksched (t, 1);

  woff = 0;
  learn_rate (s);
  if (reader)
    cat_reads (s);
  return s;
}

/* A write unit goes to the device in pieces; 1 ms later cat's next read
 * (at roff) arrives between two of them and goes to the device.  Before
 * it, no piece waits: there is nobody to wait for.  Returns the write
 * unit; *rp is the read.
 */
static struct dl_req *
read_between_pieces (struct dl_sched *s, uint64_t roff, struct dl_req **rp)
{
  struct dl_req *w, *r;

  ins (s, DL_OP_WRITE, woff, UNIT);
  woff += UNIT;
  w = dl_dispatch (s, now);
  REQUIRE (w != NULL && w->op == DL_OP_WRITE && w->piece_length != 0);
  CHECK_EQ (dl_piece_wait (s, 0, now), 0);
  now += 1 * MS;
  r = mkreq (DL_OP_READ, roff, 4 * KiB, 0);
  r->stream = 2;
  dl_insert (s, r, now);
  REQUIRE (dl_dispatch (s, now) == r);
  *rp = r;
  return w;
}

int
main (void)
{
  struct dl_tunables t;
  struct dl_sched *s;
  struct dl_stats st;
  uint64_t rate, piece;

  dl_tunables_default (&t);
  t.anticipate_ns = 0;          /* the rule alone */
  CHECK_EQ (t.write_piece_ns, 2 * MS);

  /* A write flood alone: whole units, and the rate is learned. */
  s = setup (&t, false);
  CHECK_EQ (one_write (s, UNIT, UNIT_NS), 0);
  st = stats (s);
  CHECK_EQ (st.write_pieced, 0);
  rate = st.device_rate[DL_WRITE];
  CHECK (rate > 26000000 && rate < 26300000);   /* 256 KiB / 10 ms */
  finish (s);

  /* Beside cat: pieces of 2 ms at that rate, 52428 bytes, in 4 KiB
   * multiples: 48 KiB; counted.
   */
  s = setup (&t, true);
  CHECK_EQ (one_write (s, UNIT, UNIT_NS), 48 * KiB);
  CHECK_EQ (stats (s).write_pieced, 1);
  /* A unit that one piece holds goes whole. */
  CHECK_EQ (one_write (s, 48 * KiB, UNIT_NS / 8), 0);
  CHECK_EQ (one_write (s, 52 * KiB, UNIT_NS / 8), 48 * KiB);
  /* A pieced unit's time teaches nothing: a wild one leaves the rate. */
  rate = stats (s).device_rate[DL_WRITE];
  CHECK_EQ (one_write (s, UNIT, 1000 * MS), 48 * KiB);
  CHECK_EQ (stats (s).device_rate[DL_WRITE], rate);
  /* The reader gone (no read for longer than DL_READER_RECENT_NS):
   * whole units again.
   */
  now += 200 * MS;
  CHECK_EQ (one_write (s, UNIT, UNIT_NS), 0);
  CHECK_EQ (stats (s).write_pieced, 3);
  finish (s);

  /* The piece follows the tunable, and is never below 16 KiB. */
  t.write_piece_ns = 4 * MS;
  s = setup (&t, true);
  CHECK_EQ (one_write (s, UNIT, UNIT_NS), 100 * KiB);  /* 104857 bytes */
  finish (s);
  t.write_piece_ns = 100000;    /* 100 us: 2621 bytes */
  s = setup (&t, true);
  CHECK_EQ (one_write (s, UNIT, UNIT_NS), 16 * KiB);
  finish (s);
  t.write_piece_ns = 2 * MS;

  /* A disk whose seeks cost 8 ms: a piece is at least two of them
   * (16 ms, 419 KiB at this rate), so a 256 KiB unit goes whole, and a
   * 1 MiB one in pieces of 16 ms.  Writes far apart, of several sizes,
   * teach the access time.
   */
  s = mksched (&t, 1);
  {
    int i;
    for (i = 0; i < 12; i++) {
      woff += (64ULL << 20) + (uint64_t) (i % 3) * 4096;
      CHECK_EQ (one_write (s, (uint64_t) (1 + i % 4) * 64 * KiB,
                           8 * MS + (uint64_t) (1 + i % 4) * UNIT_NS / 4), 0);
    }
  }
  CHECK (stats (s).device_access_ns[DL_WRITE] > 7 * MS);
  cat_reads (s);
  woff += 64ULL << 20;          /* (a seek: 8 ms more, as above) */
  CHECK_EQ (one_write (s, UNIT, 8 * MS + UNIT_NS), 0);
  piece = one_write (s, 1024 * KiB, 4 * UNIT_NS);
  CHECK (piece >= 400 * KiB && piece <= 424 * KiB);    /* about 419430 */
  finish (s);

  /* Before the rate is known: whole units, reader or not. */
  s = mksched (&t, 1);
  woff = 0;
  cat_reads (s);
  CHECK_EQ (one_write (s, UNIT, UNIT_NS), 0);
  finish (s);

  /* Between two pieces (dl_piece_wait), with anticipation on: a piece
   * waits while the reader's read is at the device and while its next
   * one is expected, at most piece_wait (2 ms); without a reader to
   * wait for, it goes at once.
   */
  t.anticipate_ns = 20 * MS;
  CHECK_EQ (t.piece_wait_ns, 0);              /* off by default */
  t.piece_wait_ns = 2 * MS;
  s = setup (&t, true);
  {
    struct dl_req *w, *u;
    uint64_t paused, wake;

    /* cat's next read, between two pieces: it goes to the device and
     * the next piece waits for it.
     */
    w = read_between_pieces (s, (1ULL << 30) + 4 * 64 * KiB, &u);
    CHECK_EQ (w->piece_length, 48 * KiB);
    paused = now;
    wake = dl_piece_wait (s, 0, now);
    CHECK_EQ (wake, paused + 2 * MS);           /* at most piece_wait */
    CHECK_EQ (stats (s).piece_waits, 1);
    now += 1 * MS;
    dl_complete (s, u, now);
    /* Done: its reader comes back within ~1 ms (its think time), so the
     * piece waits still, no later than its bound.
     */
    wake = dl_piece_wait (s, paused, now);
    CHECK (wake > now && wake <= paused + 2 * MS);
    CHECK_EQ (stats (s).piece_waits, 1);        /* one wait, asked twice */
    /* piece_wait after it began to wait, it goes. */
    now = paused + 2 * MS;
    CHECK_EQ (dl_piece_wait (s, paused, now), 0);
    /* And once the reader is overdue, a new piece does not wait. */
    now += 40 * MS;
    CHECK_EQ (dl_piece_wait (s, 0, now), 0);
    dl_complete (s, w, now);
  }
  finish (s);
  /* The bound follows piece_wait; 0 turns the waits off. */
  t.piece_wait_ns = 5 * MS;
  s = setup (&t, true);
  {
    struct dl_req *w, *r;

    w = read_between_pieces (s, (1ULL << 30) + 4 * 64 * KiB, &r);
    CHECK_EQ (dl_piece_wait (s, 0, now), now + 5 * MS);
    t.piece_wait_ns = 0;
    REQUIRE (dl_sched_set_tunables (s, &t, NULL, 0) == 0);
    CHECK_EQ (dl_piece_wait (s, 0, now), 0);
    now += 1 * MS;
    dl_complete (s, r, now);
    dl_complete (s, w, now);
  }
  finish (s);
  /* Anticipation off: pieces never wait. */
  t.anticipate_ns = 0;
  s = setup (&t, true);
  {
    struct dl_req *r, *u;

    u = read_between_pieces (s, 1ULL << 31, &r);
    CHECK_EQ (dl_piece_wait (s, 0, now), 0);
    now += 1 * MS;
    dl_complete (s, r, now);
    dl_complete (s, u, now);
    CHECK_EQ (stats (s).piece_waits, 0);
  }
  finish (s);

  /* Off: write_piece 0, time slices on, profile seed, elevator. */
  t.write_piece_ns = 0;
  s = setup (&t, true);
  CHECK_EQ (one_write (s, UNIT, UNIT_NS), 0);
  finish (s);
  t.write_piece_ns = 2 * MS;
  t.read_slice_ns = 100 * MS;
  s = setup (&t, true);
  CHECK_EQ (one_write (s, UNIT, UNIT_NS), 0);
  CHECK_EQ (stats (s).write_pieced, 0);
  finish (s);
  t.read_slice_ns = 0;
  CHECK_EQ (dl_tunables_profile (&t, "seed", NULL, 0), 0);
  CHECK_EQ (t.write_piece_ns, 0);
  dl_tunables_default (&t);
  t.anticipate_ns = 0;
  t.policy = DL_POLICY_ELEVATOR;
  s = setup (&t, true);
  CHECK_EQ (one_write (s, UNIT, UNIT_NS), 0);
  finish (s);

  return test_result ("test-piece");
}
