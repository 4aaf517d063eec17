/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: writes in pieces beside a dependent reader (beyond the
 * seed).
 *
 * A device serves what it has been given in turn, so a read that
 * reaches it behind a write waits for the whole of that write.  On a
 * disk bound by its seeks that wait is small beside the seek the read
 * costs anyway; on one bound by its transfer rate (a throttled volume,
 * a USB disk) a unit of a few hundred KiB takes many times what a small
 * read does, and a reader that waits for each read (cat) pays it on
 * almost every read, however few writes the scheduler lets through
 * beside it (select.c, write_held).
 *
 * So while such a reader is about, a write unit goes to the device in
 * pieces of at most write_piece of device time, at the rate learned
 * for writes (devtime.c), one after the other: a read sent meanwhile
 * waits for the piece in progress, not for the unit.  But each read
 * served between two pieces costs the writes a seek back, so a piece
 * is never shorter than twice the device's learned access time: on a
 * disk whose seeks cost as much as a whole unit's transfer, units go
 * whole (pieces there only multiplied the seeks, and both sides lost).
 * The unit is still one unit to every rule here (its place, its cost,
 * its slot at the device); only the caller's issuing changes, through
 * piece_length.  Without such a reader, before the rate is known,
 * when a piece would hold the whole unit, or with time slices on (no
 * read goes to the device in a write slice), units go whole: a writer
 * alone pays nothing, and a fast disk never sees pieces.
 *
 * Between two pieces the device is free, and the caller asks
 * (dl_piece_wait) before sending the next: while anticipation waits for
 * the reader (its read at the device, or its next read expected within
 * its think time), the piece waits too, so that the next read finds
 * the device idle rather than a piece just begun.  For at most
 * piece_wait each: a reader that does not come back costs the writes
 * no more than that, and the writes keep at least piece / (piece +
 * piece_wait) of the device.
 */
#include <config.h>

#include "sched-internal.h"

/* Pieces below this cost more in calls than they save a reader. */
#define PIECE_MIN (16 * 1024)
/* Pieces in multiples of this: any device's O_DIRECT alignment divides it. */
#define PIECE_ALIGN 4096

/* A piece's device time: write_piece, but never under two accesses. */
static uint64_t
piece_budget (const struct dl_sched *s)
{
  uint64_t budget = 2 * devtime_access (s, DL_WRITE);

  return budget < s->t.write_piece_ns ? s->t.write_piece_ns : budget;
}

void
piece_set (struct dl_sched *s, struct dl_req *u, uint64_t now)
{
  uint64_t bytes;

  u->piece_length = 0;
  /* Time slices (slice.c) keep reads off the device during a write
   * slice: pieces would only slow the writes there.
   */
  if (u->op != DL_OP_WRITE || s->t.write_piece_ns == 0 ||
      s->t.read_slice_ns != 0 || s->t.policy != DL_POLICY_DEADLINE ||
      !dl_reader_recent (s, now))
    return;
  bytes = devtime_bytes_in (s, DL_WRITE, piece_budget (s));
  if (bytes == 0)
    return;                     /* not learned yet */
  bytes -= bytes % PIECE_ALIGN;
  if (bytes < PIECE_MIN)
    bytes = PIECE_MIN;
  if (bytes >= u->unit_length)
    return;
  u->piece_length = bytes;
  s->st.write_pieced++;
}

uint64_t
dl_piece_wait (struct dl_sched *s, uint64_t paused_ns, uint64_t now)
{
  uint64_t until, wake;

  if (s->t.piece_wait_ns == 0 || !antic_expecting (s, now))
    return 0;
  until = (paused_ns != 0 ? paused_ns : now) + s->t.piece_wait_ns;
  if (now >= until)
    return 0;
  if (paused_ns == 0)
    s->st.piece_waits++;
  wake = antic_timer (s, now);        /* the end of the wait for the reader */
  return wake != 0 && wake < until ? wake : until;
}
