/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The request worker: threads that build and encode the replies to
 * requests that send stacks (reports, snapshots), so that however large a
 * reply is, the event loop goes on draining the ring buffer; the loop sends
 * the bytes at the client's pace, as any reply. docs/design.md says why a
 * thread and not a fork()ed child.
 *
 * A request is served on a frozen core. The worker asks the loop to freeze;
 * the loop drains the ring buffer, applies everything, and from then on
 * keeps draining into a queue without applying (worker_defer_event): the
 * tracker, the targets, the timeline and the symbolizer do not change and
 * the worker reads them as they are, without copying them. The worker
 * builds the snapshot and thaws; then it encodes it and hands the bytes to
 * the loop, which sends them. After a thaw the loop catches up: each drain
 * applies a slice of the queue (worker_catch_up), newer records still
 * queue behind it, until it is empty. While frozen or catching up the loop
 * only reads the core: requests that would change it (reset-peak, attach,
 * detach), timer work and target exits wait (the service's resume).
 *
 * Two lanes, two threads: one for requests whose answer is a whole snapshot
 * (every stack, the block list: a second or more at a million blocks) and
 * for leak scans (scan.h: a few freezes of their own, between which the
 * target stands still or the marking runs), one
 * for those whose answer is small however large the heap (grouped views,
 * leaks, the top N stacks, stats). The small lane may join a freeze the
 * whole lane holds, reading the core as it was when that froze, so that
 * `stats` or `report --by line` need not wait for a snapshot to be built;
 * a whole snapshot never joins a freeze, so no freeze lasts longer than one
 * request of each lane.
 *
 * Invariants: only the loop thread mutates the core, and only while not
 * frozen; the lanes read the core only while frozen, and after a thaw use
 * only their own snapshot and strings the symbolizer keeps
 * (symbolizer_hold). What a lookup fills in the symbolizer's caches, the
 * lanes fill under the worker's lock (the view's sym_lock).
 *
 * The worker belongs to the server (server.c starts it on the first request
 * that sends stacks); the loop asks it through server_worker() whether to
 * defer, and hands it its eventfd's wakeups. Every function here takes a
 * NULL worker as "none started".
 */
#ifndef MEMTRACE_SERVE_WORKER_H
#define MEMTRACE_SERVE_WORKER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"
#include "memtrace/snapshot.h"

struct server;
struct service;
struct stack_ends;
struct worker;

/* Requests waiting for the worker at most; more get "busy". */
#define WORKER_MAX_QUEUED 256

struct worker_stats {
	uint64_t served;	  /* snapshots built */
	uint64_t failed;	  /* error replies */
	uint64_t freezes;	  /* times the core was frozen for a request */
	uint64_t freeze_max_ns;	  /* the longest freeze */
	uint64_t deferred_events; /* events queued during freezes, then applied */
	uint64_t deferred_max;	  /* the most queued at once */
	uint64_t joined;	  /* small requests that joined a whole snapshot's freeze */
};

/*
 * Start the lanes for srv, whose replies go back through server_deliver();
 * its eventfd is watched in epfd (TAG_WORKER). ends is the server's cache of
 * where stacks end, which the worker brings up to date at each freeze. NULL
 * (logged) when it cannot.
 */
struct worker *worker_start(struct server *srv, int epfd, const struct service *svc,
			    struct stack_ends *ends);

/*
 * Hand the request of the client in slot (with that serial) to the worker,
 * with body (malloc'd, body_len bytes: a scan's suppressions; NULL for
 * none), which the worker frees; its answer comes back through
 * server_deliver(). Returns 0, or -1 when too many wait.
 */
int worker_submit(struct worker *w, int slot, uint64_t serial, const struct proto_request *r,
		  char *body, size_t body_len);

/*
 * Is the core frozen for the worker, or still catching up after a thaw?
 * Then ring buffer records must be deferred, and nothing else may change
 * the core. (Loop thread only.)
 */
int worker_frozen(const struct worker *w);

/* While worker_frozen(): keep a ring buffer record to apply later, in order. */
void worker_defer_event(struct worker *w, const void *data, size_t len);

/*
 * After a drain: if thawed with events deferred, apply a slice of them
 * (about 2 ms); once none is left, resume what waited and grant a freeze
 * the worker waits for.
 */
void worker_catch_up(struct worker *w);

/* The worker's eventfd is readable (TAG_WORKER): deliver its answers, thaw
 * or freeze as it asks. */
void worker_event(struct worker *w);

void worker_get_stats(const struct worker *w, struct worker_stats *out);
/* The lock the lanes fill the symbolizer's caches under (NULL without a worker):
 * the loop takes it too to read them while lanes may run. */
pthread_mutex_t *worker_sym_lock(struct worker *w);
/* The worker's figures of section 42: freezes, the longest, events deferred. */
void worker_daemon_figures(const struct worker *w, struct snap_daemon *out);

/*
 * --realtime: the calling thread (the loop) at SCHED_FIFO priority 1, reset
 * on fork (children and the lanes stay SCHED_OTHER), so that it drains the
 * ring buffer when its timer fires however busy the machine. 0, or -1
 * (logged; it goes on at its normal priority).
 */
int worker_loop_realtime(void);

/* Stop the worker (after the requests its lanes build); waiting ones are dropped. */
void worker_stop(struct worker *w);

#endif
