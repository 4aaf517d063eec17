/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the B+tree under the sorted queues (btree.h says why).
 *
 * Entries live in the leaves, in key order, the leaves linked in that
 * order; each entry knows its leaf through its dl_req (sort_leaf), so
 * that the neighbours and the removal of a unit need no search.  Inner
 * nodes route by separators and keep the highest end under each child,
 * which makes the tree an interval tree for the overlap search.
 */
#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "btree.h"

struct bt_chunk {
  struct bt_chunk *next;
  size_t n, used;               /* nodes in it; handed out so far */
  union bt_node nodes[];
};

/* ---- the pool ------------------------------------------------------ */

void
btpool_init (struct dl_btpool *p)
{
  memset (p, 0, sizeof *p);
}

void
btpool_fini (struct dl_btpool *p)
{
  struct bt_chunk *c, *next;

  for (c = p->chunks; c; c = next) {
    next = c->next;
    free (c);
  }
  memset (p, 0, sizeof *p);
}

/* The most nodes trees holding `entries` entries in all can use: every
 * node but a root holds at least BT_MIN, so a tree of m entries has at
 * most m / (BT_MIN - 1) nodes plus one per level; two trees share a pool.
 */
static uint64_t
nodes_for (uint64_t entries)
{
  uint64_t levels = 2, reach = BT_MIN;

  while (reach < entries && reach <= UINT64_MAX / BT_MIN) {
    reach *= BT_MIN;
    levels++;
  }
  return entries / (BT_MIN - 1) + 2 * (levels + 1);
}

int
btpool_reserve (struct dl_btpool *p, uint64_t entries)
{
  uint64_t need, n;
  struct bt_chunk *c;

  if (entries <= p->covered)
    return 0;
  need = nodes_for (entries);
  if (p->reserved >= need) {
    p->covered = entries;
    return 0;
  }
  /* Grow by half again at least, so that reserving one more entry at a
   * time allocates rarely.
   */
  n = need - p->reserved;
  if (n < p->reserved / 2)
    n = p->reserved / 2;
  c = malloc (sizeof *c + n * sizeof c->nodes[0]);
  if (c == NULL)
    return -ENOMEM;
  c->n = n;
  c->used = 0;
  c->next = p->chunks;
  p->chunks = c;
  /* What the old chunk has not handed out goes to the free list, so
   * that one chunk at a time hands out fresh nodes.
   */
  if (p->bump) {
    while (p->bump->used < p->bump->n) {
      union bt_node *x = &p->bump->nodes[p->bump->used++];
      x->next_free = p->free;
      p->free = x;
    }
  }
  p->bump = c;
  p->reserved += n;
  p->covered = entries;
  return 0;
}

static union bt_node *
node_alloc (struct dl_btpool *p)
{
  union bt_node *x = p->free;

  /* The caller reserved (btpool_reserve): past the reservation a node
   * would come from beyond the chunk, so stop rather than corrupt the
   * queues, in a build without assertions too.
   */
  if (p->used >= p->reserved)
    abort ();
  if (x)
    p->free = x->next_free;
  else {
    if (!p->bump || p->bump->used >= p->bump->n)
      abort ();
    x = &p->bump->nodes[p->bump->used++];
  }
  p->used++;
  memset (x, 0, sizeof *x);
  return x;
}

static void
node_free (struct dl_btpool *p, struct bt_head *h)
{
  union bt_node *x = (union bt_node *) h;

  assert (p->used > 0);
  x->next_free = p->free;
  p->free = x;
  p->used--;
}

/* ---- nodes --------------------------------------------------------- */

static struct dl_bt_leaf *
as_leaf (struct bt_head *h)
{
  assert (h->leaf);
  return (struct dl_bt_leaf *) h;
}

static struct bt_inner *
as_inner (struct bt_head *h)
{
  assert (!h->leaf);
  return (struct bt_inner *) h;
}

