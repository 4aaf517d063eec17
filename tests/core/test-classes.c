/* SPDX-License-Identifier: BSD-3-Clause */
/* Rules (beyond the seed: priority classes, classes.c), one block each:
 * rt before be before idle; while rt has work the lower classes start
 * nothing, and keep half the depth for 100 ms after; a be or idle unit that has waited prio_aging
 * goes first; idle only after idle_grace of rt/be quiet and none at the
 * device; no lower class starts a unit for `anticipate` after an rt
 * read with no rt work left; idle keeps half the depth for a while; a request overlapping a
 * conflicting one of another class waits for it; with every request in
 * be the order is exactly one dl_sched's; bad class names are refused.
 */
#include "testlib.h"

static struct dl_req *
cins (struct dl_classes *c, enum dl_prio p, enum dl_op op, uint64_t off,
      uint64_t len, uint64_t stream)
{
  struct dl_req *r = mkreq (op, off, len, 0);

  r->prio = (uint8_t) p;
  r->stream = stream;
  CHECK_EQ (dl_classes_insert (c, r, now), 0);
  dl_classes_check (c);
  return r;
}

static struct dl_classes *
mkclasses (void (*tweak) (struct dl_tunables *), uint32_t depth)
{
  struct dl_tunables t;
  struct dl_classes *c;

  dl_tunables_default (&t);
  if (tweak)
    tweak (&t);
  c = dl_classes_new (&t, 1);
  REQUIRE (c != NULL);
  dl_classes_set_depth (c, depth);
  return c;
}

static void
done (struct dl_classes *c, struct dl_req *u)
{
  dl_classes_complete (c, u, now);
  dl_classes_check (c);
}

static void
finish_classes (struct dl_classes *c)
{
  struct dl_req *u;

  while ((u = dl_classes_dispatch (c, now)) != NULL || dl_classes_waiting (c)) {
    if (u == NULL) {
      now += 10 * MS;           /* a timer: anticipation, grace or aging */
      continue;
    }
    done (c, u);
  }
  CHECK_EQ (dl_classes_waiting (c), 0);
  CHECK_EQ (dl_classes_inflight (c), 0);
  dl_classes_free (c);
}

static void
no_anticipation (struct dl_tunables *t)
{
  t->anticipate_ns = 0;
}

static void
short_aging (struct dl_tunables *t)
{
  t->anticipate_ns = 0;
  t->prio_aging_ns = 1000 * MS;
}

/* rt first, then be, then idle, whatever their arrival or offsets. */
static void
test_order (void)
{
  struct dl_classes *c = mkclasses (no_anticipation, 1);
  struct dl_req *i = cins (c, DL_PRIO_IDLE, DL_OP_READ, 0, 4 * KiB, 1);
  struct dl_req *b = cins (c, DL_PRIO_BE, DL_OP_READ, 8 * KiB, 4 * KiB, 2);
  struct dl_req *r = cins (c, DL_PRIO_RT, DL_OP_READ, 1ULL << 30, 4 * KiB, 3);
  struct dl_req *u;

  now += 200 * MS;              /* past idle_grace: idle is only last */
  u = dl_classes_dispatch (c, now);
  CHECK (u == r);
  done (c, u);
  u = dl_classes_dispatch (c, now);
  CHECK (u == b);
  CHECK (dl_classes_dispatch (c, now) == NULL);   /* idle: be at the device */
  done (c, u);
  u = dl_classes_dispatch (c, now);
  CHECK (u == i);
  done (c, u);
  finish_classes (c);
}

/* While rt has work, be starts nothing; within 100 ms of rt's last
 * request it keeps at most half the depth at the device.
 */
