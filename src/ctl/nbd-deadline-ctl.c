/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline-ctl: talk to the control socket of a running export.
 *
 * Sends one request line, reads the answer ("ok" then "NAME VALUE"
 * lines, or "error REASON"; see src/engine/control.h) and shows it as
 * text, --json, --prometheus or --raw.  Also two checks used by
 * nbd-deadline-start before it starts nbdkit (check-param,
 * check-backing), so that a configuration error is reported with the
 * filter's own words.  See nbd-deadline-ctl(8).
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "dl-sched.h"
#include "params.h"

#define RUNDIR "/run/nbd-deadline"
#define TIMEOUT_S 5

enum format { F_TEXT, F_JSON, F_PROM, F_RAW };

static const char *progname = "nbd-deadline-ctl";
static const char *sock_path;
static char *instance;          /* for the Prometheus export label */

struct kv {
  char *name, *value;
};
struct reply {
  char *buf;
  struct kv *kv;
  size_t n;
};

static void
usage (FILE *f)
{
  fprintf (f,
"Usage: %s [-s SOCKET | -i NAME] [--json|--prometheus|--raw] COMMAND\n"
"Commands:\n"
"  stats                       counters, queue depths, latencies, throughput\n"
"  top [-d SECONDS] [-n COUNT] refresh a compact view (default every 1 s)\n"
"  get [KEY...]                tunables\n"
"  set KEY=VALUE...            change tunables (all or none)\n"
"  scheduler deadline|noop|elevator\n"
"  class EXPORT rt|be|idle     an export's priority class, from its next request\n"
"  ping                        is the export there?\n"
"  check-param KEY VALUE       validate a filter parameter (no socket)\n"
"  check-backing PATH [ro]     can PATH be opened as a backing? (no socket)\n"
"Socket: -s PATH, or -i NAME for " RUNDIR "/NAME.ctl, or $NBD_DEADLINE_CONTROL,\n"
"or the only " RUNDIR "/*.ctl.\n", progname);
}

static void __attribute__ ((noreturn, format (printf, 1, 2)))
die (const char *fmt, ...)
{
  va_list ap;

  fprintf (stderr, "%s: ", progname);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
  exit (1);
}

/* ---- The socket ---------------------------------------------------- */

static void
pick_socket (void)
{
  const char *env = getenv ("NBD_DEADLINE_CONTROL");
  static char buf[256];
  glob_t g;

  if (sock_path)
    return;
  if (instance) {
    if (strchr (instance, '/') != NULL)
      die ("-i %s: an instance name has no '/'", instance);
    snprintf (buf, sizeof buf, RUNDIR "/%s.ctl", instance);
    sock_path = buf;
    return;
  }
  if (env && *env) {
    sock_path = env;
    return;
  }
  if (glob (RUNDIR "/*.ctl", 0, NULL, &g) == 0 && g.gl_pathc == 1) {
    snprintf (buf, sizeof buf, "%s", g.gl_pathv[0]);
    sock_path = buf;
    globfree (&g);
    return;
  }
  die ("which export? give -s SOCKET or -i NAME (no single " RUNDIR "/*.ctl)");
}

/* The instance label: -i NAME, else the socket's name without .ctl. */
static const char *
instance_name (void)
{
  const char *b;
  size_t n;

  if (instance)
    return instance;
  b = strrchr (sock_path, '/');
  b = b ? b + 1 : sock_path;
  n = strlen (b);
  if (n > 4 && strcmp (b + n - 4, ".ctl") == 0)
    n -= 4;
  instance = strndup (b, n);
  return instance;
}

/* Connects to the socket and sends line.  A server that refuses us may
 * answer and close before the line is sent: then *send_errno says why,
 * and the caller still reads what it said.
 */
static int
send_request (const char *line, int *send_errno)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  struct timeval tv = { .tv_sec = TIMEOUT_S };
  size_t line_len = strlen (line);
  int fd;

  *send_errno = 0;
  if (strlen (sock_path) >= sizeof sa.sun_path)
    die ("%s: socket path too long", sock_path);
  strcpy (sa.sun_path, sock_path);
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    die ("socket: %s", strerror (errno));
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect (fd, (struct sockaddr *) &sa, sizeof sa) < 0)
    die ("%s: %s", sock_path, strerror (errno));
  if (send (fd, line, line_len, MSG_NOSIGNAL) != (ssize_t) line_len ||
      send (fd, "\n", 1, MSG_NOSIGNAL) != 1) {
    if (errno != EPIPE && errno != ECONNRESET)
      die ("%s: sending: %s", sock_path, strerror (errno));
    *send_errno = errno;
  }
  return fd;
}

