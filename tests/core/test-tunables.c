/* SPDX-License-Identifier: BSD-3-Clause */
/* Rule (tunable.c): every tunable parsed and validated, bad values
 * refused with -EINVAL and a one-line reason, leaving the tunables as
 * they were; keys with '_' or '-'.
 */
#include "testlib.h"

struct kv { const char *key, *value; int ok; };

static const struct kv table[] = {
  { "read_expire", "500ms", 1 },
  { "read-expire", "250us", 1 },
  { "read_expire", "1.5s", 1 },
  { "read_expire", "100ns", 1 },
  { "read_expire", "0", 0 },             /* a read must have a deadline */
  { "read_expire", "-1ms", 0 },
  { "read_expire", "", 0 },
  { "read_expire", "ms", 0 },
  { "read_expire", "5 parsecs", 0 },
  { "read_expire", "2h", 0 },
  { "write_expire", "0", 1 },            /* 0 = none, the seed */
  { "write-expire", "5s", 1 },
  { "write_expire", "10000000s", 0 },    /* beyond any sane limit */
  { "fifo_batch", "64", 1 },
  { "fifo-batch", "1", 1 },
  { "fifo_batch", "0", 0 },
  { "fifo_batch", "-3", 0 },
  { "fifo_batch", "12x", 0 },
  { "fifo_batch", "99999999999", 0 },
  { "seek_cost", "16", 1 },
  { "seek_cost", "0", 0 },
  { "writes_starved", "0", 1 },
  { "writes-starved", "2", 1 },
  { "writes_starved", "two", 0 },
  { "front_merges", "on", 1 },
  { "front-merges", "off", 1 },
  { "front_merges", "0", 1 },
  { "front_merges", "true", 1 },
  { "front_merges", "maybe", 0 },
  { "max_merge", "1M", 1 },
  { "max-merge", "64k", 1 },
  { "max_merge", "4096", 1 },
  { "max_merge", "0", 1 },
  { "max_merge", "1G", 0 },              /* more than a unit buffer */
  { "max_merge", "1Q", 0 },
  { "max_merge", "-1", 0 },
  { "scheduler", "deadline", 1 },
  { "scheduler", "noop", 1 },
  { "scheduler", "elevator", 1 },
  { "scheduler", "cfq", 0 },
  { "no_such_key", "1", 0 },
  { "read_expire_ms", "5", 0 },          /* a name, then more: not that name */
  { "preempt_minimum", "1", 0 },
  { "", "1", 0 },
};

