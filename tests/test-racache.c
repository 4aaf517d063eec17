/* SPDX-License-Identifier: BSD-3-Clause */
/* The readahead cache's promises (src/engine/racache.h), rule by rule:
 * a read is answered only from an extent of its own export that holds
 * all of it and was filled less than RACACHE_MAX_AGE_NS ago; a write,
 * trim or zero drops every extent it overlaps, and a fill that one
 * overlapped meanwhile is thrown away; nothing is reserved while a
 * write that has arrived has not reached the core; and the cache keeps
 * at most RACACHE_EXTENTS extents, giving up the least recently used.
 * (test-readahead.sh checks the whole path through a real nbdkit.)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "racache.h"

#define MS 1000000ULL

/* Reserve [lo, hi) of export ex and fill it with bytes of value v. */
static struct ra_token
fill (struct racache *c, uint32_t ex, uint64_t lo, uint64_t hi, int v,
      uint64_t now)
{
  char data[65536];
  char *buf = NULL;
  struct ra_token t = racache_reserve (c, ex, lo, hi, &buf);

  if (t.idx >= 0) {
    CHECK (buf != NULL);
    memset (data, v, hi - lo);
    racache_fill (c, t, data, hi - lo, now);
  }
  return t;
}

static bool
hit (struct racache *c, uint32_t ex, uint64_t off, uint32_t len, int v,
     uint64_t now)
{
  char buf[65536];
  uint32_t i;

  memset (buf, ~v, len);
  if (!racache_lookup (c, ex, buf, off, len, now))
    return false;
  for (i = 0; i < len; i++)
    if (buf[i] != (char) v) {
      fprintf (stderr, "test-racache: byte %" PRIu32 " of a hit is wrong\n", i);
      failures++;
      break;
    }
  return true;
}

int
main (void)
{
  struct racache c;
  struct ra_token t;
  char *buf;
  uint64_t now = 1000 * MS;
  int i;

  racache_init (&c);

  /* A hit only wholly inside, only for its export. */
  CHECK (fill (&c, 0, 65536, 131072, 'a', now).idx >= 0);
  CHECK (hit (&c, 0, 65536, 4096, 'a', now));
  CHECK (hit (&c, 0, 131072 - 8192, 8192, 'a', now));
  CHECK (!hit (&c, 0, 131072 - 4096, 8192, 'a', now));  /* runs past it */
  CHECK (!hit (&c, 0, 61440, 8192, 'a', now));          /* starts before */
  CHECK (!hit (&c, 1, 65536, 4096, 'a', now));          /* another export */
  CHECK (fill (&c, 1, 65536, 131072, 'b', now).idx >= 0);
  CHECK (hit (&c, 1, 65536, 4096, 'b', now));
  CHECK (hit (&c, 0, 65536, 4096, 'a', now));
  /* Already held: not reserved twice. */
  CHECK (racache_reserve (&c, 0, 69632, 73728, &buf).idx < 0);
  CHECK (c.hits == 4 && c.fills == 2);

  /* Too old: unused. */
  CHECK (!hit (&c, 0, 65536, 4096, 'a', now + RACACHE_MAX_AGE_NS));

  /* A write drops what it overlaps, of every export; not the rest. */
  racache_modified (&c, 131071, 131072);
  racache_taken (&c);
  CHECK (!hit (&c, 0, 65536, 4096, 'a', now));
  CHECK (!hit (&c, 1, 65536, 4096, 'b', now));
  CHECK (c.dropped == 2);
  CHECK (fill (&c, 0, 262144, 327680, 'c', now).idx >= 0);
  racache_modified (&c, 0, 262144);     /* ends where it starts */
  racache_taken (&c);
  CHECK (hit (&c, 0, 262144, 4096, 'c', now));

  /* A write arriving while an extent is being read: the fill is
   * thrown away.
   */
  t = racache_reserve (&c, 0, 1 << 20, (1 << 20) + 65536, &buf);
  CHECK (t.idx >= 0);
  racache_modified (&c, (1 << 20) + 4096, (1 << 20) + 8192);
  racache_taken (&c);
  memset (buf, 'd', 65536);
  racache_fill (&c, t, NULL, 65536, now);
  CHECK (!hit (&c, 0, 1 << 20, 4096, 'd', now));
  /* ... and a failed read keeps nothing. */
  t = racache_reserve (&c, 0, 2 << 20, (2 << 20) + 65536, &buf);
  CHECK (t.idx >= 0);
  racache_fill (&c, t, NULL, 0, now);
  CHECK (!hit (&c, 0, 2 << 20, 4096, 0, now));
  /* ... a short one keeps what it read. */
  t = racache_reserve (&c, 0, 3 << 20, (3 << 20) + 65536, &buf);
  memset (buf, 'e', 65536);
  racache_fill (&c, t, NULL, 8192, now);
  CHECK (hit (&c, 0, 3 << 20, 8192, 'e', now));
  CHECK (!hit (&c, 0, 3 << 20, 12288, 'e', now));

  /* A write that has arrived but not reached the core: no reserve. */
  racache_modified (&c, 1ULL << 40, (1ULL << 40) + 1);
  CHECK (racache_reserve (&c, 0, 4 << 20, (4 << 20) + 65536, &buf).idx < 0);
  racache_taken (&c);
  CHECK (fill (&c, 0, 4 << 20, (4 << 20) + 65536, 'f', now).idx >= 0);

  /* At most RACACHE_EXTENTS: the least recently used goes. */
  CHECK (hit (&c, 0, 262144, 4096, 'c', now));  /* 'c' used last */
  for (i = 0; i < RACACHE_EXTENTS; i++)
    CHECK (fill (&c, 2, (uint64_t) (10 + i) << 20, ((uint64_t) (10 + i) << 20) + 4096,
                 'g', now).idx >= 0);
  CHECK (!hit (&c, 0, 262144, 4096, 'c', now));
  CHECK (hit (&c, 2, 25ULL << 20, 4096, 'g', now));

  racache_destroy (&c);
  return test_result ("test-racache");
}
