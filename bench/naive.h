/* SPDX-License-Identifier: BSD-3-Clause */
/* A deliberately naive deadline scheduler, the yardstick for bench-core.
 *
 * Same rules as the core's deadline policy in their simplest form (per
 * direction a queue sorted by offset and a FIFO with deadlines, batches
 * of fifo_batch cost units where a seek costs seek_cost, writes_starved,
 * batches that continue ascending from the last position and restart at
 * the earliest deadline), but each sorted queue is a doubly linked list
 * and insertion walks it: O(n) per request.  No merges, no hazards: the
 * benchmark never queues adjacent or overlapping requests.
 */
#ifndef NBD_DEADLINE_BENCH_NAIVE_H
#define NBD_DEADLINE_BENCH_NAIVE_H

#include <stdint.h>

struct naive_req {
  uint64_t offset, length;
  int dir;                      /* 0 read, 1 write */
  uint64_t deadline_ns;
  struct naive_req *sprev, *snext; /* sorted list */
  struct naive_req *fprev, *fnext; /* FIFO */
};

struct naive_list {
  struct naive_req *head, *tail;
};

struct naive_sched {
  struct naive_list sorted[2];
  struct naive_list fifo[2];
  struct naive_req *next[2];    /* where the sweep continues */
  uint64_t count[2];
  uint64_t expire_ns[2];
  uint32_t fifo_batch, seek_cost, writes_starved;
  uint32_t batching, starved;
  int last_dir;
  uint64_t last_end;
};

void naive_init (struct naive_sched *s);
void naive_insert (struct naive_sched *s, struct naive_req *r, uint64_t now_ns);
/* The next request to issue (already removed), or NULL when empty. */
struct naive_req *naive_dispatch (struct naive_sched *s, uint64_t now_ns);

#endif /* NBD_DEADLINE_BENCH_NAIVE_H */
