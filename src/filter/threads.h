/* SPDX-License-Identifier: BSD-3-Clause */
/* nbd-deadline: how many requests of one connection nbdkit reads.
 *
 * nbdkit reads a connection's next request only when one of its
 * --threads worker threads is free, and each holds its request until
 * the filter answers it.  A client that keeps more requests outstanding
 * than that (the Linux kernel's nbd: 128 per connection) leaves the
 * rest in the socket, in the order it sent them, where the scheduler
 * cannot see them: a read sent behind a flood of writes then waits for
 * every write before it to complete, whatever the scheduler would have
 * done (bench/results/README, section J).  nbdkit 1.32 tells a filter
 * nothing of its threads, so they are read from its command line.
 */
#ifndef NBD_DEADLINE_THREADS_H
#define NBD_DEADLINE_THREADS_H

/* What a kernel client keeps outstanding per connection (nbd.ko's
 * queue depth): the fewest threads at which none waits in the socket.
 */
#define THREADS_WANTED 128

/* nbdkit's threads per connection as its arguments set them (-t N,
 * -tN, --threads N, --threads=N, within bundled short options; nbdkit's
 * default 16 when absent); -1 when they cannot be read.
 */
int threads_of_args (int argc, char *const argv[]);

/* The same for this process (/proc/self/cmdline), from the word that
 * names nbdkit on (so also under valgrind); -1 when none does.
 */
int threads_of_nbdkit (void);

#endif
