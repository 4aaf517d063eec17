/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: where an export's byte 0 lies on its disk.
 *
 * Exports of one disk share one scheduler (one engine per nbdkit), so
 * their offsets must sort by where their bytes are on the disk, and
 * must not mix: a partition sorts at its start (sysfs), a file at its
 * first extent (FIEMAP), and an export of unknown place far beyond any
 * disk, each in its own 16 TiB (PLACE_UNKNOWN).
 */
#ifndef NBD_DEADLINE_PLACE_H
#define NBD_DEADLINE_PLACE_H

#include <stdint.h>
#include <sys/types.h>

#define PLACE_UNKNOWN(n) ((UINT64_C (1) << 62) + ((uint64_t) (n) << 44))

/* The disk byte at which path (a file or block device) begins; 0 if
 * known, -1 if not.
 */
int place_of (const char *path, uint64_t *byte);

/* The whole disk path lies on: a partition's disk, a loop device's
 * backing file's, a file's file system's; 0 if known, -1 if not.
 * (Exports of different disks in one nbdkit share one scheduler,
 * which is not what the user wants: the filter warns.)
 */
int place_disk (const char *path, dev_t *disk);

#endif