static void
test_lower_capped (void)
{
  struct dl_classes *c = mkclasses (no_anticipation, 4);
  struct dl_req *u, *rt, *be[3];
  int k;

  for (k = 0; k < 8; k++)
    cins (c, DL_PRIO_BE, DL_OP_WRITE, (uint64_t) k << 30, 4 * KiB, 1);
  /* No rt work: be takes the whole depth. */
  for (k = 0; k < 3; k++) {
    be[k] = dl_classes_dispatch (c, now);
    REQUIRE (be[k] != NULL);
  }
  for (k = 0; k < 3; k++)
    done (c, be[k]);
  rt = cins (c, DL_PRIO_RT, DL_OP_READ, 1ULL << 40, 4 * KiB, 2);
  u = dl_classes_dispatch (c, now);
  CHECK (u == rt);
  /* rt at the device: be starts nothing beside it. */
  CHECK (dl_classes_dispatch (c, now) == NULL);
  done (c, rt);
  /* rt done: half the depth for be while rt may come back */
  be[0] = dl_classes_dispatch (c, now);
  be[1] = dl_classes_dispatch (c, now);
  CHECK (be[0] != NULL && be[0]->prio == DL_PRIO_BE);
  CHECK (be[1] != NULL && be[1]->prio == DL_PRIO_BE);
  CHECK (dl_classes_dispatch (c, now) == NULL);
  now += 99 * MS;
  CHECK (dl_classes_dispatch (c, now) == NULL);
  now += 1 * MS;
  be[2] = dl_classes_dispatch (c, now);           /* then the slot is be's */
  CHECK (be[2] != NULL && be[2]->prio == DL_PRIO_BE);
  for (k = 0; k < 3; k++)
    done (c, be[k]);
  finish_classes (c);
}

/* A be unit waiting prio_aging goes before rt's; counted. */
static void
test_aging (void)
{
  struct dl_classes *c = mkclasses (short_aging, 1);
  struct dl_req *b = cins (c, DL_PRIO_BE, DL_OP_WRITE, 0, 4 * KiB, 1);
  struct dl_req *u;
  struct dl_stats st;
  uint64_t start = now, off = 1ULL << 30;
  int rt_first = 0;

  /* An rt reader that always has a read queued. */
  for (;;) {
    cins (c, DL_PRIO_RT, DL_OP_READ, off, 4 * KiB, 2);
    off += 1ULL << 20;
    u = dl_classes_dispatch (c, now);
    REQUIRE (u != NULL);
    if (u == b)
      break;
    rt_first++;
    now += 10 * MS;
    done (c, u);
  }
  CHECK (now - start >= 1000 * MS);
  CHECK (now - start < 1000 * MS + 20 * MS);
  CHECK (rt_first >= 99);
  dl_classes_stats (c, &st);
  CHECK_EQ (st.prio_aged, 1);
  done (c, u);
  finish_classes (c);
}

/* idle waits idle_grace after the last rt/be arrival, and while any rt
 * or be unit is at the device; the timer says when the grace ends.
 */
static void
test_idle_grace (void)
{
  struct dl_classes *c = mkclasses (no_anticipation, 2);
  struct dl_req *i = cins (c, DL_PRIO_IDLE, DL_OP_WRITE, 0, 4 * KiB, 1);
  struct dl_req *u, *b;
  uint64_t t0;

  /* Never an rt/be request yet: idle goes at once. */
  u = dl_classes_dispatch (c, now);
  CHECK (u == i);
  done (c, u);

  b = cins (c, DL_PRIO_BE, DL_OP_READ, 1ULL << 30, 4 * KiB, 2);
  t0 = now;
  i = cins (c, DL_PRIO_IDLE, DL_OP_WRITE, 0, 4 * KiB, 1);
  u = dl_classes_dispatch (c, now);
  CHECK (u == b);
  CHECK (dl_classes_dispatch (c, now) == NULL);   /* be at the device */
  now += 1 * MS;
  done (c, b);
  CHECK (dl_classes_dispatch (c, now) == NULL);   /* within the grace */
  CHECK_EQ (dl_classes_next_timer (c, now), t0 + 100 * MS);
  now = t0 + 99 * MS;
  CHECK (dl_classes_dispatch (c, now) == NULL);
  now = t0 + 100 * MS;
  u = dl_classes_dispatch (c, now);
  CHECK (u == i);
  done (c, u);

  /* A be unit longer at the device than the grace: idle still waits. */
  b = cins (c, DL_PRIO_BE, DL_OP_READ, 1ULL << 31, 4 * KiB, 2);
  i = cins (c, DL_PRIO_IDLE, DL_OP_WRITE, 0, 4 * KiB, 1);
  u = dl_classes_dispatch (c, now);
  CHECK (u == b);
  now += 500 * MS;
  CHECK (dl_classes_dispatch (c, now) == NULL);
  done (c, b);
  CHECK (dl_classes_dispatch (c, now) == i);
  done (c, i);
  finish_classes (c);
}

