/* SPDX-License-Identifier: BSD-3-Clause */
/* Profile seed: the dispatch order of the 2002 patch, on traces worked
 * out by hand from its rules (shared/seeds/001-patch-deadline-io-
 * scheduler.patch).  The rules used below, by the patch's names:
 *
 *   LIST   sort_list[dir]: deadline_add_request puts a request after the
 *          one bio_rq_in_between names, else at the tail, so the list
 *          runs ascending from its head, wraps once to the lowest
 *          offsets, and runs ascending again.  A request above the head
 *          goes into the first lap, one below it into the second.  The
 *          head is the first request put into an empty list, until a
 *          batch takes it; then the request after that batch is the head.
 *   NEXT   deadline_next_request, with the dispatch list empty: if the
 *          oldest read has expired (jiffies >= expires, expires = arrival
 *          + read_expire; reads only), or else if reads are queued: take
 *          writes instead if writes are queued and starved++ >=
 *          writes_starved; else a read batch, from the expired read, or
 *          else from the list's head.  No reads: a write batch from the
 *          write list's head (starved = 0).  Writes never expire.
 *   BATCH  deadline_move_requests: from that request along the list to
 *          its tail, all moved to the dispatch list at once, while the
 *          count (fifo_batch) stays above 0: minus 1 for a request that
 *          starts where the previous one ended (the first: where the last
 *          request handed to the driver ended, last_sector, 0 at first),
 *          minus seek_cost for any other.  Requests arriving meanwhile
 *          wait for the next batch.
 *   MERGE  a request that starts where a queued one ends merges at its
 *          back, one that ends where a queued one starts at its front;
 *          two queued requests that then touch join.  At most 255
 *          sectors (130560 bytes) per request (MAX_SECTORS).
 *
 * Each trace is dispatched at depth 1 (every unit completes before the
 * next is asked for) and written as units: R or W, the offset in blocks,
 * xN for a length of N blocks (if not 1), :M for M merged requests.
 */
#include "testlib.h"

static char got[4096];

static void
fmt_unit (char *buf, size_t len, const struct dl_req *u, uint64_t block)
{
  size_t n = strlen (buf);

  snprintf (buf + n, len - n, "%s%c%" PRIu64, n ? " " : "",
            u->op == DL_OP_READ ? 'R' : 'W', u->unit_offset / block);
  n = strlen (buf);
  if (u->unit_length != block)
    snprintf (buf + n, len - n, "x%" PRIu64, u->unit_length / block);
  n = strlen (buf);
  if (u->nr_members > 1)
    snprintf (buf + n, len - n, ":%u", u->nr_members);
}

/* Dispatch (and complete) up to max units, appending them to got. */
static void
take (struct dl_sched *s, size_t max, uint64_t block)
{
  struct dl_req *u;

  while (max-- > 0 && (u = dispatch_complete (s)) != NULL)
    fmt_unit (got, sizeof got, u, block);
}

static void
expect (const char *name, const char *want)
{
  if (strcmp (got, want) != 0) {
    fprintf (stderr, "%s: FAIL\n  got:  %s\n  want: %s\n", name, got, want);
    failures++;
  }
  else
    printf ("%s: %s\n", name, got);
  got[0] = '\0';
}

#define B (4 * KiB)

static struct dl_sched *
seed (uint32_t fifo_batch, uint32_t writes_starved)
{
  struct dl_tunables t;
  char err[200];

  dl_tunables_default (&t);
  REQUIRE (dl_tunables_profile (&t, "seed", err, sizeof err) == 0);
  t.fifo_batch = fifo_batch;
  t.writes_starved = writes_starved;
  now = 1;
  return mksched (&t, 1);
}

static void
rd (struct dl_sched *s, uint64_t block, uint64_t blocks, uint64_t bs)
{
  ins (s, DL_OP_READ, block * bs, blocks * bs);
}

static void
wr (struct dl_sched *s, uint64_t block, uint64_t blocks, uint64_t bs)
{
  ins (s, DL_OP_WRITE, block * bs, blocks * bs);
}