static struct dl_bt_leaf *
new_leaf (struct dl_btree *t)
{
  struct dl_bt_leaf *l = &node_alloc (t->pool)->leaf;

  l->h.leaf = 1;
  return l;
}

static struct bt_inner *
new_inner (struct dl_btree *t)
{
  return &node_alloc (t->pool)->inner;
}

static bool
key_less (uint64_t aoff, uint64_t aseq, uint64_t boff, uint64_t bseq)
{
  return aoff != boff ? aoff < boff : aseq < bseq;
}

/* The highest end under a node. */
static uint64_t
node_max (struct bt_head *h)
{
  uint64_t m = 0;
  uint32_t i;

  if (h->leaf) {
    struct dl_bt_leaf *l = as_leaf (h);
    for (i = 0; i < l->h.n; i++)
      if (l->hi[i] > m)
        m = l->hi[i];
  }
  else {
    struct bt_inner *in = as_inner (h);
    for (i = 0; i < in->h.n; i++)
      if (in->max_hi[i] > m)
        m = in->max_hi[i];
  }
  return m;
}

static uint32_t
child_index (const struct bt_inner *p, const struct bt_head *child)
{
  uint32_t i;

  for (i = 0; i < p->h.n; i++)
    if (p->child[i] == child)
      return i;
  abort ();                     /* a parent pointer is wrong */
}

/* Where u is in its leaf.  The offsets first: a search has just read
 * them, while the pointers beside them are likely cold.
 */
static uint32_t
entry_index (const struct dl_bt_leaf *l, const struct dl_req *u)
{
  uint64_t off = u->unit_offset;
  uint32_t j;

  for (j = 0; j < l->h.n; j++)
    if (l->off[j] == off && l->req[j] == u)
      return j;
  abort ();                     /* u is not where its sort_leaf says */
}

/* A node's maximum changed: recompute it in each ancestor while that
 * changes.
 */
static void
refresh_max (struct bt_head *h)
{
  while (h->parent) {
    struct bt_inner *p = h->parent;
    uint32_t i = child_index (p, h);
    uint64_t m = node_max (h);

    if (p->max_hi[i] == m)
      return;
    p->max_hi[i] = m;
    h = &p->h;
  }
}

/* An entry with end hi came under h: raise the ancestors' maxima. */
static void
raise_max (struct bt_head *h, uint64_t hi)
{
  while (h->parent) {
    struct bt_inner *p = h->parent;
    uint32_t i = child_index (p, h);

    if (p->max_hi[i] >= hi)
      return;
    p->max_hi[i] = hi;
    h = &p->h;
  }
}

/* The child of an inner node that holds, or would hold, key (off, seq):
 * the last whose separator is at or below it.
 */
static uint32_t
route (const struct bt_inner *in, uint64_t off, uint64_t seq)
{
  uint32_t i = 1;

  while (i < in->h.n && !key_less (off, seq, in->sep_off[i], in->sep_seq[i]))
    i++;
  return i - 1;
}

/* The child under which the lowest entry at or after off is, unless it
 * is the first entry after that child: the last whose separator is
 * below off.
 */
static uint32_t
route_off (const struct bt_inner *in, uint64_t off)
{
  uint32_t i = 1;

  while (i < in->h.n && in->sep_off[i] < off)
    i++;
  return i - 1;
}

/* ---- insertion ----------------------------------------------------- */

void
btree_init (struct dl_btree *t, struct dl_btpool *p, uint64_t align_mask)
{
  memset (t, 0, sizeof *t);
  t->pool = p;
  t->align_mask = align_mask;
}

/* Right becomes the child after left, with separator (off, seq). */
static void split_inner (struct dl_btree *t, struct bt_inner *p);