/* After an rt read completes with no rt work left, be waits up to
 * `anticipate` (20 ms) for rt's next read, learned reader or not; the
 * timer says when; rt's next read within it goes first.
 */
static void
test_rt_held (void)
{
  struct dl_classes *c = mkclasses (NULL, 2);
  struct dl_req *r, *u, *w;
  uint64_t t0;

  r = cins (c, DL_PRIO_RT, DL_OP_READ, 0, 4 * KiB, 1);
  w = cins (c, DL_PRIO_BE, DL_OP_WRITE, 1ULL << 30, 4 * KiB, 2);
  u = dl_classes_dispatch (c, now);
  CHECK (u == r);
  now += 1 * MS;
  done (c, u);
  t0 = now;
  CHECK (dl_classes_dispatch (c, now) == NULL);
  CHECK_EQ (dl_classes_next_timer (c, now), t0 + 20 * MS);
  now += 5 * MS;
  r = cins (c, DL_PRIO_RT, DL_OP_READ, 8 * KiB, 4 * KiB, 3);  /* another connection */
  u = dl_classes_dispatch (c, now);
  CHECK (u == r);
  now += 1 * MS;
  done (c, u);
  t0 = now;
  now = t0 + 19 * MS;
  CHECK (dl_classes_dispatch (c, now) == NULL);
  now = t0 + 20 * MS;
  u = dl_classes_dispatch (c, now);
  CHECK (u == w);
  done (c, u);
  finish_classes (c);
}

/* Soon after rt or be, idle keeps at most half the depth; once they
 * have been quiet for 10 idle_graces, all of it.
 */
static void
test_idle_half (void)
{
  struct dl_classes *c = mkclasses (no_anticipation, 4);
  struct dl_req *u[3], *b;
  int k;

  b = cins (c, DL_PRIO_BE, DL_OP_READ, 1ULL << 40, 4 * KiB, 2);
  u[0] = dl_classes_dispatch (c, now);
  CHECK (u[0] == b);
  done (c, u[0]);
  now += 100 * MS;                      /* the grace: idle may go */
  for (k = 0; k < 5; k++)
    cins (c, DL_PRIO_IDLE, DL_OP_WRITE, (uint64_t) k << 30, 4 * KiB, 1);
  u[0] = dl_classes_dispatch (c, now);
  u[1] = dl_classes_dispatch (c, now);
  CHECK (u[0] != NULL && u[1] != NULL);
  CHECK (dl_classes_dispatch (c, now) == NULL);
  done (c, u[0]);
  u[2] = dl_classes_dispatch (c, now);
  CHECK (u[2] != NULL);
  now += 899 * MS;
  CHECK (dl_classes_dispatch (c, now) == NULL);   /* still half */
  now += 1 * MS;
  CHECK ((u[0] = dl_classes_dispatch (c, now)) != NULL);  /* the whole depth */
  done (c, u[0]);
  done (c, u[1]);
  done (c, u[2]);
  finish_classes (c);
}

