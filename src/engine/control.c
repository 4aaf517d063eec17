/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the control socket (see control.h for the protocol).
 *
 * Everything here after control_new runs on the engine's loop thread:
 * the listening socket and each connection are ev_io watchers on the
 * engine's loop, so a request is answered between two turns of the
 * scheduler and never blocks it (sockets are non-blocking; a client
 * that does not send its line within CLIENT_TIMEOUT is dropped).  Only
 * the engine's public API is used: engine_get_stats for counters,
 * engine_get_tunables/engine_set_tunables for tunables (the new set is
 * taken by the loop at its next turn, as one struct, so a change of
 * several tunables is atomic and queued requests stay where they are).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <ev.h>

#include "control.h"

#define MAX_CLIENTS 32
#define CLIENT_TIMEOUT 5.0      /* seconds to send the request line */
#define RATE_INTERVAL 1.0       /* seconds between throughput samples */

struct sample {
  uint64_t t_ns;
  uint64_t bytes[2], completed;
};

struct client {
  struct control *c;
  int fd;
  ev_io io;
  ev_timer timeout;
  char in[CONTROL_MAX_LINE + 1];
  size_t in_len;
  char *out;
  size_t out_len, out_off, out_cap;
  struct client *next;
};

struct control {
  char *path;
  int fd;
  dev_t dev;
  ino_t ino;
  struct engine *e;
  char *info;
  uint64_t t_start;
  struct ev_loop *loop;
  ev_io listen_io;
  ev_timer rate_timer;
  struct sample prev, last;     /* the last two samples, RATE_INTERVAL apart */
  struct client *clients;
  unsigned nclients;
};

struct control *
control_new (const char *path, char *err, size_t errlen)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  struct control *c;
  struct stat sb;
  int fd, e;

  if (path == NULL || path[0] == '\0') {
    snprintf (err, errlen, "control socket path is empty");
    errno = EINVAL;
    return NULL;
  }
  if (strlen (path) >= sizeof sa.sun_path) {
    snprintf (err, errlen, "%s: control socket path longer than %zu bytes",
              path, sizeof sa.sun_path - 1);
    errno = ENAMETOOLONG;
    return NULL;
  }
  strcpy (sa.sun_path, path);

  if (lstat (path, &sb) == 0) {
    if (!S_ISSOCK (sb.st_mode)) {
      snprintf (err, errlen, "%s: exists and is not a socket", path);
      errno = EEXIST;
      return NULL;
    }
    /* Somebody listening?  Then it is theirs; else it is stale. */
    fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect (fd, (struct sockaddr *) &sa, sizeof sa) == 0) {
      close (fd);
      snprintf (err, errlen, "%s: in use by another process", path);
      errno = EADDRINUSE;
      return NULL;
    }
    if (fd >= 0)
      close (fd);
    unlink (path);
  }

  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    e = errno;
    snprintf (err, errlen, "socket: %s", strerror (e));
    errno = e;
    return NULL;
  }
  /* fchmod before bind limits the window on some systems; the chmod
   * after it is what counts, and the peer check covers the rest.
   */
  fchmod (fd, 0600);
  if (bind (fd, (struct sockaddr *) &sa, sizeof sa) < 0 ||
      chmod (path, 0600) < 0 || listen (fd, 16) < 0 ||
      stat (path, &sb) < 0) {
    e = errno;
    snprintf (err, errlen, "%s: %s", path, strerror (e));
    close (fd);
    unlink (path);
    errno = e;
    return NULL;
  }

  c = calloc (1, sizeof *c);
  if (c == NULL || (c->path = strdup (path)) == NULL) {
    free (c);
    close (fd);
    unlink (path);
    snprintf (err, errlen, "out of memory");
    errno = ENOMEM;
    return NULL;
  }
  c->fd = fd;
  c->dev = sb.st_dev;
  c->ino = sb.st_ino;
  c->t_start = engine_now_ns ();
  return c;
}

void
control_attach (struct control *c, struct engine *e, const char *info)
{
  c->e = e;
  free (c->info);
  c->info = info ? strdup (info) : NULL;
}

