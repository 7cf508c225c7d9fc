/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The request worker: threads that build and encode the replies to
 * requests that send stacks (reports, snapshots), so that however large a
 * reply is, the event loop goes on draining the ring buffer; the loop sends
 * the bytes at the client's pace, as any reply. docs/design.md says why a
 * thread and not a fork()ed child.
 *
 * A request is served on a frozen core. A lane asks the loop to freeze
 * it; the loop freezes ingest for it (ingest.h: everything drained is
 * applied, then records queue instead of changing the core), and the lane
 * reads the tracker, the targets, the timeline and the symbolizer as they
 * are, without copying them. It builds the snapshot and thaws; then it
 * encodes it and hands the bytes to the loop, which sends them. Until
 * ingest has caught up, requests that would change the core (reset-peak,
 * attach, detach), timer work and target exits wait.
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
 * only their own snapshot (whose strings are its own). What a lookup fills
 * in the symbolizer's caches, the lanes fill under the worker's lock (the
 * view's sym_lock).
 *
 * The worker belongs to the server (server.c starts it on the first request
 * that sends stacks, and calls worker_resume once ingest caught up); the
 * loop hands it its eventfd's wakeups. Every function here takes a NULL
 * worker as "none started".
 */
#ifndef MEMTRACE_SERVE_WORKER_H
#define MEMTRACE_SERVE_WORKER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"
#include "memtrace/snapshot.h"

struct service;
struct stack_ends;
struct worker;

/* Requests waiting for the worker at most; more get "busy". */
#define WORKER_MAX_QUEUED 256

struct worker_stats {
	uint64_t served; /* snapshots built */
	uint64_t failed; /* error replies */
	uint64_t joined; /* small requests that joined a whole snapshot's freeze */
};

/* A reply frame (header and payload) for the client in slot, if it is still
 * that one (serial); the buffer becomes the callee's. Loop thread. */
typedef void worker_deliver_fn(void *ctx, int slot, uint8_t *frame, size_t len, uint64_t serial);

/*
 * Start the lanes; their replies go to deliver(ctx, ...), their eventfd is
 * watched through svc (WATCH_WORKER). ends is the server's cache of where
 * stacks end, which the worker brings up to date at each freeze. NULL
 * (logged) when it cannot.
 */
struct worker *worker_start(const struct service *svc, struct stack_ends *ends,
			    worker_deliver_fn *deliver, void *ctx);

/*
 * Hand the request of the client in slot (with that serial) to the worker,
 * with body (malloc'd, body_len bytes: a scan's suppressions; NULL for
 * none), which the worker frees; its answer comes back through
 * deliver(). Returns 0, or -1 when too many wait.
 */
int worker_submit(struct worker *w, int slot, uint64_t serial, const struct proto_request *r,
		  char *body, size_t body_len);

/*
 * Hand an OOM kill's snapshot (r: a snapshot of its pid) to the whole lane,
 * which builds it on a frozen core as any snapshot and writes it to j's file
 * (oomsnap.h) instead of a client; one log line says where, or why not.
 * One still queued when the worker stops is written then. 0, or -1 when
 * too many wait.
 */
struct oomsnap_job;
int worker_submit_oom(struct worker *w, const struct proto_request *r, const struct oomsnap_job *j);

/* Ingest caught up after a thaw: a freeze a lane waits for is granted now. */
void worker_resume(struct worker *w);

/* The worker's eventfd is readable (WATCH_WORKER): deliver its answers, thaw
 * or freeze as it asks. */
void worker_event(struct worker *w);

void worker_get_stats(const struct worker *w, struct worker_stats *out);
/* The lock the lanes fill the symbolizer's caches under (NULL without a worker):
 * the loop takes it too to read them while lanes may run. */
pthread_mutex_t *worker_sym_lock(struct worker *w);

/* Stop the worker (after the requests its lanes build); waiting ones are dropped. */
void worker_stop(struct worker *w);

#endif
