/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the nbdkit filter.
 *
 * Thin glue: every data request becomes an engine_req that the nbdkit
 * worker thread submits and waits for; the engine (one per process,
 * shared by every connection, since scheduling is per device) orders
 * and issues them.  Two ways down:
 *
 *   direct  the engine's own io_uring on the backing opened O_DIRECT,
 *           only when we can show we sit right above the file plugin
 *           (file= went through us and no other filter was loaded
 *           before us; see below.c);
 *   next    the layer below (next->pread, ...) in scheduler order.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <sys/sysmacros.h>
#include <fcntl.h>
#include <unistd.h>

#include <nbdkit-filter.h>

#include "engine.h"
#include "control.h"
#include "params.h"
#include "below.h"
#include "threads.h"
#include "place.h"

#define MAX_REQUEST (32u << 20)

static struct filter_params params;
static struct below below;
static char *file_path;         /* the file plugin's file=, absolute */
static const char *not_direct;  /* why direct cannot be proven, or NULL */
static bool fd_mode;            /* fd= seen */
static enum engine_dispatch mode;
static struct engine *engine;
static struct control *control; /* deadline-control=PATH, or NULL */
static _Atomic uint64_t conn_counter;
static int nbdkit_threads = -1; /* per connection (threads.h); -1: unknown */

struct handle {
  uint64_t id;
  uint32_t export_id;           /* engine_export: its export's number */
  _Atomic int busy;             /* requests of it in the filter: threads held */
};

/* dir=: the directory whose files are the exports (place.c finds
 * where each lies on the disk); NULL otherwise.
 */
static char *dir_path;
static _Atomic uint32_t unknown_places; /* exports of unknown place so far */

/* dir=: the path of the export NAME, or NULL if NAME cannot be a file
 * of the directory (empty, ".", "..", or with a '/') or memory ran out.
 */
static char *
dir_entry (const char *name)
{
  char *path;

  if (name[0] == '\0' || strchr (name, '/') != NULL || strcmp (name, ".") == 0 ||
      strcmp (name, "..") == 0 || asprintf (&path, "%s/%s", dir_path, name) < 0)
    return NULL;
  return path;
}

static void
deadline_load (void)
{
  params_default (&params);
  below_scan (&below, (const void *) deadline_load);
}

static void
deadline_unload (void)
{
  free (file_path);
  file_path = NULL;
  free (dir_path);
  dir_path = NULL;
  params_free (&params);
}

static int
deadline_config (nbdkit_next_config *next, nbdkit_backend *nxdata,
                 const char *key, const char *value)
{
  char err[256];
  int r = params_set (&params, key, value, err, sizeof err);

  if (r < 0) {
    nbdkit_error ("%s", err);
    return -1;
  }
  if (r > 0 && params.control && strcmp (key, PARAMS_PREFIX "control") == 0) {
    /* nbdkit changes to / when it forks into the background. */
    char *abs = nbdkit_absolute_path (params.control);
    if (abs == NULL)
      return -1;
    free (params.control);
    params.control = abs;
  }
  if (r > 0)
    return 0;

  if (strcmp (key, "file") == 0) {
    free (file_path);
    file_path = nbdkit_absolute_path (value);
    if (file_path == NULL)
      return -1;
  }
  else if (strcmp (key, "dir") == 0) {
    free (dir_path);
    dir_path = nbdkit_absolute_path (value);
    if (dir_path == NULL)
      return -1;
  }
  else if (strcmp (key, "fd") == 0)
    fd_mode = true;
  return next (nxdata, key, value);
}

/* One debug line with every effective setting (tests read it). */
static void
log_tunables (void)
{
  char line[512], val[64];
  size_t i, n = 0;

  line[0] = '\0';
  for (i = 0; dl_tunable_names[i]; ++i) {
    if (dl_tunable_get (&params.tunables, dl_tunable_names[i], val, sizeof val) != 0)
      continue;
    n += snprintf (line + n, n < sizeof line ? sizeof line - n : 0, " %s=%s",
                   dl_tunable_names[i], val);
  }
  nbdkit_debug ("deadline: settings%s depth=%s%u max_inflight=%" PRIu64
                " dispatch=%s inline=%s",
                line, params.depth_auto ? "auto<=" : "", params.depth, params.max_inflight,
                dispatch_name (params.dispatch), params.no_inline ? "off" : "on");
}