/* ---- Output ------------------------------------------------------ */

static void
out (struct client *cl, const char *fmt, ...)
{
  va_list ap;
  int n;

  for (;;) {
    size_t room = cl->out_cap - cl->out_len;

    va_start (ap, fmt);
    n = vsnprintf (cl->out ? cl->out + cl->out_len : NULL, cl->out ? room : 0,
                   fmt, ap);
    va_end (ap);
    if (n < 0)
      return;
    if (cl->out && (size_t) n < room) {
      cl->out_len += n;
      return;
    }
    {
      size_t cap = cl->out_cap ? cl->out_cap * 2 : 4096;
      char *p;

      while (cap < cl->out_len + n + 1)
        cap *= 2;
      p = realloc (cl->out, cap);
      if (p == NULL)
        return;
      cl->out = p;
      cl->out_cap = cap;
    }
  }
}

static void
hist_lines (struct client *cl, const char *name, const struct dl_hist *h)
{
  out (cl, "%s_latency_count %" PRIu64 "\n", name, h->count);
  out (cl, "%s_latency_sum_us %.1f\n", name, h->sum / 1e3);
  out (cl, "%s_latency_p50_us %.1f\n", name, dl_hist_percentile (h, 50) / 1e3);
  out (cl, "%s_latency_p90_us %.1f\n", name, dl_hist_percentile (h, 90) / 1e3);
  out (cl, "%s_latency_p99_us %.1f\n", name, dl_hist_percentile (h, 99) / 1e3);
  out (cl, "%s_latency_p999_us %.1f\n", name, dl_hist_percentile (h, 99.9) / 1e3);
  out (cl, "%s_latency_max_us %.1f\n", name, h->max / 1e3);
}

static void
take_sample (struct control *c, struct sample *s)
{
  struct engine_stats st;

  engine_get_stats (c->e, &st);
  s->t_ns = engine_now_ns ();
  s->bytes[0] = st.sched.dispatched_bytes[DL_READ];
  s->bytes[1] = st.sched.dispatched_bytes[DL_WRITE];
  s->completed = st.completed;
}

/* The counters' lines of the `stats` answer, from the lists that make
 * the counters (engine.h, dl-sched.h), in their order: a NULL name is
 * a counter not shown.
 */
struct counter_line {
  const char *name;
  size_t off;                   /* of its uint64_t in struct engine_stats */
};

#define ENGINE_LINE_(field, name, doc)                                  \
  { name, offsetof (struct engine_stats, field) },
#define CORE_LINE_(field, name, doc)                                    \
  { name, offsetof (struct engine_stats, sched.field) },
#define CORE_LINE2_(field, rname, wname, doc)                           \
  { rname, offsetof (struct engine_stats, sched.field[DL_READ]) },      \
  { wname, offsetof (struct engine_stats, sched.field[DL_WRITE]) },
static const struct counter_line counter_lines[] = {
  ENGINE_STATS_ALL (ENGINE_LINE_, CORE_LINE_, CORE_LINE2_)
};

static void
stats_header (struct client *cl, const struct dl_tunables *t, uint64_t now)
{
  struct control *c = cl->c;

  out (cl, "ok\n");
  if (c->info)
    out (cl, "%s", c->info);
  out (cl, "scheduler %s\n", dl_policy_name (t->policy));
  out (cl, "uptime_seconds %.3f\n", (now - c->t_start) / 1e9);
}

static void
stats_counters (struct client *cl, const struct engine_stats *st)
{
  size_t i;

  for (i = 0; i < sizeof counter_lines / sizeof counter_lines[0]; ++i) {
    const struct counter_line *l = &counter_lines[i];

    if (l->name)
      out (cl, "%s %" PRIu64 "\n", l->name,
           *(const uint64_t *) ((const char *) st + l->off));
  }
}

