/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (slice.c): beside a dependent reader the device goes in time
 * slices, read_slice for reads and write_slice for writes, whatever
 * the shape of the disk.
 *
 * A simulated disk bound by its transfer rate (0.3 ms access, 20 MiB/s:
 * a 256 KiB write takes 12.5 ms) serves units one at a time, at depth
 * 2.  A reader like cat reads 8 KiB at a time, each read sent 0.5 ms
 * after the last came back; a writer keeps 32 writes of 256 KiB
 * queued.  Checked, with read_slice 100 ms and write_slice 40 ms:
 *
 *   1. the reader gets its share of the device: at least 0.68 of the
 *      reads it makes alone (its share of a round is 100/140 = 0.71),
 *      and more than without slices (0.61 on this simulated disk);
 *   2. the writes get theirs: at least 0.25 of what they write alone
 *      (40/140 = 0.29);
 *   3. in a read slice no write reaches the device, and a write slice
 *      sends none that would run past its end: once the device's
 *      figures are learned (after 0.5 s), a read never waits at the
 *      device behind a write (not 1 ms of the 12.5 that one takes);
 *   4. when the reader stops, the slices stop, and the writes have the
 *      whole device again;
 *   5. a reader that keeps several reads in flight (not dependent)
 *      starts no slices;
 *   6. deadlines still bound both: with a write slice as long as 1 s,
 *      a read that passes read_expire (100 ms) starts a read slice;
 *   7. off (read_slice 0, the default), no slice is ever started;
 *   8. no slices while the writes in the server hold slice_writes of
 *      their client's request slots: a read slice would leave the
 *      reader's next read no slot (a client of 128 slots, a writer
 *      that takes every free one).
 */
#include "testlib.h"

#define DEPTH 2
#define ACCESS_NS 300000ULL
#define NS_PER_BYTE (1e9 / (20.0 * 1048576))   /* 20 MiB/s */
#define THINK_NS (MS / 2)

struct sim {
  /* set by the caller */
  bool reader_on, writer_on;
  unsigned reader_depth;        /* 1: dependent (cat) */
  unsigned writer_depth;        /* writes it keeps out (0: 32) */
  unsigned slots;               /* the client's request slots for reads
                                   and writes together (0: no limit),
                                   given in turn: to the reader first if
                                   it has waited longer than the writer */
  uint64_t reader_stop_ns;      /* the reader sends nothing after this */
  uint64_t end_ns;
  /* results */
  uint64_t reads_done, write_bytes, write_bytes_after_stop;
  uint64_t max_read_device_ns, max_read_total_ns;
  uint64_t read_device_limit_exceeded;
};

struct fl {
  struct dl_req *u;
  uint64_t start_ns, done_ns;
};

