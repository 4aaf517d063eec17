/* SPDX-License-Identifier: BSD-3-Clause */
/* The naive yardstick scheduler; see naive.h for what it is and why. */
#include <stddef.h>

#include "naive.h"

void
naive_init (struct naive_sched *s)
{
  *s = (struct naive_sched) {
    .expire_ns = { 500000000, 5000000000 }, /* read, write: the core's defaults */
    .fifo_batch = 64,
    .seek_cost = 16,
    .writes_starved = 2,
    .last_dir = 0,
  };
}

static void
list_unlink_sorted (struct naive_list *l, struct naive_req *r)
{
  if (r->sprev) r->sprev->snext = r->snext; else l->head = r->snext;
  if (r->snext) r->snext->sprev = r->sprev; else l->tail = r->sprev;
}

static void
list_unlink_fifo (struct naive_list *l, struct naive_req *r)
{
  if (r->fprev) r->fprev->fnext = r->fnext; else l->head = r->fnext;
  if (r->fnext) r->fnext->fprev = r->fprev; else l->tail = r->fprev;
}

void
naive_insert (struct naive_sched *s, struct naive_req *r, uint64_t now_ns)
{
  struct naive_list *l = &s->sorted[r->dir];
  struct naive_req *after;

  /* The O(n) part: walk down from the highest offset to the insertion
   * point (from the top so that an ascending fill is cheap).
   */
  for (after = l->tail; after && after->offset > r->offset; after = after->sprev)
    ;
  r->sprev = after;
  r->snext = after ? after->snext : l->head;
  if (r->sprev) r->sprev->snext = r; else l->head = r;
  if (r->snext) r->snext->sprev = r; else l->tail = r;

  /* A request just ahead of the sweep joins it rather than waiting a
   * whole round.
   */
  if (s->next[r->dir] == r->snext && r->offset >= s->last_end)
    s->next[r->dir] = r;

  r->deadline_ns = now_ns + s->expire_ns[r->dir];
  r->fnext = NULL;
  r->fprev = s->fifo[r->dir].tail;
  if (r->fprev) r->fprev->fnext = r; else s->fifo[r->dir].head = r;
  s->fifo[r->dir].tail = r;
  s->count[r->dir]++;
}

static struct naive_req *
take (struct naive_sched *s, struct naive_req *r)
{
  int d = r->dir;

  s->next[d] = r->snext;
  list_unlink_sorted (&s->sorted[d], r);
  list_unlink_fifo (&s->fifo[d], r);
  s->count[d]--;
  s->batching += r->offset == s->last_end ? 1 : s->seek_cost;
  s->last_end = r->offset + r->length;
  s->last_dir = d;
  return r;
}

struct naive_req *
naive_dispatch (struct naive_sched *s, uint64_t now_ns)
{
  int d;
  struct naive_req *head;

  /* Continue the current batch while it has budget and requests ahead. */
  if (s->next[s->last_dir] && s->batching < s->fifo_batch)
    return take (s, s->next[s->last_dir]);

  if (s->count[0] && !(s->count[1] && s->starved >= s->writes_starved)) {
    d = 0;
    if (s->count[1])
      s->starved++;
  }
  else if (s->count[1]) {
    d = 1;
    s->starved = 0;
  }
  else
    return NULL;

  /* A new batch starts at the earliest deadline if it has expired or
   * the sweep reached the end; otherwise it continues ascending.
   */
  s->batching = 0;
  head = s->fifo[d].head;
  if (head->deadline_ns <= now_ns || s->next[d] == NULL)
    return take (s, head);
  return take (s, s->next[d]);
}
