/* SPDX-License-Identifier: BSD-3-Clause */
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

#include <assert.h>

#include "sched-internal.h"

static bool
older (const struct dl_req *a, const struct dl_req *b)
{
  if (a->unit_arrival_ns != b->unit_arrival_ns)
    return a->unit_arrival_ns < b->unit_arrival_ns;
  return a->seq < b->seq;
}

static int
late_cmp (const struct dl_req *a, const struct dl_req *b)
{
  if (a == b)
    return 0;
  return older (a, b) ? -1 : 1;
}

RB_GENERATE_STATIC (dl_late, dl_req, late_node, late_cmp)

/* New requests arrive in order and go to the tail of the list in O(1).
 * A unit that is older than the tail (released by a hazard, or grown by
 * a merge with an older one) goes into a small tree by arrival instead,
 * in O(log n): the FIFO is the list and the tree together, and its head
 * is the older of their two heads.
 */
void
fifo_add (struct dl_sched *s, struct dl_req *u)
{
  struct dl_list *l = &s->fifo[u->dir];
  struct dl_req *tail = TAILQ_LAST (l, dl_list);

  if (tail == NULL || !older (u, tail)) {
    u->in_late = 0;
    TAILQ_INSERT_TAIL (l, u, fifo_link);
  }
  else {
    u->in_late = 1;
    RB_INSERT (dl_late, &s->late[u->dir], u);
  }
}

void
fifo_remove (struct dl_sched *s, struct dl_req *u)
{
  if (u->in_late)
    RB_REMOVE (dl_late, &s->late[u->dir], u);
  else
    TAILQ_REMOVE (&s->fifo[u->dir], u, fifo_link);
}

struct dl_req *
fifo_oldest (struct dl_sched *s, enum dl_dir d)
{
  struct dl_req *a = TAILQ_FIRST (&s->fifo[d]);
  struct dl_req *b = RB_MIN (dl_late, &s->late[d]);

  if (a == NULL)
    return b;
  if (b == NULL)
    return a;
  return older (b, a) ? b : a;
}

/* dl_sched_check: every unit of the FIFO of direction d is queued and
 * of that direction, the list is in arrival order, and each unit's
 * in_late flag says where it is.  Returns how many units it holds.
 */
uint64_t
fifo_check (struct dl_sched *s, enum dl_dir d)
{
  struct dl_req *u, *prev = NULL;
  uint64_t n = 0;

  TAILQ_FOREACH (u, &s->fifo[d], fifo_link) {
    assert (u->state == DL_S_QUEUED && u->dir == d && !u->in_late);
    assert (prev == NULL || !older (u, prev));
    prev = u;
    n++;
  }
  RB_FOREACH (u, dl_late, &s->late[d]) {
    assert (u->state == DL_S_QUEUED && u->dir == d && u->in_late);
    n++;
  }
  return n;
}

bool
fifo_expired (struct dl_sched *s, enum dl_dir d, uint64_t now)
{
  uint64_t expire = d == DL_READ ? s->t.read_expire_ns : s->t.write_expire_ns;
  struct dl_req *u;

  if (expire == 0)
    return false;
  u = fifo_oldest (s, d);
  if (u == NULL)
    return false;
  return now >= u->unit_arrival_ns && now - u->unit_arrival_ns >= expire;
}
