/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the exports that share one engine (exports.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exports.h"

void
exports_init (struct exports *x)
{
  memset (x, 0, sizeof *x);
  pthread_mutex_init (&x->lock, NULL);
}

void
exports_fini (struct exports *x)
{
  uint32_t i;

  for (i = 0; i < x->n; i++) {
    if (x->ent[i]->b.fd >= 0)
      backing_close (&x->ent[i]->b);
    free (x->ent[i]->name);
    free (x->ent[i]);
  }
  x->n = 0;
  pthread_mutex_destroy (&x->lock);
}

static int
find_locked (struct exports *x, const char *name)
{
  uint32_t i;

  /* Names are few (one per export of a disk): a linear search will do. */
  for (i = 0; i < x->n; i++)
    if (strcmp (x->ent[i]->name, name) == 0)
      return (int) i;
  return -ENOENT;
}

int
exports_find (struct exports *x, const char *name)
{
  int r;

  pthread_mutex_lock (&x->lock);
  r = find_locked (x, name);
  pthread_mutex_unlock (&x->lock);
  return r;
}

int
exports_add (struct exports *x, const char *name, enum dl_prio prio,
             uint64_t sort_base, struct backing *b, uint32_t *id)
{
  struct export_entry *ent;
  int r;

  pthread_mutex_lock (&x->lock);
  r = find_locked (x, name);
  if (r >= 0 || x->n == EXPORTS_MAX) {
    pthread_mutex_unlock (&x->lock);
    if (b && b->fd >= 0)
      backing_close (b);
    if (r < 0)
      return -ENOSPC;
    *id = (uint32_t) r;
    return 0;
  }
  ent = calloc (1, sizeof *ent);
  if (ent == NULL || (ent->name = strdup (name)) == NULL) {
    free (ent);
    pthread_mutex_unlock (&x->lock);
    if (b && b->fd >= 0)
      backing_close (b);
    return -ENOMEM;
  }
  ent->prio = (uint8_t) prio;
  ent->sort_base = sort_base;
  if (b)
    ent->b = *b;
  else
    ent->b.fd = ent->b.fd_buffered = -1;
  x->ent[x->n] = ent;
  *id = x->n;
  __atomic_store_n (&x->n, x->n + 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock (&x->lock);
  return 0;
}
