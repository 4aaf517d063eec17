/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the scheduler core.
 *
 * A pure implementation of the deadline I/O scheduler: requests go in,
 * the order in which the device should serve them comes out.  No threads,
 * no I/O, no clock of its own (every call that needs the time is given
 * it, in nanoseconds, by the caller), so every rule can be tested
 * deterministically.  One instance per device; not thread-safe: the
 * caller serialises every call (the engine calls it only from its loop).
 *
 * Life of a request:
 *
 *   dl_insert()    the caller fills offset/length/op/flags/stream/priv of
 *                  a struct dl_req that it owns and hands it in.  The
 *                  core may merge it into a queued unit, hold it behind an
 *                  overlapping earlier request (hazard), or queue it; or
 *                  refuse it (-ENOMEM) when it has no room to queue it.
 *   dl_dispatch()  when the device has a free slot, the caller asks for
 *                  the next unit to issue.  A unit is one dl_req (its
 *                  head) with zero or more merged members behind it,
 *                  contiguous and in ascending offset order.
 *   dl_complete()  when the device has finished a unit, the caller says
 *                  so; the core may then release held requests.  Then the
 *                  caller completes every member of the unit.
 *
 * Where each rule of the seed lives (src/README has the map, and
 * sched-internal.h the files in their order, bottom up):
 *   sortq.c   per-direction queue sorted by offset (O(log n)); unit.c
 *             links a unit into it and the FIFO together
 *   fifo.c    per-direction FIFO by arrival; deadlines (read/write_expire)
 *   merge.c   back and front merges, max_merge
 *   cost.c    what a unit costs its batch: seek_cost, size_cost
 *   devtime.c beyond the seed: what the device takes for a unit, learned
 *             from completions (access time and transfer rate)
 *   ahead.c   beyond the seed: how far to read ahead of a dependent
 *             reader (ra_length), in device time
 *   piece.c   beyond the seed: beside a dependent reader, a write unit
 *             goes to the device in pieces of device time (piece_length)
 *   select.c  which unit goes next: batches, fifo_batch, writes_starved,
 *             expiries, read preemption of write batches, one write at
 *             a time beside a dependent reader; and the noop/elevator
 *             policies
 *   anticipate.c  beyond the seed: waiting briefly for a dependent
 *             reader's next read instead of starting a write batch
 *   slice.c   beyond the seed, off by default: beside a dependent
 *             reader, the device's time in read and write slices
 *   hazard.c  overlapping requests never pass each other
 *   classes.c beyond the seed: priority classes (rt, be, idle), one
 *             scheduler each, over one device (the dl_classes API below)
 *   tunable.c every tunable, validated; duration and size parsers
 *   hist.c    a latency histogram for callers
 *   autodepth.c  the device depth from measured completion rates, for
 *             callers that own it (deadline-depth=auto)
 */
#ifndef NBD_DEADLINE_DL_SCHED_H
#define NBD_DEADLINE_DL_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <bsd/sys/tree.h>

