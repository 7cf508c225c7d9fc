/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The event loop (loop.c). What it watches is registered through watch.h. */
#ifndef MEMTRACE_DAEMON_LOOP_H
#define MEMTRACE_DAEMON_LOOP_H

struct daemon;

/* Run until SIGINT or SIGTERM on sigfd; returns the exit code. */
int run_loop(struct daemon *d, int sigfd, int timerfd);

#endif