/* dir=: an export given a class must be a file of the directory (a
 * typo would otherwise leave the export in be, silently).
 */
static int
check_classes (void)
{
  struct stat st;
  size_t i;

  for (i = 0; dir_path && i < params.nclass; i++) {
    const char *name = params.class_export[i];
    char *path = dir_entry (name);
    int ok;

    ok = path != NULL && stat (path, &st) == 0 && !S_ISDIR (st.st_mode);
    free (path);
    if (!ok) {
      nbdkit_error ("deadline-class: no export '%s' in %s", name, dir_path);
      return -1;
    }
  }
  return 0;
}

static int
deadline_config_complete (nbdkit_next_config_complete *next,
                          nbdkit_backend *nxdata)
{
  char err[256];

  if (dl_tunables_validate (&params.tunables, err, sizeof err) != 0) {
    nbdkit_error ("deadline: %s", err);
    return -1;
  }

  if (!below.file_plugin)
    not_direct = below.plugin[0] ? "the plugin is not the file plugin"
                                 : "no plugin was seen loaded before the filter";
  else if (below.filters_below > 0)
    not_direct = "another filter sits between this filter and the plugin";
  else if (fd_mode || (file_path == NULL && dir_path == NULL))
    not_direct = "the file plugin was not given file= or dir=";
  else
    not_direct = NULL;

  if (params.dispatch == DISPATCH_DIRECT && not_direct) {
    nbdkit_error ("deadline-dispatch=direct refused: %s%s%s", not_direct,
                  below.filter[0] ? ": " : "", below.filter);
    return -1;
  }
  if (check_classes () != 0)
    return -1;
  log_tunables ();
  mode = (params.dispatch == DISPATCH_NEXT || not_direct)
    ? ENGINE_NEXT : ENGINE_DIRECT;
  nbdkit_debug ("deadline: dispatch=%s -> %s%s%s", dispatch_name (params.dispatch),
                mode == ENGINE_DIRECT ? "direct" : "next",
                not_direct ? " because " : "", not_direct ? not_direct : "");
  return next (nxdata);
}

