/* SPDX-License-Identifier: BSD-3-Clause */
/* The B+tree under the sorted queues (btree.c): random inserts, removals,
 * grown ends and every lookup, each answer checked against a plain
 * sorted array, and the tree's own invariants (btree_check) checked as
 * it goes.  Two trees share one pool, as the two directions do, and the
 * pool is only ever reserved for what the trees hold next.  Every other
 * seed keeps non-empty entries apart, as the write queue does, and
 * checks btree_overlaps_disjoint against the same answers.
 *
 *   test-btree [SEED [OPS]]
 */
#include "testlib.h"

#include "btree.h"

#define MAX_ENTRIES 6000

static uint64_t rng_state;

static uint64_t
rnd64 (void)
{
  uint64_t x = rng_state;
  x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
  rng_state = x;
  return x * 0x2545F4914F6CDD1DULL;
}

static uint64_t
below (uint64_t n)
{
  return n ? rnd64 () % n : 0;
}

/* One tree and the sorted array it must agree with. */
struct pair {
  struct dl_btree t;
  struct dl_req *ref[MAX_ENTRIES];
  size_t n;
};

static struct dl_btpool pool_;
static struct pair trees[2];
static struct dl_req reqs[2 * MAX_ENTRIES];
static struct dl_req *spare[2 * MAX_ENTRIES];
static size_t nspare;
static uint64_t next_seq, align_mask, span;
/* This run keeps non-empty entries from overlapping (as the write queue
 * does), and checks btree_overlaps_disjoint too.
 */
static bool disjoint;