/* Under a be flood that never pauses, idle still goes once aged. */
static void
test_idle_bound (void)
{
  struct dl_classes *c = mkclasses (short_aging, 1);
  struct dl_req *i = cins (c, DL_PRIO_IDLE, DL_OP_WRITE, 0, 4 * KiB, 1);
  struct dl_req *u;
  uint64_t start = now, off = 1ULL << 30;

  for (;;) {
    cins (c, DL_PRIO_BE, DL_OP_WRITE, off, 4 * KiB, 2);
    off += 1ULL << 20;
    u = dl_classes_dispatch (c, now);
    REQUIRE (u != NULL);
    if (u == i)
      break;
    now += 5 * MS;
    done (c, u);
  }
  CHECK (now - start >= 1000 * MS && now - start < 1000 * MS + 10 * MS);
  done (c, u);
  finish_classes (c);
}

/* An rt read over a queued be write waits for it, as within a class;
 * a be write over an rt write at the device waits for it too.
 */
static void
test_cross_hazard (void)
{
  struct dl_classes *c = mkclasses (no_anticipation, 4);
  struct dl_req *w = cins (c, DL_PRIO_BE, DL_OP_WRITE, 0, 8 * KiB, 1);
  struct dl_req *r = cins (c, DL_PRIO_RT, DL_OP_READ, 4 * KiB, 4 * KiB, 2);
  struct dl_req *far = cins (c, DL_PRIO_RT, DL_OP_READ, 1ULL << 30, 4 * KiB, 2);
  struct dl_req *u, *v;
  struct dl_stats st;

  dl_classes_stats (c, &st);
  CHECK_EQ (st.class_holds, 1);
  CHECK_EQ (dl_classes_waiting (c), 3);
  u = dl_classes_dispatch (c, now);
  CHECK (u == far);             /* rt first, but not the held read */
  CHECK (dl_classes_dispatch (c, now) == NULL);   /* nothing beside rt's */
  done (c, u);
  v = dl_classes_dispatch (c, now);
  CHECK (v == w);               /* the held read is not rt's work yet */
  CHECK (dl_classes_dispatch (c, now) == NULL);   /* still over w */
  done (c, v);
  u = dl_classes_dispatch (c, now);
  CHECK (u == r);

  /* The other way: rt write at the device, be write over it, and a be
   * read behind the held be write that must not pass it.
   */
  w = cins (c, DL_PRIO_RT, DL_OP_WRITE, 1ULL << 20, 4 * KiB, 2);
  v = dl_classes_dispatch (c, now);
  CHECK (v == w);
  struct dl_req *bw = cins (c, DL_PRIO_BE, DL_OP_WRITE, 1ULL << 20, 4 * KiB, 1);
  struct dl_req *br = cins (c, DL_PRIO_BE, DL_OP_READ, 1ULL << 20, 4 * KiB, 1);
  CHECK (dl_classes_dispatch (c, now) == NULL);
  done (c, u);
  done (c, v);
  u = dl_classes_dispatch (c, now);
  CHECK (u == bw);
  CHECK (dl_classes_dispatch (c, now) == NULL);   /* br: behind bw, its class's rule */
  done (c, u);
  u = dl_classes_dispatch (c, now);
  CHECK (u == br);
  done (c, u);
  finish_classes (c);
}

/* The flush slot beyond the depth (the engine's): only ever a flush,
 * and only when its class may go.
 */
static void
test_flush_slot (void)
{
  struct dl_classes *c = mkclasses (no_anticipation, 2);
  struct dl_req *r = cins (c, DL_PRIO_RT, DL_OP_READ, 0, 4 * KiB, 1);
  struct dl_req *f = cins (c, DL_PRIO_BE, DL_OP_FLUSH, 0, 0, 2);
  struct dl_req *u;

  CHECK (dl_classes_dispatch_flush (c, now) == NULL);     /* rt's read waits: not it */
  u = dl_classes_dispatch (c, now);
  CHECK (u == r);
  CHECK (dl_classes_dispatch_flush (c, now) == NULL);     /* rt at the device */
  done (c, u);
  u = dl_classes_dispatch_flush (c, now);
  CHECK (u == f);
  done (c, u);
  CHECK (dl_classes_dispatch_flush (c, now) == NULL);
  finish_classes (c);
}

