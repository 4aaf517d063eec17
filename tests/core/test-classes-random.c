/* SPDX-License-Identifier: BSD-3-Clause */
/* The classes (classes.c) under seeded random load: requests of random
 * class, direction, place and size over a small disk (so that requests
 * of different classes overlap often, as when an export changes class
 * while its requests wait), a device of random depth that completes
 * units in random order.  After every step the structures agree
 * (dl_classes_check), and at every dispatch:
 *
 *   - no request passes an earlier overlapping conflicting one (either
 *     a write), whatever their classes;
 *   - an idle unit goes only when no rt or be unit is at the device,
 *     unless it has aged (prio_aging);
 *   - while rt has a unit at the device, be and idle start none, unless
 *     aged;
 *
 * and at the end every request has completed once, and none waited
 * longer than prio_aging beyond what the device's queue explains.
 */
#include "testlib.h"

#define NREQ 3000
#define DISK (4u << 20)

struct rec {
  struct dl_req r;
  uint64_t seq;
  int state;                    /* 0 waiting, 1 at the device, 2 done */
};

static struct rec recs[NREQ];
static int nrec;
static struct dl_req *dev[64];
static int ndev;

static bool
conflicting (const struct dl_req *a, const struct dl_req *b)
{
  if (a->op == DL_OP_FLUSH || b->op == DL_OP_FLUSH)
    return false;
  if (a->op == DL_OP_READ && b->op == DL_OP_READ)
    return false;
  return a->offset < b->offset + b->length && b->offset < a->offset + a->length;
}

/* Has a request of class p waited prio_aging (then its class may go
 * before the others, with whichever unit its own rules choose)?
 */
static bool
class_aged (enum dl_prio p, const struct dl_tunables *t)
{
  int i;

  for (i = 0; i < nrec; i++)
    if (recs[i].state == 0 && recs[i].r.prio == p &&
        now - recs[i].r.arrival_ns >= t->prio_aging_ns)
      return true;
  return false;
}

static void
on_dispatch (struct dl_classes *c, struct dl_req *u, uint32_t depth,
             const struct dl_tunables *t)
{
  struct dl_req *m;
  int i, rt_busy = 0, lower = 0;
  bool aged;

  for (i = 0; i < ndev; i++) {
    if (dev[i]->prio == DL_PRIO_RT)
      rt_busy = 1;
    else
      lower++;
  }
  for (m = u; m; m = m->next_member) {
    struct rec *x = (struct rec *) m;

    CHECK_EQ (x->state, 0);
    for (i = 0; i < nrec; i++)
      if (recs[i].seq < x->seq && recs[i].state != 2 && conflicting (&recs[i].r, m)) {
        fprintf (stderr, "request %" PRIu64 " passed %" PRIu64 "\n", x->seq, recs[i].seq);
        CHECK (0);
      }
  }
  aged = class_aged ((enum dl_prio) u->prio, t);
  if (u->prio == DL_PRIO_IDLE && !aged) {
    for (i = 0; i < ndev; i++)
      CHECK (dev[i]->prio == DL_PRIO_IDLE);
  }
  if (u->prio != DL_PRIO_RT && rt_busy && !aged)
    CHECK (!"a lower class's unit beside rt's");
  for (m = u; m; m = m->next_member)
    ((struct rec *) m)->state = 1;
  (void) c;
}

static void
complete_one (struct dl_classes *c, int i)
{
  struct dl_req *u = dev[i], *m;

  dev[i] = dev[--ndev];
  for (m = u; m; m = m->next_member) {
    CHECK_EQ (((struct rec *) m)->state, 1);
    ((struct rec *) m)->state = 2;
  }
  dl_classes_complete (c, u, now);
  dl_classes_check (c);
}