#define deadline_config_help \
  "deadline-profile=default|seed   Preset of every tunable but the scheduler;\n" \
  "                                seed = the 2002 patch exactly (default default).\n" \
  "deadline-scheduler=deadline|noop|elevator  Policy (default deadline).\n" \
  "deadline-read-expire=DURATION   Read deadline (default 500ms).\n" \
  "deadline-write-expire=DURATION  Write deadline (default 5s, 0 = none).\n" \
  "deadline-fifo-batch=N           Cost units per batch (default 64).\n" \
  "deadline-seek-cost=N            Cost of a seek in a batch (default 16).\n" \
  "deadline-writes-starved=N       Read batches before writes must go (default 2).\n" \
  "deadline-front-merges=BOOL      Merge in front of queued requests (default on).\n" \
  "deadline-max-merge=SIZE         Largest merged unit (default 256k, 0 = no merging).\n" \
  "deadline-anticipate=DURATION    Longest wait for a reader's next read (default 20ms, 0 = off).\n" \
  "deadline-preempt=BOOL           A read may end a write batch early (default on).\n" \
  "deadline-preempt-min=N          ... after the batch spent N cost units (default 16).\n" \
  "deadline-size-cost=BOOL         A unit costs 1 more per further 128k (default on).\n" \
  "deadline-seed-batches=BOOL      Batches chosen whole, from the list head, as the\n" \
  "                                seed (default off).\n" \
  "deadline-readahead=SIZE         Most bytes read ahead of a dependent reader into\n" \
  "                                a small cache, who gets what the device\n" \
  "                                transfers in two seeks (default 256k, 0 = off).\n" \
  "deadline-write-piece=DURATION   Beside a dependent reader, writes go to the device\n" \
  "                                in pieces of this much device time (default\n" \
  "                                2ms, 0 = whole units).\n" \
  "deadline-piece-wait=DURATION    The next piece waits this long at most while\n" \
  "                                the reader is expected (default 0 = never).\n" \
  "deadline-read-slice=DURATION    Beside a dependent reader, turns of the device:\n" \
  "                                this long for reads (default 0 = off) ...\n" \
  "deadline-write-slice=DURATION   ... and this long for writes (default 40ms).\n" \
  "deadline-slice-writes=N         ... but none while N writes are in the server\n" \
  "                                (default 96, 0 = no limit).\n" \
  "deadline-depth=auto|N           Units in flight at the device (default auto:\n" \
  "                                from 2 up to 64 while that makes the device\n" \
  "                                faster; N: fixed, 2 for a disk, 16-64 SSD/NVMe).\n" \
  "deadline-max-inflight=SIZE      Bytes in flight (default depth*max-merge, >= 8M).\n" \
  "deadline-writeback=SIZE         Answer writes without FUA once copied, up to\n" \
  "                                SIZE not yet on the device; a flush waits\n" \
  "                                for them (default 0 = off; direct only).\n" \
  "deadline-dispatch=auto|direct|next  io_uring O_DIRECT on the file plugin's\n" \
  "                                file, or through the layer below (default auto).\n" \
  "deadline-inline=on|off          A request that waits for nothing goes to the\n" \
  "                                device from its own thread (default on).\n" \
  "deadline-class=[EXPORT:]rt|be|idle  Priority class of every export, or of one\n" \
  "                                (repeatable; default be; see the man page).\n" \
  "deadline-prio-aging=DURATION    A be or idle request waiting this long goes\n" \
  "                                first (default 10s).\n" \
  "deadline-idle-grace=DURATION    idle requests wait until rt and be have been\n" \
  "                                quiet this long (default 100ms).\n" \
  "deadline-control=PATH           Serve a control socket (owner-only) for\n" \
  "                                nbd-deadline-ctl: statistics, tunables.\n" \
  "DURATION: 500ms, 1.5s, 250us, 100ns; SIZE: 4096, 64k, 1M."

static int
deadline_thread_model (void)
{
  return NBDKIT_THREAD_MODEL_PARALLEL;
}

static int perform_next (void *opaque, struct engine_req *r);

/* Every 10 s while requests flow; nbdkit shows it with -v. */
static void
periodic_stats (const struct engine_stats *st, void *opaque)
{
  char buf[2048];

  engine_format_stats (st, buf, sizeof buf);
  nbdkit_debug ("deadline stats: %s", buf);
}

/* Too few nbdkit threads hide reads from the scheduler (threads.h).
 * Not an error: a client that keeps few requests outstanding (qemu,
 * nbdfuse) is served as well; but a kernel client under a write flood
 * is not, and nothing else would tell the user why.  Said on stderr,
 * which is still the terminal here (before nbdkit forks), or the
 * journal under systemd.
 */
static void
warn_threads (void)
{
  if (nbdkit_threads < 0 || nbdkit_threads >= THREADS_WANTED)
    return;
  fprintf (stderr, "nbdkit: deadline: warning: nbdkit --threads is %d: a client "
           "that keeps more requests outstanding (the Linux nbd client: %d) "
           "leaves the rest unseen in the socket, so a read waits behind every "
           "write sent before it; start nbdkit with --threads %d or more\n",
           nbdkit_threads, THREADS_WANTED, THREADS_WANTED);
}

/* dir=, once at start: can the directory's files be opened O_DIRECT
 * (tmpfs cannot)?  Tried on its first file or block device; an empty
 * directory says yes (an export that cannot is refused at its open).
 * And exports of two disks in one nbdkit share one scheduler (one
 * depth, one queue), which helps neither: said on the terminal.  Not an
 * error (images on one file system over several disks, RAID, LVM: the
 * place is then a guess anyway).
 */
