/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the input bytes are an operation stream driving the
 * core through the reference model (model.c), which aborts on any
 * violated invariant.
 *
 * Byte 0..1 pick the alignment and the initial tunables, then each
 * operation is one opcode byte followed by its arguments:
 *   0-5  insert (read, write, FUA write, trim, zero, flush):
 *        2 bytes offset (in 512-byte sectors, 0..64K), 1 byte length
 *        (1..256 sectors)
 *   6    dispatch one unit (depth capped at 16)
 *   7    complete in-flight unit k (1 byte)
 *   8    advance the clock by (1 byte) * 4 ms
 *   9    change a tunable (1 byte which, 1 byte value)
 *   10   drain everything waiting
 *   11+  dispatch until full, then complete one
 * The same file, built without libFuzzer, is driven by fuzz-main.c.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "model.h"

#define MS 1000000ULL

struct input {
  const uint8_t *p;
  size_t n;
};

static uint8_t
next (struct input *in)
{
  if (in->n == 0)
    return 0;
  in->n--;
  return *in->p++;
}

/* Tunable number w (mod 8) set from byte v, within valid ranges. */
static void
tweak (struct dl_tunables *t, uint8_t w, uint8_t v)
{
  switch (w % 8) {
  case 0: t->policy = v % 3; break;
  case 1: t->read_expire_ns = (1 + v) * MS; break;
  case 2: t->write_expire_ns = (v % 4) ? (uint64_t) v * 10 * MS : 0; break;
  case 3: t->fifo_batch = 1 + v % 128; break;
  case 4: t->seek_cost = 1 + v % 32; break;
  case 5: t->writes_starved = v % 8; break;
  case 6: t->front_merges = v & 1; break;
  case 7: t->max_merge = (v % 4) ? (uint64_t) (v % 64) * 4096 : 0; break;
  }
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static const uint32_t aligns[] = { 1, 512, 4096, 65536 };
  struct input in = { data, size };
  struct dl_tunables t;
  struct model m;
  uint8_t b;

  dl_tunables_default (&t);
  b = next (&in);
  tweak (&t, b >> 5, next (&in));
  model_init (&m, &t, aligns[b & 3]);

  while (in.n > 0) {
    uint8_t op = next (&in);
    switch (op % 16) {
    case 0: case 1: case 2: case 3: case 4: case 5: {
      static const enum dl_op ops[] = {
        DL_OP_READ, DL_OP_WRITE, DL_OP_WRITE, DL_OP_TRIM, DL_OP_ZERO,
        DL_OP_FLUSH
      };
      uint64_t off = next (&in);
      off = (off << 8 | next (&in)) * 512;
      uint64_t len = (1 + (uint64_t) next (&in)) * 512;
      if (m.nlive < 128)
        model_insert (&m, ops[op % 16], off, len,
                      op % 16 == 2 ? DL_F_FUA :
                      op % 16 == 4 && (op & 0x80) ? DL_F_MAY_TRIM : 0);
      break;
    }
    case 6:
      if (m.ninflight < 16)
        model_dispatch (&m);
      break;
    case 7:
      model_complete (&m, next (&in));
      break;
    case 8:
      model_advance (&m, (uint64_t) next (&in) * 4 * MS);
      break;
    case 9: {
      uint8_t w = next (&in);
      tweak (&t, w, next (&in));
      if (model_set_tunables (&m, &t) != 0)
        model_fail ("valid tunables refused at run time");
      break;
    }
    case 10:
      model_drain_all (&m);
      break;
    default:
      while (m.ninflight < (size_t) (1 + op % 8) && model_dispatch (&m) != NULL)
        ;
      model_complete (&m, op >> 4);
      model_advance (&m, MS);
      break;
    }
  }
  model_free (&m);
  return 0;
}