static int
key_cmp (const struct dl_req *a, const struct dl_req *b)
{
  if (a->unit_offset != b->unit_offset)
    return a->unit_offset < b->unit_offset ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static uint64_t
live_lo (const struct dl_req *u)
{
  return u->unit_offset & ~align_mask;
}

static void
set_hi (struct dl_req *u)
{
  uint64_t end = u->unit_offset + u->unit_length;

  u->live_hi = u->unit_length == 0 ? live_lo (u) : (end + align_mask) & ~align_mask;
}

static void
do_insert (struct pair *p)
{
  struct dl_req *u;
  size_t i;

  if (p->n == MAX_ENTRIES || nspare == 0)
    return;
  REQUIRE (btpool_reserve (&pool_, trees[0].n + trees[1].n + 1) == 0);
  u = spare[--nspare];
  memset (u, 0, sizeof *u);
  /* Few distinct offsets now and then, so that ties (equal offsets,
   * ordered by seq) are common; seqs arrive out of order.
   */
  u->unit_offset = below (4) == 0 ? below (16) * 512 : below (span);
  u->unit_length = below (8) == 0 ? 0 : 1 + below (64 * 1024);
  if (u->unit_length == 0 && p->n && below (2)) {
    /* An empty one inside another (only empty ones may be, if disjoint). */
    const struct dl_req *in = p->ref[below (p->n)];
    u->unit_offset = in->unit_offset + below (in->unit_length + 1);
  }
  u->seq = (below (1u << 20) << 24) | next_seq++;
  set_hi (u);
  if (disjoint && live_lo (u) < u->live_hi)
    for (i = 0; i < p->n; i++)
      if (live_lo (p->ref[i]) < u->live_hi && p->ref[i]->live_hi > live_lo (u)) {
        spare[nspare++] = u;
        return;
      }
  btree_insert (&p->t, u);
  for (i = p->n; i > 0 && key_cmp (p->ref[i - 1], u) > 0; i--)
    p->ref[i] = p->ref[i - 1];
  p->ref[i] = u;
  p->n++;
}

static void
do_remove_at (struct pair *p, size_t i)
{
  struct dl_req *u = p->ref[i];

  btree_remove (&p->t, u);
  CHECK (u->sort_leaf == NULL);
  memmove (&p->ref[i], &p->ref[i + 1], (p->n - i - 1) * sizeof p->ref[0]);
  p->n--;
  spare[nspare++] = u;
}

static void
do_grow (struct pair *p)
{
  struct dl_req *u;

  if (p->n == 0)
    return;
  u = p->ref[below (p->n)];
  if (disjoint)
    return;                     /* growing could make it overlap */
  u->unit_length += 1 + below (256 * 1024);
  set_hi (u);
  btree_grown (u);
}

/* The lowest entry at or after off, in the reference. */
static struct dl_req *
ref_at_or_after (const struct pair *p, uint64_t off)
{
  size_t i;

  for (i = 0; i < p->n; i++)
    if (p->ref[i]->unit_offset >= off)
      return p->ref[i];
  return NULL;
}

struct visit {
  struct dl_req *seen[MAX_ENTRIES];
  size_t n, stop_at;
};

static bool
visit (struct dl_req *v, void *arg)
{
  struct visit *c = arg;

  c->seen[c->n++] = v;
  return c->n == c->stop_at;
}

static void
check_lookups (struct pair *p)
{
  static struct visit got, want;
  uint64_t off = below (4) == 0 ? below (16) * 512 : below (span + 1024);
  uint64_t lo = below (span), hi = lo + below (4) * below (128 * 1024);
  size_t i;
  bool stopped, want_stop;

  CHECK (btree_first (&p->t) == (p->n ? p->ref[0] : NULL));
  CHECK (btree_last (&p->t) == (p->n ? p->ref[p->n - 1] : NULL));
  CHECK (btree_at_or_after (&p->t, off) == ref_at_or_after (p, off));
  if (p->n) {
    i = below (p->n);
    CHECK (btree_next (p->ref[i]) == (i + 1 < p->n ? p->ref[i + 1] : NULL));
    CHECK (btree_prev (p->ref[i]) == (i > 0 ? p->ref[i - 1] : NULL));
  }

  /* The merge candidates of [lo, hi): ends that meet exactly, often. */
  {
    struct dl_req *b, *a, *wb = NULL, *wa = NULL;
    uint64_t mlo = off, mhi;

    if (p->n && below (2)) {
      const struct dl_req *x = p->ref[below (p->n)];
      mlo = x->unit_offset + x->unit_length;
    }
    mhi = mlo + below (64 * 1024);
    if (p->n && below (2))
      mhi = p->ref[below (p->n)]->unit_offset;
    if (mhi < mlo)
      mhi = mlo;
    for (i = 0; i < p->n && p->ref[i]->unit_offset < mlo; i++)
      ;
    if (i > 0 && p->ref[i - 1]->live_hi >= mlo)
      wb = p->ref[i - 1];
    for (; i < p->n && p->ref[i]->unit_offset < mhi; i++)
      ;
    if (i < p->n && p->ref[i]->unit_offset == mhi)
      wa = p->ref[i];
    btree_neighbours (&p->t, mlo, mhi, &b, &a);
    CHECK (b == wb);
    CHECK (a == wa);
  }

  /* The overlaps of [lo, hi), in order, and the early stop; mostly
   * ranges starting near an entry, often inside it.
   */
  if (p->n && below (4) != 0) {
    lo = p->ref[below (p->n)]->unit_offset + below (64 * 1024);
    hi = lo + below (4) * below (16 * 1024);
  }
  if (below (4) == 0) {
    lo &= ~align_mask;
    hi = (hi + align_mask) & ~align_mask;
  }
  want.n = 0;
  for (i = 0; i < p->n; i++) {
    struct dl_req *u = p->ref[i];
    if (live_lo (u) < hi && u->live_hi > lo && live_lo (u) < u->live_hi)
      want.seen[want.n++] = u;
  }
  got.n = 0;
  got.stop_at = below (3) == 0 ? 1 + below (4) : 0;
  stopped = btree_overlaps (&p->t, lo, hi, visit, &got);
  want_stop = got.stop_at != 0 && want.n >= got.stop_at;
  CHECK (stopped == want_stop);
  if (!want_stop)
    CHECK_EQ (got.n, want.n);
  else
    CHECK_EQ (got.n, got.stop_at);
  for (i = 0; i < got.n && i < want.n; i++)
    CHECK (got.seen[i] == want.seen[i]);

  if (disjoint) {
    got.n = 0;
    stopped = btree_overlaps_disjoint (&p->t, lo, hi, visit, &got);
    CHECK (stopped == want_stop);
    CHECK_EQ (got.n, want_stop ? got.stop_at : want.n);
    for (i = 0; i < got.n && i < want.n; i++)
      CHECK (got.seen[i] == want.seen[i]);
  }
}

/* The tree's height: the test must reach inner nodes above inner nodes. */
static int max_height;

static void
note_height (const struct pair *p)
{
  const struct bt_head *h = p->t.root;
  int n = 0;

  for (; h; n++)
    h = h->leaf ? NULL : ((const struct bt_inner *) h)->child[0];
  if (n > max_height)
    max_height = n;
}

static void
check_whole (struct pair *p)
{
  struct dl_req *u;
  size_t i = 0;

  CHECK_EQ (btree_check (&p->t), p->n);
  for (u = btree_first (&p->t); u; u = btree_next (u), i++)
    REQUIRE (i < p->n && u == p->ref[i]);
  CHECK_EQ (i, p->n);
  note_height (p);
}

/* One random step on a random tree; `fill` is the chance in 100 that it
 * is an insert rather than a removal.
 */
static void
step (unsigned fill, bool from_front)
{
  struct pair *p = &trees[below (2)];
  uint64_t r = below (100);

  if (r < fill)
    do_insert (p);
  else if (p->n && from_front)
    do_remove_at (p, below (4) == 0 ? below (p->n) : 0);
  else if (p->n)
    do_remove_at (p, below (p->n));
  if (below (16) == 0)
    do_grow (p);
  check_lookups (p);
}

static void
run (uint64_t seed, uint64_t ops)
{
  uint64_t i;
  int d;

  rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
  disjoint = seed % 2 == 0;
  align_mask = below (2) ? 0 : 4095;
  span = below (2) && !disjoint ? 1u << 20 : 1ull << 40;
  max_height = 0;
  btpool_init (&pool_);
  for (d = 0; d < 2; d++) {
    btree_init (&trees[d].t, &pool_, align_mask);
    trees[d].n = 0;
  }
  nspare = 0;
  for (i = 0; i < 2 * MAX_ENTRIES; i++)
    spare[nspare++] = &reqs[i];

  /* Fill, drain, fill, drain from the front (as a batch does), then mix. */
  for (i = 0; i < ops; i++) {
    uint64_t phase = i * 5 / ops;
    step (phase == 0 || phase == 2 ? 80 : phase == 4 ? 50 : 20, phase == 3);
    if (i % 97 == 0 || trees[0].n + trees[1].n < 40) {
      check_whole (&trees[0]);
      check_whole (&trees[1]);
    }
  }
  for (d = 0; d < 2; d++) {
    while (trees[d].n)
      do_remove_at (&trees[d], below (trees[d].n));
    check_whole (&trees[d]);
  }
  CHECK_EQ (pool_.used, 0);
  CHECK (max_height >= 3);
  btpool_fini (&pool_);
}

int
main (int argc, char **argv)
{
  uint64_t seed = argc > 1 ? strtoull (argv[1], NULL, 0) : 0;
  uint64_t ops = argc > 2 ? strtoull (argv[2], NULL, 0) : 40000;

  if (seed)
    run (seed, ops);
  else
    for (seed = 1; seed <= 6; seed++)
      run (seed, ops);
  return test_result ("btree");
}
