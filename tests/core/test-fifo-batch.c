/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (seed: fifo_batch, seek_cost, deadline_move_requests): a batch
 * ends once it has spent fifo_batch cost units, a unit contiguous with
 * the previous one costing 1 and a seek costing seek_cost: with the
 * defaults (64, 16) that is 4 seeking units, or 64 contiguous ones.
 */
#include "testlib.h"

/* Dispatch n units; record in sizes[] how many units each batch had. */
static size_t
batch_sizes (struct dl_sched *s, size_t n, size_t *sizes, size_t max)
{
  size_t nb = 0, i;
  uint64_t b0 = stats (s).batches[DL_READ], b;

  for (i = 0; i < n; i++) {
    REQUIRE (dispatch_complete (s) != NULL);
    b = stats (s).batches[DL_READ] - b0;
    REQUIRE (b >= 1 && b <= max);
    if (b > nb) {
      nb = b;
      sizes[nb - 1] = 0;
    }
    sizes[nb - 1]++;
  }
  return nb;
}

int
main (void)
{
  struct dl_tunables t;
  struct dl_sched *s;
  size_t sizes[16], nb, i;

  dl_tunables_default (&t);
  CHECK_EQ (t.fifo_batch, 64);
  CHECK_EQ (t.seek_cost, 16);
  t.max_merge = 0;              /* no merging: one request, one unit */

  /* Seeks: reads 1 MiB apart, none contiguous with the last. */
  s = mksched (&t, 1);
  for (i = 0; i < 12; i++)
    ins (s, DL_OP_READ, (i + 1) << 20, 4 * KiB);
  nb = batch_sizes (s, 12, sizes, 16);
  CHECK_EQ (nb, 3);
  for (i = 0; i < nb; i++)
    CHECK_EQ (sizes[i], 4);
  CHECK_EQ (stats (s).seeks, 12);
  finish (s);

  /* Contiguous: 128 reads back to back from offset 0 (where the head
   * starts, so even the first costs 1): two batches of 64.
   */
  s = mksched (&t, 1);
  for (i = 0; i < 128; i++)
    ins (s, DL_OP_READ, i * 4 * KiB, 4 * KiB);
  nb = batch_sizes (s, 128, sizes, 16);
  CHECK_EQ (nb, 2);
  CHECK_EQ (sizes[0], 64);
  CHECK_EQ (sizes[1], 64);
  CHECK_EQ (stats (s).seeks, 0);
  finish (s);

  /* Mixed: a seek (16) then contiguous ones (1 each): 1 + 48. */
  s = mksched (&t, 1);
  for (i = 0; i < 49 + 64; i++)
    ins (s, DL_OP_READ, (1 << 20) + i * 4 * KiB, 4 * KiB);
  nb = batch_sizes (s, 49 + 64, sizes, 16);
  CHECK_EQ (nb, 2);
  CHECK_EQ (sizes[0], 49);
  CHECK_EQ (sizes[1], 64);
  finish (s);

  /* Other values: fifo_batch = 8, seek_cost = 3: a batch of seeks ends
   * once it reaches 8, i.e. after 3 units (9 >= 8).
   */
  t.fifo_batch = 8;
  t.seek_cost = 3;
  s = mksched (&t, 1);
  for (i = 0; i < 9; i++)
    ins (s, DL_OP_READ, (i + 1) << 20, 4 * KiB);
  nb = batch_sizes (s, 9, sizes, 16);
  CHECK_EQ (nb, 3);
  for (i = 0; i < nb; i++)
    CHECK_EQ (sizes[i], 3);
  finish (s);

  return test_result ("fifo-batch");
}
