/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: a tiny helper for the core's unit tests.
 *
 * A fake clock (a plain uint64_t the test advances) and request
 * constructors; the CHECK macros are check.h's.
 */
#ifndef NBD_DEADLINE_TESTLIB_H
#define NBD_DEADLINE_TESTLIB_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl-sched.h"
#include "check.h"

#define MS 1000000ULL           /* nanoseconds in a millisecond */
#define KiB 1024ULL

/* The fake clock: every core call gets it; tests move it explicitly. */
static uint64_t now;

/* Requests come from a static pool so tests need not free them. */
#define POOL_SIZE 16384
static struct dl_req pool[POOL_SIZE];
static size_t pool_used;

static inline struct dl_req *
mkreq (enum dl_op op, uint64_t offset, uint64_t length, uint32_t flags)
{
  struct dl_req *r;

  REQUIRE (pool_used < POOL_SIZE);
  r = &pool[pool_used++];
  memset (r, 0, sizeof *r);
  r->op = op;
  r->offset = offset;
  r->length = op == DL_OP_FLUSH ? 0 : length;
  r->flags = flags;
  r->priv = r;
  return r;
}

/* A request of its own on the heap, for the simulations that make
 * more requests than the pool holds; free_unit frees a unit's members
 * once it is complete (or drained).
 */
static inline struct dl_req *
heapreq (enum dl_op op, uint64_t offset, uint64_t length, uint64_t stream)
{
  struct dl_req *r = calloc (1, sizeof *r);

  REQUIRE (r != NULL);
  r->op = op;
  r->offset = offset;
  r->length = length;
  r->stream = stream;
  r->priv = r;
  return r;
}

static inline void
free_unit (struct dl_req *u)
{
  struct dl_req *m, *tmp;

  DL_FOREACH_MEMBER (m, u, tmp)
    free (m);
}

/* The end of a simulation: free what still waits, then the scheduler
 * (units at the device are the caller's to complete and free first).
 */
static inline void
sched_free_all (struct dl_sched *s)
{
  struct dl_req *u;

  while ((u = dl_drain (s)) != NULL)
    free_unit (u);
  dl_sched_free (s);
}

/* Insert at the current fake time. */
static inline struct dl_req *
ins (struct dl_sched *s, enum dl_op op, uint64_t offset, uint64_t length)
{
  struct dl_req *r = mkreq (op, offset, length, 0);
  dl_insert (s, r, now);
  return r;
}

static inline struct dl_req *
ins_flags (struct dl_sched *s, enum dl_op op, uint64_t offset,
           uint64_t length, uint32_t flags)
{
  struct dl_req *r = mkreq (op, offset, length, flags);
  dl_insert (s, r, now);
  return r;
}

/* A scheduler with the defaults changed by the caller's function. */
static inline struct dl_sched *
mksched (const struct dl_tunables *t, uint32_t align)
{
  struct dl_sched *s = dl_sched_new (t, align);
  REQUIRE (s != NULL);
  return s;
}

static inline struct dl_sched *
mksched_default (void)
{
  struct dl_tunables t;
  dl_tunables_default (&t);
  t.preempt = false;            /* the seed's rules: preemption has its own test */
  return mksched (&t, 1);
}

/* Does unit u contain request r (as head or member)? */
static inline int
unit_has (const struct dl_req *u, const struct dl_req *r)
{
  const struct dl_req *m;
  for (m = u; m; m = m->next_member)
    if (m == r)
      return 1;
  return 0;
}

/* Dispatch one unit and complete it at once (a device of depth 1
 * that takes no time).  Returns the unit, or NULL.
 */
static inline struct dl_req *
dispatch_complete (struct dl_sched *s)
{
  struct dl_req *u = dl_dispatch (s, now);
  if (u)
    dl_complete (s, u, now);
  return u;
}

/* Drain whatever is left so that dl_sched_free's precondition holds. */
static inline void
finish (struct dl_sched *s)
{
  struct dl_req *u;
  while ((u = dl_dispatch (s, now)) != NULL)
    dl_complete (s, u, now);
  while (dl_drain (s) != NULL)
    ;
  dl_sched_free (s);
}

static inline struct dl_stats
stats (struct dl_sched *s)
{
  struct dl_stats st;
  dl_sched_stats (s, &st);
  return st;
}

#endif /* NBD_DEADLINE_TESTLIB_H */