static void
insert_child (struct dl_btree *t, struct bt_head *left, struct bt_head *right,
              uint64_t off, uint64_t seq)
{
  struct bt_inner *p = left->parent;
  uint32_t i, k;

  if (p == NULL) {              /* a new root above the old one */
    p = new_inner (t);
    p->child[0] = left;
    p->max_hi[0] = node_max (left);
    p->h.n = 1;
    left->parent = p;
    t->root = &p->h;
  }
  if (p->h.n == BT_CAP) {
    split_inner (t, p);
    p = left->parent;
  }
  i = child_index (p, left) + 1;
  k = p->h.n - i;
  memmove (&p->sep_off[i + 1], &p->sep_off[i], k * sizeof p->sep_off[0]);
  memmove (&p->sep_seq[i + 1], &p->sep_seq[i], k * sizeof p->sep_seq[0]);
  memmove (&p->max_hi[i + 1], &p->max_hi[i], k * sizeof p->max_hi[0]);
  memmove (&p->child[i + 1], &p->child[i], k * sizeof p->child[0]);
  p->sep_off[i] = off;
  p->sep_seq[i] = seq;
  p->child[i] = right;
  p->max_hi[i] = node_max (right);
  p->max_hi[i - 1] = node_max (left);
  p->h.n++;
  right->parent = p;
}

/* A full inner node gives its upper half to a new one after it. */
static void
split_inner (struct dl_btree *t, struct bt_inner *p)
{
  struct bt_inner *q = new_inner (t);
  uint32_t half = BT_CAP / 2, k = p->h.n - half, i;

  memcpy (q->sep_off, &p->sep_off[half], k * sizeof q->sep_off[0]);
  memcpy (q->sep_seq, &p->sep_seq[half], k * sizeof q->sep_seq[0]);
  memcpy (q->max_hi, &p->max_hi[half], k * sizeof q->max_hi[0]);
  memcpy (q->child, &p->child[half], k * sizeof q->child[0]);
  q->h.n = k;
  p->h.n = half;
  for (i = 0; i < k; i++)
    q->child[i]->parent = q;
  insert_child (t, &p->h, &q->h, q->sep_off[0], q->sep_seq[0]);
}

/* A full leaf gives its upper half to a new one after it; returns the
 * one where key (off, seq) goes.
 */
static struct dl_bt_leaf *
split_leaf (struct dl_btree *t, struct dl_bt_leaf *l, uint64_t off,
            uint64_t seq)
{
  struct dl_bt_leaf *r = new_leaf (t);
  uint32_t half = BT_CAP / 2, k = l->h.n - half, i;

  memcpy (r->off, &l->off[half], k * sizeof r->off[0]);
  memcpy (r->hi, &l->hi[half], k * sizeof r->hi[0]);
  memcpy (r->req, &l->req[half], k * sizeof r->req[0]);
  r->h.n = k;
  l->h.n = half;
  for (i = 0; i < k; i++)
    r->req[i]->sort_leaf = r;
  r->prev = l;
  r->next = l->next;
  if (l->next)
    l->next->prev = r;
  else
    t->last = r;
  l->next = r;
  insert_child (t, &l->h, &r->h, r->off[0], r->req[0]->seq);
  return key_less (off, seq, r->off[0], r->req[0]->seq) ? l : r;
}

void
btree_insert (struct dl_btree *t, struct dl_req *u)
{
  uint64_t off = u->unit_offset, seq = u->seq, hi = u->live_hi;
  struct dl_bt_leaf *l;
  struct bt_head *h;
  uint32_t j, k;
  bool split = false;

  if (t->root == NULL) {
    l = new_leaf (t);
    t->root = &l->h;
    t->first = t->last = l;
  }
  /* Down to the leaf, raising the maxima on the way: the entry will be
   * under each of these children.
   */
  for (h = t->root; !h->leaf; ) {
    struct bt_inner *in = as_inner (h);
    uint32_t i = route (in, off, seq);

    if (in->max_hi[i] < hi)
      in->max_hi[i] = hi;
    h = in->child[i];
  }
  l = as_leaf (h);
  if (l->h.n == BT_CAP) {
    l = split_leaf (t, l, off, seq);
    split = true;
  }
  for (j = 0; j < l->h.n; j++)
    if (key_less (off, seq, l->off[j], l->req[j]->seq))
      break;
  k = l->h.n - j;
  memmove (&l->off[j + 1], &l->off[j], k * sizeof l->off[0]);
  memmove (&l->hi[j + 1], &l->hi[j], k * sizeof l->hi[0]);
  memmove (&l->req[j + 1], &l->req[j], k * sizeof l->req[0]);
  l->off[j] = off;
  l->hi[j] = hi;
  l->req[j] = u;
  l->h.n++;
  u->sort_leaf = l;
  t->count++;
  if (split)                    /* the split recomputed the maxima above */
    raise_max (&l->h, hi);
}