static void
run (unsigned seed)
{
  struct dl_tunables t;
  struct dl_classes *c;
  struct dl_req *u;
  uint32_t depth;
  uint64_t start;
  int i;

  dl_tunables_default (&t);
  t.prio_aging_ns = (50 + rand_r (&seed) % 500) * MS;
  t.idle_grace_ns = (rand_r (&seed) % 30) * MS;
  t.anticipate_ns = (rand_r (&seed) % 3) * 5 * MS;
  depth = 1 + rand_r (&seed) % 6;
  c = dl_classes_new (&t, rand_r (&seed) % 2 ? 4096 : 1);
  REQUIRE (c != NULL);
  dl_classes_set_depth (c, depth);
  memset (recs, 0, sizeof recs);
  nrec = ndev = 0;
  start = now;

  while (nrec < NREQ || dl_classes_waiting (c) || ndev) {
    unsigned x = rand_r (&seed) % 100;

    if (nrec < NREQ && x < 45) {
      struct rec *q = &recs[nrec];
      unsigned k = rand_r (&seed);

      q->r.op = k % 50 == 0 ? DL_OP_FLUSH : k % 3 == 0 ? DL_OP_WRITE : DL_OP_READ;
      q->r.offset = q->r.op == DL_OP_FLUSH ? 0 : (uint64_t) (rand_r (&seed) % (DISK / 512)) * 512;
      q->r.length = q->r.op == DL_OP_FLUSH ? 0 : 512 * (1 + rand_r (&seed) % 64);
      q->r.stream = 1 + rand_r (&seed) % 5;
      q->r.prio = (uint8_t) (rand_r (&seed) % DL_NPRIO);
      q->seq = (uint64_t) nrec;
      q->r.priv = q;
      nrec++;
      CHECK_EQ (dl_classes_insert (c, &q->r, now), 0);
      dl_classes_check (c);
    }
    else if (x < 80 && ndev > 0)
      complete_one (c, rand_r (&seed) % ndev);
    else
      now += (1 + rand_r (&seed) % 4) * MS;
    while ((uint32_t) ndev < depth && (u = dl_classes_dispatch (c, now)) != NULL) {
      on_dispatch (c, u, depth, &t);
      dev[ndev++] = u;
      dl_classes_check (c);
    }
    /* The engine's flush slot beyond the depth: a flush or nothing. */
    if (ndev < 63 && (u = dl_classes_dispatch_flush (c, now)) != NULL) {
      CHECK_EQ (u->op, DL_OP_FLUSH);
      on_dispatch (c, u, depth, &t);
      dev[ndev++] = u;
      dl_classes_check (c);
    }
    if (ndev == 0 && dl_classes_waiting (c)) {
      uint64_t w = dl_classes_next_timer (c, now);

      /* Something waits and nothing is at the device: a timer must say
       * when to look again, or nothing would ever move it.
       */
      CHECK (w > now);
      if (w <= now) {
        struct dl_stats a[3];
        int k;
        for (k = 0; k < 3; k++)
          dl_classes_class_stats (c, k, &a[k]);
        fprintf (stderr, "DBG w=%" PRIu64 " now=%" PRIu64 " waiting=%" PRIu64 "; per class q r/w/held/flush:", w, now, dl_classes_waiting (c));
        for (k = 0; k < 3; k++)
          fprintf (stderr, " [%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "]", a[k].queued[0], a[k].queued[1], a[k].held, a[k].queued_flushes);
        fprintf (stderr, "\n");
        break;
      }
      now = w;
    }
    REQUIRE (now - start < 3600ULL * 1000 * MS);
  }
  for (i = 0; i < nrec; i++)
    CHECK_EQ (recs[i].state, 2);
  CHECK (dl_classes_drain (c) == NULL);
  dl_classes_free (c);
}

int
main (int argc, char **argv)
{
  unsigned seeds = argc > 1 ? (unsigned) atoi (argv[1]) : 40, s;

  now = 1000 * MS;
  for (s = 1; s <= seeds; s++)
    run (s);
  return test_result ("classes-random");
}
