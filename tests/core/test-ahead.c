/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (beyond the seed: ahead.c): a read of a reader that waits for
 * each read, whose reads land near each other, asks the caller to read
 * ahead (ra_length) what the device transfers in the time of two
 * accesses (learned: devtime.c), within readahead, in 4 KiB multiples and not
 * below 16 KiB; never over a write not yet completed; never for a
 * reader that keeps several reads in flight, nor with readahead 0 or in
 * profile seed.  devtime learns from the unit and what was read ahead
 * with it.
 */
#include "testlib.h"

/* The device: a seek costs 8 ms, and it transfers 1 MiB in 50 ms
 * (about 21 MB/s): two accesses are worth about 335 KiB.
 */
#define ACCESS_NS (8 * MS)
#define NS_PER_KIB (50 * MS / 1024)

static uint64_t roff = 1ULL << 30;      /* where the reader reads next */

static uint64_t
device_ns (const struct dl_req *u)
{
  return (u->seeked ? ACCESS_NS : 0) +
    (u->unit_length + u->ra_length) / KiB * NS_PER_KIB;
}

/* One read of `len` by cat (stream 2), `gap` bytes after its last;
 * returns the unit's ra_length; the caller "reads" all of it.
 */
static uint64_t
cat_read (struct dl_sched *s, uint64_t len, uint64_t gap)
{
  struct dl_req *r, *u;
  uint64_t ra;

  now += 1 * MS;
  roff += gap;
  r = mkreq (DL_OP_READ, roff, len, 0);
  r->stream = 2;
  dl_insert (s, r, now);
  u = dl_dispatch (s, now);
  REQUIRE (u == r);
  ra = u->ra_length;
  now += device_ns (u);
  dl_complete (s, u, now);
  roff += len;
  return ra;
}

/* cat over small files: sizes 4-16 KiB, now and then far away (so that
 * the device's access time and rate can be told apart), then near.
 */
static void
learn (struct dl_sched *s)
{
  int i;

  for (i = 0; i < 24; i++)
    cat_read (s, (uint64_t) (1 + i % 4) * 4 * KiB, i % 3 == 0 ? 2 << 20 : 4 * KiB);
}

int
main (int argc, char **argv)
{
  struct dl_tunables t;
  struct dl_sched *s;
  struct dl_req *w, *u, *r[4];
  uint64_t ra;
  int i;

  (void) argc; (void) argv;
  dl_tunables_default (&t);
  t.anticipate_ns = 0;          /* the rule alone */
  CHECK_EQ (t.readahead, 256 * KiB);

  /* Learned: two seeks' worth of transfer, 335 KiB, in 4 KiB multiples
   * (readahead raised to 1 MiB out of its way) ...
   */
  t.readahead = 1024 * KiB;
  s = mksched (&t, 1);
  learn (s);
  CHECK (stats (s).device_access_ns[DL_READ] > 7 * MS &&
         stats (s).device_access_ns[DL_READ] < 9 * MS);
  ra = cat_read (s, 4 * KiB, 4 * KiB);
  CHECK (ra >= 320 * KiB && ra <= 344 * KiB);
  CHECK_EQ (ra % (4 * KiB), 0);
  CHECK (stats (s).read_ahead > 0);
  /* ... and by default within 256 KiB. */
  t.readahead = 256 * KiB;
  REQUIRE (dl_sched_set_tunables (s, &t, NULL, 0) == 0);
  CHECK_EQ (cat_read (s, 4 * KiB, 4 * KiB), 256 * KiB);
  /* Within readahead. */
  t.readahead = 64 * KiB;
  REQUIRE (dl_sched_set_tunables (s, &t, NULL, 0) == 0);
  CHECK_EQ (cat_read (s, 4 * KiB, 4 * KiB), 64 * KiB);
  /* ... and not below 16 KiB. */
  t.readahead = 12 * KiB;
  REQUIRE (dl_sched_set_tunables (s, &t, NULL, 0) == 0);
  CHECK_EQ (cat_read (s, 4 * KiB, 4 * KiB), 0);
  t.readahead = 256 * KiB;
  REQUIRE (dl_sched_set_tunables (s, &t, NULL, 0) == 0);

  /* Not over a write queued just after the read (64 KiB on). */
  w = ins (s, DL_OP_WRITE, roff + 4 * KiB + 64 * KiB, 4 * KiB);
  CHECK_EQ (cat_read (s, 4 * KiB, 0), 0);
  /* ... nor over it at the device (cat_read inserts after the write
   * is dispatched: the read goes to the free slot beside it).
   */
  dl_sched_set_depth (s, 2);
  u = dl_dispatch (s, now);
  REQUIRE (u == w);
  CHECK_EQ (cat_read (s, 4 * KiB, 0), 0);
  dl_complete (s, u, now);
  /* Once it has completed, again. */
  CHECK_EQ (cat_read (s, 4 * KiB, 0), 256 * KiB);
  /* A write far away does not matter. */
  ins (s, DL_OP_WRITE, 0, 4 * KiB);
  CHECK_EQ (cat_read (s, 4 * KiB, 0), 256 * KiB);
  finish (s);

  /* Before anything is learned: nothing. */
  s = mksched (&t, 1);
  CHECK_EQ (cat_read (s, 4 * KiB, 4 * KiB), 0);
  CHECK_EQ (cat_read (s, 4 * KiB, 4 * KiB), 0);
  finish (s);

  /* A reader with four reads in flight at a time: nothing. */
  s = mksched (&t, 1);
  learn (s);
  dl_sched_set_depth (s, 4);
  for (int round = 0; round < 16; round++) {
    for (i = 0; i < 4; i++) {
      r[i] = mkreq (DL_OP_READ, roff, 4 * KiB, 0);
      r[i]->stream = 2;
      roff += 8 * KiB;
      now += 100000;
      dl_insert (s, r[i], now);
    }
    for (i = 0; i < 4; i++) {
      u = dl_dispatch (s, now);
      REQUIRE (u != NULL);
      if (round >= 12)          /* (its dependent reads outnumbered) */
        CHECK_EQ (u->ra_length, 0);
      r[i] = u;
    }
    now += 10 * MS;
    for (i = 0; i < 4; i++)
      dl_complete (s, r[i], now);
  }
  finish (s);

  /* A reader whose reads land far apart: nothing. */
  s = mksched (&t, 1);
  learn (s);
  for (i = 0; i < 12; i++)
    ra = cat_read (s, 4 * KiB, 512ULL << 20);
  CHECK_EQ (ra, 0);
  finish (s);

  /* Off: readahead 0, profile seed. */
  t.readahead = 0;
  s = mksched (&t, 1);
  learn (s);
  CHECK_EQ (cat_read (s, 4 * KiB, 4 * KiB), 0);
  CHECK_EQ (stats (s).read_ahead, 0);
  finish (s);
  CHECK_EQ (dl_tunables_profile (&t, "seed", NULL, 0), 0);
  CHECK_EQ (t.readahead, 0);

  return test_result ("test-ahead");
}