static void
run (const struct dl_tunables *t, struct sim *sm, struct dl_stats *st)
{
  struct dl_sched *s = mksched (t, 512);
  struct fl fl[DEPTH];
  unsigned nfl = 0, reads_out = 0, writes_out = 0;
  unsigned wdepth = sm->writer_depth ? sm->writer_depth : 32;
  uint64_t writer_since = 0;    /* when the writer last took a slot */
  uint64_t busy_until = 0, head = 0, rpos = 0, wpos = 1ULL << 32;
  uint64_t next_read = 1;       /* when the reader sends its next read */
  uint64_t rng = 12345;
  unsigned i, pass;

  dl_sched_set_depth (s, DEPTH);
  now = 1;
  while (now < sm->end_ns) {
    struct dl_req *u;
    uint64_t next, timer;

#define SLOT_FREE (sm->slots == 0 || reads_out + writes_out < sm->slots)
    /* The reader: one read (or reader_depth) outstanding, in a free
     * slot.  First pass: it has the slots before the writer if it was
     * waiting before the writer took its last; second pass: what the
     * writer left.
     */
    for (pass = 0; pass < 2; pass++) {
      while (sm->reader_on && now < sm->reader_stop_ns &&
             reads_out < sm->reader_depth && now >= next_read && SLOT_FREE &&
             (pass == 1 || sm->slots == 0 || next_read <= writer_since)) {
        uint64_t off;
        if (sm->reader_depth == 1)
          off = rpos;
        else {
          rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
          off = (rng >> 20) % (1ULL << 30) & ~8191ULL;
        }
        rpos += 8 * KiB;
        dl_insert (s, heapreq (DL_OP_READ, off, 8 * KiB, 7), now);
        reads_out++;
        next_read = sm->reader_depth == 1 ? UINT64_MAX : now;
      }
      /* The writer keeps wdepth writes queued or at the device. */
      while (pass == 0 && sm->writer_on && writes_out < wdepth && SLOT_FREE) {
        dl_insert (s, heapreq (DL_OP_WRITE, wpos, 256 * KiB, 9), now);
        wpos += 256 * KiB;
        writes_out++;
        writer_since = now;
      }
    }
    /* The device takes units while a slot is free. */
    while (nfl < DEPTH && (u = dl_dispatch (s, now)) != NULL) {
      uint64_t start = busy_until > now ? busy_until : now;
      uint64_t svc = (u->unit_offset != head ? ACCESS_NS : 0) +
        (uint64_t) (u->unit_length * NS_PER_BYTE);

      busy_until = start + svc;
      head = u->unit_offset + u->unit_length;
      fl[nfl].u = u;
      fl[nfl].start_ns = start;
      fl[nfl].done_ns = busy_until;
      /* Rule 3: a read at the device waits behind nothing. */
      if (u->op == DL_OP_READ && start > now + MS && sm->reader_depth == 1 &&
          t->read_slice_ns > 0 && now > 500 * MS)
        sm->read_device_limit_exceeded++;
      nfl++;
    }
    /* The next event: a completion, the reader, the core's timer. */
    next = sm->end_ns;
    if (nfl > 0 && fl[0].done_ns < next)
      next = fl[0].done_ns;
    if (sm->reader_on && reads_out < sm->reader_depth &&
        next_read > now && next_read < next && next_read < sm->reader_stop_ns)
      next = next_read;
    timer = dl_next_timer (s, now);
    if (timer > now && timer < next)
      next = timer;
    REQUIRE (next > now || (nfl > 0 && fl[0].done_ns == now));
    now = next;
    if (nfl > 0 && fl[0].done_ns == now) {
      struct dl_req *m, *tmp;

      u = fl[0].u;
      dl_complete (s, u, now);
      DL_FOREACH_MEMBER (m, u, tmp) {
        if (m->op == DL_OP_READ) {
          uint64_t dev = now - fl[0].start_ns, total = now - m->arrival_ns;
          reads_out--;
          sm->reads_done++;
          if (dev > sm->max_read_device_ns)
            sm->max_read_device_ns = dev;
          if (total > sm->max_read_total_ns)
            sm->max_read_total_ns = total;
          if (sm->reader_depth == 1)
            next_read = now + THINK_NS;
        }
        else {
          writes_out--;
          sm->write_bytes += m->length;
          if (now >= sm->reader_stop_ns)
            sm->write_bytes_after_stop += m->length;
        }
        free (m);
      }
      for (i = 1; i < nfl; i++)
        fl[i - 1] = fl[i];
      nfl--;
    }
  }
  dl_sched_stats (s, st);
  for (i = 0; i < nfl; i++) {
    dl_complete (s, fl[i].u, now);
    free_unit (fl[i].u);
  }
  sched_free_all (s);
}