static void
stats_latencies (struct client *cl, const struct engine_stats *st)
{
  hist_lines (cl, "read", &st->total[DL_READ]);
  hist_lines (cl, "write", &st->total[DL_WRITE]);
  hist_lines (cl, "inbox", &st->inbox);
  hist_lines (cl, "queue", &st->queue);
  hist_lines (cl, "device", &st->device);
  hist_lines (cl, "read_queue", &st->read_queue);
  hist_lines (cl, "read_device", &st->read_device);
}

/* An export name as a label value: the answer is one "name value" a
 * line, so bytes that could break it (spaces, quotes, controls) are
 * shown as '_'.
 */
static void
label_value (char *dst, size_t len, const char *s)
{
  size_t i;

  for (i = 0; s[i] && i + 1 < len; i++)
    dst[i] = (isalnum ((unsigned char) s[i]) || strchr ("._-:/+@", s[i])) ? s[i] : '_';
  dst[i] = '\0';
}

/* Per priority class (classes.c) and per export: labelled lines,
 * NAME{LABEL="VALUE"} N, which nbd-deadline-ctl --prometheus keeps as
 * labels.
 */
static void
stats_classes (struct client *cl, struct engine *e, const struct engine_stats *st)
{
  struct engine_export_stats x;
  uint32_t id;
  int p;

  for (p = 0; p < DL_NPRIO; p++) {
    const struct dl_stats *s = &st->class_sched[p];
    const struct dl_hist *h = &st->class_read[p];
    const char *n = dl_prio_name ((enum dl_prio) p);

    out (cl, "class_reads_total{class=\"%s\"} %" PRIu64 "\n", n, s->inserted[DL_READ]);
    out (cl, "class_writes_total{class=\"%s\"} %" PRIu64 "\n", n, s->inserted[DL_WRITE]);
    out (cl, "class_read_bytes_total{class=\"%s\"} %" PRIu64 "\n", n, s->dispatched_bytes[DL_READ]);
    out (cl, "class_write_bytes_total{class=\"%s\"} %" PRIu64 "\n", n, s->dispatched_bytes[DL_WRITE]);
    out (cl, "class_waiting{class=\"%s\"} %" PRIu64 "\n", n,
         s->queued[DL_READ] + s->queued[DL_WRITE] + s->held + s->queued_flushes);
    out (cl, "class_inflight{class=\"%s\"} %" PRIu64 "\n", n, s->inflight);
    out (cl, "class_read_p50_us{class=\"%s\"} %.1f\n", n, dl_hist_percentile (h, 50) / 1e3);
    out (cl, "class_read_p99_us{class=\"%s\"} %.1f\n", n, dl_hist_percentile (h, 99) / 1e3);
  }
  for (id = 0; engine_export_stats (e, id, &x) == 0; id++) {
    char name[128];

    label_value (name, sizeof name, x.name);
    out (cl, "export_class{export_name=\"%s\",class=\"%s\"} 1\n", name, dl_prio_name (x.prio));
    out (cl, "export_reads_total{export_name=\"%s\"} %" PRIu64 "\n", name, x.requests[DL_READ]);
    out (cl, "export_writes_total{export_name=\"%s\"} %" PRIu64 "\n", name, x.requests[DL_WRITE]);
    out (cl, "export_read_bytes_total{export_name=\"%s\"} %" PRIu64 "\n", name, x.bytes[DL_READ]);
    out (cl, "export_write_bytes_total{export_name=\"%s\"} %" PRIu64 "\n", name, x.bytes[DL_WRITE]);
  }
}

/* Rates over the last one to two seconds (two samples back). */
static void
stats_rates (struct client *cl, const struct engine_stats *st, uint64_t now)
{
  const struct sample *prev = &cl->c->prev;
  double dt;

  if (prev->t_ns) {
    dt = (now - prev->t_ns) / 1e9;
    out (cl, "read_bytes_per_second %.0f\n",
         (st->sched.dispatched_bytes[DL_READ] - prev->bytes[0]) / dt);
    out (cl, "write_bytes_per_second %.0f\n",
         (st->sched.dispatched_bytes[DL_WRITE] - prev->bytes[1]) / dt);
    out (cl, "requests_per_second %.0f\n", (st->completed - prev->completed) / dt);
  }
  else {
    out (cl, "read_bytes_per_second 0\nwrite_bytes_per_second 0\n"
         "requests_per_second 0\n");
  }
}

