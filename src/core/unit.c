/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: a unit's place in the queues.
 *
 * A queued unit is in two structures of its direction at once: the
 * sorted queue (sortq.c, the seed's sort_list) and the FIFO (fifo.c, the
 * seed's read_fifo).  It goes into both or neither, and the gauges that
 * count queued units follow; these two functions are the only way in and
 * out, for every file above them.
 */
#include <config.h>

#include <assert.h>

#include "sched-internal.h"

/* Put a unit into the sorted queue and the FIFO. */
void
unit_relink (struct dl_sched *s, struct dl_req *u)
{
  assert (u->state == DL_S_NEW || u->state == DL_S_BATCHED);
  u->state = DL_S_QUEUED;
  /* The seed's sort_list starts where its first request went in after
   * it was last emptied (select.c, seed_batches).
   */
  if (!s->seed_head[u->dir].valid) {
    s->seed_head[u->dir].valid = true;
    s->seed_head[u->dir].off = u->unit_offset;
    s->seed_head[u->dir].seq = u->seq;
  }
  sortq_insert (s, u);
  fifo_add (s, u);
  s->st.queued[u->dir]++;
  s->st.queued_preempting += u->preempts;
}

/* Take a queued unit out of both. */
void
unit_unlink (struct dl_sched *s, struct dl_req *u)
{
  assert (u->state == DL_S_QUEUED && s->st.queued[u->dir] > 0);
  sortq_remove (s, u);
  fifo_remove (s, u);
  u->state = DL_S_NEW;          /* in no queue until the caller says */
  s->st.queued[u->dir]--;
  s->st.queued_preempting -= u->preempts;
}
