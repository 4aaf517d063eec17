/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the scheduler core's private state, shared by its files.
 * Nothing outside src/core includes this.
 */
#ifndef NBD_DEADLINE_SCHED_INTERNAL_H
#define NBD_DEADLINE_SCHED_INTERNAL_H

#include "dl-sched.h"
#include "btree.h"

/* tree.h marks its static functions with the BSD spelling. */
#ifndef __unused
#define __unused __attribute__ ((__unused__))
#endif

/* Where a dl_req is.  A "unit" is what the device will see: a head
 * request plus the members merged into it.
 */
enum dl_state {
  DL_S_NEW = 0,
  DL_S_QUEUED,                  /* unit in sortq + fifo + live tree */
  DL_S_HELD,                    /* unit in held list + live tree (hazard.c) */
  DL_S_FLUSH,                   /* the pending flush unit */
  DL_S_BATCHED,                 /* unit in the seed's dispatch list + live
                                   tree (select.c, seed_batches) */
  DL_S_INFLIGHT,                /* unit dispatched (in live tree unless flush) */
  DL_S_MEMBER,                  /* merged into another unit */
  DL_S_DONE,                    /* completed or drained */
};

/* Readers followed by anticipate.c; the least recently seen is replaced. */
#define DL_STREAMS 64
/* A dependent reader seen (last_preempting_ns) this recently is still
 * about: the write hold (select.c) and pieces (piece.c) stay for it.
 */
#define DL_READER_RECENT_NS (100 * 1000000ULL)

RB_HEAD (dl_busy, dl_req);
RB_HEAD (dl_late, dl_req);
TAILQ_HEAD (dl_list, dl_req);

struct dl_sched {
  struct dl_tunables t;
  uint32_t align;
  uint64_t next_seq;

  struct dl_btree sort[2];      /* sortq.c: queued units by offset */
  struct dl_btpool sort_pool;   /* ... their nodes */
  struct dl_list fifo[2];       /* fifo.c: queued units by arrival */
  struct dl_late late[2];       /* fifo.c: ... those queued out of order */
  struct dl_busy busy;          /* hazard.c: units held or in flight */
  struct dl_list held;          /* hazard.c: units waiting for an overlap */
  struct dl_req *pending_flush; /* select.c: flushes not yet dispatched */

  /* select.c: the batch in progress and the device head. */
  bool batching;                /* a batch is in progress */
  int batch_dir;                /* direction of the current or last batch, -1 */
  uint32_t batch_cost;          /* cost units spent by the current batch */
  uint32_t starved;             /* read batches started while writes waited */
  uint64_t head_pos;            /* cost.c: end of the last unit dispatched */
  struct dl_list batch;         /* seed_batches: the batch chosen when it
                                   started (the seed's dispatch list) */
  uint64_t batch_n;             /* ... units in it */
  struct {                      /* seed_batches: the head of the seed's
                                   sort_list, as (offset, seq) */
    bool valid;                 /* false: the list emptied since */
    uint64_t off, seq;
  } seed_head[2];
  uint64_t last_end[2];         /* ... and per direction */
  uint64_t last_preempting_ns;  /* last arrival or completion of a read
                                   that may preempt (write_held, piece.c) */
  uint32_t depth;               /* the caller's device depth (0: unset) */
  uint64_t writes_in;           /* write requests (members) inserted and
                                   not yet completed or drained: each
                                   holds one of its client's request
                                   slots (slice.c) */

