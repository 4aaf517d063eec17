/* nbd-deadline: the FIFOs and their deadlines (rule: "read_fifo").
 *
 * One list per direction, ordered by the earliest arrival among a unit's
 * members: its head is the unit whose deadline expires first.  A unit is
 * expired when now >= arrival + expire, with read_expire for reads and
 * write_expire for writes (0: writes never expire, as in the seed).
 *
 * The deadline is derived from the arrival time when it is checked, not
 * stored, so a change of read_expire at run time applies to every queued
 * request at once, and the order of the list never depends on it.
 */
#include <config.h>

#include "sched-internal.h"

static bool
older (const struct dl_req *a, const struct dl_req *b)
{
  if (a->unit_arrival_ns != b->unit_arrival_ns)
    return a->unit_arrival_ns < b->unit_arrival_ns;
  return a->seq < b->seq;
}

/* New requests arrive in order and go to the tail in O(1).  A unit
 * released by a hazard (hazard.c) or grown by a merge may be older than
 * the tail: it is placed by its arrival, searching from the head, which
 * is where old units are.
 */
void
fifo_add (struct dl_sched *s, struct dl_req *u)
{
  struct dl_list *l = &s->fifo[u->dir];
  struct dl_req *tail = TAILQ_LAST (l, dl_list);
  struct dl_req *p;

  if (tail == NULL || !older (u, tail)) {
    TAILQ_INSERT_TAIL (l, u, fifo_link);
    return;
  }
  TAILQ_FOREACH (p, l, fifo_link) {
    if (older (u, p)) {
      TAILQ_INSERT_BEFORE (p, u, fifo_link);
      return;
    }
  }
  TAILQ_INSERT_TAIL (l, u, fifo_link); /* not reached */
}

void
fifo_remove (struct dl_sched *s, struct dl_req *u)
{
  TAILQ_REMOVE (&s->fifo[u->dir], u, fifo_link);
}

struct dl_req *
fifo_oldest (struct dl_sched *s, enum dl_dir d)
{
  return TAILQ_FIRST (&s->fifo[d]);
}

bool
fifo_expired (struct dl_sched *s, enum dl_dir d, uint64_t now)
{
  uint64_t expire = d == DL_READ ? s->t.read_expire_ns : s->t.write_expire_ns;
  struct dl_req *u = fifo_oldest (s, d);

  if (u == NULL || expire == 0)
    return false;
  return now >= u->unit_arrival_ns && now - u->unit_arrival_ns >= expire;
}
