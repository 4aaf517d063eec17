/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: the control socket.
 *
 * A UNIX stream socket, served from the engine's libev loop (through
 * engine_params.loop_init_cb), on which nbd-deadline-ctl asks for
 * statistics and reads or changes tunables while the engine runs.
 *
 * Protocol (one request per connection): the client sends one line of
 * at most CONTROL_MAX_LINE bytes ending in '\n'; the server answers
 * and closes.  The answer's first line is "ok" or "error REASON"; after
 * "ok" come lines "NAME VALUE".  Counters are named *_total; latencies
 * are in microseconds.  Requests:
 *
 *   ping                      just "ok"
 *   stats                     counters, queue depths, latencies, rates
 *   get [KEY...]              tunables (all, or the ones named)
 *   set KEY=VALUE...          validated together, applied together
 *   scheduler deadline|noop|elevator
 *
 * Only the socket's owner (and root) may talk to it: the socket file is
 * 0600 and the peer's uid is checked (SO_PEERCRED).
 */
#ifndef NBD_DEADLINE_CONTROL_H
#define NBD_DEADLINE_CONTROL_H

#include <stddef.h>

#include "engine.h"

#define CONTROL_MAX_LINE 1024

struct control;

/* Binds and listens on path, owner-only.  A stale socket (nobody
 * listening) is replaced; a live one or any other file is refused.
 * Starts no thread (safe before fork).  NULL with errno set and a
 * one-line reason in err.
 */
struct control *control_new (const char *path, char *err, size_t errlen);

/* The engine to serve, and extra "NAME VALUE" lines for stats (e.g.
 * "backing /dev/sdb\ndispatch direct\n"; copied).  Before the loop runs.
 */
void control_attach (struct control *c, struct engine *e, const char *info);

/* engine_params.loop_init_cb, with the control as opaque. */
void control_loop_init (void *loop, void *opaque);

/* After engine_stop (the loop no longer runs): closes every connection
 * and the socket, and removes the socket file.  NULL is fine.
 */
void control_free (struct control *c);

#endif
