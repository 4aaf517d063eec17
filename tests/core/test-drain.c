/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (dl_drain, shutdown): every waiting unit (queued, held, flush)
 * comes back exactly once so the caller can fail it; units in flight
 * must still be completed.
 */
#include "testlib.h"

int
main (void)
{
  struct dl_sched *s = mksched_default ();
  struct dl_req *a, *u, *m, *tmp;
  int members = 0, units = 0;

  a = ins (s, DL_OP_WRITE, 0, 4 * KiB);
  CHECK (dl_dispatch (s, now) == a);            /* in flight */
  ins (s, DL_OP_READ, 0, 4 * KiB);              /* held behind a */
  ins (s, DL_OP_READ, 1 << 20, 4 * KiB);
  ins (s, DL_OP_READ, (1 << 20) + 4 * KiB, 4 * KiB); /* merged */
  ins (s, DL_OP_WRITE, 2 << 20, 4 * KiB);
  ins (s, DL_OP_FLUSH, 0, 0);
  ins (s, DL_OP_FLUSH, 0, 0);
  CHECK_EQ (dl_waiting (s), 4);
  CHECK_EQ (dl_inflight (s), 1);

  while ((u = dl_drain (s)) != NULL) {
    units++;
    CHECK (u != a);
    DL_FOREACH_MEMBER (m, u, tmp)
      members++;
  }
  CHECK_EQ (units, 4);
  CHECK_EQ (members, 6);
  CHECK_EQ (dl_waiting (s), 0);
  CHECK_EQ (dl_inflight (s), 1);
  CHECK (dl_dispatch (s, now) == NULL);
  dl_complete (s, a, now);
  CHECK_EQ (dl_inflight (s), 0);
  CHECK_EQ (stats (s).held, 0);
  CHECK_EQ (stats (s).queued[0] + stats (s).queued[1], 0);
  CHECK_EQ (stats (s).queued_flushes, 0);
  dl_sched_free (s);
  return test_result ("drain");
}