/* The whole answer, until the server closes, NUL-terminated (malloc'd);
 * closes fd.
 */
static char *
read_answer (int fd, int send_errno)
{
  size_t len = 0, cap = 8192;
  char *buf = malloc (cap);

  if (buf == NULL)
    die ("out of memory");
  for (;;) {
    ssize_t n;

    if (len + 1 >= cap) {
      if (cap >= (1u << 20))
        die ("%s: answer too long", sock_path);
      cap *= 2;
      buf = realloc (buf, cap);
      if (buf == NULL)
        die ("out of memory");
    }
    n = recv (fd, buf + len, cap - len - 1, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == ECONNRESET && (len > 0 || send_errno))
      break;
    if (n < 0)
      die ("%s: %s", sock_path,
           errno == EAGAIN ? "no answer within 5 s" : strerror (errno));
    if (n == 0)
      break;
    len += n;
  }
  close (fd);
  buf[len] = '\0';
  if (len == 0 && send_errno)
    die ("%s: sending: %s", sock_path, strerror (send_errno));
  return buf;
}

/* "ok" then NAME VALUE lines into r->kv (pointing into r->buf); an
 * "error REASON" answer dies with the server's reason.
 */
static void
parse_answer (struct reply *r)
{
  char *p, *nl;

  if (strncmp (r->buf, "ok\n", 3) != 0) {
    nl = strchr (r->buf, '\n');
    if (nl)
      *nl = '\0';
    if (strncmp (r->buf, "error ", 6) == 0)
      die ("%s", r->buf + 6);
    die ("%s: unexpected answer '%.80s'", sock_path, r->buf);
  }
  r->kv = NULL;
  r->n = 0;
  for (p = r->buf + 3; *p; p = nl + 1) {
    char *sp;

    nl = strchr (p, '\n');
    if (nl == NULL)
      break;
    *nl = '\0';
    sp = strchr (p, ' ');
    if (sp == NULL)
      continue;
    *sp = '\0';
    r->kv = realloc (r->kv, (r->n + 1) * sizeof *r->kv);
    if (r->kv == NULL)
      die ("out of memory");
    r->kv[r->n].name = p;
    r->kv[r->n].value = sp + 1;
    r->n++;
  }
}

/* Send one request, parse the answer.  Dies on any failure. */
static void
request (const char *line, struct reply *r)
{
  int send_errno;
  int fd = send_request (line, &send_errno);

  r->buf = read_answer (fd, send_errno);
  parse_answer (r);
}

static void
reply_free (struct reply *r)
{
  free (r->buf);
  free (r->kv);
}

static const char *
get (const struct reply *r, const char *name)
{
  size_t i;

  for (i = 0; i < r->n; ++i)
    if (strcmp (r->kv[i].name, name) == 0)
      return r->kv[i].value;
  return NULL;
}

static double
num (const struct reply *r, const char *name)
{
  const char *v = get (r, name);

  return v ? strtod (v, NULL) : 0;
}

static bool
is_number (const char *s)
{
  char *end;

  if (*s == '\0')
    return false;
  errno = 0;
  strtod (s, &end);
  return *end == '\0' && errno == 0 && (*s == '-' || (*s >= '0' && *s <= '9'));
}

/* ---- Output formats ------------------------------------------------ */

static void
json_string (const char *s)
{
  putchar ('"');
  for (; *s; ++s) {
    unsigned char c = *s;
    if (c == '"' || c == '\\')
      printf ("\\%c", c);
    else if (c < 0x20)
      printf ("\\u%04x", c);
    else
      putchar (c);
  }
  putchar ('"');
}

static void
print_json (const struct reply *r)
{
  size_t i;

  printf ("{");
  for (i = 0; i < r->n; ++i) {
    printf ("%s\n  ", i ? "," : "");
    json_string (r->kv[i].name);
    printf (": ");
    if (is_number (r->kv[i].value))
      printf ("%s", r->kv[i].value);
    else
      json_string (r->kv[i].value);
  }
  printf ("\n}\n");
}