static bool
survey_dir (void)
{
  DIR *d = opendir (dir_path);
  struct dirent *de;
  bool yes = true, probed = false, warned = false;
  char first[256] = "";
  dev_t disk0 = 0, disk;

  if (d == NULL)
    return true;                /* the file plugin says why */
  while ((de = readdir (d)) != NULL) {
    struct stat st;
    char *path;
    int fd, r;

    if (de->d_name[0] == '.' || fstatat (dirfd (d), de->d_name, &st, 0) != 0 ||
        !(S_ISREG (st.st_mode) || S_ISBLK (st.st_mode)))
      continue;
    if (!probed) {
      fd = openat (dirfd (d), de->d_name, O_RDONLY | O_DIRECT | O_CLOEXEC);
      if (fd < 0 && errno == EINVAL)
        yes = false;
      if (fd >= 0)
        close (fd);
      probed = fd >= 0 || errno == EINVAL;
    }
    if (warned || (path = dir_entry (de->d_name)) == NULL)
      continue;
    r = place_disk (path, &disk);
    free (path);
    if (r != 0)
      continue;
    if (first[0] == '\0') {
      snprintf (first, sizeof first, "%s", de->d_name);
      disk0 = disk;
    }
    else if (disk != disk0) {
      fprintf (stderr, "nbdkit: deadline: warning: exports %s and %s are on different "
               "disks (%u:%u, %u:%u), and one nbdkit has one scheduler for all its "
               "exports; serve each disk from its own\n", first, de->d_name,
               major (disk0), minor (disk0), major (disk), minor (disk));
      warned = true;
    }
  }
  closedir (d);
  return yes;
}

static int
deadline_get_ready (int thread_model)
{
  struct engine_params ep;
  char err[256];
  uint64_t need;

  engine_params_default (&ep);
  ep.path = file_path;
  ep.dir = file_path ? NULL : dir_path; /* direct with dir=: each export's file */
  if (dir_path && !survey_dir () && mode == ENGINE_DIRECT && ep.dir) {
    if (params.dispatch == DISPATCH_DIRECT) {
      nbdkit_error ("deadline-dispatch=direct refused: the files of %s cannot be opened "
                    "with O_DIRECT", dir_path);
      return -1;
    }
    nbdkit_debug ("deadline: direct unavailable in %s (no O_DIRECT); dispatch=auto -> next",
                  dir_path);
    mode = ENGINE_NEXT;
  }
  if (mode == ENGINE_NEXT)
    ep.dir = NULL;
  ep.dispatch = mode;
  ep.readonly = false;          /* falls back to read-only if refused */
  ep.tunables = params.tunables;
  ep.depth = params.depth;
  ep.depth_auto = params.depth_auto;
  ep.inline_io = !params.no_inline;
  need = (uint64_t) params.depth * (params.tunables.max_merge ? params.tunables.max_merge : 65536);
  ep.max_bytes = params.max_inflight ? params.max_inflight
                                     : (need > (8u << 20) ? need : (8u << 20));
  ep.align = 1;                 /* next: the layer below aligns for itself */
  ep.writeback_bytes = params.writeback;  /* direct only (writeback.c) */
  ep.perform = perform_next;
  ep.perform_opaque = NULL;
  ep.stats_cb = periodic_stats;
  ep.stats_interval_ns = 10ull * 1000000000;

  /* The control socket is made now, before the fork, so that a path in
   * use or not writable stops nbdkit with the reason on the terminal.
   */
  if (params.control) {
    control = control_new (params.control, err, sizeof err);
    if (control == NULL) {
      nbdkit_error ("deadline-control: %s", err);
      return -1;
    }
    ep.loop_init_cb = control_loop_init;
    ep.loop_init_opaque = control;
  }

  engine = engine_new (&ep, err, sizeof err);
  if (engine == NULL && mode == ENGINE_DIRECT && ep.dir == NULL && params.dispatch == DISPATCH_AUTO &&
      errno == EINVAL) {
    /* auto: a file system without O_DIRECT (or an odd alignment) is no
     * reason to refuse; the layer below can still serve it.
     */
    nbdkit_debug ("deadline: direct unavailable (%s); dispatch=auto -> next", err);
    mode = ENGINE_NEXT;
    ep.dispatch = ENGINE_NEXT;
    engine = engine_new (&ep, err, sizeof err);
  }
  if (engine == NULL) {
    nbdkit_error ("deadline: %s", err);
    control_free (control);
    control = NULL;
    return -1;
  }
  nbdkit_threads = threads_of_nbdkit ();
  warn_threads ();
  if (control) {
    char info[4200];

    snprintf (info, sizeof info,
              "backing %s\ndispatch %s\ndepth %s%u\nmax_inflight_bytes %" PRIu64
              "\nsize_bytes %" PRIu64 "\nnbdkit_threads %d\n",
              mode == ENGINE_DIRECT ? (file_path ? file_path : dir_path) : "next-layer",
              mode == ENGINE_DIRECT ? "direct" : "next",
              ep.depth_auto ? "auto, at most " : "", ep.depth, ep.max_bytes,
              engine_size (engine), nbdkit_threads);
    control_attach (control, engine, info);
    nbdkit_debug ("deadline: control socket %s", params.control);
  }
  nbdkit_debug ("deadline: %s, depth %s%u, %" PRIu64 " bytes in flight, align %u%s",
                mode == ENGINE_DIRECT ? (file_path ? file_path : dir_path) : "next layer",
                ep.depth_auto ? "auto <= " : "", ep.depth, ep.max_bytes, engine_align (engine),
                mode == ENGINE_DIRECT && engine_is_blockdev (engine) ? " (block device)" : "");
  return 0;
}

