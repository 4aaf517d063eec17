/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: a B+tree of queued units, ordered by (unit_offset, seq),
 * under the sorted queues (sortq.c).  Stand alone: it knows a dl_req
 * only by its keys, its rounded-out end and its leaf pointer.
 *
 * Why not the red-black tree: a search of a deep queue walks a long
 * path of nodes, each a different dl_req and most of them a cache miss.
 * Here a node holds many keys side by side, so a search reads a few
 * cache lines per level and the tree has few levels.
 *
 * Nodes come from a pool that the caller reserves beforehand
 * (btpool_reserve), so that an insert or a removal never fails: only
 * the reservation can, where the caller can still refuse the request.
 */
#ifndef NBD_DEADLINE_BTREE_H
#define NBD_DEADLINE_BTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dl-sched.h"

/* Entries per leaf and children per inner node.  Large enough that the
 * tree stays shallow, small enough that a shift inside a node is cheap.
 */
#define BT_CAP 32
/* A node (not the root) with fewer is merged or refilled; far enough
 * below a split's halves that a queue that fills and drains at one
 * place does not split and merge the same node back and forth.
 */
#define BT_MIN (BT_CAP / 4)

struct bt_inner;

struct bt_head {
  struct bt_inner *parent;      /* NULL at the root */
  uint32_t n;                   /* entries (leaf) or children (inner) */
  uint32_t leaf;
};

/* A leaf: entries in key order, each with its unit's rounded-out end
 * (live_hi), so that a search never reads a dl_req it does not return.
 */
struct dl_bt_leaf {
  struct bt_head h;
  struct dl_bt_leaf *prev, *next;
  uint64_t off[BT_CAP];
  uint64_t hi[BT_CAP];
  struct dl_req *req[BT_CAP];
};

/* An inner node: child i holds keys at or above (sep_off[i], sep_seq[i])
 * and below child i + 1's; a child keeps its separator when it moves
 * to another node.  max_hi[i] is the highest end under child i (the
 * interval search: btree_overlaps).
 */
struct bt_inner {
  struct bt_head h;
  uint64_t sep_off[BT_CAP];
  uint64_t sep_seq[BT_CAP];
  uint64_t max_hi[BT_CAP];
  struct bt_head *child[BT_CAP];
};

union bt_node {
  struct bt_head h;
  struct dl_bt_leaf leaf;
  struct bt_inner inner;
  union bt_node *next_free;
};

/* Nodes for every tree of one scheduler. */
struct dl_btpool {
  union bt_node *free;          /* nodes given back */
  struct bt_chunk *chunks;      /* every chunk, newest first */
  struct bt_chunk *bump;        /* the chunk handing out fresh nodes */
  size_t reserved;              /* nodes allocated in all */
  uint64_t covered;             /* entries they are known to be enough for */
  size_t used;                  /* nodes in trees */
};

struct dl_btree {
  struct bt_head *root;         /* NULL: empty */
  struct dl_bt_leaf *first, *last;
  struct dl_btpool *pool;
  uint64_t align_mask;          /* an entry's live_lo is off & ~align_mask */
  uint64_t count;
};

void btpool_init (struct dl_btpool *p);
void btpool_fini (struct dl_btpool *p);
/* Make room for trees holding `entries` entries in all; -ENOMEM. */
int btpool_reserve (struct dl_btpool *p, uint64_t entries);

void btree_init (struct dl_btree *t, struct dl_btpool *p, uint64_t align_mask);
/* u's unit_offset, seq and live_hi are its keys while it is in the tree;
 * live_hi may only grow in place (btree_grown).
 */
void btree_insert (struct dl_btree *t, struct dl_req *u);
void btree_remove (struct dl_btree *t, struct dl_req *u);
void btree_grown (struct dl_req *u);
struct dl_req *btree_first (const struct dl_btree *t);
struct dl_req *btree_last (const struct dl_btree *t);
struct dl_req *btree_at_or_after (const struct dl_btree *t, uint64_t off);
/* The candidates for a merge with a range [off, end) (end >= off), from
 * the leaves' keys alone: *before the last entry starting before off if
 * its end reaches off, *after the first entry at or after end if it
 * starts there; NULL otherwise.
 */
void btree_neighbours (const struct dl_btree *t, uint64_t off, uint64_t end,
                       struct dl_req **before, struct dl_req **after);
struct dl_req *btree_next (const struct dl_req *u);
struct dl_req *btree_prev (const struct dl_req *u);
typedef bool bt_visit_fn (struct dl_req *v, void *arg);
/* Calls fn on each entry overlapping [lo, hi), in key order; stops and
 * returns true as soon as fn does.  _disjoint: the same, faster, for a
 * tree whose non-empty entries never overlap one another.
 */
bool btree_overlaps (const struct dl_btree *t, uint64_t lo, uint64_t hi,
                     bt_visit_fn *fn, void *arg);
bool btree_overlaps_disjoint (const struct dl_btree *t, uint64_t lo,
                              uint64_t hi, bt_visit_fn *fn, void *arg);
/* Asserts every invariant; returns the number of entries. */
uint64_t btree_check (const struct dl_btree *t);

#endif /* NBD_DEADLINE_BTREE_H */