/* ---- removal ------------------------------------------------------- */

/* Child li + 1 of p moves into child li, and is freed. */
static void
merge (struct dl_btree *t, struct bt_inner *p, uint32_t li)
{
  struct bt_head *a = p->child[li], *b = p->child[li + 1];
  uint32_t n = a->n, k = b->n, i, m;

  if (a->leaf) {
    struct dl_bt_leaf *x = as_leaf (a), *y = as_leaf (b);

    memcpy (&x->off[n], y->off, k * sizeof x->off[0]);
    memcpy (&x->hi[n], y->hi, k * sizeof x->hi[0]);
    memcpy (&x->req[n], y->req, k * sizeof x->req[0]);
    for (i = 0; i < k; i++)
      y->req[i]->sort_leaf = x;
    x->next = y->next;
    if (y->next)
      y->next->prev = x;
    else
      t->last = x;
  }
  else {
    struct bt_inner *x = as_inner (a), *y = as_inner (b);

    /* Its first child now follows others: it needs its separator. */
    y->sep_off[0] = p->sep_off[li + 1];
    y->sep_seq[0] = p->sep_seq[li + 1];
    memcpy (&x->sep_off[n], y->sep_off, k * sizeof x->sep_off[0]);
    memcpy (&x->sep_seq[n], y->sep_seq, k * sizeof x->sep_seq[0]);
    memcpy (&x->max_hi[n], y->max_hi, k * sizeof x->max_hi[0]);
    memcpy (&x->child[n], y->child, k * sizeof x->child[0]);
    for (i = 0; i < k; i++)
      y->child[i]->parent = x;
  }
  a->n = n + k;
  m = p->h.n - (li + 2);
  memmove (&p->sep_off[li + 1], &p->sep_off[li + 2], m * sizeof p->sep_off[0]);
  memmove (&p->sep_seq[li + 1], &p->sep_seq[li + 2], m * sizeof p->sep_seq[0]);
  memmove (&p->max_hi[li + 1], &p->max_hi[li + 2], m * sizeof p->max_hi[0]);
  memmove (&p->child[li + 1], &p->child[li + 2], m * sizeof p->child[0]);
  p->h.n--;
  p->max_hi[li] = node_max (a);
  node_free (t->pool, b);
}

