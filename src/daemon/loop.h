/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The event loop (loop.c), and how the daemon's parts are wired to it: the
 * service serving acts through and ingest's hooks. What it watches is
 * registered through watch.h (and the service's watch).
 */
#ifndef MEMTRACE_DAEMON_LOOP_H
#define MEMTRACE_DAEMON_LOOP_H

struct daemon;
struct service;

/* Fill svc (serve/service.h) with the daemon d, and hook d's ingest to the
 * targets and the server; svc must live as long as d. */
void loop_wire(struct daemon *d, struct service *svc);

/*
 * --realtime: the calling thread (the loop) at SCHED_FIFO priority 1, reset
 * on fork (children and the request lanes stay SCHED_OTHER), so that it
 * drains the ring buffer when its timer fires however busy the machine. 0,
 * or -1 (logged; it goes on at its normal priority).
 */
int loop_realtime(void);

/* Run until SIGINT or SIGTERM on sigfd; returns the exit code. */
int run_loop(struct daemon *d, int sigfd, int timerfd);

#endif