int
main (void)
{
  struct dl_tunables t;
  struct dl_sched *s;
  char err[200];
  size_t i;

  /* The profile's values. */
  dl_tunables_default (&t);
  CHECK_EQ (dl_tunables_profile (&t, "seed", err, sizeof err), 0);
  CHECK_EQ (t.read_expire_ns, 500 * MS);
  CHECK_EQ (t.write_expire_ns, 0);
  CHECK_EQ (t.fifo_batch, 64);
  CHECK_EQ (t.seek_cost, 16);
  CHECK_EQ (t.writes_starved, 2);
  CHECK_EQ (t.max_merge, 255 * 512);
  CHECK_EQ (t.anticipate_ns, 0);
  CHECK (!t.preempt && !t.size_cost && t.seed_batches && t.front_merges);

  /* Trace 1: a batch is fixed when it starts; the list wraps.
   * Reads (one block each) go in, in this order: 50 10 70 30 90 20 60.
   *   LIST: head 50 (first in); 70 90 60 above it, 10 30 20 below:
   *         50 60 70 90 | 10 20 30.
   *   batch 1, NEXT: no expiry, from the head 50.  BATCH with 64 and
   *         seek_cost 16, last_sector 0: 50 seek (48), 60 seek (32),
   *         70 seek (16), 90 seek (0): stop.  The head is now 10.
   *   After 50 is handed out, read 80 arrives: not in batch 1 (BATCH),
   *         it goes in after 30 (LIST: 80 is above the head 10).
   *   batch 2, from the head 10: 10, 20, 30, 80 (four seeks).
   */
  s = seed (64, 2);
  rd (s, 50, 1, B); rd (s, 10, 1, B); rd (s, 70, 1, B); rd (s, 30, 1, B);
  rd (s, 90, 1, B); rd (s, 20, 1, B); rd (s, 60, 1, B);
  take (s, 1, B);
  rd (s, 80, 1, B);
  take (s, 100, B);
  expect ("trace 1 (batch fixed, wrap)", "R50 R60 R70 R90 R10 R20 R30 R80");
  finish (s);

  /* Trace 2: a new batch starts at the list's head, where the last
   * batch from the head stopped, not where the disk head is.
   * Reads 100 200 300 400 500 600 (head 100).
   *   batch 1: 100 200 300 400 (four seeks); the head is now 500.
   *   Then reads 150, 450 (below the head: second lap, in order) and
   *   550 (above: first lap, between 500 and 600):
   *         500 550 600 | 150 450.
   *   batch 2: from 500 (last_sector 401: seek): 500 550 600 150.
   *   batch 3: 450.  (Continuing from the disk head at 401, as the
   *   default profile does, would take 450 first.)
   */
  s = seed (64, 2);
  for (i = 1; i <= 6; i++)
    rd (s, 100 * i, 1, B);
  take (s, 4, B);
  rd (s, 150, 1, B); rd (s, 450, 1, B); rd (s, 550, 1, B);
  take (s, 100, B);
  expect ("trace 2 (from the list head)",
          "R100 R200 R300 R400 R500 R550 R600 R150 R450");
  finish (s);

  /* Trace 3: an expired read starts a batch, which runs along the list
   * to its tail (through the wrap) and leaves the head where it is.
   *   t=0: read 100 (head).  t=1ms: read 700.  t=2ms: reads 200 300 400
   *   500 600, and 50 60 (below the head):
   *         100 200 300 400 500 600 700 | 50 60.
   *   batch 1 at 2ms: 100 200 300 400; the head is now 500.
   *   At 501ms, 700 (in at 1ms) has expired (501 >= 1 + 500); 500 and
   *   600 (in at 2ms) have not.  batch 2, NEXT: expired, from 700:
   *   700, then along the list past the wrap: 50, 60, the tail: stop
   *   (count 64 - 3 * 16 = 16 left).  The head stays 500.
   *   batch 3: 500 600.
   */
  s = seed (64, 2);
  now = 0;
  rd (s, 100, 1, B);
  now = 1 * MS;
  rd (s, 700, 1, B);
  now = 2 * MS;
  for (i = 2; i <= 6; i++)
    rd (s, 100 * i, 1, B);
  rd (s, 50, 1, B); rd (s, 60, 1, B);
  take (s, 4, B);
  now = 501 * MS;
  take (s, 100, B);
  expect ("trace 3 (expired read, to the tail)",
          "R100 R200 R300 R400 R700 R50 R60 R500 R600");
  CHECK_EQ (stats (s).expired[DL_READ], 1);
  finish (s);

  /* Trace 4a: a request contiguous with the last costs 1, whatever its
   * size (no size cost): 70 contiguous reads of 256 KiB (each over the
   * 255-sector limit alone, so none merge), blocks of 256 KiB 0..69,
   * and a write at 1000.  writes_starved 1.
   *   batch 1 (reads, starved 0 -> 1): from 0; last_sector 0, so 0 is
   *   contiguous: 64 requests cost 64: 0..63.
   *   batch 2: starved 1 >= 1: the write.  batch 3: reads 64..69.
   */
  s = seed (64, 1);
  for (i = 0; i < 70; i++)
    rd (s, i, 1, 256 * KiB);
  wr (s, 1000, 1, 256 * KiB);
  take (s, 100, 256 * KiB);
  {
    char want[2048] = "";
    for (i = 0; i < 64; i++)
      snprintf (want + strlen (want), sizeof want - strlen (want), "R%zu ", i);
    strcat (want, "W1000");
    for (i = 64; i < 70; i++)
      snprintf (want + strlen (want), sizeof want - strlen (want), " R%zu", i);
    expect ("trace 4a (contiguous cost 1)", want);
  }
  finish (s);

  /* Trace 4b: seeks and contiguous requests in one batch.  Reads of 64
   * KiB (two would be 256 sectors > 255: no merges), in 64 KiB blocks:
   * 0 1 2 10 11 12 20 30 40 41 50, and a write at 1000; writes_starved 1.
   *   batch 1 from 0: 0 (contiguous with 0: 63), 1 (62), 2 (61),
   *   10 seek (45), 11 (44), 12 (43), 20 seek (27), 30 seek (11),
   *   40 seek (-5): stop.  batch 2: the write.  batch 3: 41 50.
   */
  s = seed (64, 1);
  {
    static const uint64_t b[] = { 0, 1, 2, 10, 11, 12, 20, 30, 40, 41, 50 };
    for (i = 0; i < sizeof b / sizeof b[0]; i++)
      rd (s, b[i], 1, 64 * KiB);
  }
  wr (s, 1000, 1, 64 * KiB);
  take (s, 100, 64 * KiB);
  expect ("trace 4b (fifo_batch, seek_cost)",
          "R0 R1 R2 R10 R11 R12 R20 R30 R40 W1000 R41 R50");
  finish (s);

  /* Trace 5: writes_starved, and writes never expire.  fifo_batch 1 (a
   * batch is one request).  At t=0 writes 1000 and 2000, reads 10 20
   * ... 80; then the clock moves 10 s (reads and writes are old; only
   * reads expire).
   *   batch 1: reads expired, writes queued, starved 0 >= 2? no (1):
   *   from the oldest read, 10.  batch 2: 1 >= 2? no (2): 20.
   *   batch 3: 2 >= 2: writes, from the write list's head: 1000
   *   (starved 0).  Then 30, 40, 2000, and with no write left 50..80.
   */
  s = seed (1, 2);
  now = 0;
  wr (s, 1000, 1, B); wr (s, 2000, 1, B);
  for (i = 1; i <= 8; i++)
    rd (s, 10 * i, 1, B);
  now = 10000 * MS;
  take (s, 100, B);
  expect ("trace 5 (writes_starved, no write deadline)",
          "R10 R20 W1000 R30 R40 W2000 R50 R60 R70 R80");
  CHECK_EQ (stats (s).starved_switches, 2);
  finish (s);

  /* Trace 6: a new direction starts at its list's head, not at its
   * oldest request.
   *   t=0: write 100 (head).  t=1ms: write 50 (below: second lap).
   *   t=2ms: writes 200 300 400 500 600:  100 200 .. 600 | 50.
   *   batch 1 (no reads): 100 200 300 400; the head is now 500.
   *   Then read 9000 arrives (t=3ms).  batch 2: reads, writes queued,
   *   starved 0 -> 1: 9000.  batch 3: no reads: writes from the head
   *   500: 500 600 50.  (The oldest write, 50, would go first if a new
   *   direction started at the oldest.)
   */
  s = seed (64, 2);
  now = 0;
  wr (s, 100, 1, B);
  now = 1 * MS;
  wr (s, 50, 1, B);
  now = 2 * MS;
  for (i = 2; i <= 6; i++)
    wr (s, 100 * i, 1, B);
  take (s, 4, B);
  now = 3 * MS;
  rd (s, 9000, 1, B);
  take (s, 100, B);
  expect ("trace 6 (direction change at the head)",
          "W100 W200 W300 W400 R9000 W500 W600 W50");
  finish (s);

  /* Trace 7: merges.  Reads, 4 KiB blocks:
   *   0 then 1: back merge, 0x2.  6 then 5: front merge, 5x2.
   *   10, 12, then 11: back merge into 10, which then touches 12: they
   *   join, 10x3 (3 requests).  256x16 and 272x16 (64 KiB each): 32
   *   blocks = 256 sectors > 255, no merge.  300x15 and 315x16 (60 + 64
   *   KiB = 248 sectors): one unit.
   *   One batch from the head 0 (0 contiguous: 63, 5 seek 47, 10 seek
   *   31, 256 seek 15, 272 contiguous 14, 300 seek -2).
   */
  s = seed (64, 2);
  rd (s, 0, 1, B); rd (s, 1, 1, B);
  rd (s, 6, 1, B); rd (s, 5, 1, B);
  rd (s, 10, 1, B); rd (s, 12, 1, B); rd (s, 11, 1, B);
  rd (s, 256, 16, B); rd (s, 272, 16, B);
  rd (s, 300, 15, B); rd (s, 315, 16, B);
  take (s, 100, B);
  expect ("trace 7 (merges, 255 sectors)",
          "R0x2:2 R5x2:2 R10x3:3 R256x16 R272x16 R300x31:2");
  finish (s);

  return test_result ("seed-trace");
}
