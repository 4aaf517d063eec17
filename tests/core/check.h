/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: CHECK macros that say which line of which rule failed,
 * for the unit tests (testlib.h, the core's; tests/test-racache.c).
 * Each test is a separate program: exit 0 = pass, 1 = fail.
 */
#ifndef NBD_DEADLINE_CHECK_H
#define NBD_DEADLINE_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static int failures;

#define CHECK(cond)                                                     \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf (stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                       \
    }                                                                   \
  } while (0)

#define CHECK_EQ(a, b)                                                  \
  do {                                                                  \
    uint64_t a_ = (uint64_t) (a), b_ = (uint64_t) (b);                  \
    if (a_ != b_) {                                                     \
      fprintf (stderr, "%s:%d: FAIL: %s == %s (%" PRIu64 " != %" PRIu64 ")\n", \
               __FILE__, __LINE__, #a, #b, a_, b_);                     \
      failures++;                                                       \
    }                                                                   \
  } while (0)

/* Stop now: a later step would only crash on this one's result. */
#define REQUIRE(cond)                                                   \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf (stderr, "%s:%d: FATAL: %s\n", __FILE__, __LINE__, #cond); \
      exit (1);                                                         \
    }                                                                   \
  } while (0)

static inline int
test_result (const char *name)
{
  if (failures) {
    fprintf (stderr, "%s: %d check(s) failed\n", name, failures);
    return 1;
  }
  printf ("%s: ok\n", name);
  return 0;
}

#endif