/* Children li and li + 1 of p share their entries evenly. */
static void
redistribute (struct bt_inner *p, uint32_t li)
{
  struct bt_head *a = p->child[li], *b = p->child[li + 1];
  uint32_t total = a->n + b->n, want = total / 2, i;

  if (a->leaf) {
    struct dl_bt_leaf *x = as_leaf (a), *y = as_leaf (b);

    if (x->h.n > want) {        /* x's last entries to y's front */
      uint32_t k = x->h.n - want;
      memmove (&y->off[k], y->off, y->h.n * sizeof y->off[0]);
      memmove (&y->hi[k], y->hi, y->h.n * sizeof y->hi[0]);
      memmove (&y->req[k], y->req, y->h.n * sizeof y->req[0]);
      memcpy (y->off, &x->off[want], k * sizeof y->off[0]);
      memcpy (y->hi, &x->hi[want], k * sizeof y->hi[0]);
      memcpy (y->req, &x->req[want], k * sizeof y->req[0]);
      for (i = 0; i < k; i++)
        y->req[i]->sort_leaf = y;
      x->h.n -= k;
      y->h.n += k;
    }
    else {                      /* y's first entries to x's end */
      uint32_t k = want - x->h.n;
      memcpy (&x->off[x->h.n], y->off, k * sizeof x->off[0]);
      memcpy (&x->hi[x->h.n], y->hi, k * sizeof x->hi[0]);
      memcpy (&x->req[x->h.n], y->req, k * sizeof x->req[0]);
      for (i = 0; i < k; i++)
        y->req[i]->sort_leaf = x;
      memmove (y->off, &y->off[k], (y->h.n - k) * sizeof y->off[0]);
      memmove (y->hi, &y->hi[k], (y->h.n - k) * sizeof y->hi[0]);
      memmove (y->req, &y->req[k], (y->h.n - k) * sizeof y->req[0]);
      x->h.n += k;
      y->h.n -= k;
    }
    p->sep_off[li + 1] = y->off[0];
    p->sep_seq[li + 1] = y->req[0]->seq;
  }
  else {
    struct bt_inner *x = as_inner (a), *y = as_inner (b);

    /* y's first child may move or follow others: it needs its separator. */
    y->sep_off[0] = p->sep_off[li + 1];
    y->sep_seq[0] = p->sep_seq[li + 1];
    if (x->h.n > want) {
      uint32_t k = x->h.n - want;
      memmove (&y->sep_off[k], y->sep_off, y->h.n * sizeof y->sep_off[0]);
      memmove (&y->sep_seq[k], y->sep_seq, y->h.n * sizeof y->sep_seq[0]);
      memmove (&y->max_hi[k], y->max_hi, y->h.n * sizeof y->max_hi[0]);
      memmove (&y->child[k], y->child, y->h.n * sizeof y->child[0]);
      memcpy (y->sep_off, &x->sep_off[want], k * sizeof y->sep_off[0]);
      memcpy (y->sep_seq, &x->sep_seq[want], k * sizeof y->sep_seq[0]);
      memcpy (y->max_hi, &x->max_hi[want], k * sizeof y->max_hi[0]);
      memcpy (y->child, &x->child[want], k * sizeof y->child[0]);
      for (i = 0; i < k; i++)
        y->child[i]->parent = y;
      x->h.n -= k;
      y->h.n += k;
    }
    else {
      uint32_t k = want - x->h.n;
      memcpy (&x->sep_off[x->h.n], y->sep_off, k * sizeof x->sep_off[0]);
      memcpy (&x->sep_seq[x->h.n], y->sep_seq, k * sizeof x->sep_seq[0]);
      memcpy (&x->max_hi[x->h.n], y->max_hi, k * sizeof x->max_hi[0]);
      memcpy (&x->child[x->h.n], y->child, k * sizeof x->child[0]);
      for (i = 0; i < k; i++)
        y->child[i]->parent = x;
      memmove (y->sep_off, &y->sep_off[k], (y->h.n - k) * sizeof y->sep_off[0]);
      memmove (y->sep_seq, &y->sep_seq[k], (y->h.n - k) * sizeof y->sep_seq[0]);
      memmove (y->max_hi, &y->max_hi[k], (y->h.n - k) * sizeof y->max_hi[0]);
      memmove (y->child, &y->child[k], (y->h.n - k) * sizeof y->child[0]);
      x->h.n += k;
      y->h.n -= k;
    }
    p->sep_off[li + 1] = y->sep_off[0];
    p->sep_seq[li + 1] = y->sep_seq[0];
  }
  p->max_hi[li] = node_max (a);
  p->max_hi[li + 1] = node_max (b);
}

/* h (not the root) has fewer than BT_MIN: merge it with a sibling, or
 * even them out when both together would still be close to full.
 */
