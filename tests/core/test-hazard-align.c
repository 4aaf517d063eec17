/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (dl_sched_new's align): extents are rounded out to the device's
 * granularity before overlap is decided, so two writes into the same
 * 4 KiB block (a read-modify-write each) are ordered with align=4096,
 * and independent with align=1.
 */
#include "testlib.h"

static uint64_t
holds (uint32_t align)
{
  struct dl_tunables t;
  struct dl_sched *s;
  struct dl_req *a, *b, *u;
  uint64_t h;

  dl_tunables_default (&t);
  s = mksched (&t, align);
  a = ins (s, DL_OP_WRITE, 0, 512);
  b = ins (s, DL_OP_WRITE, 1024, 512);
  h = stats (s).hazard_holds;
  if (h) {
    u = dl_dispatch (s, now);
    CHECK (u == a);
    CHECK (dl_dispatch (s, now) == NULL);
    dl_complete (s, a, now);
    CHECK (dl_dispatch (s, now) == b);
    dl_complete (s, b, now);
  }
  /* A block boundary is still a boundary. */
  ins (s, DL_OP_WRITE, 1 << 20, 4 * KiB);
  ins (s, DL_OP_WRITE, (1 << 20) + 4 * KiB, 512);
  CHECK_EQ (stats (s).hazard_holds, h);
  finish (s);
  return h;
}

int
main (void)
{
  CHECK_EQ (holds (4096), 1);
  CHECK_EQ (holds (1), 0);
  CHECK_EQ (holds (512), 0);
  /* Reads in the same block still do not hold each other. */
  {
    struct dl_tunables t;
    struct dl_sched *s;
    dl_tunables_default (&t);
    s = mksched (&t, 4096);
    ins (s, DL_OP_READ, 0, 512);
    ins (s, DL_OP_READ, 1024, 512);
    CHECK_EQ (stats (s).hazard_holds, 0);
    finish (s);
  }
  /* align must be a power of two. */
  {
    struct dl_tunables t;
    dl_tunables_default (&t);
    errno = 0;
    CHECK (dl_sched_new (&t, 3000) == NULL);
    CHECK_EQ (errno, EINVAL);
  }
  return test_result ("hazard-align");
}