static void
print_raw (const struct reply *r)
{
  size_t i;

  for (i = 0; i < r->n; ++i)
    printf ("%s %s\n", r->kv[i].name, r->kv[i].value);
}

static bool
ends_with (const char *s, const char *suffix)
{
  size_t a = strlen (s), b = strlen (suffix);

  return a >= b && strcmp (s + a - b, suffix) == 0;
}

static void
prom_label_value (const char *s)
{
  for (; *s; ++s) {
    if (*s == '"' || *s == '\\')
      printf ("\\%c", *s);
    else if (*s == '\n')
      printf ("\\n");
    else
      putchar (*s);
  }
}

/* Prometheus text format, for node_exporter's textfile collector.
 * *_total are counters; X_latency_{pNN,sum,count}_us make a summary
 * nbd_deadline_X_latency_seconds; strings go into nbd_deadline_info.
 */
static void
print_prometheus (const struct reply *r)
{
  static const struct { const char *suffix, *quantile; } q[] = {
    { "_p50_us", "0.5" }, { "_p90_us", "0.9" }, { "_p99_us", "0.99" },
    { "_p999_us", "0.999" },
  };
  const char *inst = instance_name ();
  size_t i, j;

  printf ("# HELP nbd_deadline_info Export settings (value always 1).\n"
          "# TYPE nbd_deadline_info gauge\n"
          "nbd_deadline_info{export=\"");
  prom_label_value (inst);
  printf ("\"");
  for (i = 0; i < r->n; ++i)
    if (!is_number (r->kv[i].value)) {
      printf (",%s=\"", r->kv[i].name);
      prom_label_value (r->kv[i].value);
      printf ("\"");
    }
  printf ("} 1\n");

  for (i = 0; i < r->n; ++i) {
    const char *n = r->kv[i].name, *v = r->kv[i].value;
    const char *lat = strstr (n, "_latency_");

    if (!is_number (v))
      continue;
    if (lat) {
      int base = (int) (lat - n);

      if (ends_with (n, "_latency_count")) {
        printf ("# HELP nbd_deadline_%.*s_latency_seconds %.*s latency "
                "(submit to completion for read/write).\n"
                "# TYPE nbd_deadline_%.*s_latency_seconds summary\n",
                base, n, base, n, base, n);
        for (j = 0; j < sizeof q / sizeof q[0]; ++j) {
          char key[96];
          snprintf (key, sizeof key, "%.*s_latency%s", base, n, q[j].suffix);
          printf ("nbd_deadline_%.*s_latency_seconds{export=\"", base, n);
          prom_label_value (inst);
          printf ("\",quantile=\"%s\"} %.9g\n", q[j].quantile, num (r, key) / 1e6);
        }
        {
          char key[96];
          snprintf (key, sizeof key, "%.*s_latency_sum_us", base, n);
          printf ("nbd_deadline_%.*s_latency_seconds_sum{export=\"", base, n);
          prom_label_value (inst);
          printf ("\"} %.9g\n", num (r, key) / 1e6);
        }
        printf ("nbd_deadline_%.*s_latency_seconds_count{export=\"", base, n);
        prom_label_value (inst);
        printf ("\"} %s\n", v);
      }
      else if (ends_with (n, "_latency_max_us")) {
        printf ("# TYPE nbd_deadline_%.*s_latency_max_seconds gauge\n"
                "nbd_deadline_%.*s_latency_max_seconds{export=\"", base, n, base, n);
        prom_label_value (inst);
        printf ("\"} %.9g\n", strtod (v, NULL) / 1e6);
      }
      continue;                 /* the quantiles and sum went above */
    }
    {
      /* NAME{LABELS}: per class or per export; one TYPE line a name. */
      const char *brace = strchr (n, '{');
      int base = brace ? (int) (brace - n) : (int) strlen (n);
      size_t k;

      for (k = 0; k < i; ++k)
        if (strncmp (r->kv[k].name, n, base) == 0 &&
            (r->kv[k].name[base] == '{' || r->kv[k].name[base] == '\0'))
          break;
      if (k == i)
        printf ("# TYPE nbd_deadline_%.*s %s\n", base, n,
                ends_with (n, "_total") || (brace && strstr (n, "_total{")) ? "counter" : "gauge");
      printf ("nbd_deadline_%.*s{export=\"", base, n);
      prom_label_value (inst);
      if (brace)
        printf ("\",%.*s} %s\n", (int) strlen (brace + 1) - 1, brace + 1, v);
      else
        printf ("\"} %s\n", v);
    }
  }
}

