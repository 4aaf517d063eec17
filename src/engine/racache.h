/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the readahead cache (the core decides what to read
 * ahead: src/core/ahead.c).
 *
 * A few extents read ahead of a dependent reader, each filled by the
 * device read that the core extended, that answer a later read lying
 * wholly inside one without going to the scheduler.  It must never
 * answer with data older than a write the client has sent, so:
 *
 *   - every write, trim or zero drops the extents it overlaps when it
 *     arrives (racache_modified, before it is queued), including those
 *     still being read: their fill is then thrown away;
 *   - an extent is only reserved (racache_reserve) when every write
 *     that has arrived has also reached the core (racache_modified
 *     counts arrivals, racache_taken what the loop inserted), because
 *     the core refused the readahead over any write it holds.
 *
 * Thread-safe (its own lock): lookups and arrivals come from the
 * submitting threads, reserves and fills from the loop or the workers.
 */
#ifndef NBD_DEADLINE_RACACHE_H
#define NBD_DEADLINE_RACACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RACACHE_EXTENTS 16
/* A reader comes back within milliseconds; data kept longer would only
 * widen the window in which a change made to the backing behind the
 * server's back (which no NBD server need see) could be served.
 */
#define RACACHE_MAX_AGE_NS (1000 * 1000000ULL)

struct ra_extent {
  uint32_t export_id;           /* whose bytes */
  uint64_t lo, hi;              /* the bytes it holds (when VALID) */
  uint64_t filled_ns;           /* older than RACACHE_MAX_AGE_NS: unused */
  char *buf;
  size_t cap;
  uint64_t gen;                 /* bumped whenever it is given out */
  uint64_t last_used;
  enum { RA_FREE, RA_FILLING, RA_STALE, RA_VALID } state;
};

struct racache {
  pthread_mutex_t lock;
  struct ra_extent ext[RACACHE_EXTENTS];
  uint64_t modified, taken;     /* writes arrived; ... and in the core */
  uint64_t clock;               /* for last_used */
  uint64_t hits, hit_bytes, fills, dropped;
};

/* A token for an extent being filled: its index and generation. */
struct ra_token {
  int idx;                      /* -1: none */
  uint64_t gen;
};

void racache_init (struct racache *c);
void racache_destroy (struct racache *c);
/* A write, trim or zero of [lo, hi) has arrived (before it is queued):
 * the extents it overlaps are dropped, whatever their export.
 */
void racache_modified (struct racache *c, uint64_t lo, uint64_t hi);
/* ... and the loop has inserted it into the core. */
void racache_taken (struct racache *c);
/* Copies [off, off+len) of the export into buf if one extent, filled
 * less than RACACHE_MAX_AGE_NS before now, holds all of it.
 */
bool racache_lookup (struct racache *c, uint32_t export_id, void *buf,
                     uint64_t off, uint32_t len, uint64_t now);
/* An extent for [lo, hi), to be filled; idx -1 when there is none (a
 * write not yet in the core, the range already held, no memory).
 * *buf is where the caller may read the data to (racache_fill with
 * data NULL), hi - lo bytes.
 */
struct ra_token racache_reserve (struct racache *c, uint32_t export_id,
                                 uint64_t lo, uint64_t hi, char **buf);
/* The read for tok ended: got bytes from lo were read (0: failed),
 * copied from data, or already in the extent's buffer (data NULL).
 * Thrown away if a write overlapped it meanwhile.
 */
void racache_fill (struct racache *c, struct ra_token tok, const void *data,
                   uint64_t got, uint64_t now);

#endif
