/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the readahead cache (racache.h says what it promises). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "racache.h"

void
racache_init (struct racache *c)
{
  memset (c, 0, sizeof *c);
  pthread_mutex_init (&c->lock, NULL);
}

void
racache_destroy (struct racache *c)
{
  int i;

  for (i = 0; i < RACACHE_EXTENTS; i++)
    free (c->ext[i].buf);
  pthread_mutex_destroy (&c->lock);
}

static bool
overlaps (const struct ra_extent *x, uint64_t lo, uint64_t hi)
{
  return x->lo < hi && lo < x->hi;
}

void
racache_modified (struct racache *c, uint64_t lo, uint64_t hi)
{
  int i;

  pthread_mutex_lock (&c->lock);
  c->modified++;
  for (i = 0; i < RACACHE_EXTENTS; i++) {
    struct ra_extent *x = &c->ext[i];

    if (!overlaps (x, lo, hi))
      continue;
    if (x->state == RA_VALID) {
      x->state = RA_FREE;
      c->dropped++;
    }
    else if (x->state == RA_FILLING)
      x->state = RA_STALE;      /* its fill is thrown away */
  }
  pthread_mutex_unlock (&c->lock);
}

void
racache_taken (struct racache *c)
{
  pthread_mutex_lock (&c->lock);
  c->taken++;
  pthread_mutex_unlock (&c->lock);
}

bool
racache_lookup (struct racache *c, uint32_t export_id, void *buf,
                uint64_t off, uint32_t len, uint64_t now)
{
  bool hit = false;
  int i;

  pthread_mutex_lock (&c->lock);
  for (i = 0; i < RACACHE_EXTENTS; i++) {
    struct ra_extent *x = &c->ext[i];

    if (x->state == RA_VALID && x->export_id == export_id &&
        now - x->filled_ns < RACACHE_MAX_AGE_NS &&
        x->lo <= off && off + len <= x->hi) {
      memcpy (buf, x->buf + (off - x->lo), len);
      x->last_used = ++c->clock;
      c->hits++;
      c->hit_bytes += len;
      hit = true;
      break;
    }
  }
  pthread_mutex_unlock (&c->lock);
  return hit;
}

/* A free extent, else the least recently used valid one, else -1. */
static int
victim (struct racache *c)
{
  int i, v = -1;

  for (i = 0; i < RACACHE_EXTENTS; i++) {
    struct ra_extent *x = &c->ext[i];

    if (x->state == RA_FREE)
      return i;
    if (x->state == RA_VALID && (v < 0 || x->last_used < c->ext[v].last_used))
      v = i;
  }
  return v;
}

struct ra_token
racache_reserve (struct racache *c, uint32_t export_id, uint64_t lo,
                 uint64_t hi, char **buf)
{
  struct ra_token tok = { .idx = -1 };
  struct ra_extent *x;
  int i;

  if (hi <= lo)
    return tok;
  pthread_mutex_lock (&c->lock);
  if (c->modified != c->taken)
    goto out;                   /* a write the core has not seen yet */
  for (i = 0; i < RACACHE_EXTENTS; i++)
    if ((c->ext[i].state == RA_VALID || c->ext[i].state == RA_FILLING) &&
        c->ext[i].export_id == export_id &&
        c->ext[i].lo <= lo && hi <= c->ext[i].hi)
      goto out;                 /* held already */
  i = victim (c);
  if (i < 0)
    goto out;
  x = &c->ext[i];
  if (x->cap < hi - lo) {
    char *b = realloc (x->buf, hi - lo);
    if (b == NULL)
      goto out;
    x->buf = b;
    x->cap = hi - lo;
  }
  x->export_id = export_id;
  x->lo = lo;
  x->hi = hi;
  x->state = RA_FILLING;
  x->gen++;
  tok.idx = i;
  tok.gen = x->gen;
  *buf = x->buf;
 out:
  pthread_mutex_unlock (&c->lock);
  return tok;
}

void
racache_fill (struct racache *c, struct ra_token tok, const void *data,
              uint64_t got, uint64_t now)
{
  struct ra_extent *x;

  if (tok.idx < 0)
    return;
  pthread_mutex_lock (&c->lock);
  x = &c->ext[tok.idx];
  if (x->gen == tok.gen) {
    if (x->state == RA_FILLING && got > 0) {
      if (got < x->hi - x->lo)
        x->hi = x->lo + got;
      if (data)
        memcpy (x->buf, data, x->hi - x->lo);
      x->state = RA_VALID;
      x->filled_ns = now;
      x->last_used = ++c->clock;
      c->fills++;
    }
    else
      x->state = RA_FREE;
  }
  pthread_mutex_unlock (&c->lock);
}
