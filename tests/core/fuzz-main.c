/* SPDX-License-Identifier: BSD-3-Clause */
/* A plain main for the fuzz target, so that it runs without libFuzzer
 * (built with the ordinary compiler).
 *
 *   fuzz-replay FILE...        replay inputs (e.g. a crash libFuzzer saved)
 *   fuzz-replay -r N [SEED]    run N random inputs
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static uint64_t rng = 88172645463325252ULL;

static uint8_t
rnd8 (void)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng >> 24;
}

int
main (int argc, char **argv)
{
  static uint8_t buf[1 << 16];
  uint64_t n, i;
  int a;

  if (argc >= 3 && strcmp (argv[1], "-r") == 0) {
    n = strtoull (argv[2], NULL, 0);
    if (argc > 3)
      rng ^= strtoull (argv[3], NULL, 0) * 0x9E3779B97F4A7C15ULL;
    for (i = 0; i < n; i++) {
      size_t len = 1 + rnd8 () * 8 + rnd8 () % 8, k;
      /* Random bytes, with the offsets squeezed now and then so that
       * requests overlap and touch often.
       */
      for (k = 0; k < len; k++)
        buf[k] = rnd8 ();
      if (i % 2)
        for (k = 2; k < len; k += 3)
          buf[k] &= 0x01;
      LLVMFuzzerTestOneInput (buf, len);
    }
    printf ("fuzz-replay: %" PRIu64 " random inputs ok\n", n);
    return 0;
  }
  for (a = 1; a < argc; a++) {
    FILE *f = fopen (argv[a], "rb");
    size_t len;
    if (f == NULL) {
      perror (argv[a]);
      return 1;
    }
    len = fread (buf, 1, sizeof buf, f);
    fclose (f);
    LLVMFuzzerTestOneInput (buf, len);
    printf ("%s: ok\n", argv[a]);
  }
  return 0;
}