/* All in be: exactly one dl_sched's order, for a random mix. */
static void
test_be_is_dl_sched (void)
{
  struct dl_tunables t;
  struct dl_sched *s;
  struct dl_classes *c;
  struct dl_req *a[2][2000];
  struct dl_req *fs[8], *fc[8];
  int nf = 0, k, i, n = 0;
  unsigned seed = 12345;

  dl_tunables_default (&t);
  s = dl_sched_new (&t, 512);
  c = dl_classes_new (&t, 512);
  REQUIRE (s && c);
  dl_sched_set_depth (s, 3);
  dl_classes_set_depth (c, 3);
  for (k = 0; k < 2000; k++) {
    unsigned x = rand_r (&seed);
    enum dl_op op = x % 3 ? DL_OP_READ : DL_OP_WRITE;
    uint64_t off = (uint64_t) (rand_r (&seed) % 4096) * 4096;
    uint64_t len = 4096 * (1 + rand_r (&seed) % 16);
    uint64_t stream = 1 + rand_r (&seed) % 4;

    for (i = 0; i < 2; i++) {
      a[i][k] = mkreq (op, off, len, 0);
      a[i][k]->stream = stream;
    }
    CHECK_EQ (dl_insert (s, a[0][k], now), 0);
    CHECK_EQ (dl_classes_insert (c, a[1][k], now), 0);
    now += (rand_r (&seed) % 3) * MS;
    /* The device takes what it can, and completes in order. */
    while (nf < 3) {
      struct dl_req *us = dl_dispatch (s, now), *uc = dl_classes_dispatch (c, now);

      CHECK ((us == NULL) == (uc == NULL));
      if (us == NULL || uc == NULL)
        break;
      CHECK_EQ (us->unit_offset, uc->unit_offset);
      CHECK_EQ (us->unit_length, uc->unit_length);
      CHECK_EQ (us->op, uc->op);
      fs[nf] = us;
      fc[nf++] = uc;
      n++;
    }
    if (nf > 0 && rand_r (&seed) % 2) {
      dl_complete (s, fs[0], now);
      dl_classes_complete (c, fc[0], now);
      memmove (fs, fs + 1, --nf * sizeof *fs);
      memmove (fc, fc + 1, nf * sizeof *fc);
    }
    dl_classes_check (c);
  }
  CHECK (n > 500);
  for (i = 0; i < nf; i++) {
    dl_complete (s, fs[i], now);
    dl_classes_complete (c, fc[i], now);
  }
  while (dl_drain (s) != NULL)
    ;
  while (dl_classes_drain (c) != NULL)
    ;
  dl_sched_free (s);
  dl_classes_free (c);
}

static void
test_names (void)
{
  enum dl_prio p;

  CHECK_EQ (dl_parse_prio ("rt", &p), 0);
  CHECK_EQ (p, DL_PRIO_RT);
  CHECK_EQ (dl_parse_prio ("IDLE", &p), 0);
  CHECK_EQ (p, DL_PRIO_IDLE);
  CHECK_EQ (dl_parse_prio ("be", &p), 0);
  CHECK_EQ (p, DL_PRIO_BE);
  CHECK_EQ (dl_parse_prio ("realtime", &p), -EINVAL);
  CHECK (strcmp (dl_prio_name (DL_PRIO_IDLE), "idle") == 0);
}

int
main (void)
{
  now = 1000 * MS;
  test_names ();
  test_order ();
  test_lower_capped ();
  test_aging ();
  test_idle_grace ();
  test_idle_bound ();
  test_rt_held ();
  test_flush_slot ();
  test_idle_half ();
  test_cross_hazard ();
  test_be_is_dl_sched ();
  return test_result ("classes");
}