static int
deadline_after_fork (nbdkit_backend *backend)
{
  int r = engine_start (engine);

  if (r < 0) {
    nbdkit_error ("deadline: starting the engine: %s", strerror (-r));
    return -1;
  }
  return 0;
}

/* At exit: the counters (nbdkit -v), and as an error what a client may
 * not have seen.
 */
static void
log_exit_stats (void)
{
  struct engine_stats st;
  char buf[2048];

  engine_get_stats (engine, &st);
  engine_format_stats (&st, buf, sizeof buf);
  nbdkit_debug ("deadline stats (exit): %s", buf);
  if (st.wb_failed > 0)
    nbdkit_error ("deadline: %" PRIu64 " writes answered early (deadline-writeback) "
                  "failed on the device; flushes reported it", st.wb_failed);
}

static void
deadline_cleanup (nbdkit_backend *backend)
{
  if (engine == NULL)
    return;
  engine_stop (engine);
  control_free (control);       /* the loop has stopped: safe here */
  control = NULL;
  log_exit_stats ();
  engine_free (engine);
  engine = NULL;
}

/* The engine's number for an export (the engine serves every export of
 * the disk, with one scheduler): new ones get their class
 * (deadline-class) and their place on the disk (place.c).
 */
static int
export_of (const char *name, uint32_t *id)
{
  uint64_t base = 0;
  int r;

  /* Its class and place are the engine's once it has one (the first
   * connection to it): no second look at the disk.
   */
  if (engine_export_find (engine, name, id) == 0)
    return 0;
  if (dir_path) {
    char *path = dir_entry (name);

    if (path == NULL || place_of (path, &base) != 0)
      base = PLACE_UNKNOWN (atomic_fetch_add (&unknown_places, 1));
    free (path);
  }
  r = engine_export (engine, name, params_class_of (&params, name), base, id);
  if (r == 0 && dir_path)
    nbdkit_debug ("deadline: export '%s' sorts at byte %" PRIu64 " (class %s)", name, base,
                  dl_prio_name (params_class_of (&params, name)));
  if (r < 0) {
    nbdkit_error ("deadline: export '%s': %s", name,
                  r == -ENOSPC ? "too many exports"
                  : r == -EINVAL && mode == ENGINE_DIRECT ? "O_DIRECT alignment above 4096"
                  : strerror (-r));
    return -1;
  }
  return 0;
}

