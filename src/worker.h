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
 * detach), timer work and target exits wait (daemon_resume()).
 *
 * Two lanes, two threads: one for requests whose answer is a whole snapshot
 * (every stack, the block list: a second or more at a million blocks), one
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
 * lanes fill under worker_symbols_lock().
 */
#ifndef MEMTRACE_WORKER_H
#define MEMTRACE_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct daemon;

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
 * Hand the request of the client in slot (with that serial) to the worker
 * (started on first use); its answer comes back through server_deliver().
 * Returns 0, or -1 when it could not (no thread, or too many waiting).
 */
int worker_submit(struct daemon *d, int slot, uint64_t serial, const struct proto_request *r);

/*
 * Is the core frozen for the worker, or still catching up after a thaw?
 * Then ring buffer records must be deferred, and nothing else may change
 * the core. (Loop thread only.)
 */
int worker_frozen(const struct daemon *d);

/* While worker_frozen(): keep a ring buffer record to apply later, in order. */
void worker_defer_event(struct daemon *d, const void *data, size_t len);

/*
 * After a drain: if thawed with events deferred, apply a slice of them
 * (about 2 ms); once none is left, call daemon_resume() and grant a freeze
 * the worker waits for.
 */
void worker_catch_up(struct daemon *d);

/* The worker's eventfd is readable (TAG_WORKER): deliver its answers, thaw
 * or freeze as it asks. */
void worker_event(struct daemon *d);

void worker_get_stats(const struct daemon *d, struct worker_stats *out);

/*
 * Around what fills the symbolizer's caches (a lookup not cached yet) or
 * reads its figures while lanes may run: two lanes can read the frozen core
 * at once. No-ops before the worker starts.
 */
void worker_symbols_lock(struct daemon *d);
void worker_symbols_unlock(struct daemon *d);

/*
 * --realtime: the calling thread (the loop) at SCHED_FIFO priority 1, reset
 * on fork (children and the lanes stay SCHED_OTHER), so that it drains the
 * ring buffer when its timer fires however busy the machine. 0, or -1
 * (logged; it goes on at its normal priority).
 */
int worker_loop_realtime(void);

/* Stop the worker (after the requests its lanes build); waiting ones are dropped. */
void worker_stop(struct daemon *d);

#endif
