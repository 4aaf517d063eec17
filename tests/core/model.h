/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: a reference model that watches the core and checks the
 * invariants of the seed's rules on every call.  Shared by the
 * randomized test (test-random.c) and the fuzz target (fuzz-core.c).
 *
 * The model keeps every request in insertion order with its state
 * (waiting, at the device, done, drained) and recomputes from scratch,
 * naively, what the core computes cleverly: which requests are blocked
 * by an overlapping earlier one, which is the oldest waiting request of
 * a direction, whether it has expired, which direction a new batch
 * must take.  Any disagreement is a violation: model_fail() prints it
 * and aborts (so that the fuzzer records the input).
 *
 * Beside those checks, a reference scheduler (ref.c) predicts the exact
 * unit of every dispatch (policy, profile and tunables as set, merges
 * and hazards included) while anticipate is 0 and preempt off; with
 * either on it stops predicting for the rest of the run (ref_stopped)
 * and only the invariant checks remain.
 */
#ifndef NBD_DEADLINE_MODEL_H
#define NBD_DEADLINE_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "dl-sched.h"

enum mstate { M_WAIT = 1, M_INFLIGHT, M_DONE, M_DRAINED };

struct mreq {
  struct dl_req r;              /* what the core sees; priv = this */
  uint64_t seq;                 /* insertion order */
  uint64_t ins_ns, disp_ns;
  enum mstate st;
  bool was_held;
};

struct model {
  struct dl_sched *s;
  struct dl_tunables t;
  uint32_t align;
  uint64_t now;
  uint64_t next_seq;

  /* Requests not yet done or drained, in insertion order. */
  struct mreq **live;
  size_t nlive, caplive;
  /* Units at the device. */
  struct dl_req **inflight;
  size_t ninflight, capinflight;

  /* What the model knows of the batch state (deadline policy).  Not
   * synced after a change of tunables until the next write batch, as
   * the core's starved counter and batch then carry over.
   */
  bool synced;
  bool batching;
  int batch_dir;
  uint64_t batch_cost;          /* lower bound: the first unit counts 1 */
  uint32_t starved;
  uint64_t head_pos, last_end[2];
  bool seed_batch;              /* the batch in progress is a seed batch */
  uint32_t consec_reads;        /* read batches while writes waited */
  uint64_t max_merge_hwm;       /* largest max_merge ever set */

  /* The read-deadline bound: the oldest waiting read, once expired, is
   * dispatched before 2 * fifo_batch other units (see model.c).
   */
  uint64_t watch_seq;
  uint64_t watch_count;

  /* The reference scheduler (ref.c): its own units and batch state. */
  bool ref_on, ref_stopped;
  struct runit **ru, **r_batch, *r_flush, *r_pick;
  size_t nru, capru, nbatch, capbatch;
  bool r_batching;
  int r_batch_dir;
  uint64_t r_batch_cost, r_head, r_last_end[2];
  uint32_t r_starved;
  struct { bool valid; uint64_t off, seq; } r_seed[2];
  uint64_t n_predicted;         /* dispatches predicted and compared */

  /* Figures for the caller. */
  uint64_t n_inserted, n_dispatched_units, n_completed_units, n_drained;
  uint64_t n_members_done, max_read_wait_ns, n_checks;
};

/* align: the device granularity given to dl_sched_new. */
void model_init (struct model *m, const struct dl_tunables *t, uint32_t align);
void model_free (struct model *m);   /* drains, completes, frees */

void model_insert (struct model *m, enum dl_op op, uint64_t offset,
                   uint64_t length, uint32_t flags);
/* Returns the unit dispatched, or NULL. */
struct dl_req *model_dispatch (struct model *m);
/* Complete in-flight unit number k (mod the number in flight). */
void model_complete (struct model *m, size_t k);
void model_drain_all (struct model *m);
/* Returns the core's answer. */
int model_set_tunables (struct model *m, const struct dl_tunables *t);
void model_advance (struct model *m, uint64_t ns);

size_t model_waiting (const struct model *m);

/* ref.c, called by model.c. */
void ref_insert (struct model *m, struct mreq *x);
void ref_predict (struct model *m);
void ref_dispatched (struct model *m, struct dl_req *u);
void ref_completed (struct model *m, struct dl_req *u);
void ref_drained (struct model *m);
void ref_tunables (struct model *m, const struct dl_tunables *old,
                   const struct dl_tunables *t);
void ref_free (struct model *m);

void model_fail (const char *fmt, ...)
  __attribute__ ((format (printf, 1, 2), noreturn));

#endif /* NBD_DEADLINE_MODEL_H */
