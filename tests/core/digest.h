/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the dispatch-order digest of test-random and
 * test-beyond-random (--digest; test-order-digest.sh pins it).
 */
#ifndef NBD_DEADLINE_DIGEST_H
#define NBD_DEADLINE_DIGEST_H

#include <stdint.h>

#define DIGEST_INIT 0xcbf29ce484222325ULL       /* FNV-1a 64 */

static inline void
digest_add (uint64_t *h, uint64_t v)
{
  int i;

  for (i = 0; i < 8; i++) {
    *h ^= (v >> (8 * i)) & 0xff;
    *h *= 0x100000001b3ULL;
  }
}

#endif
