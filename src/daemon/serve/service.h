/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What serving (the socket server, the Prometheus endpoint) may ask of the
 * rest of the daemon: read the state through a view, and act through a few
 * operations. main.c fills both in; serve/ calls nothing else of the daemon,
 * and nothing it reads through the view is written.
 */
#ifndef MEMTRACE_SERVE_SERVICE_H
#define MEMTRACE_SERVE_SERVICE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/core/viewrows.h"
#include "memtrace/counters.h"
#include "memtrace/snapshot.h"

struct tracker;
struct target;
struct timeline;
struct resident_table;
struct symbolizer;
struct pystacks;

/* The daemon's state as a request reads it. */
struct daemon_view {
	const struct tracker *tracker;
	const struct target *targets; /* every generation of every target */
	int ntargets;
	const struct timeline *timeline;
	const struct resident_table *resident; /* each target's sampled resident memory */
	const struct snap_options *options;
	struct symbolizer *sym; /* naming frames fills its caches, nothing else */
	struct pystacks *py;
	uint64_t start_ns; /* when the daemon started (CLOCK_MONOTONIC) */
	uint64_t events_lost[MT_LOST_KIND_COUNT];
	struct snap_unwind unwind; /* the DWARF walker's tables (present = 0 without) */
	/* how the daemon keeps up: the loop's figures from view(), the worker's
	 * and the symbolizer's added by serving (section 42) */
	struct snap_daemon daemon;
	/* whole-host mode (section 51): has_match, and match.what is the
	 * daemon's string */
	int has_match;
	struct snap_match match;
	/* held around what fills the symbolizer's caches when two worker lanes
	 * may read at once; NULL on the loop thread */
	pthread_mutex_t *sym_lock;
	/* a request lane's view: it may read /proc at length (resident memory
	 * now, a breakdown by mapping) without the loop waiting */
	int off_loop;
	/* the rows the views show (viewrows.h), made for one request by
	 * collect_snapshot(); NULL: every row is a stack */
	const struct viewrows *rows;
	/* the ring buffer's consumer position when the view was taken: every
	 * record before it has been applied (a scan's barrier, scan.h) */
	uint64_t ring_consumed;
};

/* The stack whose frames row id shows. */
static inline uint32_t view_row_stack(const struct daemon_view *v, uint32_t id)
{
	return v->rows ? viewrows_stack(v->rows, id) : id;
}

struct service {
	void *ctx;
	/* Apply every event queued until now: a reply covers all that the
	 * target did before the request. */
	void (*drain)(void *ctx);
	/* The state now (call again after anything below: targets may move). */
	void (*view)(void *ctx, struct daemon_view *v);
	/* memtracectl attach/detach/reset-peak: 0, or -1 with a one-line reason. */
	int (*attach)(void *ctx, int pid, char *err, size_t errlen);
	int (*detach)(void *ctx, int pid, char *err, size_t errlen);
	void (*reset_peak)(void *ctx);
	/*
	 * The worker (worker.h): while it reads the core, the loop defers ring
	 * buffer records instead of applying them; ingest applies one, in
	 * order, after the thaw; resume runs what waited for the core to move
	 * again (target exits seen meanwhile).
	 */
	void (*ingest)(void *ctx, const void *data, size_t len);
	void (*resume)(void *ctx);
	/*
	 * The ring buffer's producer position now, from any thread: a record
	 * written before lies before it (compare with daemon_view.ring_consumed);
	 * UINT64_MAX when it cannot be known.
	 */
	uint64_t (*ring_produced)(void *ctx);
};

#endif
