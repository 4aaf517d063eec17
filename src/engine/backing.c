/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: opening the backing file or block device for O_DIRECT.
 *
 * Alignment is what O_DIRECT demands of offsets, lengths and memory:
 * the logical block size of a block device (BLKSSZGET), or what statx
 * reports for a file (STATX_DIOALIGN, Linux 6.1).  Where neither
 * answers we probe with real reads, smallest size first, since a wrong
 * guess would turn every request into EINVAL.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/fs.h>

#include "backing.h"

#ifndef STATX_DIOALIGN
#define STATX_DIOALIGN 0x00002000U
#endif

static uint32_t
probe_align_statx (int fd)
{
#ifdef STATX_ALL
  struct statx stx;

  memset (&stx, 0, sizeof stx);
  if (statx (fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
      (stx.stx_mask & STATX_DIOALIGN)) {
    /* The glibc header may predate the fields; they sit in spare words
     * that older kernels leave zero.  Use whichever is larger.
     */
#ifdef STATX_DIOALIGN_FIELDS
    uint32_t a = stx.stx_dio_offset_align;
    if (stx.stx_dio_mem_align > a) a = stx.stx_dio_mem_align;
    return a;
#else
    const uint32_t *w = (const uint32_t *) &stx;
    /* Linux's struct statx: stx_dio_mem_align at byte 0x98,
     * stx_dio_offset_align at 0x9c (glibc's copy names them padding). */
    uint32_t mem = w[0x98 / 4], off = w[0x9c / 4];
    if (off == 0 || mem == 0)   /* O_DIRECT unsupported on this file */
      return 0;
    return off > mem ? off : mem;
#endif
  }
#endif
  (void) fd;
  return 0;
}

/* Try a read of `a` bytes at offset 0 into an `a`-aligned buffer. */
static uint32_t
probe_align_read (int fd, uint64_t size)
{
  static const uint32_t sizes[] = { 512, 1024, 2048, 4096 };
  size_t i;

  if (size == 0)
    return 4096;
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
    void *buf;
    ssize_t r;

    if (posix_memalign (&buf, sizes[i], sizes[i]) != 0)
      return 4096;
    r = pread (fd, buf, sizes[i], 0);
    free (buf);
    if (r >= 0)
      return sizes[i];
  }
  return 4096;
}

int
backing_open (struct backing *b, const char *path, bool readonly,
              char *err, size_t errlen)
{
  struct stat st;
  int flags;

  b->fd = b->fd_buffered = -1;
  b->readonly = readonly;
  flags = O_DIRECT | O_CLOEXEC | (readonly ? O_RDONLY : O_RDWR);
  b->fd = open (path, flags);
  if (b->fd == -1 && !readonly && (errno == EROFS || errno == EACCES)) {
    b->readonly = true;
    b->fd = open (path, O_DIRECT | O_CLOEXEC | O_RDONLY);
  }
  if (b->fd == -1) {
    int e = errno;
    snprintf (err, errlen, "open %s with O_DIRECT: %s", path, strerror (e));
    return -e;
  }
  if (fstat (b->fd, &st) == -1) {
    int e = errno;
    snprintf (err, errlen, "fstat %s: %s", path, strerror (e));
    backing_close (b);
    return -e;
  }

  if (S_ISBLK (st.st_mode)) {
    int ssz = 0;
    uint64_t sz = 0;

    b->blockdev = true;
    if (ioctl (b->fd, BLKGETSIZE64, &sz) == -1) {
      int e = errno;
      snprintf (err, errlen, "BLKGETSIZE64 %s: %s", path, strerror (e));
      backing_close (b);
      return -e;
    }
    b->size = sz;
    if (ioctl (b->fd, BLKSSZGET, &ssz) == -1 || ssz <= 0)
      ssz = 512;
    b->align = ssz;
  }
  else if (S_ISREG (st.st_mode)) {
    b->blockdev = false;
    b->size = st.st_size;
    b->align = probe_align_statx (b->fd);
    if (b->align == 0)
      b->align = probe_align_read (b->fd, b->size);
    /* Requests touching the partial last block of a file whose size is
     * not a multiple of the alignment cannot use O_DIRECT without
     * growing the file: those go through an ordinary descriptor.
     */
    b->fd_buffered = open (path, O_CLOEXEC | (b->readonly ? O_RDONLY : O_RDWR));
    if (b->fd_buffered == -1) {
      int e = errno;
      snprintf (err, errlen, "open %s: %s", path, strerror (e));
      backing_close (b);
      return -e;
    }
  }
  else {
    snprintf (err, errlen, "%s: not a regular file or block device", path);
    backing_close (b);
    return -EINVAL;
  }

  if (b->align == 0 || (b->align & (b->align - 1)) != 0 || b->align > 65536) {
    snprintf (err, errlen, "%s: unusable O_DIRECT alignment %u", path, b->align);
    backing_close (b);
    return -EINVAL;
  }
  return 0;
}

void
backing_close (struct backing *b)
{
  if (b->fd >= 0)
    close (b->fd);
  if (b->fd_buffered >= 0)
    close (b->fd_buffered);
  b->fd = b->fd_buffered = -1;
}
