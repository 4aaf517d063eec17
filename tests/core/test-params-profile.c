/* SPDX-License-Identifier: BSD-3-Clause */
/* deadline-profile (src/filter/params.c): the profile applies first,
 * then every tunable given by name, whatever the order of the
 * parameters; a bad profile name is refused in one line.
 */
#include "testlib.h"
#include "params.h"

static int
set (struct filter_params *p, const char *k, const char *v, char *err, size_t n)
{
  err[0] = '\0';
  return params_set (p, k, v, err, n);
}

int
main (void)
{
  struct filter_params p;
  struct dl_tunables d;
  char err[256];

  dl_tunables_default (&d);

  /* The tunable before the profile: the profile does not undo it. */
  params_default (&p);
  CHECK_EQ (set (&p, "deadline-fifo-batch", "8", err, sizeof err), 1);
  CHECK_EQ (set (&p, "deadline-profile", "seed", err, sizeof err), 1);
  CHECK_EQ (p.tunables.fifo_batch, 8);
  CHECK_EQ (p.tunables.write_expire_ns, 0);
  CHECK_EQ (p.tunables.max_merge, 130560);
  CHECK (p.tunables.seed_batches && !p.tunables.size_cost && !p.tunables.preempt);
  CHECK_EQ (p.tunables.anticipate_ns, 0);
  params_free (&p);

  /* ... and after it, the same. */
  params_default (&p);
  CHECK_EQ (set (&p, "deadline-profile", "seed", err, sizeof err), 1);
  CHECK_EQ (set (&p, "deadline-fifo-batch", "8", err, sizeof err), 1);
  CHECK_EQ (p.tunables.fifo_batch, 8);
  CHECK_EQ (p.tunables.write_expire_ns, 0);
  CHECK (p.tunables.seed_batches);
  /* A later profile replaces the earlier one, the named tunables stay;
   * the scheduler is not part of a profile.
   */
  CHECK_EQ (set (&p, "deadline-scheduler", "elevator", err, sizeof err), 1);
  CHECK_EQ (set (&p, "deadline-profile", "default", err, sizeof err), 1);
  CHECK_EQ (p.tunables.fifo_batch, 8);
  CHECK_EQ (p.tunables.write_expire_ns, d.write_expire_ns);
  CHECK_EQ (p.tunables.max_merge, d.max_merge);
  CHECK (!p.tunables.seed_batches && p.tunables.size_cost && p.tunables.preempt);
  CHECK_EQ (p.tunables.policy, DL_POLICY_ELEVATOR);
  params_free (&p);

  /* The profile alone is the core's preset. */
  params_default (&p);
  CHECK_EQ (set (&p, "deadline-profile", "seed", err, sizeof err), 1);
  CHECK (strcmp (dl_tunables_profile_name (&p.tunables), "seed") == 0);
  CHECK_EQ (set (&p, "deadline-preempt", "on", err, sizeof err), 1);
  CHECK (strcmp (dl_tunables_profile_name (&p.tunables), "custom") == 0);
  params_free (&p);

  /* A bad name: refused, one line naming it, nothing changed. */
  params_default (&p);
  CHECK_EQ (set (&p, "deadline-profile", "seeds", err, sizeof err), -EINVAL);
  CHECK (strcmp (err, "deadline-profile: 'seeds' is not default or seed") == 0);
  CHECK (strchr (err, '\n') == NULL);
  CHECK_EQ (p.tunables.write_expire_ns, d.write_expire_ns);
  CHECK_EQ (set (&p, "deadline-profile", "", err, sizeof err), -EINVAL);
  params_free (&p);

  /* The core's key, as the control socket uses it. */
  d.fifo_batch = 3;
  CHECK_EQ (dl_tunable_set (&d, "profile", "seed", err, sizeof err), 0);
  CHECK_EQ (d.fifo_batch, 64);
  CHECK_EQ (d.write_expire_ns, 0);
  {
    char buf[32];
    CHECK_EQ (dl_tunable_get (&d, "profile", buf, sizeof buf), 0);
    CHECK (strcmp (buf, "seed") == 0);
  }
  CHECK_EQ (dl_tunable_set (&d, "profile", "fast", err, sizeof err), -EINVAL);
  CHECK (strcmp (err, "profile: 'fast' is not default or seed") == 0);

  return test_result ("params-profile");
}
