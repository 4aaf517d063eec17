/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: a pool of aligned bounce buffers.
 *
 * nbdkit hands us ordinary heap buffers; O_DIRECT wants them aligned.
 * Buffers come in power-of-two size classes and are kept on free lists
 * (up to a byte budget) so that the steady state allocates nothing.
 * Not thread-safe: only the engine's loop thread uses it.
 */
#ifndef NBD_DEADLINE_BUFPOOL_H
#define NBD_DEADLINE_BUFPOOL_H

#include <stddef.h>
#include <stdint.h>

#define BUFPOOL_CLASSES 48

struct bufpool {
  uint32_t align;
  uint64_t cached_bytes, max_cached;
  void *free[BUFPOOL_CLASSES];  /* singly linked through the first word */
};

void bufpool_init (struct bufpool *p, uint32_t align, uint64_t max_cached);
void bufpool_destroy (struct bufpool *p);
/* A buffer of at least len bytes, aligned; NULL on ENOMEM. */
void *bufpool_get (struct bufpool *p, size_t len);
/* len must be the length asked of bufpool_get. */
void bufpool_put (struct bufpool *p, void *buf, size_t len);

#endif