static void *
deadline_open (nbdkit_next_open *next, nbdkit_context *ctx,
               int readonly, const char *exportname, int is_tls)
{
  struct handle *h;

  if (next (ctx, readonly, exportname) == -1)
    return NULL;
  h = malloc (sizeof *h);
  if (h == NULL) {
    nbdkit_error ("malloc: %m");
    return NULL;
  }
  if (export_of (exportname ? exportname : "", &h->export_id) == -1) {
    free (h);
    return NULL;
  }
  /* Connection ids start at 1: 0 means "unknown" to the core. */
  h->id = ++conn_counter;
  h->busy = 0;
  return h;
}

static void
deadline_close (void *handle)
{
  free (handle);
}

static int
deadline_block_size (nbdkit_next *next, void *handle,
                     uint32_t *minimum, uint32_t *preferred, uint32_t *maximum)
{
  if (mode == ENGINE_NEXT)
    return next->block_size (next, minimum, preferred, maximum);
  /* Unaligned requests work (read-modify-write), just slower. */
  *minimum = 1;
  *preferred = engine_align (engine) > 4096 ? engine_align (engine) : 4096;
  *maximum = MAX_REQUEST;
  return 0;
}

static int
deadline_can_write (nbdkit_next *next, void *handle)
{
  struct handle *h = handle;
  int r = next->can_write (next);
  uint64_t size;
  bool ro;

  if (r == 1 && mode == ENGINE_DIRECT && engine_readonly (engine))
    return 0;
  if (r == 1 && mode == ENGINE_DIRECT &&
      engine_export_backing (engine, h->export_id, &size, &ro) && ro)
    return 0;
  return r;
}

static int
deadline_can_flush (nbdkit_next *next, void *handle)
{
  return mode == ENGINE_DIRECT ? 1 : next->can_flush (next);
}

static int
deadline_can_fua (nbdkit_next *next, void *handle)
{
  return mode == ENGINE_DIRECT ? NBDKIT_FUA_NATIVE : next->can_fua (next);
}

static int
deadline_can_trim (nbdkit_next *next, void *handle)
{
  return mode == ENGINE_DIRECT ? 1 : next->can_trim (next);
}

static int
deadline_can_zero (nbdkit_next *next, void *handle)
{
  return mode == ENGINE_DIRECT ? NBDKIT_ZERO_NATIVE : next->can_zero (next);
}

static int
deadline_can_fast_zero (nbdkit_next *next, void *handle)
{
  /* Direct: ZERO_RANGE may fall back to writing, which is not fast. */
  return mode == ENGINE_DIRECT ? 0 : next->can_fast_zero (next);
}

static int
deadline_can_multi_conn (nbdkit_next *next, void *handle)
{
  /* Direct: one descriptor for every connection, so a flush on any
   * covers writes completed on all.
   */
  return mode == ENGINE_DIRECT ? 1 : next->can_multi_conn (next);
}

/* Through the layer below, on an engine worker thread. */
static int
perform_next (void *opaque, struct engine_req *r)
{
  nbdkit_next *next = r->ctx;
  uint32_t f = 0;
  int err = 0, rc = -1;

  if (r->flags & ENGINE_F_FUA) f |= NBDKIT_FLAG_FUA;
  if (r->flags & ENGINE_F_MAY_TRIM) f |= NBDKIT_FLAG_MAY_TRIM;
  if (r->flags & ENGINE_F_FAST_ZERO) f |= NBDKIT_FLAG_FAST_ZERO;
  switch (r->op) {
  case DL_OP_READ:
    if (r->flags & ENGINE_F_AHEAD) {
      /* The engine's readahead may reach past the end of the export. */
      int64_t size = next->get_size (next);

      if (size == -1)
        return -EIO;
      if (r->offset >= (uint64_t) size)
        r->length = 0;
      else if (r->length > (uint64_t) size - r->offset)
        r->length = (uint32_t) (size - r->offset);
      if (r->length == 0)
        return 0;
    }
    rc = next->pread (next, r->buf, r->length, r->offset, 0, &err);
    break;
  case DL_OP_WRITE:
    rc = next->pwrite (next, r->buf, r->length, r->offset, f, &err);
    break;
  case DL_OP_TRIM:
    rc = next->trim (next, r->length, r->offset, f, &err);
    break;
  case DL_OP_ZERO:
    rc = next->zero (next, r->length, r->offset, f, &err);
    break;
  case DL_OP_FLUSH:
    rc = next->flush (next, 0, &err);
    break;
  }
  if (rc == -1)
    return -(err ? err : EIO);
  return 0;
}

