/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (fifo_batch, for merged units): a unit costs its batch 1 (or
 * seek_cost) plus 1 for every further 128 KiB it carries, so a batch of
 * large contiguous units lasts as long as the seed's batch of 64 small
 * requests, not eight times longer.
 */
#include "testlib.h"

/* Queue n contiguous writes of len bytes, then a read; count the writes
 * that go before the read when the batch started with the writes.
 */
static int
writes_in_first_batch (uint64_t len, int n)
{
  struct dl_tunables t;
  struct dl_sched *s;
  struct dl_req *u;
  int i, writes = 0;

  dl_tunables_default (&t);
  t.preempt = false;            /* the seed's batches, whole */
  t.max_merge = 0;              /* the units are what we queue */
  s = mksched (&t, 1);
  for (i = 0; i < n; i++)
    ins (s, DL_OP_WRITE, (uint64_t) i * len, len);
  u = dispatch_complete (s);   /* the write batch starts (no reads yet) */
  REQUIRE (u != NULL && u->op == DL_OP_WRITE);
  writes++;
  ins (s, DL_OP_READ, 1ULL << 40, 4 * KiB);
  while ((u = dispatch_complete (s)) != NULL && u->op == DL_OP_WRITE)
    writes++;
  finish (s);
  return writes;
}

int
main (void)
{
  /* 4 KiB: contiguous from offset 0 (the head starts there): 64 of
   * them, as in the seed.
   */
  CHECK_EQ (writes_in_first_batch (4 * KiB, 200), 64);
  /* 128 KiB still costs 1. */
  CHECK_EQ (writes_in_first_batch (128 * KiB, 200), 64);
  /* 1 MiB costs 8: 8 units, the same 8 MiB as 64 units of 128 KiB. */
  CHECK_EQ (writes_in_first_batch (1024 * KiB, 200), 8);
  return test_result ("batch-bytes");
}