int
main (void)
{
  struct dl_tunables base, sl;
  struct dl_stats st;
  struct sim alone_r = { .reader_on = true, .reader_depth = 1,
                         .reader_stop_ns = UINT64_MAX, .end_ns = 3000 * MS };
  struct sim alone_w = { .writer_on = true, .reader_stop_ns = UINT64_MAX,
                         .end_ns = 3000 * MS };
  struct sim both, none, stop, deep, expire;


  dl_tunables_default (&base);
  sl = base;
  sl.read_slice_ns = 100 * MS;
  sl.write_slice_ns = 40 * MS;

  run (&sl, &alone_r, &st);
  run (&sl, &alone_w, &st);
  CHECK_EQ (st.slices[DL_READ] + st.slices[DL_WRITE], 0);   /* no reader */
  printf ("alone: reader %" PRIu64 " reads, writer %" PRIu64 " MiB in 3 s\n",
          alone_r.reads_done, alone_w.write_bytes >> 20);

  /* 1-3: both, with slices. */
  both = (struct sim) { .reader_on = true, .writer_on = true, .reader_depth = 1,
                        .reader_stop_ns = UINT64_MAX, .end_ns = 3000 * MS };
  run (&sl, &both, &st);
  printf ("slices: reader %" PRIu64 " reads (%.2f of alone), writer %" PRIu64
          " MiB (%.2f), %" PRIu64 "/%" PRIu64 " read/write slices, longest read "
          "%.1f ms (%.1f ms at the device)\n",
          both.reads_done, (double) both.reads_done / alone_r.reads_done,
          both.write_bytes >> 20,
          (double) both.write_bytes / alone_w.write_bytes,
          st.slices[DL_READ], st.slices[DL_WRITE],
          both.max_read_total_ns / 1e6, both.max_read_device_ns / 1e6);
  CHECK (st.slices[DL_READ] >= 10 && st.slices[DL_WRITE] >= 10);
  CHECK (both.reads_done * 100 >= alone_r.reads_done * 68);
  CHECK (both.write_bytes * 100 >= alone_w.write_bytes * 25);
  CHECK_EQ (both.read_device_limit_exceeded, 0);

  /* Without slices the same load serves the reader far worse. */
  none = both;
  none.reads_done = none.write_bytes = 0;
  run (&base, &none, &st);
  printf ("no slices: reader %" PRIu64 " reads (%.2f of alone), writer %"
          PRIu64 " MiB (%.2f)\n", none.reads_done,
          (double) none.reads_done / alone_r.reads_done,
          none.write_bytes >> 20, (double) none.write_bytes / alone_w.write_bytes);
  CHECK_EQ (st.slices[DL_READ] + st.slices[DL_WRITE], 0);   /* 7: off */
  CHECK (none.reads_done < both.reads_done);

  /* 4: the reader stops at 1 s; from 1.5 s the writes have it all. */
  stop = (struct sim) { .reader_on = true, .writer_on = true, .reader_depth = 1,
                        .reader_stop_ns = 1000 * MS, .end_ns = 3000 * MS };
  run (&sl, &stop, &st);
  {
    /* What the writer alone writes in the last 1.5 s, pro rata. */
    double alone_rate = (double) alone_w.write_bytes / 3000;
    double after = (double) stop.write_bytes_after_stop / 2000;
    printf ("reader stops at 1 s: writer after it %.2f of alone\n",
            after / alone_rate);
    CHECK (after >= 0.9 * alone_rate);
  }

  /* 5: a reader with 4 reads in flight is not dependent. */
  deep = (struct sim) { .reader_on = true, .writer_on = true, .reader_depth = 4,
                        .reader_stop_ns = UINT64_MAX, .end_ns = 2000 * MS };
  run (&sl, &deep, &st);
  CHECK_EQ (st.slices[DL_READ] + st.slices[DL_WRITE], 0);

  /* 6: a 1 s write slice still lets an expired read through. */
  {
    struct dl_tunables t = sl;
    t.write_slice_ns = 1000 * MS;
    t.read_expire_ns = 100 * MS;
    expire = both;
    expire.reads_done = expire.write_bytes = expire.max_read_total_ns = 0;
    run (&t, &expire, &st);
    printf ("write slice 1 s, read_expire 100 ms: longest read %.1f ms\n",
            expire.max_read_total_ns / 1e6);
    /* The deadline, then what is at the device, the slice's turn. */
    CHECK (expire.max_read_total_ns <= 100 * MS + 2 * 13 * MS + MS);
  }

  /* 8: a client whose request slots (128, as the Linux client's) the
   * writer fills whenever one frees.  A read slice that held all its
   * writes would leave the reader's next read no slot to be sent in;
   * with slice_writes (96) there are no slices while the writes hold
   * that many, and the reader is served as without slices.
   */
  {
    struct dl_tunables nolimit = sl;
    struct sim full = { .reader_on = true, .writer_on = true, .reader_depth = 1,
                        .writer_depth = 128, .slots = 128,
                        .reader_stop_ns = UINT64_MAX, .end_ns = 3000 * MS };
    struct sim full_nolimit = full, full_none = full;

    nolimit.slice_writes = 0;
    run (&sl, &full, &st);
    run (&nolimit, &full_nolimit, &st);
    run (&base, &full_none, &st);
    printf ("128 slots, the writer in all it can get: reader %" PRIu64
            " reads with slice_writes %u, %" PRIu64 " without the limit, %"
            PRIu64 " without slices; writer %" PRIu64 "/%" PRIu64 "/%" PRIu64
            " MiB\n", full.reads_done, sl.slice_writes, full_nolimit.reads_done,
            full_none.reads_done, full.write_bytes >> 20,
            full_nolimit.write_bytes >> 20, full_none.write_bytes >> 20);
    CHECK (full.reads_done >= 4 * full_nolimit.reads_done);
    CHECK (full.reads_done * 10 >= full_none.reads_done * 9);
  }

  return test_result ("test-slice");
}