static int
submit (void *handle, nbdkit_next *next, enum dl_op op, void *buf,
        uint32_t count, uint64_t offset, uint32_t flags, int *err)
{
  static const char *const names[] = { "read", "write", "trim", "zero", "flush" };
  struct handle *h = handle;
  struct engine_req r = {
    .op = op, .offset = offset, .length = count, .buf = buf,
    .stream = h->id, .ctx = next,
  };
  int rc;

  engine_req_export (engine, &r, h->export_id);

  if (flags & NBDKIT_FLAG_FUA) r.flags |= ENGINE_F_FUA;
  if (flags & NBDKIT_FLAG_MAY_TRIM) r.flags |= ENGINE_F_MAY_TRIM;
  if (flags & NBDKIT_FLAG_FAST_ZERO) r.flags |= ENGINE_F_FAST_ZERO;
  /* Each request holds one of nbdkit's threads of its connection until
   * answered; with the last one taken nbdkit reads no more of the
   * client's requests (threads.h).
   */
  if (++h->busy == nbdkit_threads)
    engine_note_connection_full (engine);
  rc = engine_submit (engine, &r);
  h->busy--;
  if (rc < 0) {
    *err = -rc;
    if (op == DL_OP_FLUSH)
      nbdkit_error ("deadline: flush: %s", strerror (-rc));
    else
      nbdkit_error ("deadline: %s of %" PRIu32 " bytes at %" PRIu64 ": %s",
                    names[op], count, offset, strerror (-rc));
    return -1;
  }
  return 0;
}

static int
deadline_pread (nbdkit_next *next, void *handle, void *buf, uint32_t count,
                uint64_t offset, uint32_t flags, int *err)
{
  return submit (handle, next, DL_OP_READ, buf, count, offset, flags, err);
}

static int
deadline_pwrite (nbdkit_next *next, void *handle, const void *buf,
                 uint32_t count, uint64_t offset, uint32_t flags, int *err)
{
  return submit (handle, next, DL_OP_WRITE, (void *) buf, count, offset, flags, err);
}

static int
deadline_trim (nbdkit_next *next, void *handle, uint32_t count,
               uint64_t offset, uint32_t flags, int *err)
{
  return submit (handle, next, DL_OP_TRIM, NULL, count, offset, flags, err);
}

static int
deadline_zero (nbdkit_next *next, void *handle, uint32_t count,
               uint64_t offset, uint32_t flags, int *err)
{
  return submit (handle, next, DL_OP_ZERO, NULL, count, offset, flags, err);
}

static int
deadline_flush (nbdkit_next *next, void *handle, uint32_t flags, int *err)
{
  return submit (handle, next, DL_OP_FLUSH, NULL, 0, 0, flags, err);
}

static struct nbdkit_filter filter = {
  .name              = "deadline",
  .longname          = "nbdkit deadline I/O scheduler filter",
  .load              = deadline_load,
  .unload            = deadline_unload,
  .config            = deadline_config,
  .config_complete   = deadline_config_complete,
  .config_help       = deadline_config_help,
  .thread_model      = deadline_thread_model,
  .get_ready         = deadline_get_ready,
  .after_fork        = deadline_after_fork,
  .cleanup           = deadline_cleanup,
  .open              = deadline_open,
  .close             = deadline_close,
  .block_size        = deadline_block_size,
  .can_write         = deadline_can_write,
  .can_flush         = deadline_can_flush,
  .can_fua           = deadline_can_fua,
  .can_trim          = deadline_can_trim,
  .can_zero          = deadline_can_zero,
  .can_fast_zero     = deadline_can_fast_zero,
  .can_multi_conn    = deadline_can_multi_conn,
  .pread             = deadline_pread,
  .pwrite            = deadline_pwrite,
  .trim              = deadline_trim,
  .zero              = deadline_zero,
  .flush             = deadline_flush,
};

NBDKIT_REGISTER_FILTER (filter)