  /* anticipate.c: what dependent readers do, and the wait in force. */
  struct dl_stream {
    uint64_t key;               /* its readers' dl_req.reader; 0 = free slot */
    uint64_t conn;              /* the dl_req stream (connection) last seen */
    uint64_t last_arrival_ns;   /* its last read's arrival */
    uint64_t last_done_ns;      /* its last read's completion */
    uint64_t last_end;          /* ... and where that read ended */
    uint64_t think_ns;          /* mean completion -> next read (EWMA) */
    uint64_t seek;              /* mean distance to the next read (EWMA) */
    uint32_t dependent, overlapped; /* reads arriving with none / some of
                                       its reads outstanding */
    uint32_t outstanding;       /* its reads queued or at the device */
  } streams[DL_STREAMS];
  uint64_t stream_gen;          /* makes each slot's key unique */
  struct {
    bool on;
    uint64_t reader;            /* the reader waited for (its key) */
    struct dl_req *unit;        /* its read at the device, or NULL */
    uint64_t until;             /* end of the wait once that read is done */
    uint64_t hold_ns;           /* ... this long after it (anticipate.c) */
    bool counted;               /* the device has waited (stats) */
    bool extend;                /* the reader came back: continue its batch */
    uint64_t dependent_ns;      /* last sign of a learned dependent reader */
  } antic;

  /* slice.c: the time slice in force beside a dependent reader. */
  struct {
    int dir;                    /* its direction, -1: none */
    uint64_t end_ns;            /* when it ends */
    uint64_t sent;              /* units it has sent to the device */
  } slice;

  /* devtime.c: what the device takes, learned from completions. */
  struct dl_devtime {
    uint64_t last_done_ns;      /* the device's last completion */
    struct dl_fit {             /* per direction, decaying sums of */
      double s, sx, xx, sy, xy; /* s: seeked (0/1), x: bytes, y: ns */
      uint64_t n;               /* samples so far */
      double access_ns, ns_per_byte; /* the fit: y = access * s + x * ns_per_byte */
    } fit[2];
  } dev;

  /* hazard.c: scratch space for releases. */
  struct dl_req **scratch;
  size_t scratch_len, scratch_cap;

  struct dl_stats st;
};

static inline enum dl_dir
dl_op_dir (enum dl_op op)
{
  return op == DL_OP_READ ? DL_READ : DL_WRITE;
}

static inline uint64_t
dl_end (const struct dl_req *u)
{
  uint64_t e = u->unit_offset + u->unit_length;
  return e < u->unit_offset ? UINT64_MAX : e; /* saturate */
}

/* The range a unit keeps others off: its extent rounded out to the
 * device's alignment, because the engine serves an unaligned write by
 * read-modify-write of whole blocks, which must not race (hazard.c).
 * The sorted queues and the busy tree are keyed on it.
 */
static inline void
dl_round_out (const struct dl_sched *s, uint64_t lo, uint64_t end,
              uint64_t *rlo, uint64_t *rhi)
{
  uint64_t mask = (uint64_t) s->align - 1;

  *rlo = lo & ~mask;
  *rhi = end > UINT64_MAX - mask ? UINT64_MAX : (end + mask) & ~mask;
}

static inline void
dl_set_live (const struct dl_sched *s, struct dl_req *u)
{
  dl_round_out (s, u->unit_offset, dl_end (u), &u->live_lo, &u->live_hi);
  if (u->unit_length == 0)
    u->live_hi = u->live_lo;    /* an empty request overlaps nothing */
}

/* Is a dependent reader still about (DL_READER_RECENT_NS)?  (The
 * engine's clock is never 0, so 0 means none seen yet.)
 */
static inline bool
dl_reader_recent (const struct dl_sched *s, uint64_t now)
{
  return s->last_preempting_ns != 0 &&
    now <= s->last_preempting_ns + DL_READER_RECENT_NS;
}

/* Interval trees.  The busy tree (hazard.c) keeps, in each node, the
 * highest rounded-out end in its subtree (live_max_hi), so that the units
 * overlapping a range are found in O(log n + k); the sorted queues keep
 * the same in their B+trees (btree.c).  Both are ordered by offset, which
 * orders live_lo too.  DL_INTERVAL_TREE(name, field) defines, for the
 * red-black tree whose links are `field`, name_augment (tree.h's
 * RB_AUGMENT hook) and name_overlaps_at.
 */
typedef bool dl_visit_fn (struct dl_req *v, void *arg);

