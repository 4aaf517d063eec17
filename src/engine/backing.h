/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: opening the backing file or block device for O_DIRECT. */
#ifndef NBD_DEADLINE_BACKING_H
#define NBD_DEADLINE_BACKING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct backing {
  int fd;                       /* O_DIRECT */
  int fd_buffered;              /* same file without O_DIRECT (files only), or -1 */
  bool blockdev;
  bool readonly;
  uint64_t size;
  uint32_t align;               /* offset/length/memory alignment for O_DIRECT */
};

/* Opens path O_DIRECT|O_RDWR (O_RDONLY if readonly, or if the device
 * refuses writing: EROFS/EACCES), finds size and alignment.
 * 0 or -errno with a one-line reason in err.
 */
int backing_open (struct backing *b, const char *path, bool readonly,
                  char *err, size_t errlen);
void backing_close (struct backing *b);

#endif
