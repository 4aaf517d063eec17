/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: where an export's byte 0 lies on its disk (place.h). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/fiemap.h>
#include <linux/fs.h>

#include "place.h"

/* One number from a sysfs file: 1 if read, 0 if there is no such
 * file, -1 if it holds no number.
 */
static int
sysfs_number (dev_t rdev, const char *name, unsigned long long *v)
{
  char path[96];
  FILE *f;
  int ok;

  snprintf (path, sizeof path, "/sys/dev/block/%u:%u/%s", major (rdev), minor (rdev), name);
  f = fopen (path, "r");
  if (f == NULL)
    return 0;
  ok = fscanf (f, "%llu", v) == 1;
  fclose (f);
  return ok ? 1 : -1;
}

/* A block device: a partition at its start (in 512-byte sectors), a
 * loop device at its offset into its backing (two loop devices at
 * different offsets of one file are two partitions of it), a whole
 * disk at 0.
 */
static int
partition_start (dev_t rdev, uint64_t *byte)
{
  unsigned long long v;
  int r;

  if ((r = sysfs_number (rdev, "start", &v)) != 0) {
    *byte = (uint64_t) v * 512;
    return r > 0 ? 0 : -1;
  }
  if ((r = sysfs_number (rdev, "loop/offset", &v)) != 0) {
    *byte = v;
    return r > 0 ? 0 : -1;
  }
  *byte = 0;
  return 0;
}

/* A file: the physical place of its first extent. */
static int
first_extent (int fd, uint64_t *byte)
{
  struct {
    struct fiemap fm;
    struct fiemap_extent ext[1];
  } q;

  memset (&q, 0, sizeof q);
  q.fm.fm_start = 0;
  q.fm.fm_length = FIEMAP_MAX_OFFSET;
  q.fm.fm_extent_count = 1;
  if (ioctl (fd, FS_IOC_FIEMAP, &q.fm) != 0 || q.fm.fm_mapped_extents == 0)
    return -1;
  if (q.ext[0].fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_ENCODED))
    return -1;
  *byte = q.ext[0].fe_physical;
  return 0;
}

int
place_of (const char *path, uint64_t *byte)
{
  struct stat st;
  int fd, r;

  if (stat (path, &st) != 0)
    return -1;
  if (S_ISBLK (st.st_mode))
    return partition_start (st.st_rdev, byte);
  if (!S_ISREG (st.st_mode))
    return -1;
  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  r = first_extent (fd, byte);
  close (fd);
  return r;
}

/* A partition's whole disk (sysfs: the partition's parent directory);
 * anything else is its own.
 */
static dev_t
whole_disk (dev_t d)
{
  char path[96];
  unsigned maj, min;
  FILE *f;

  snprintf (path, sizeof path, "/sys/dev/block/%u:%u/partition", major (d), minor (d));
  if (access (path, F_OK) != 0)
    return d;
  snprintf (path, sizeof path, "/sys/dev/block/%u:%u/../dev", major (d), minor (d));
  f = fopen (path, "r");
  if (f == NULL)
    return d;
  if (fscanf (f, "%u:%u", &maj, &min) == 2)
    d = makedev (maj, min);
  fclose (f);
  return d;
}

int
place_disk (const char *path, dev_t *disk)
{
  struct stat st;
  char sys[96], backing[4096];
  FILE *f;
  dev_t d;

  if (stat (path, &st) != 0)
    return -1;
  if (S_ISREG (st.st_mode))
    d = st.st_dev;
  else if (S_ISBLK (st.st_mode)) {
    d = st.st_rdev;
    /* A loop device: where its backing file lies. */
    snprintf (sys, sizeof sys, "/sys/dev/block/%u:%u/loop/backing_file",
              major (d), minor (d));
    if ((f = fopen (sys, "r")) != NULL) {
      if (fgets (backing, sizeof backing, f) != NULL) {
        backing[strcspn (backing, "\n")] = '\0';
        if (stat (backing, &st) == 0)
          d = st.st_dev;
      }
      fclose (f);
    }
  }
  else
    return -1;
  *disk = whole_disk (d);
  return 0;
}