static void
cmd_stats (struct client *cl)
{
  struct engine_stats st;
  struct dl_tunables t;
  uint64_t now;

  engine_get_stats (cl->c->e, &st);
  engine_get_tunables (cl->c->e, &t);
  now = engine_now_ns ();

  stats_header (cl, &t, now);
  stats_counters (cl, &st);
  stats_latencies (cl, &st);
  stats_rates (cl, &st, now);
  stats_classes (cl, cl->c->e, &st);
}

static void
tunable_line (struct client *cl, const struct dl_tunables *t, const char *name)
{
  char val[64];

  if (dl_tunable_get (t, name, val, sizeof val) == 0)
    out (cl, "%s %s\n", name, val);
}

/* A key as the core names it (underscores), or NULL if unknown. */
static const char *
canonical_key (const char *key)
{
  size_t i, j;

  if (strcmp (key, "profile") == 0)
    return "profile";           /* a preset: dl_tunable_set/get take it */
  for (i = 0; dl_tunable_names[i]; ++i) {
    const char *n = dl_tunable_names[i];
    for (j = 0; key[j] && n[j]; ++j)
      if (key[j] != n[j] && !(key[j] == '-' && n[j] == '_'))
        break;
    if (key[j] == '\0' && n[j] == '\0')
      return n;
  }
  return NULL;
}

static void
error_reply (struct client *cl, const char *fmt, ...)
{
  va_list ap;
  char msg[256];

  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  cl->out_len = 0;
  out (cl, "error %s\n", msg);
}

#define MAX_ARGS 32

static void
cmd_get (struct client *cl, char **argv, int argc)
{
  struct dl_tunables t;
  int i;

  engine_get_tunables (cl->c->e, &t);
  for (i = 1; i < argc; ++i)
    if (canonical_key (argv[i]) == NULL) {
      error_reply (cl, "unknown tunable '%s'", argv[i]);
      return;
    }
  out (cl, "ok\n");
  if (argc == 1)
    for (i = 0; dl_tunable_names[i]; ++i)
      tunable_line (cl, &t, dl_tunable_names[i]);
  else
    for (i = 1; i < argc; ++i)
      tunable_line (cl, &t, canonical_key (argv[i]));
}

static void
cmd_set (struct client *cl, char **argv, int argc)
{
  struct dl_tunables t;
  const char *keys[MAX_ARGS];
  const char *values[MAX_ARGS];
  char msg[200];
  int i, pass;

  if (argc < 2) {
    error_reply (cl, "set: give KEY=VALUE");
    return;
  }
  engine_get_tunables (cl->c->e, &t);
  for (i = 1; i < argc; ++i) {
    char *eq = strchr (argv[i], '=');

    if (eq == NULL || eq == argv[i]) {
      error_reply (cl, "set: '%s' is not KEY=VALUE", argv[i]);
      return;
    }
    *eq = '\0';
    values[i] = eq + 1;
    keys[i] = canonical_key (argv[i]);
    if (keys[i] == NULL) {
      error_reply (cl, "unknown tunable '%s'", argv[i]);
      return;
    }
  }
  /* A profile is a preset: it applies before the keys named beside it,
   * wherever it stands, as deadline-profile does on the command line. */
  for (pass = 0; pass < 2; ++pass)
    for (i = 1; i < argc; ++i) {
      if ((strcmp (keys[i], "profile") == 0) != (pass == 0))
        continue;
      if (dl_tunable_set (&t, keys[i], values[i], msg, sizeof msg) != 0) {
        error_reply (cl, "%s", msg);
        return;
      }
    }
  if (engine_set_tunables (cl->c->e, &t, msg, sizeof msg) != 0) {
    error_reply (cl, "%s", msg);
    return;
  }
  out (cl, "ok\n");
  for (i = 1; i < argc; ++i)
    tunable_line (cl, &t, keys[i]);
}

