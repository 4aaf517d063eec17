/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: reading ahead of a dependent reader (beyond the seed).
 *
 * Through O_DIRECT the device is read only where it is asked, so a
 * reader that waits for each read (cat over many small files) pays a
 * seek for almost every one, where a page cache would have read the
 * neighbouring files in with the first.  The scheduler knows both what
 * a seek costs and who reads, so it decides the readahead itself: when
 * a read of such a reader (learned in anticipate.c; its reads land near
 * each other) goes to the device, the caller is asked to read
 * ra_length bytes more after it, into a small cache that answers later
 * reads without the device (src/engine/racache.c).
 *
 * How much: what the device transfers in the time of two accesses
 * (devtime.c), within readahead.  Beside writes, a read that misses
 * costs two seeks (to it, and back to the writes); if the reader's next
 * read lands in what was read ahead, both are saved, and if not, two
 * seeks' worth of time is lost.  So a disk bound by its seeks reads
 * well ahead, and one bound by its transfer rate, whose "seek" is
 * short, hardly at all (below 16 KiB, nothing).  (One access's worth
 * and four were tried: bench/results/README, section H.)
 *
 * Nothing is read ahead over a write that has not completed (queued,
 * held or at the device): the cache must never hold data older than a
 * write the client has sent.  The caller drops cached data that a later
 * write overlaps.
 */
#include <config.h>

#include "sched-internal.h"

#define AHEAD_MIN (16 * 1024)
#define AHEAD_ALIGN 4096

void
ahead_set (struct dl_sched *s, struct dl_req *u)
{
  uint64_t bytes, lo, hi;

  u->ra_length = 0;
  if (u->op != DL_OP_READ || s->t.readahead == 0 || !antic_reader_near (s, u))
    return;
  bytes = devtime_bytes_in (s, DL_READ, 2 * devtime_access (s, DL_READ));
  if (bytes > s->t.readahead)
    bytes = s->t.readahead;
  bytes -= bytes % AHEAD_ALIGN;
  if (bytes < AHEAD_MIN)
    return;
  lo = u->unit_offset + u->unit_length;
  hi = lo + bytes;
  if (hi < lo || hazard_write_overlaps (s, lo, hi))
    return;
  u->ra_length = bytes;
  s->st.read_ahead++;
}