/* ---- Human-readable ------------------------------------------------ */

static const char *
human_bytes (double b, char *buf, size_t len)
{
  static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
  int i = 0;

  while (b >= 1024 && i < 4) {
    b /= 1024;
    i++;
  }
  snprintf (buf, len, i ? "%.1f %s" : "%.0f %s", b, u[i]);
  return buf;
}

static const char *
human_us (double us, char *buf, size_t len)
{
  if (us < 1000)
    snprintf (buf, len, "%.0fus", us);
  else if (us < 1e6)
    snprintf (buf, len, "%.2fms", us / 1e3);
  else
    snprintf (buf, len, "%.2fs", us / 1e6);
  return buf;
}

static void
print_latency_row (const struct reply *r, const char *name, const char *label)
{
  static const char *const cols[] = { "p50", "p90", "p99", "p999", "max" };
  char key[64], b[32];
  size_t i;

  printf ("  %-7s", label);
  for (i = 0; i < sizeof cols / sizeof cols[0]; ++i) {
    snprintf (key, sizeof key, "%s_latency_%s_us", name, cols[i]);
    printf (" %9s", human_us (num (r, key), b, sizeof b));
  }
  snprintf (key, sizeof key, "%s_latency_count", name);
  printf (" %12.0f\n", num (r, key));
}

static void
print_stats_text (const struct reply *r, bool compact)
{
  char b1[32], b2[32];
  double up = num (r, "uptime_seconds");

  printf ("export %s: %s (%s, depth %.0f), scheduler %s, up %.0fs\n",
          instance_name (), get (r, "backing") ? get (r, "backing") : "?",
          get (r, "dispatch") ? get (r, "dispatch") : "?", num (r, "depth"),
          get (r, "scheduler") ? get (r, "scheduler") : "?", up);
  printf ("throughput  read %s/s  write %s/s  %.0f req/s\n",
          human_bytes (num (r, "read_bytes_per_second"), b1, sizeof b1),
          human_bytes (num (r, "write_bytes_per_second"), b2, sizeof b2),
          num (r, "requests_per_second"));
  printf ("queues      reads %.0f  writes %.0f  flushes %.0f  held %.0f  in flight %.0f\n",
          num (r, "queued_reads"), num (r, "queued_writes"),
          num (r, "queued_flushes"), num (r, "held"), num (r, "inflight"));
  printf ("requests    %.0f done (reads %.0f, writes %.0f, flushes %.0f), failed %.0f\n",
          num (r, "completed_total"), num (r, "reads_total"),
          num (r, "writes_total"), num (r, "flushes_total"), num (r, "failed_total"));
  printf ("bytes       read %s, written %s\n",
          human_bytes (num (r, "read_bytes_total"), b1, sizeof b1),
          human_bytes (num (r, "write_bytes_total"), b2, sizeof b2));
  printf ("latency         p50       p90       p99     p99.9       max        count\n");
  print_latency_row (r, "read", "read");
  print_latency_row (r, "write", "write");
  if (!compact) {
    print_latency_row (r, "inbox", "inbox");
    print_latency_row (r, "queue", "queued");
    print_latency_row (r, "device", "device");
    print_latency_row (r, "read_queue", "rd.wait");
    print_latency_row (r, "read_device", "rd.dev");
  }
  printf ("batches     read %.0f, write %.0f; expired read %.0f, write %.0f; "
          "starved %.0f\n",
          num (r, "read_batches_total"), num (r, "write_batches_total"),
          num (r, "read_expired_total"), num (r, "write_expired_total"),
          num (r, "starved_switches_total"));
  if (compact)
    return;
  printf ("units       %.0f holding %.0f requests; merges back %.0f, front %.0f; "
          "seeks %.0f\n",
          num (r, "units_total"), num (r, "unit_members_total"),
          num (r, "merged_back_total"), num (r, "merged_front_total"),
          num (r, "seeks_total"));
  printf ("other       hazard holds %.0f, preemptions %.0f, write holds %.0f, "
          "anticipation %.0f waits/%.0f hits/%.0f misses, rmw %.0f\n",
          num (r, "hazard_holds_total"), num (r, "preemptions_total"),
          num (r, "write_holds_total"),
          num (r, "antic_waits_total"), num (r, "antic_hits_total"),
          num (r, "antic_misses_total"), num (r, "rmw_total"));
  printf ("peaks       in flight %.0f, waiting %.0f; depth now %.0f\n",
          num (r, "inflight_max"), num (r, "waiting_max"), num (r, "depth_now"));
  /* A client held back by nbdkit's threads: its other requests are not
   * in the scheduler at all (src/filter/threads.h).
   */
  if (num (r, "connection_full_total") > 0)
    printf ("threads     %.0f times a connection's last nbdkit thread was taken: "
            "raise nbdkit --threads\n", num (r, "connection_full_total"));
  if (num (r, "writeback_answered_total") > 0)
    printf ("write-back  %.0f writes answered early, at most %s pending, %.0f failed\n",
            num (r, "writeback_answered_total"),
            human_bytes (num (r, "writeback_bytes_max"), b1, sizeof b1),
            num (r, "writeback_failed_total"));
}