#define DL_INTERVAL_TREE(name, field)                                     \
  static uint64_t                                                         \
  name##_max (const struct dl_req *n)                                     \
  {                                                                       \
    return n ? n->live_max_hi : 0;                                        \
  }                                                                       \
  /* Recompute a node's maximum from its children, and walk up while it  \
   * changes.  tree.h calls this bottom up after every change, so the    \
   * first unchanged node ends the walk.                                  \
   */                                                                     \
  static void                                                             \
  name##_augment (struct dl_req *n)                                       \
  {                                                                       \
    while (n) {                                                           \
      uint64_t m = n->live_hi;                                            \
      uint64_t l = name##_max (RB_LEFT (n, field));                       \
      uint64_t r = name##_max (RB_RIGHT (n, field));                      \
      if (l > m)                                                          \
        m = l;                                                            \
      if (r > m)                                                          \
        m = r;                                                            \
      if (m == n->live_max_hi)                                            \
        return;                                                           \
      n->live_max_hi = m;                                                 \
      n = RB_PARENT (n, field);                                           \
    }                                                                     \
  }                                                                       \
  /* Calls fn on each unit under n overlapping [lo, hi), in order; stops  \
   * and returns true as soon as fn does.                                 \
   */                                                                     \
  static bool                                                             \
  name##_overlaps_at (struct dl_req *n, uint64_t lo, uint64_t hi,         \
                   dl_visit_fn *fn, void *arg)                            \
  {                                                                       \
    while (n && n->live_max_hi > lo) {                                    \
      if (name##_overlaps_at (RB_LEFT (n, field), lo, hi, fn, arg))       \
        return true;                                                      \
      if (n->live_lo >= hi)                                               \
        return false;   /* it and all on its right start later */        \
      if (n->live_hi > lo && n->live_lo < n->live_hi && fn (n, arg))      \
        return true;                                                      \
      n = RB_RIGHT (n, field);                                            \
    }                                                                     \
    return false;                                                         \
  }

/* The files of the core, bottom up.  Each calls only the files above
 * it in this list (and the inline helpers above); tests/test-layers.sh
 * checks that no call goes the other way.
 *
 *   tunable.c, hist.c   the tunables and the histograms (stand alone)
 *   autodepth.c         the device depth for callers that own it (stand
 *                       alone: the caller applies it, dl_sched_set_depth)
 *   btree.c             the B+tree under the sorted queues (stand alone)
 *   sortq.c, fifo.c     the two queues of each direction
 *   unit.c              a unit into both queues, or out of both
 *   cost.c              what a batch has spent; the device head
 *   devtime.c           what the device takes for a unit, learned
 *   merge.c             merging into a queued unit (or queueing it)
 *   hazard.c            holding overlapping requests back; releasing them
 *   anticipate.c        learning dependent readers; waiting for them
 *   piece.c             writes in pieces beside a dependent reader
 *   ahead.c             readahead for a dependent reader
 *   slice.c             time slices beside a dependent reader
 *   select.c            the choice of the next unit
 *   sched.c             the public API (dl-sched.h)
 *   classes.c           priority classes: one dl_sched per class
 */

/* sortq.c */
void sortq_init (struct dl_sched *s);
void sortq_fini (struct dl_sched *s);
int sortq_reserve (struct dl_sched *s, uint64_t units);
void sortq_insert (struct dl_sched *s, struct dl_req *u);
void sortq_remove (struct dl_sched *s, struct dl_req *u);
struct dl_req *sortq_first (struct dl_sched *s, enum dl_dir d);
struct dl_req *sortq_at_or_after (struct dl_sched *s, enum dl_dir d,
                                  uint64_t off);
void sortq_neighbours (struct dl_sched *s, enum dl_dir d, uint64_t off,
                       uint64_t end, struct dl_req **before,
                       struct dl_req **after);
struct dl_req *sortq_next (struct dl_req *u);
struct dl_req *sortq_prev (struct dl_req *u);
void sortq_grown (struct dl_req *u);
bool sortq_overlaps (struct dl_sched *s, enum dl_dir d, uint64_t lo,
                     uint64_t hi, dl_visit_fn *fn, void *arg);
uint64_t sortq_check (struct dl_sched *s, enum dl_dir d);
static inline bool
sortq_empty (const struct dl_sched *s, enum dl_dir d)
{
  return s->sort[d].count == 0;
}

/* fifo.c */
void fifo_add (struct dl_sched *s, struct dl_req *u);
void fifo_remove (struct dl_sched *s, struct dl_req *u);
struct dl_req *fifo_oldest (struct dl_sched *s, enum dl_dir d);
bool fifo_expired (struct dl_sched *s, enum dl_dir d, uint64_t now);
uint64_t fifo_check (struct dl_sched *s, enum dl_dir d);

/* unit.c */
void unit_relink (struct dl_sched *s, struct dl_req *u);
void unit_unlink (struct dl_sched *s, struct dl_req *u);

/* cost.c */
#define DL_COST_BYTES (128 * 1024)  /* a request of the seed's time */
uint64_t cost_unit (const struct dl_sched *s, const struct dl_req *u,
                    bool contiguous);
void cost_charge (struct dl_sched *s, uint64_t c);
void cost_account (struct dl_sched *s, struct dl_req *u);

/* devtime.c */
void devtime_dispatched (struct dl_sched *s, struct dl_req *u, uint64_t now);
void devtime_done (struct dl_sched *s, struct dl_req *u, uint64_t now);
uint64_t devtime_estimate (const struct dl_sched *s, enum dl_dir d,
                           uint64_t bytes, bool seek);
uint64_t devtime_bytes_in (const struct dl_sched *s, enum dl_dir d,
                           uint64_t ns);
uint64_t devtime_access (const struct dl_sched *s, enum dl_dir d);

/* piece.c */
void piece_set (struct dl_sched *s, struct dl_req *u, uint64_t now);

/* merge.c */
bool merge_into_queue (struct dl_sched *s, struct dl_req *r);
void merge_or_queue (struct dl_sched *s, struct dl_req *u);
void merge_flush (struct dl_sched *s, struct dl_req *r);

/* hazard.c */
void hazard_busy_add (struct dl_sched *s, struct dl_req *u);
void hazard_busy_remove (struct dl_sched *s, struct dl_req *u);
bool hazard_blocked (struct dl_sched *s, struct dl_req *u);
void hazard_hold (struct dl_sched *s, struct dl_req *u);
void hazard_release (struct dl_sched *s, struct dl_req *done);
void hazard_check (struct dl_sched *s);
bool hazard_write_overlaps (struct dl_sched *s, uint64_t lo, uint64_t hi);
bool hazard_conflicts (struct dl_sched *s, struct dl_req *u);

/* anticipate.c */
void antic_read_arrived (struct dl_sched *s, struct dl_req *r, uint64_t now);
bool antic_read_preempts (struct dl_sched *s, const struct dl_req *r);
void antic_read_dispatched (struct dl_sched *s, struct dl_req *u);
void antic_read_done (struct dl_sched *s, struct dl_req *u, uint64_t now);
bool antic_extends_batch (struct dl_sched *s);
bool antic_hold (struct dl_sched *s, uint64_t now);
uint64_t antic_timer (const struct dl_sched *s, uint64_t now);
bool antic_reader_recent (const struct dl_sched *s, uint64_t now,
                          uint64_t window);
bool antic_expecting (const struct dl_sched *s, uint64_t now);
bool antic_reader_near (const struct dl_sched *s, const struct dl_req *u);

/* ahead.c */
void ahead_set (struct dl_sched *s, struct dl_req *u);

/* slice.c */
int slice_direction (struct dl_sched *s, uint64_t now);
bool slice_write_fits (const struct dl_sched *s, const struct dl_req *u,
                       uint64_t now);
void slice_sent (struct dl_sched *s);
void slice_cut (struct dl_sched *s, uint64_t now);
uint64_t slice_timer (const struct dl_sched *s, uint64_t now);

/* select.c */
struct dl_req *select_next (struct dl_sched *s, uint64_t now);

#endif /* NBD_DEADLINE_SCHED_INTERNAL_H */
