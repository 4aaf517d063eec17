/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: a pool of aligned bounce buffers. */
#include <stdlib.h>

#include "bufpool.h"

static unsigned
size_class (size_t len)
{
  unsigned c = 12;              /* smallest buffer: 4 KiB */

  while (c < BUFPOOL_CLASSES - 1 && ((size_t) 1 << c) < len)
    c++;
  return c;
}

void
bufpool_init (struct bufpool *p, uint32_t align, uint64_t max_cached)
{
  unsigned i;

  p->align = align < sizeof (void *) ? sizeof (void *) : align;
  p->cached_bytes = 0;
  p->max_cached = max_cached;
  for (i = 0; i < BUFPOOL_CLASSES; ++i)
    p->free[i] = NULL;
}

void
bufpool_destroy (struct bufpool *p)
{
  unsigned i;

  for (i = 0; i < BUFPOOL_CLASSES; ++i) {
    while (p->free[i]) {
      void *b = p->free[i];
      p->free[i] = *(void **) b;
      free (b);
    }
  }
  p->cached_bytes = 0;
}

void *
bufpool_get (struct bufpool *p, size_t len)
{
  unsigned c = size_class (len);
  void *b = p->free[c];

  if (b) {
    p->free[c] = *(void **) b;
    p->cached_bytes -= (size_t) 1 << c;
    return b;
  }
  if (posix_memalign (&b, p->align, (size_t) 1 << c) != 0)
    return NULL;
  return b;
}

void
bufpool_put (struct bufpool *p, void *buf, size_t len)
{
  unsigned c = size_class (len);

  if (buf == NULL)
    return;
  if (p->cached_bytes + ((size_t) 1 << c) > p->max_cached) {
    free (buf);
    return;
  }
  *(void **) buf = p->free[c];
  p->free[c] = buf;
  p->cached_bytes += (size_t) 1 << c;
}