static void
show (const struct reply *r, enum format f, bool is_stats)
{
  switch (f) {
  case F_JSON: print_json (r); break;
  case F_RAW: print_raw (r); break;
  case F_PROM:
    if (is_stats)
      print_prometheus (r);
    else
      print_raw (r);
    break;
  case F_TEXT:
    if (is_stats)
      print_stats_text (r, false);
    else {
      size_t i;
      for (i = 0; i < r->n; ++i)
        printf ("%-15s %s\n", r->kv[i].name, r->kv[i].value);
    }
    break;
  }
}

/* ---- Commands ------------------------------------------------------ */

static int
cmd_top (int argc, char **argv, enum format f)
{
  double delay = 1;
  long count = -1, i;
  bool tty = isatty (STDOUT_FILENO);
  int c;

  optind = 1;
  while ((c = getopt (argc, argv, "+d:n:")) != -1) {
    char *end;
    switch (c) {
    case 'd':
      delay = strtod (optarg, &end);
      if (*end || !(delay >= 0.1 && delay <= 3600))
        die ("top -d: '%s' is not a number of seconds in 0.1..3600", optarg);
      break;
    case 'n':
      count = strtol (optarg, &end, 10);
      if (*end || count < 1)
        die ("top -n: '%s' is not a positive count", optarg);
      break;
    default:
      exit (2);
    }
  }
  if (optind != argc)
    die ("top: unexpected '%s'", argv[optind]);

  for (i = 0; count < 0 || i < count; ++i) {
    struct reply r;
    struct timespec ts;
    time_t now = time (NULL);
    char tbuf[32];

    if (i > 0) {
      ts.tv_sec = (time_t) delay;
      ts.tv_nsec = (long) ((delay - ts.tv_sec) * 1e9);
      nanosleep (&ts, NULL);
    }
    request ("stats", &r);
    if (tty)
      printf ("\033[H\033[2J");
    strftime (tbuf, sizeof tbuf, "%H:%M:%S", localtime (&now));
    if (f == F_TEXT) {
      printf ("nbd-deadline-ctl top  %s  (every %gs, ^C to quit)\n", tbuf, delay);
      print_stats_text (&r, true);
    }
    else
      show (&r, f, true);
    if (!tty)
      printf ("\n");
    fflush (stdout);
    reply_free (&r);
  }
  return 0;
}

static int
cmd_check_param (int argc, char **argv)
{
  struct filter_params p;
  char key[128], err[256];
  int r;

  if (argc != 3)
    die ("check-param: give KEY VALUE");
  params_default (&p);
  snprintf (key, sizeof key, "%s%s",
            strncmp (argv[1], PARAMS_PREFIX, strlen (PARAMS_PREFIX)) == 0
            ? "" : PARAMS_PREFIX, argv[1]);
  r = params_set (&p, key, argv[2], err, sizeof err);
  params_free (&p);
  if (r < 0) {
    fprintf (stderr, "%s\n", err);
    return 1;
  }
  if (r == 0) {
    fprintf (stderr, "unknown parameter %s\n", key);
    return 1;
  }
  return 0;
}