int
main (void)
{
  struct dl_tunables t, before;
  char err[256], buf[64];
  uint64_t v;
  size_t i;

  dl_tunables_default (&t);
  CHECK_EQ (dl_tunables_validate (&t, err, sizeof err), 0);
  CHECK_EQ (t.policy, DL_POLICY_DEADLINE);
  CHECK_EQ (t.read_expire_ns, 500 * MS);
  CHECK_EQ (t.write_expire_ns, 5000 * MS);
  CHECK_EQ (t.fifo_batch, 64);
  CHECK_EQ (t.seek_cost, 16);
  CHECK_EQ (t.writes_starved, 2);
  CHECK (t.front_merges);
  CHECK_EQ (t.max_merge, 256 << 10);

  for (i = 0; i < sizeof table / sizeof table[0]; i++) {
    int r;
    before = t;
    err[0] = '\0';
    r = dl_tunable_set (&t, table[i].key, table[i].value, err, sizeof err);
    if (table[i].ok) {
      if (r != 0)
        fprintf (stderr, "refused %s=%s: %s\n", table[i].key, table[i].value, err);
      CHECK_EQ (r, 0);
    }
    else {
      if (r != -EINVAL)
        fprintf (stderr, "accepted %s=%s\n", table[i].key, table[i].value);
      CHECK (r == -EINVAL);
      CHECK (err[0] != '\0');            /* a reason */
      CHECK (strchr (err, '\n') == NULL); /* on one line */
      CHECK (memcmp (&before, &t, sizeof t) == 0);
    }
  }

  /* Values land where they should, and read back in a form that parses
   * to the same value.
   */
  dl_tunables_default (&t);
  CHECK_EQ (dl_tunable_set (&t, "read-expire", "1.5s", err, sizeof err), 0);
  CHECK_EQ (t.read_expire_ns, 1500 * MS);
  CHECK_EQ (dl_tunable_set (&t, "max_merge", "64k", err, sizeof err), 0);
  CHECK_EQ (t.max_merge, 64 * KiB);
  CHECK_EQ (dl_tunable_set (&t, "front_merges", "off", err, sizeof err), 0);
  CHECK (!t.front_merges);
  CHECK_EQ (dl_tunable_set (&t, "scheduler", "elevator", err, sizeof err), 0);
  CHECK_EQ (t.policy, DL_POLICY_ELEVATOR);
  for (i = 0; dl_tunable_names[i]; i++) {
    struct dl_tunables u = t;
    CHECK_EQ (dl_tunable_get (&t, dl_tunable_names[i], buf, sizeof buf), 0);
    CHECK_EQ (dl_tunable_set (&u, dl_tunable_names[i], buf, err, sizeof err), 0);
    CHECK (memcmp (&u, &t, sizeof t) == 0);
  }
  CHECK_EQ (dl_tunable_get (&t, "nope", buf, sizeof buf), -EINVAL);

  /* The parsers. */
  CHECK (dl_parse_duration ("500ms", &v) == 0 && v == 500 * MS);
  CHECK (dl_parse_duration ("1.5s", &v) == 0 && v == 1500 * MS);
  CHECK (dl_parse_duration ("250us", &v) == 0 && v == 250000);
  CHECK (dl_parse_duration ("100ns", &v) == 0 && v == 100);
  /* dl-sched.h: a bare number is milliseconds, as in sysfs. */
  CHECK (dl_parse_duration ("2", &v) == 0 && v == 2 * MS);
  CHECK (dl_parse_duration ("", &v) == -EINVAL);
  CHECK (dl_parse_duration ("s", &v) == -EINVAL);
  CHECK (dl_parse_duration ("-5ms", &v) == -EINVAL);
  CHECK (dl_parse_duration ("0x10ms", &v) == -EINVAL);   /* decimal only */
  CHECK (dl_parse_duration ("1e3ms", &v) == -EINVAL);
  CHECK (dl_parse_duration ("1.5ms", &v) == 0 && v == 1500000);
  CHECK (dl_parse_duration ("5 ms x", &v) == -EINVAL);
  CHECK (dl_parse_size ("4096", &v) == 0 && v == 4096);
  CHECK (dl_parse_size ("64k", &v) == 0 && v == 64 * KiB);
  CHECK (dl_parse_size ("1M", &v) == 0 && v == 1 << 20);
  CHECK (dl_parse_size ("1G", &v) == 0 && v == 1 << 30);
  CHECK (dl_parse_size ("1T2", &v) == -EINVAL);
  CHECK (dl_parse_size ("k", &v) == -EINVAL);
  CHECK (dl_parse_size ("-1", &v) == -EINVAL);
  CHECK (dl_parse_size ("99999999999999G", &v) == -EINVAL);  /* overflow */
  {
    enum dl_policy p;
    CHECK (dl_parse_policy ("noop", &p) == 0 && p == DL_POLICY_NOOP);
    CHECK (dl_parse_policy ("bfq", &p) == -EINVAL);
    CHECK (strcmp (dl_policy_name (DL_POLICY_ELEVATOR), "elevator") == 0);
  }

  /* validate refuses what dl_sched_new must refuse. */
  dl_tunables_default (&t);
  t.fifo_batch = 0;
  CHECK_EQ (dl_tunables_validate (&t, err, sizeof err), -EINVAL);
  CHECK (dl_sched_new (&t, 1) == NULL);
  dl_tunables_default (&t);
  t.policy = (enum dl_policy) 7;
  CHECK_EQ (dl_tunables_validate (&t, NULL, 0), -EINVAL);

  return test_result ("tunables");
}