#ifdef __cplusplus
extern "C" {
#endif

enum dl_dir { DL_READ = 0, DL_WRITE = 1 };

enum dl_op {
  DL_OP_READ = 0,
  DL_OP_WRITE,
  DL_OP_TRIM,                   /* a write that discards */
  DL_OP_ZERO,                   /* a write of zeroes without data */
  DL_OP_FLUSH,                  /* no range: make completed writes durable */
};

/* Priority classes (classes.c).  0 is the default, so that a caller
 * that knows nothing of classes (memset to 0) gets best effort.
 */
enum dl_prio {
  DL_PRIO_BE = 0,               /* best effort: the default */
  DL_PRIO_RT,                   /* real time: before BE, BE ages */
  DL_PRIO_IDLE,                 /* only when RT and BE have been quiet */
  DL_NPRIO,
};

/* Request flags.  Requests merge only when op and flags are equal. */
#define DL_F_FUA       (1u << 0) /* durable before completion */
#define DL_F_MAY_TRIM  (1u << 1) /* ZERO may punch a hole */

enum dl_policy {
  DL_POLICY_DEADLINE = 0,       /* the seed, with mq-deadline's fixes */
  DL_POLICY_NOOP,               /* FIFO, merges only */
  DL_POLICY_ELEVATOR,           /* one C-LOOK sweep, no deadlines */
};

/* Tunables, each named once in DL_TUNABLES, which makes the fields of
 * struct dl_tunables and drives tunable.c: names, defaults, parsing,
 * printing, validation and comparison.  All can change at run time
 * (dl_sched_set_tunables).  One line a tunable:
 *
 *   X (field, name, kind, default, min, max, range, doc)
 *
 *   kind     POLICY (enum dl_policy), DURATION (uint64_t, ns),
 *            COUNT (uint32_t), BOOL (bool), SIZE (uint64_t, bytes)
 *   min, max what dl_tunables_validate accepts, and range the reason it
 *            gives, after the name, for a value outside them (the
 *            scheduler's adds the value; a bool is never outside)
 *   doc      what it is, for the reader of this list
 *
 * Beyond the seed: anticipate, preempt, preempt_min, size_cost,
 * seed_batches, readahead, write_piece, read_slice, write_slice and
 * slice_writes, and write_expire and max_merge's defaults; profile seed
 * (tunable.c) sets them all as the seed.
 */
#define DL_MS UINT64_C (1000000)
#define DL_SEC UINT64_C (1000000000)
#define DL_MAX_EXPIRE (3600 * DL_SEC)   /* an hour: beyond it, a typo */
#define DL_MAX_COUNT 1000000            /* a literal: the messages show it */
#define DL_STR_(x) #x
#define DL_STR(x) DL_STR_ (x)
#define DL_MAX_MERGE (64ULL << 20)      /* the largest unit a buffer holds */

#define DL_TUNABLES(X)                                                    \
  X (policy, "scheduler", POLICY, DL_POLICY_DEADLINE,                     \
     DL_POLICY_DEADLINE, DL_POLICY_ELEVATOR, "unknown policy",            \
     "deadline, noop or elevator")                                        \
  X (read_expire_ns, "read_expire", DURATION, 500 * DL_MS,                \
     1, DL_MAX_EXPIRE, "must be more than 0 and at most 1h",              \
     "a read's deadline; 500 ms is the seed's")                           \
  X (write_expire_ns, "write_expire", DURATION, 5 * DL_SEC,               \
     0, DL_MAX_EXPIRE, "must be at most 1h (0 = none)",                   \
     "a write's deadline; 5 s is mq-deadline's; 0 = none (the seed)")     \
  X (fifo_batch, "fifo_batch", COUNT, 64,                                 \
     1, DL_MAX_COUNT, "must be between 1 and " DL_STR (DL_MAX_COUNT),     \
     "cost units per batch")                                              \
  X (seek_cost, "seek_cost", COUNT, 16,                                   \
     1, DL_MAX_COUNT, "must be between 1 and " DL_STR (DL_MAX_COUNT),     \
     "cost of a non-contiguous unit")                                     \
  X (writes_starved, "writes_starved", COUNT, 2,                          \
     0, DL_MAX_COUNT, "must be at most " DL_STR (DL_MAX_COUNT),           \
     "read batches while writes wait")                                    \
  X (front_merges, "front_merges", BOOL, true, 0, 1, "",                  \
     "merge in front of queued units too")                                \
  X (max_merge, "max_merge", SIZE, 256 << 10,                             \
     0, DL_MAX_MERGE, "must be at most 64M (0 = no merging)",             \
     "bytes per merged unit (why 256 KiB: merge.c); 0 = no merging")      \
  X (readahead, "readahead", SIZE, 256 << 10,                             \
     0, 1 << 20, "must be at most 1M (0 = off)",                          \
     "most bytes read ahead of a dependent reader, who is read ahead what " \
     "the device transfers in two accesses (ahead.c); 0 = off")           \
  X (anticipate_ns, "anticipate", DURATION, 20 * DL_MS,                   \
     0, DL_SEC, "must be at most 1s (0 = off)",                           \
     "longest idle wait for a dependent reader, a ceiling (anticipate.c); " \
     "longer, and the disk just idles; 0 = off")                          \
  X (preempt, "preempt", BOOL, true, 0, 1, "",                            \
     "a read may end a write batch early (select.c) ...")                 \
  X (preempt_min, "preempt_min", COUNT, 16,                               \
     0, DL_MAX_COUNT, "must be at most " DL_STR (DL_MAX_COUNT),           \
     "... once it has spent this many cost units (a seek's worth)")       \
  X (size_cost, "size_cost", BOOL, true, 0, 1, "",                        \
     "a unit costs 1 more per further 128 KiB (cost.c, cost_unit)")       \
  X (seed_batches, "seed_batches", BOOL, false, 0, 1, "",                 \
     "batches as the 2002 patch forms them (select.c)")                   \
  X (write_piece_ns, "write_piece", DURATION, 2 * DL_MS,                  \
     0, DL_SEC, "must be at most 1s (0 = off)",                           \
     "beside a dependent reader, a write goes to the device in pieces "   \
     "of at most this much device time (piece.c); 0 = whole units")       \
  X (piece_wait_ns, "piece_wait", DURATION, 0,                            \
     0, DL_SEC, "must be at most 1s (0 = off)",                           \
     "... and its next piece waits at most this long while anticipation " \
     "waits for the reader (piece.c); 0 = never")                         \
  X (read_slice_ns, "read_slice", DURATION, 0,                            \
     0, DL_SEC, "must be at most 1s (0 = off)",                           \
     "beside a dependent reader, the device's time for reads in each "    \
     "round (slice.c); 0 = no time slices")                               \
  X (write_slice_ns, "write_slice", DURATION, 40 * DL_MS,                 \
     1, DL_SEC, "must be more than 0 and at most 1s",                     \
     "... and for writes, in device time (slice.c)")                      \
  X (slice_writes, "slice_writes", COUNT, 96,                             \
     0, DL_MAX_COUNT, "must be at most " DL_STR (DL_MAX_COUNT),           \
     "... but no slices while this many write requests wait or are at " \
     "the device: the client's request slots would all be the writes' " \
     "(slice.c); 0 = no such limit")                                      \
  X (prio_aging_ns, "prio_aging", DURATION, 10 * DL_SEC,                  \
     1, DL_MAX_EXPIRE, "must be more than 0 and at most 1h",              \
     "a be or idle request waiting this long goes before the classes "   \
     "above it (classes.c); 10 s is mq-deadline's prio_aging_expire")     \
  X (idle_grace_ns, "idle_grace", DURATION, 100 * DL_MS,                  \
     0, DL_SEC * 60, "must be at most 1min",                              \
     "idle requests go to the device only when no rt or be request has "  \
     "arrived for this long and none is at the device (classes.c)")       \
  /* end of DL_TUNABLES */

#define DL_TUNABLE_TYPE_POLICY enum dl_policy
#define DL_TUNABLE_TYPE_DURATION uint64_t
#define DL_TUNABLE_TYPE_COUNT uint32_t
#define DL_TUNABLE_TYPE_BOOL bool
#define DL_TUNABLE_TYPE_SIZE uint64_t
#define DL_TUNABLE_FIELD_(field, name, kind, def, min, max, range, doc)   \
  DL_TUNABLE_TYPE_##kind field;
struct dl_tunables {
  DL_TUNABLES (DL_TUNABLE_FIELD_)
};

/* Counters, each named once in one of the three lists below, which
 * make both the fields of struct dl_stats and the lines of the control
 * socket's `stats` answer (src/engine/control.c shows each list where
 * it stands among the engine's own counters, engine.h).  Adding a
 * counter is one line here, and incrementing it where it happens.
 *
 *   X (field, name, doc)                   one uint64_t
 *   X2 (field, read_name, write_name, doc) uint64_t field[2], by enum dl_dir
 *
 * A NULL name is counted (the tests read it) but not shown.  The lists
 * are split where the `stats` answer puts engine counters between them.
 */
#define DL_STATS_REQUESTS(X, X2)                                          \
  X2 (inserted, "reads_total", "writes_total", "caller requests")          \
  X (flushes, "flushes_total", "flush requests")                          \
  X2 (dispatched, NULL, NULL, "units handed to the device")               \
  X2 (dispatched_bytes, "read_bytes_total", "write_bytes_total",          \
      "bytes of those units")                                             \
  /* end of DL_STATS_REQUESTS */

#define DL_STATS_EVENTS(X, X2)                                            \
  X (merged_back, "merged_back_total",                                    \
     "requests appended to a queued unit")                                \
  X (merged_front, "merged_front_total",                                  \
     "requests prepended to a queued unit")                               \
  X (merged_units, NULL, "queued units joined after a merge")             \
  X2 (batches, "read_batches_total", "write_batches_total",               \
      "batches started")                                                  \
  X2 (expired, "read_expired_total", "write_expired_total",               \
      "batches started at an expired request")                            \
  X (starved_switches, "starved_switches_total",                          \
     "write batches forced while reads waited")                           \
  X (seeks, "seeks_total", "dispatched units not contiguous with the last") \
  X (hazard_holds, "hazard_holds_total",                                  \
     "requests held behind an overlapping one")                           \
  X (preemptions, "preemptions_total", "write batches ended early by a read") \
  X (write_holds, "write_holds_total",                                    \
     "dispatches refused to keep writes to half the device beside a "     \
     "dependent reader (select.c, write_held)")                           \
  X (antic_waits, "antic_waits_total", "read batches kept open for a reader") \
  X (antic_hits, "antic_hits_total", "... whose next read came in time")  \
  X (antic_misses, "antic_misses_total", "... that timed out")            \
  X (read_ahead, "read_ahead_total",                                      \
     "read units the caller was asked to extend by readahead (ahead.c)")  \
  X (write_pieced, "write_pieced_total",                                  \
     "write units sent to the device in pieces (piece.c)")                \
  X (piece_waits, "write_piece_waits_total",                              \
     "pieces kept back for a dependent reader's next read (piece.c)")     \
  X2 (slices, "read_slices_total", "write_slices_total",                  \
      "time slices started beside a dependent reader (slice.c)")          \
  X (prio_aged, "prio_aged_total",                                        \
     "be or idle units sent before a higher class's because they aged "   \
     "(classes.c)")                                                       \
  X (class_holds, "class_holds_total",                                    \
     "requests held behind an overlapping one of another class "          \
     "(classes.c)")                                                       \
  /* end of DL_STATS_EVENTS */

/* Gauges: what is there now, not how often it happened. */
#define DL_STATS_GAUGES(X, X2)                                            \
  X2 (queued, "queued_reads", "queued_writes",                            \
      "units waiting in the sorted queues")                               \
  X (queued_flushes, "queued_flushes", "flush units waiting")             \
  X (queued_preempting, "queued_preempting_reads",                        \
     "... read units that may end a write batch (select.c)")              \
  X (held, "held", "units held by hazards")                               \
  X (inflight, "inflight", "units dispatched, not completed")             \
  X (inflight_writes, "inflight_writes", "... of them writes (not flushes)") \
  X2 (device_access_ns, "device_read_access_ns", "device_write_access_ns", \
      "learned: what a seek adds to a unit's time at the device (devtime.c)") \
  X2 (device_rate, "device_read_bytes_per_second",                        \
      "device_write_bytes_per_second",                                    \
      "learned: the device's transfer rate (devtime.c); 0 = not yet")     \
  /* end of DL_STATS_GAUGES */

#define DL_STATS_FIELD_(field, name, doc) uint64_t field;
#define DL_STATS_FIELD2_(field, rname, wname, doc) uint64_t field[2];
struct dl_stats {
  DL_STATS_REQUESTS (DL_STATS_FIELD_, DL_STATS_FIELD2_)
  DL_STATS_EVENTS (DL_STATS_FIELD_, DL_STATS_FIELD2_)
  DL_STATS_GAUGES (DL_STATS_FIELD_, DL_STATS_FIELD2_)
};

struct dl_bt_leaf;

/* A request.  The caller owns the memory and fills the first block;
 * everything else belongs to the core from dl_insert() until the unit
 * holding it has been dl_complete()d.
 */
struct dl_req {
  /* Private to the core. */
  struct dl_bt_leaf *sort_leaf; /* btree.c: the leaf holding it, if queued */
  uint64_t seq;                 /* unit: lowest arrival sequence of its members */
  uint64_t live_lo;             /* unit: extent rounded out to the alignment */
  uint64_t live_max_hi;         /* interval tree augmentation */

  /* Set by the core: readable by the caller. */
  uint64_t unit_offset;         /* on a unit head: the merged extent */
  uint64_t unit_length;
  uint64_t arrival_ns;          /* when dl_insert() saw it */
  uint32_t nr_members;          /* on a unit head: 1 + merged requests */
  uint64_t ra_length;           /* on a dispatched read unit: read this
                                   many bytes more after it if you can
                                   (ahead.c), and set it to what was
                                   read (0: none) before dl_complete */
  uint64_t piece_length;        /* on a dispatched write unit: issue it in
                                   pieces of at most this many bytes, one
                                   after the other (0: whole; piece.c) */
  struct dl_req *next_member;   /* next member of the unit, or NULL */

  /* Filled by the caller. */
  uint64_t offset;
  uint64_t length;
  enum dl_op op;
  uint32_t flags;
  uint64_t stream;              /* who sent it (e.g. connection); 0 = unknown */
  void *priv;                   /* the caller's */
  uint8_t prio;                 /* enum dl_prio (dl_classes only) */
  uint32_t domain;              /* requests merge only within one (an
                                   export: a unit is one I/O on one file) */

  /* Private to the core. */
  uint64_t live_hi;
  uint64_t unit_arrival_ns;     /* unit: earliest arrival of its members */
  struct dl_req *last_member;
  uint8_t dir;
  uint8_t state;
  uint8_t in_late;              /* fifo.c: in late_node's tree, not the list */
  uint8_t preempts;             /* select.c: a read that may end a write batch */
  uint8_t seeked;               /* cost.c: dispatched away from the head */
  uint64_t reader;              /* anticipate.c: the reader it was taken for */
  uint64_t dispatch_ns;         /* devtime.c: when dl_dispatch() gave it out */
  RB_ENTRY(dl_req) live_node;   /* hazard.c */
  union {
    TAILQ_ENTRY(dl_req) fifo_link; /* fifo.c, or hazard.c's held list */
    RB_ENTRY(dl_req) late_node;    /* fifo.c: queued out of arrival order */
  };
};

/* Iterate over the members of a unit; safe against the caller
 * completing (and freeing) each member inside the loop.
 */
#define DL_FOREACH_MEMBER(m, unit, tmp)                                  \
  for ((m) = (unit); (m) && ((tmp) = (m)->next_member, 1); (m) = (tmp))

struct dl_sched;

/* Defaults and validation. */
void dl_tunables_default (struct dl_tunables *t);
int dl_tunables_validate (const struct dl_tunables *t, char *err, size_t errlen);

/* Set one tunable by name ("read_expire" or "read-expire", ...) from a
 * string ("500ms", "1M", "on").  Returns 0, or -EINVAL with a one-line
 * reason in err (the tunables are then unchanged).
 */
int dl_tunable_set (struct dl_tunables *t, const char *key, const char *value,
                    char *err, size_t errlen);
/* Format one tunable's value; returns 0 or -EINVAL for an unknown key. */
int dl_tunable_get (const struct dl_tunables *t, const char *key,
                    char *buf, size_t len);
/* NULL-terminated list of tunable names (with underscores). */
extern const char *const dl_tunable_names[];

/* Profiles: a preset of every tunable but the scheduler (policy).
 * "default" is dl_tunables_default; "seed" is the 2002 patch exactly
 * (tunable.c).  dl_tunable_set (t, "profile", name) applies one too;
 * dl_tunable_get (t, "profile") names the profile that t equals, or
 * "custom".  Returns 0, or -EINVAL with a one-line reason in err.
 */
int dl_tunables_profile (struct dl_tunables *t, const char *name,
                         char *err, size_t errlen);
const char *dl_tunables_profile_name (const struct dl_tunables *t);
extern const char *const dl_profile_names[];

/* "500ms", "1.5s", "250us", "100ns"; a bare number is milliseconds, as
 * in the kernel's sysfs.  0 or -EINVAL.
 */
int dl_parse_duration (const char *s, uint64_t *ns);
/* "4096", "64k", "1M", "1G" (powers of 1024).  0 or -EINVAL. */
int dl_parse_size (const char *s, uint64_t *bytes);
int dl_parse_policy (const char *s, enum dl_policy *p);
const char *dl_policy_name (enum dl_policy p);

/* An instance.  align is the device's I/O granularity (a power of two,
 * 1 if none): requests whose extents, rounded out to it, overlap are
 * ordered as overlapping (so that a read-modify-write of a partial
 * block never races another request in the same block).
 * Returns NULL with errno set (EINVAL, ENOMEM).
 */
struct dl_sched *dl_sched_new (const struct dl_tunables *t, uint32_t align);
/* Frees the instance; it must hold no request (see dl_drain). */
void dl_sched_free (struct dl_sched *s);
int dl_sched_set_tunables (struct dl_sched *s, const struct dl_tunables *t,
                           char *err, size_t errlen);
void dl_sched_get_tunables (const struct dl_sched *s, struct dl_tunables *t);
void dl_sched_stats (const struct dl_sched *s, struct dl_stats *st);
/* How many units the caller keeps at the device at most (its depth;
 * unset or 0: 2).  Beside a dependent reader, writes take at most half
 * of them (select.c, write_held).
 */
void dl_sched_set_depth (struct dl_sched *s, uint32_t depth);

/* Returns 0, or -ENOMEM when the core has no room to queue r (r is
 * then not the core's: the caller fails it).
 */
int dl_insert (struct dl_sched *s, struct dl_req *r, uint64_t now_ns);
struct dl_req *dl_dispatch (struct dl_sched *s, uint64_t now_ns);
void dl_complete (struct dl_sched *s, struct dl_req *unit, uint64_t now_ns);

/* Units waiting (queued, held or flushes), and dispatched ones. */
uint64_t dl_waiting (const struct dl_sched *s);
uint64_t dl_inflight (const struct dl_sched *s);
/* Removes one waiting unit so that the caller can fail it (shutdown);
 * NULL when nothing waits.  Units in flight must still be completed.
 */
struct dl_req *dl_drain (struct dl_sched *s);
/* Walks every structure and asserts that they agree with one another
 * and with the gauges (each queued unit in its sorted queue and FIFO
 * and nowhere else, held and batched units counted, members contiguous).
 * O(n): for tests, the randomized model and the fuzzer, which call it
 * after every operation; the core asserts the cheap invariants itself.
 */
void dl_sched_check (const struct dl_sched *s);

/* The time at which the core wants dl_dispatch called again even if no
 * request arrives or completes (anticipation), or 0 for none.
 */
uint64_t dl_next_timer (const struct dl_sched *s, uint64_t now_ns);

/* A write unit at the device in pieces (piece_length): may its next
 * piece go now?  0: yes.  Otherwise not yet, and the time at which to
 * ask again at the latest (a completion may answer sooner).  paused_ns
 * is when this piece began to wait (0: it has not yet).  Not while the
 * dependent reader anticipation waits for has its read at the device
 * or is expected back, for at most piece_wait (piece.c).
 */
uint64_t dl_piece_wait (struct dl_sched *s, uint64_t paused_ns, uint64_t now_ns);

/* Priority classes over one device (classes.c): one scheduler per
 * class (dl_sched, each with every rule above), and the rules between
 * them.  The same life of a request (insert, dispatch, complete) and
 * the same contract as dl_sched's; each request goes to its r->prio.
 * With every request in BE the order is exactly dl_sched's.
 *
 *   RT first:  RT units go before BE, BE before IDLE; while RT has work
 *              no lower class starts a unit, nor for `anticipate` after
 *              an RT read (RT's next read comes first), and within
 *              100 ms of RT's last request they keep at most half the
 *              depth.
 *   aging:     a BE or IDLE unit that has waited prio_aging goes first.
 *   IDLE:      only once no RT or BE request has arrived for idle_grace
 *              and none is at the device; half the depth until they
 *              have been quiet for 10 idle_graces.
 *   hazards:   a request overlapping a conflicting one of another class
 *              waits until it completes, as within a class.
 */
struct dl_classes;
struct dl_classes *dl_classes_new (const struct dl_tunables *t, uint32_t align);
void dl_classes_free (struct dl_classes *c);
int dl_classes_set_tunables (struct dl_classes *c, const struct dl_tunables *t,
                             char *err, size_t errlen);
void dl_classes_get_tunables (const struct dl_classes *c, struct dl_tunables *t);
void dl_classes_set_depth (struct dl_classes *c, uint32_t depth);
int dl_classes_insert (struct dl_classes *c, struct dl_req *r, uint64_t now_ns);
struct dl_req *dl_classes_dispatch (struct dl_classes *c, uint64_t now_ns);
/* A flush, if one may go now (its class first, by the same rules), and
 * nothing else: for a caller that gives flushes a slot of their own.
 */
struct dl_req *dl_classes_dispatch_flush (struct dl_classes *c, uint64_t now_ns);
void dl_classes_complete (struct dl_classes *c, struct dl_req *unit,
                          uint64_t now_ns);
uint64_t dl_classes_waiting (const struct dl_classes *c);
uint64_t dl_classes_inflight (const struct dl_classes *c);
struct dl_req *dl_classes_drain (struct dl_classes *c);
uint64_t dl_classes_next_timer (const struct dl_classes *c, uint64_t now_ns);
uint64_t dl_classes_piece_wait (struct dl_classes *c, uint64_t paused_ns,
                                uint64_t now_ns);
/* All classes together (counters summed; the device's learned figures
 * from the class that has sent it most); or one class's own.
 */
void dl_classes_stats (const struct dl_classes *c, struct dl_stats *st);
void dl_classes_class_stats (const struct dl_classes *c, enum dl_prio p,
                             struct dl_stats *st);
void dl_classes_check (const struct dl_classes *c);
/* "rt", "be", "idle": 0, or -EINVAL. */
int dl_parse_prio (const char *s, enum dl_prio *p);
const char *dl_prio_name (enum dl_prio p);

/* Latency histogram: log-linear buckets (8 per power of two), so a
 * percentile is within 12.5%.  Zero-initialise before use.
 */
#define DL_HIST_BUCKETS 496
struct dl_hist {
  uint64_t count, sum, min, max;
  uint64_t bucket[DL_HIST_BUCKETS];
};
void dl_hist_add (struct dl_hist *h, uint64_t v);
void dl_hist_merge (struct dl_hist *dst, const struct dl_hist *src);
/* p in [0, 100]; 0 on an empty histogram. */
uint64_t dl_hist_percentile (const struct dl_hist *h, double p);

/* The device depth, chosen by a hill climb on completion rates, never
 * below what the device completes in 2 ms (autodepth.c).  The caller
 * reports every completion of a unit, with whether units were waiting
 * that the depth kept back, and keeps at most the depth returned at the
 * device.
 */
enum dl_ad_phase {
  DL_AD_MEASURE, DL_AD_PROBE_UP, DL_AD_HOLD, DL_AD_PROBE_DOWN
};
struct dl_autodepth {
  uint32_t min, max;
  uint32_t depth;               /* in force: the greater of the two below */
  uint32_t climb;               /* the hill climb's depth */
  uint32_t drain;               /* the floor: what the device completes in
                                   AD_DRAIN_NS */
  uint32_t base;                /* the climb's last depth measured and kept */
  enum dl_ad_phase phase;
  uint32_t hold;                /* epochs left before the next probe */
  uint32_t hold_len;            /* ... the next hold's length */
  double base_ops, base_bytes;  /* the base's rates, per second */
  uint64_t epoch_start_ns, n, sat, bytes; /* the epoch in progress */
  uint64_t epochs, unsaturated, probes_kept, probes_down; /* counters */
};
void dl_autodepth_init (struct dl_autodepth *a, uint32_t min, uint32_t max);
uint32_t dl_autodepth_done (struct dl_autodepth *a, uint64_t now_ns,
                            uint64_t bytes, bool saturated);

#ifdef __cplusplus
}
#endif

#endif /* NBD_DEADLINE_DL_SCHED_H */
