/* nbd-deadline: the sorted queues (rule: "sort_list").
 *
 * One red-black tree per direction holds the queued units ordered by
 * offset, so that a batch can walk the disk in one direction and a merge
 * candidate is found in O(log n).  Ties (reads may overlap) are broken
 * by arrival sequence, which keeps the key unique.
 */
#include <config.h>

#include "sched-internal.h"

static int
sortq_cmp (const struct dl_req *a, const struct dl_req *b)
{
  if (a->unit_offset != b->unit_offset)
    return a->unit_offset < b->unit_offset ? -1 : 1;
  if (a->seq != b->seq)
    return a->seq < b->seq ? -1 : 1;
  return 0;
}

RB_GENERATE_STATIC (dl_sortq, dl_req, sort_node, sortq_cmp)

void
sortq_insert (struct dl_sched *s, struct dl_req *u)
{
  RB_INSERT (dl_sortq, &s->sort[u->dir], u);
}

void
sortq_remove (struct dl_sched *s, struct dl_req *u)
{
  RB_REMOVE (dl_sortq, &s->sort[u->dir], u);
}

struct dl_req *
sortq_first (struct dl_sched *s, enum dl_dir d)
{
  return RB_MIN (dl_sortq, &s->sort[d]);
}

/* The lowest unit starting at or after off. */
struct dl_req *
sortq_at_or_after (struct dl_sched *s, enum dl_dir d, uint64_t off)
{
  struct dl_req key = { .unit_offset = off, .seq = 0 };

  return RB_NFIND (dl_sortq, &s->sort[d], &key);
}

/* The highest unit starting strictly before off. */
struct dl_req *
sortq_last_before (struct dl_sched *s, enum dl_dir d, uint64_t off)
{
  struct dl_req *n = sortq_at_or_after (s, d, off);

  return n ? RB_PREV (dl_sortq, &s->sort[d], n) : RB_MAX (dl_sortq, &s->sort[d]);
}

struct dl_req *
sortq_next (struct dl_req *u)
{
  return RB_NEXT (dl_sortq, NULL, u);
}

struct dl_req *
sortq_prev (struct dl_req *u)
{
  return RB_PREV (dl_sortq, NULL, u);
}