static void
rebalance (struct dl_btree *t, struct bt_head *h)
{
  struct bt_inner *p = h->parent;
  uint32_t i = child_index (p, h);
  uint32_t li = i > 0 ? i - 1 : 0;

  assert (p->h.n >= 2);
  if (p->child[li]->n + p->child[li + 1]->n > BT_CAP * 3 / 4) {
    redistribute (p, li);
    refresh_max (&p->h);
    return;
  }
  merge (t, p, li);
  if (p->h.parent == NULL) {
    if (p->h.n == 1) {          /* the root has one child: it goes */
      t->root = p->child[0];
      t->root->parent = NULL;
      node_free (t->pool, &p->h);
    }
  }
  else if (p->h.n < BT_MIN)
    rebalance (t, &p->h);
  else
    refresh_max (&p->h);
}

void
btree_remove (struct dl_btree *t, struct dl_req *u)
{
  struct dl_bt_leaf *l = u->sort_leaf;
  uint32_t j = entry_index (l, u), k = l->h.n - j - 1;
  uint64_t hi = l->hi[j];

  memmove (&l->off[j], &l->off[j + 1], k * sizeof l->off[0]);
  memmove (&l->hi[j], &l->hi[j + 1], k * sizeof l->hi[0]);
  memmove (&l->req[j], &l->req[j + 1], k * sizeof l->req[0]);
  l->h.n--;
  t->count--;
  u->sort_leaf = NULL;
  if (l->h.parent == NULL) {
    if (l->h.n == 0) {
      node_free (t->pool, &l->h);
      t->root = NULL;
      t->first = t->last = NULL;
    }
    return;
  }
  if (l->h.n < BT_MIN)
    rebalance (t, &l->h);
  else if (hi > node_max (&l->h))  /* it was the leaf's highest end */
    refresh_max (&l->h);
}

void
btree_grown (struct dl_req *u)
{
  struct dl_bt_leaf *l = u->sort_leaf;
  uint32_t j = entry_index (l, u);

  assert (u->live_hi >= l->hi[j]);
  l->hi[j] = u->live_hi;
  raise_max (&l->h, u->live_hi);
}

/* ---- lookups ------------------------------------------------------- */

struct dl_req *
btree_first (const struct dl_btree *t)
{
  return t->first ? t->first->req[0] : NULL;
}

struct dl_req *
btree_last (const struct dl_btree *t)
{
  return t->last ? t->last->req[t->last->h.n - 1] : NULL;
}

struct dl_req *
btree_at_or_after (const struct dl_btree *t, uint64_t off)
{
  struct bt_head *h = t->root;
  struct dl_bt_leaf *l;
  uint32_t j;

  if (h == NULL)
    return NULL;
  while (!h->leaf) {
    struct bt_inner *in = as_inner (h);
    h = in->child[route_off (in, off)];
  }
  l = as_leaf (h);
  for (j = 0; j < l->h.n; j++)
    if (l->off[j] >= off)
      return l->req[j];
  return l->next ? l->next->req[0] : NULL;
}

void
btree_neighbours (const struct dl_btree *t, uint64_t off, uint64_t end,
                  struct dl_req **before, struct dl_req **after)
{
  struct bt_head *h = t->root;
  const struct dl_bt_leaf *l, *bl;
  uint32_t j;

  *before = *after = NULL;
  if (h == NULL)
    return;
  while (!h->leaf) {
    struct bt_inner *in = as_inner (h);
    h = in->child[route_off (in, off)];
  }
  l = as_leaf (h);
  for (j = 0; j < l->h.n && l->off[j] < off; j++)
    ;
  /* The last entry before off, if its end reaches off at all. */
  bl = j > 0 ? l : l->prev;
  if (bl) {
    uint32_t bj = j > 0 ? j - 1 : bl->h.n - 1;
    if (bl->hi[bj] >= off)
      *before = bl->req[bj];
  }
  /* The first entry at or after end, if it starts there: usually in this
   * leaf or the next; else a search of its own.
   */
  for (; j < l->h.n && l->off[j] < end; j++)
    ;
  if (j == l->h.n && l->next && l->next->off[0] < end) {
    struct dl_req *n = btree_at_or_after (t, end);
    if (n && n->unit_offset == end)
      *after = n;
    return;
  }
  if (j == l->h.n) {
    l = l->next;
    j = 0;
  }
  if (l && l->off[j] == end)
    *after = l->req[j];
}