/* class EXPORT CLASS: the export's next requests go to that class. */
static void
cmd_class (struct client *cl, char **argv, int argc)
{
  enum dl_prio p;
  int r;

  if (argc != 3) {
    error_reply (cl, "class: give EXPORT CLASS (rt, be or idle; \"\" for the default export)");
    return;
  }
  if (strcmp (argv[1], "\"\"") == 0)
    argv[1] = (char *) "";
  if (dl_parse_prio (argv[2], &p) != 0) {
    error_reply (cl, "class: '%s' is not rt, be or idle", argv[2]);
    return;
  }
  r = engine_set_export_class (cl->c->e, argv[1], p);
  if (r == -ENOENT) {
    error_reply (cl, "class: no export '%s' has been opened (stats lists them)", argv[1]);
    return;
  }
  if (r != 0) {
    error_reply (cl, "class: %s", strerror (-r));
    return;
  }
  out (cl, "ok\nexport_class %s\n", dl_prio_name (p));
}

static void
handle_line (struct client *cl, char *line)
{
  char *argv[MAX_ARGS + 1], *p, *save = NULL;
  int argc = 0;

  for (p = line; *p; ++p)
    if ((unsigned char) *p < ' ' || (unsigned char) *p > '~') {
      error_reply (cl, "request has a non-printable byte");
      return;
    }
  for (p = strtok_r (line, " ", &save); p; p = strtok_r (NULL, " ", &save)) {
    if (argc == MAX_ARGS) {
      error_reply (cl, "too many words (at most %d)", MAX_ARGS);
      return;
    }
    argv[argc++] = p;
  }
  argv[argc] = NULL;
  if (argc == 0) {
    error_reply (cl, "empty request");
    return;
  }

  if ((strcmp (argv[0], "ping") == 0 || strcmp (argv[0], "stats") == 0) &&
      argc > 1)
    error_reply (cl, "%s: takes no arguments", argv[0]);
  else if (strcmp (argv[0], "ping") == 0)
    out (cl, "ok\n");
  else if (strcmp (argv[0], "stats") == 0)
    cmd_stats (cl);
  else if (strcmp (argv[0], "get") == 0)
    cmd_get (cl, argv, argc);
  else if (strcmp (argv[0], "set") == 0)
    cmd_set (cl, argv, argc);
  else if (strcmp (argv[0], "class") == 0)
    cmd_class (cl, argv, argc);
  else if (strcmp (argv[0], "scheduler") == 0) {
    char kv[96];
    char *sv[3] = { "set", kv, NULL };

    if (argc != 2) {
      error_reply (cl, "scheduler: give one of deadline, noop, elevator");
      return;
    }
    snprintf (kv, sizeof kv, "scheduler=%s", argv[1]);
    cmd_set (cl, sv, 2);
  }
  else
    error_reply (cl, "unknown request '%s' (ping, stats, get, set, scheduler, class)",
                 argv[0]);
}

/* ---- Connections ------------------------------------------------- */

static void
client_close (struct client *cl)
{
  struct control *c = cl->c;
  struct client **pp;

  ev_io_stop (c->loop, &cl->io);
  ev_timer_stop (c->loop, &cl->timeout);
  close (cl->fd);
  for (pp = &c->clients; *pp; pp = &(*pp)->next)
    if (*pp == cl) {
      *pp = cl->next;
      break;
    }
  c->nclients--;
  free (cl->out);
  free (cl);
}

static void
client_flush (struct client *cl)
{
  while (cl->out_off < cl->out_len) {
    ssize_t n = send (cl->fd, cl->out + cl->out_off, cl->out_len - cl->out_off,
                      MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN) {
      ev_io_stop (cl->c->loop, &cl->io);
      ev_io_set (&cl->io, cl->fd, EV_WRITE);
      ev_io_start (cl->c->loop, &cl->io);
      return;
    }
    if (n <= 0)
      break;
    cl->out_off += n;
  }
  client_close (cl);
}

