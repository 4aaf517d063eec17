/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: what a batch has spent (the seed: "seeks cost more than
 * contiguous requests").
 *
 * A batch ends when it has spent fifo_batch cost units (select.c).  The
 * cost is charged here when a unit is dispatched, and by anticipate.c
 * when the device idled for a reader that came back: that time is the
 * batch's too.  The device head (where the last unit ended) lives here
 * because it decides what is contiguous.
 */
#include <config.h>

#include <assert.h>

#include "sched-internal.h"

/* What a unit costs its batch.  The seed counted requests: 1 if
 * contiguous with the previous one, seek_cost if not.  Its requests
 * carried at most about 128 KiB, so a batch of 64 moved a few MiB.
 * Ours may merge far more (max_merge allows 64 MiB): counted as 1, a
 * batch of 1 MiB units would move 64 MiB, most of a second on a disk, and
 * a read arriving meanwhile would wait all of it.  So a unit also costs
 * 1 for every further DL_COST_BYTES it carries, which keeps a batch as
 * long in time as the seed's.  size_cost off (profile seed): the seed's
 * count only.
 */
uint64_t
cost_unit (const struct dl_sched *s, const struct dl_req *u, bool contiguous)
{
  uint64_t extra = u->unit_length && s->t.size_cost
    ? (u->unit_length - 1) / DL_COST_BYTES : 0;

  return (contiguous ? 1 : s->t.seek_cost) + extra;
}

/* Charge c cost units to the batch in progress (saturating). */
void
cost_charge (struct dl_sched *s, uint64_t c)
{
  s->batch_cost = c > UINT32_MAX - s->batch_cost ? UINT32_MAX
                                                 : s->batch_cost + (uint32_t) c;
}

/* The cost of a dispatched unit, and where the head is now. */
void
cost_account (struct dl_sched *s, struct dl_req *u)
{
  bool contiguous = u->unit_offset == s->head_pos;

  u->seeked = !contiguous;
  if (!contiguous)
    s->st.seeks++;
  if (s->batching && u->dir == s->batch_dir) {
    /* A batch takes a unit only while it has budget left (select.c,
     * continue_batch), so it ends at most one unit's cost past
     * fifo_batch.
     */
    assert (s->batch_cost < s->t.fifo_batch);
    cost_charge (s, cost_unit (s, u, contiguous));
  }
  s->head_pos = dl_end (u);
  s->last_end[u->dir] = dl_end (u);
}
