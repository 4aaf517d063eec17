/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: time slices beside a dependent reader (beyond the seed;
 * off until read_slice is set).
 *
 * A reader such as cat sends its next read only when the last one has
 * come back.  Beside a write flood the seed's batches serve it one read
 * per write batch, and preemption and the write hold (select.c) only
 * shorten what each read waits for; on a disk bound by its transfer
 * rate a single large write at the device is most of that wait, and a
 * batch counted in requests lasts as long as the requests are large.
 * The anticipatory scheduler (2003) and BFQ gave such a reader the
 * device in turns of time instead, and so does this file, once a
 * reader that waits for each read has been learned (anticipate.c):
 *
 *   - a read slice of read_slice: only reads go to the device, and
 *     between them the device waits for the reader's next read (its
 *     think time, learned, within anticipate);
 *   - a write slice of write_slice of device time: only writes, in
 *     ascending order, and a write is not sent if what the device has
 *     learned it takes (devtime.c) would run past the slice's end, so
 *     that the next read slice starts with the device empty;
 *   - a read slice lasts its whole length, even while the reader is
 *     between reads: on the kernel's NBD client the writes' data and
 *     the reader share one socket and the guest's CPU, and every write
 *     answered lets the client send another; a write answered in the
 *     middle of a read slice puts its successor's transfer in front of
 *     the reader's next read (bench/results, section L, measured it:
 *     with the guest's own queue settings the cat waited less for the
 *     guest's CPU, and the writer kept its rate);
 *   - a write slice ends early when no write waits, and every write
 *     slice is followed by a read slice while the reader is about;
 *   - a slice ends at once when the other side's oldest request has
 *     passed its deadline: read_expire and write_expire still bound
 *     both;
 *   - no slices while slice_writes write requests are in the server
 *     (queued or at the device): each holds one of its client's request
 *     slots (the Linux client has 128 for reads and writes together),
 *     and a read slice that keeps them from completing would leave the
 *     reader's next read no slot to be sent in; the seed's rules with
 *     their extensions serve until the writes are fewer.
 *
 * Over a round the reader has read_slice / (read_slice + write_slice)
 * of the device and the writes the rest, whatever the shape of the
 * disk; the cost is one seek between the two regions a round.  Without
 * such a reader (none seen within a round and more) there are no
 * slices, and the seed's rules with their extensions decide alone.
 */
#include <config.h>

#include "sched-internal.h"

/* After the reader's last sign, slices go on this much longer than a
 * round, so that a reader between files is not given up at once.
 */
#define READER_GONE_NS (100 * 1000000ULL)

static bool
slices_on (const struct dl_sched *s)
{
  return s->t.read_slice_ns > 0 && s->t.policy == DL_POLICY_DEADLINE &&
    !s->t.seed_batches;
}

/* Do the writes in the server hold most of their clients' request
 * slots?
 */
static bool
slots_full (const struct dl_sched *s)
{
  return s->t.slice_writes > 0 && s->writes_in >= s->t.slice_writes;
}

static void
slice_start (struct dl_sched *s, enum dl_dir d, uint64_t now)
{
  s->slice.dir = d;
  s->slice.end_ns = now + (d == DL_READ ? s->t.read_slice_ns
                                         : s->t.write_slice_ns);
  s->slice.sent = 0;
  s->st.slices[d]++;
}

/* The direction the device serves now, or -1 when there are no slices
 * (then select.c's batches decide).  Moves to the next slice when this
 * one is over.
 */
int
slice_direction (struct dl_sched *s, uint64_t now)
{
  uint64_t round = s->t.read_slice_ns + s->t.write_slice_ns;
  bool reads, writes, reader;

  if (!slices_on (s) || slots_full (s) ||
      !antic_reader_recent (s, now, round + READER_GONE_NS)) {
    s->slice.dir = -1;
    return -1;
  }
  reads = !sortq_empty (s, DL_READ);
  writes = !sortq_empty (s, DL_WRITE);
  reader = reads || antic_expecting (s, now);

  switch (s->slice.dir) {
  case DL_READ:
    if (writes && (now >= s->slice.end_ns || fifo_expired (s, DL_WRITE, now)))
      slice_start (s, DL_WRITE, now);
    else if (now >= s->slice.end_ns)
      slice_start (s, DL_READ, now);    /* no writes: reads go on */
    break;
  case DL_WRITE:
    if (now >= s->slice.end_ns || !writes || fifo_expired (s, DL_READ, now))
      slice_start (s, DL_READ, now);
    break;
  default:
    slice_start (s, reader || !writes ? DL_READ : DL_WRITE, now);
    break;
  }
  return s->slice.dir;
}

/* In a write slice: may u go to the device without running past the
 * slice's end?  Each write in flight is counted as long as u (they are
 * of the same stream, as a rule).  Until the device's figures are
 * learned it may, and so may the slice's first unit, however long: a
 * slice must make progress.
 */
bool
slice_write_fits (const struct dl_sched *s, const struct dl_req *u,
                  uint64_t now)
{
  uint64_t t = devtime_estimate (s, DL_WRITE, u->unit_length,
                                 u->unit_offset != s->head_pos);

  if (t == 0 || s->slice.sent == 0)
    return true;
  return now + t * (s->st.inflight_writes + 1) <= s->slice.end_ns;
}

void
slice_sent (struct dl_sched *s)
{
  s->slice.sent++;
}

/* What is left of the slice is too short for its next unit: it ends
 * now, rather than leave the device idle until its end.
 */
void
slice_cut (struct dl_sched *s, uint64_t now)
{
  s->slice.end_ns = now;
}

/* When the slice in force ends, if the core may be waiting for it. */
uint64_t
slice_timer (const struct dl_sched *s, uint64_t now)
{
  if (s->slice.dir >= 0 && s->slice.end_ns > now)
    return s->slice.end_ns;
  return 0;
}