static void
on_client (struct ev_loop *loop, ev_io *w, int revents)
{
  struct client *cl = w->data;
  char *nl;
  ssize_t n;

  if (revents & EV_WRITE) {
    client_flush (cl);
    return;
  }
  n = recv (cl->fd, cl->in + cl->in_len, CONTROL_MAX_LINE - cl->in_len,
            MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  if (n <= 0) {                 /* gone, or closed without a full line */
    client_close (cl);
    return;
  }
  cl->in_len += n;
  cl->in[cl->in_len] = '\0';
  nl = memchr (cl->in, '\n', cl->in_len);
  if (nl == NULL) {
    if (cl->in_len < CONTROL_MAX_LINE)
      return;
    error_reply (cl, "request longer than %d bytes", CONTROL_MAX_LINE);
  }
  else {
    *nl = '\0';
    if (nl > cl->in && nl[-1] == '\r')
      nl[-1] = '\0';
    handle_line (cl, cl->in);
  }
  /* The timeout stays armed: a client that does not read is dropped. */
  ev_io_stop (loop, &cl->io);
  client_flush (cl);
}

static void
on_client_timeout (struct ev_loop *loop, ev_timer *w, int revents)
{
  client_close (w->data);
}

static void
on_accept (struct ev_loop *loop, ev_io *w, int revents)
{
  struct control *c = w->data;
  struct client *cl;
  struct ucred cred;
  socklen_t len = sizeof cred;
  int fd;

  fd = accept4 (c->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0)
    return;
  /* Owner-only: the file mode says so, and so does the peer's uid. */
  if (getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
      (cred.uid != 0 && cred.uid != geteuid ())) {
    static const char msg[] = "error permission denied\n";
    if (send (fd, msg, sizeof msg - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
      /* Nothing to tell a client that is gone. */
    }
    close (fd);
    return;
  }
  if (c->nclients >= MAX_CLIENTS) {
    static const char msg[] = "error too many control connections\n";
    if (send (fd, msg, sizeof msg - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
      /* As above. */
    }
    close (fd);
    return;
  }
  cl = calloc (1, sizeof *cl);
  if (cl == NULL) {
    close (fd);
    return;
  }
  cl->c = c;
  cl->fd = fd;
  ev_io_init (&cl->io, on_client, fd, EV_READ);
  cl->io.data = cl;
  ev_io_start (loop, &cl->io);
  ev_timer_init (&cl->timeout, on_client_timeout, CLIENT_TIMEOUT, 0.);
  cl->timeout.data = cl;
  ev_timer_start (loop, &cl->timeout);
  cl->next = c->clients;
  c->clients = cl;
  c->nclients++;
}

static void
on_rate (struct ev_loop *loop, ev_timer *w, int revents)
{
  struct control *c = w->data;

  c->prev = c->last;
  take_sample (c, &c->last);
  if (c->prev.t_ns == 0)
    c->prev = c->last;
}

void
control_loop_init (void *loop, void *opaque)
{
  struct control *c = opaque;

  if (c == NULL || c->e == NULL)
    return;
  c->loop = loop;
  ev_io_init (&c->listen_io, on_accept, c->fd, EV_READ);
  c->listen_io.data = c;
  ev_io_start (c->loop, &c->listen_io);
  take_sample (c, &c->last);
  ev_timer_init (&c->rate_timer, on_rate, RATE_INTERVAL, RATE_INTERVAL);
  c->rate_timer.data = c;
  ev_timer_start (c->loop, &c->rate_timer);
}

void
control_free (struct control *c)
{
  struct stat sb;

  if (c == NULL)
    return;
  if (c->loop) {
    while (c->clients)
      client_close (c->clients);
    ev_io_stop (c->loop, &c->listen_io);
    ev_timer_stop (c->loop, &c->rate_timer);
  }
  close (c->fd);
  /* Remove the socket only if it is still ours. */
  if (stat (c->path, &sb) == 0 && sb.st_dev == c->dev && sb.st_ino == c->ino)
    unlink (c->path);
  free (c->path);
  free (c->info);
  free (c);
}
