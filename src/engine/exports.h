/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the exports that share one engine (one disk).
 *
 * Each export name seen gets a small number (its id), its priority
 * class (classes.c: changeable at run time), where its byte 0 sorts on
 * the disk (sort_base) and its counters.  Entries are never removed
 * while the engine lives, so a reader needs no lock: ids index a table
 * filled once per name under the table's lock.
 */
#ifndef NBD_DEADLINE_EXPORTS_H
#define NBD_DEADLINE_EXPORTS_H

#include <pthread.h>
#include <stdint.h>

#include "dl-sched.h"
#include "backing.h"

#define EXPORTS_MAX 1024

struct export_entry {
  char *name;
  uint8_t prio;                 /* enum dl_prio; atomic loads and stores */
  uint64_t sort_base;
  uint64_t requests[2], bytes[2]; /* completed, by direction; atomic adds */
  struct backing b;             /* DIRECT with a directory: its own file,
                                   O_DIRECT (fd -1: none) */
};

struct exports {
  pthread_mutex_t lock;
  uint32_t n;                   /* entries filled; atomic load */
  struct export_entry *ent[EXPORTS_MAX];
};

void exports_init (struct exports *x);
void exports_fini (struct exports *x);
/* The id of name, added with prio, sort_base and backing b (or NULL)
 * if new; an existing export keeps its own, and b is closed.  0,
 * -ENOSPC (too many) or -ENOMEM (b is closed then too).
 */
int exports_add (struct exports *x, const char *name, enum dl_prio prio,
                 uint64_t sort_base, struct backing *b, uint32_t *id);
/* The id of name, or -ENOENT. */
int exports_find (struct exports *x, const char *name);
static inline struct export_entry *
exports_get (struct exports *x, uint32_t id)
{
  return id < __atomic_load_n (&x->n, __ATOMIC_ACQUIRE) ? x->ent[id] : NULL;
}

#endif