static int
cmd_check_backing (int argc, char **argv)
{
  bool ro = argc == 3 && strcmp (argv[2], "ro") == 0;
  struct stat sb;
  int fd, flags;

  if (argc < 2 || argc > 3 || (argc == 3 && !ro))
    die ("check-backing: give PATH [ro]");
  if (stat (argv[1], &sb) < 0) {
    fprintf (stderr, "%s: %s\n", argv[1], strerror (errno));
    return 1;
  }
  if (!S_ISBLK (sb.st_mode) && !S_ISREG (sb.st_mode)) {
    fprintf (stderr, "%s: not a block device or regular file\n", argv[1]);
    return 1;
  }
  flags = (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC;
  /* O_EXCL on a block device fails with EBUSY while it is mounted or
   * held by another exclusive user (a RAID, LVM, another export).
   */
  if (S_ISBLK (sb.st_mode))
    flags |= O_EXCL;
  fd = open (argv[1], flags);
  if (fd < 0) {
    fprintf (stderr, "%s: %s\n", argv[1],
             errno == EBUSY ? "busy (mounted, or in use by another program)"
                            : strerror (errno));
    return 1;
  }
  close (fd);
  return 0;
}

int
main (int argc, char **argv)
{
  static const struct option long_opts[] = {
    { "socket", required_argument, NULL, 's' },
    { "instance", required_argument, NULL, 'i' },
    { "json", no_argument, NULL, 'j' },
    { "prometheus", no_argument, NULL, 'p' },
    { "raw", no_argument, NULL, 'r' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
  };
  enum format f = F_TEXT;
  struct reply r;
  const char *cmd;
  int c;

  while ((c = getopt_long (argc, argv, "+s:i:jprhV", long_opts, NULL)) != -1) {
    switch (c) {
    case 's': sock_path = optarg; break;
    case 'i': instance = optarg; break;
    case 'j': f = F_JSON; break;
    case 'p': f = F_PROM; break;
    case 'r': f = F_RAW; break;
    case 'h': usage (stdout); return 0;
    case 'V': printf ("%s %s\n", progname, PACKAGE_VERSION); return 0;
    default: usage (stderr); return 2;
    }
  }
  if (optind >= argc) {
    usage (stderr);
    return 2;
  }
  argc -= optind;
  argv += optind;
  cmd = argv[0];

  if (strcmp (cmd, "check-param") == 0)
    return cmd_check_param (argc, argv);
  if (strcmp (cmd, "check-backing") == 0)
    return cmd_check_backing (argc, argv);

  if (strcmp (cmd, "stats") == 0 || strcmp (cmd, "ping") == 0) {
    if (argc != 1)
      die ("%s takes no arguments", cmd);
    pick_socket ();
    request (cmd, &r);
    if (strcmp (cmd, "ping") == 0)
      printf ("ok\n");
    else
      show (&r, f, true);
    reply_free (&r);
    return 0;
  }
  if (strcmp (cmd, "top") == 0) {
    pick_socket ();
    return cmd_top (argc, argv, f);
  }
  if (strcmp (cmd, "get") == 0 || strcmp (cmd, "set") == 0 ||
      strcmp (cmd, "scheduler") == 0 || strcmp (cmd, "class") == 0) {
    char line[1024];
    size_t n = 0;
    int i;

    if (strcmp (cmd, "set") == 0 && argc < 2)
      die ("set: give KEY=VALUE...");
    if (strcmp (cmd, "scheduler") == 0 && argc != 2)
      die ("scheduler: give deadline, noop or elevator");
    if (strcmp (cmd, "class") == 0) {
      if (argc != 3)
        die ("class: give EXPORT rt|be|idle");
      if (argv[1][0] == '\0')
        argv[1] = (char *) "\"\"";   /* the default export, as the socket spells it */
    }
    for (i = 0; i < argc; ++i) {
      if (strpbrk (argv[i], " \n\r") != NULL || argv[i][0] == '\0')
        die ("'%s': arguments may not be empty or contain spaces", argv[i]);
      n += snprintf (line + n, n < sizeof line ? sizeof line - n : 0, "%s%s",
                     i ? " " : "", argv[i]);
    }
    if (n >= sizeof line)
      die ("request too long");
    pick_socket ();
    request (line, &r);
    show (&r, f, false);
    reply_free (&r);
    return 0;
  }
  fprintf (stderr, "%s: unknown command '%s' (see --help)\n", progname, cmd);
  return 2;
}