struct dl_req *
btree_next (const struct dl_req *u)
{
  const struct dl_bt_leaf *l = u->sort_leaf;
  uint32_t j = entry_index (l, u);

  if (j + 1 < l->h.n)
    return l->req[j + 1];
  return l->next ? l->next->req[0] : NULL;
}

struct dl_req *
btree_prev (const struct dl_req *u)
{
  const struct dl_bt_leaf *l = u->sort_leaf;
  uint32_t j = entry_index (l, u);

  if (j > 0)
    return l->req[j - 1];
  return l->prev ? l->prev->req[l->prev->h.n - 1] : NULL;
}

/* 1: fn returned true; -1: past hi, nothing more to see; 0: go on. */
static int
overlaps_at (const struct dl_btree *t, struct bt_head *h, uint64_t lo,
             uint64_t hi, bt_visit_fn *fn, void *arg)
{
  uint64_t down = ~t->align_mask;
  uint32_t i;

  if (h->leaf) {
    struct dl_bt_leaf *l = as_leaf (h);

    for (i = 0; i < l->h.n; i++) {
      uint64_t elo = l->off[i] & down;  /* its live_lo */

      if (elo >= hi)
        return -1;
      if (l->hi[i] > lo && elo < l->hi[i] && fn (l->req[i], arg))
        return 1;
    }
    return 0;
  }
  else {
    struct bt_inner *in = as_inner (h);

    for (i = 0; i < in->h.n; i++) {
      int r;

      if (i > 0 && (in->sep_off[i] & down) >= hi)
        return -1;
      if (in->max_hi[i] <= lo)
        continue;
      r = overlaps_at (t, in->child[i], lo, hi, fn, arg);
      if (r != 0)
        return r;
    }
    return 0;
  }
}

bool
btree_overlaps (const struct dl_btree *t, uint64_t lo, uint64_t hi,
                bt_visit_fn *fn, void *arg)
{
  return t->root && overlaps_at (t, t->root, lo, hi, fn, arg) == 1;
}

/* The same when no two non-empty entries overlap: then only the last
 * non-empty entry starting before lo can reach into the range, and one
 * descent finds it, without the maxima.
 */
bool
btree_overlaps_disjoint (const struct dl_btree *t, uint64_t lo, uint64_t hi,
                         bt_visit_fn *fn, void *arg)
{
  uint64_t down = ~t->align_mask;
  const struct dl_bt_leaf *l;
  struct bt_head *h = t->root;
  uint32_t j;

  if (h == NULL)
    return false;
  while (!h->leaf) {
    struct bt_inner *in = as_inner (h);
    h = in->child[route_off (in, lo)];
  }
  l = as_leaf (h);
  for (j = 0; j < l->h.n && l->off[j] < lo; j++)
    ;
  /* Back from (l, j) to the last non-empty entry before lo. */
  {
    const struct dl_bt_leaf *bl = l;
    uint32_t bj = j;

    for (;;) {
      if (bj == 0) {
        bl = bl->prev;
        if (bl == NULL)
          break;
        bj = bl->h.n;
      }
      bj--;
      if (bl->hi[bj] > (bl->off[bj] & down)) {
        if (bl->hi[bj] > lo && (bl->off[bj] & down) < hi && fn (bl->req[bj], arg))
          return true;
        break;
      }
    }
  }
  /* Then forward from lo while they start below hi. */
  for (;;) {
    if (j == l->h.n) {
      l = l->next;
      if (l == NULL)
        return false;
      j = 0;
    }
    if ((l->off[j] & down) >= hi)
      return false;
    if (l->hi[j] > lo && l->hi[j] > (l->off[j] & down) && fn (l->req[j], arg))
      return true;
    j++;
  }
}

/* ---- the check ----------------------------------------------------- */

struct check_walk {
  const struct dl_btree *t;
  const struct dl_bt_leaf *prev_leaf;
  int leaf_depth;
  uint64_t entries, nodes;
};

/* Every key under h is in [lo, up): has_lo / has_up say whether those
 * bounds exist.  Returns the highest end under h.
 */
static uint64_t
check_node (struct check_walk *w, struct bt_head *h, int depth,
            bool has_lo, uint64_t lo_off, uint64_t lo_seq,
            bool has_up, uint64_t up_off, uint64_t up_seq)
{
  uint64_t m = 0;
  uint32_t i;

  w->nodes++;
  assert (h->n >= 1 && h->n <= BT_CAP);
  assert (h == w->t->root || h->n >= BT_MIN);
  if (h->leaf) {
    struct dl_bt_leaf *l = as_leaf (h);

    assert (w->leaf_depth < 0 || w->leaf_depth == depth);
    w->leaf_depth = depth;
    assert (l->prev == w->prev_leaf);
    assert (l->prev ? l->prev->next == l : w->t->first == l);
    w->prev_leaf = l;
    for (i = 0; i < l->h.n; i++) {
      const struct dl_req *u = l->req[i];
      assert (u->sort_leaf == l);
      assert (l->off[i] == u->unit_offset && l->hi[i] == u->live_hi);
      assert (!has_lo || !key_less (l->off[i], u->seq, lo_off, lo_seq));
      assert (!has_up || key_less (l->off[i], u->seq, up_off, up_seq));
      if (i > 0)
        assert (key_less (l->off[i - 1], l->req[i - 1]->seq, l->off[i], u->seq));
      if (l->hi[i] > m)
        m = l->hi[i];
    }
    w->entries += l->h.n;
    return m;
  }
  else {
    struct bt_inner *in = as_inner (h);

    assert (h == w->t->root || h->n >= BT_MIN);
    assert (h != w->t->root || h->n >= 2);
    for (i = 0; i < in->h.n; i++) {
      bool clo = i > 0 ? true : has_lo;
      uint64_t clo_off = i > 0 ? in->sep_off[i] : lo_off;
      uint64_t clo_seq = i > 0 ? in->sep_seq[i] : lo_seq;
      bool cup = i + 1 < in->h.n ? true : has_up;
      uint64_t cup_off = i + 1 < in->h.n ? in->sep_off[i + 1] : up_off;
      uint64_t cup_seq = i + 1 < in->h.n ? in->sep_seq[i + 1] : up_seq;
      uint64_t cm;

      assert (in->child[i]->parent == in);
      /* An inner child's first separator is its own (merge and
       * redistribute set it again all the same).
       */
      assert (i == 0 || in->child[i]->leaf ||
              (as_inner (in->child[i])->sep_off[0] == in->sep_off[i] &&
               as_inner (in->child[i])->sep_seq[0] == in->sep_seq[i]));
      if (i > 0)
        assert (key_less (in->sep_off[i - 1], in->sep_seq[i - 1],
                          in->sep_off[i], in->sep_seq[i]) || i == 1);
      cm = check_node (w, in->child[i], depth + 1, clo, clo_off, clo_seq,
                       cup, cup_off, cup_seq);
      assert (in->max_hi[i] == cm);
      if (cm > m)
        m = cm;
    }
    return m;
  }
}

uint64_t
btree_check (const struct dl_btree *t)
{
  struct check_walk w = { .t = t, .leaf_depth = -1 };

  if (t->root == NULL) {
    assert (t->count == 0 && t->first == NULL && t->last == NULL);
    return 0;
  }
  assert (t->root->parent == NULL);
  check_node (&w, t->root, 0, false, 0, 0, false, 0, 0);
  assert (w.prev_leaf == t->last && t->last->next == NULL);
  assert (w.entries == t->count);
  assert (t->pool->used >= w.nodes);
  return t->count;
}
