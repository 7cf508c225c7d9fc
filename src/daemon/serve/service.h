/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What serving (the socket server, the request worker, the Prometheus
 * endpoint) may ask of the rest of the daemon: read the state through a
 * view, act through a few operations, and freeze ingest (ingest.h) while a
 * request lane reads the core. The loop (loop.c) fills both in; serve/ calls
 * nothing else of the daemon above it, and nothing it reads through the view
 * is written.
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
struct timeline;
struct resident_table;
struct symbolizer;
struct pystacks;
struct allocator;
struct ingest;

/* One generation of a traced process, as serving reads it. */
struct view_target {
	int pid;
	uint32_t gen;	 /* its generation in the tracker (tracker_find_gen) */
	int state;	 /* enum snap_target_state */
	int exit_status; /* wait status, or -1 */
	int probes;	 /* probes attached */
	int settling;	 /* a new program: its allocator is not probed yet */
	const char *command;
	const char *note;	       /* what tracing misses, or NULL */
	const struct allocator *alloc; /* where each function is probed, or NULL */
	const char *alloc_path;	       /* which allocator, or NULL */
	uint64_t attach_ns;	       /* CLOCK_MONOTONIC when tracing began */
	uint64_t end_ns;	       /* when it exited, or 0 */
	const struct snap_oom *oom;    /* the OOM killer's mark (killed 0: none), or NULL */
};

/* The daemon's state as a request reads it. */
struct daemon_view {
	const struct tracker *tracker;
	/* every generation of every target: target(targets, k, out) for k < ntargets */
	int ntargets;
	const void *targets;
	void (*target)(const void *targets, int k, struct view_target *out);
	const struct timeline *timeline;
	const struct resident_table *resident; /* each target's sampled resident memory */
	const struct snap_options *options;
	struct symbolizer *sym; /* naming frames fills its caches, nothing else */
	struct pystacks *py;
	uint64_t start_ns; /* when the daemon started (CLOCK_MONOTONIC) */
	uint64_t events_lost[MT_LOST_KIND_COUNT];
	int has_unwind; /* the DWARF walker runs: its tables are these */
	struct snap_unwind unwind;
	/* how the daemon keeps up: the loop's and ingest's figures from view(),
	 * the symbolizer's added by serving (section SEC_DAEMON) */
	struct snap_daemon daemon;
	/* whole-host mode (section SEC_MATCH): has_match, and match.what is the
	 * daemon's string */
	int has_match;
	struct snap_match match;
	/* the stack walker in use and why (section SEC_WALKER); its strings are the
	 * daemon's; name NULL: not said */
	struct snap_walker walker;
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

/* Target k of the view. */
static inline struct view_target view_target(const struct daemon_view *v, int k)
{
	struct view_target t;

	v->target(v->targets, k, &t);
	return t;
}

/* The stack whose frames row id shows. */
static inline uint32_t view_row_stack(const struct daemon_view *v, uint32_t id)
{
	return v->rows ? viewrows_stack(v->rows, id) : id;
}

/* What serving watches in the loop's epoll set; the loop hands each event back. */
enum serve_watch {
	WATCH_LISTEN,	      /* the socket: server_accept() */
	WATCH_CLIENT,	      /* a client (index: its slot): server_client_event() */
	WATCH_METRICS_LISTEN, /* the metrics endpoint: metrics_http_accept() */
	WATCH_METRICS_CLIENT, /* its client (index: slot): metrics_http_client_event() */
	WATCH_WORKER,	      /* the worker's eventfd: worker_event() */
};

struct service {
	void *ctx;
	/* The ring buffer into the core: drained before a request is answered
	 * (a reply covers all that the target did before it), frozen while a
	 * lane reads the core (ingest.h). */
	struct ingest *ingest;
	/* The state now (call again after anything below: targets may move). */
	void (*view)(void *ctx, struct daemon_view *v);
	/* memtracectl attach/detach/reset-peak: 0, or -1 with a one-line reason. */
	int (*attach)(void *ctx, int pid, char *err, size_t errlen);
	int (*detach)(void *ctx, int pid, char *err, size_t errlen);
	/* memtracectl attach --cgroup/--unit: what (NUL-terminated) is a path, or a unit */
	int (*attach_cgroup)(void *ctx, const char *what, int unit, char *err, size_t errlen);
	void (*reset_peak)(void *ctx);
	/* Watch fd for events (EPOLLIN, EPOLLOUT, ...; again: change them), as
	 * what, with index; 0 or -1 (errno). unwatch: no more. */
	int (*watch)(void *ctx, int fd, uint32_t events, enum serve_watch what, uint32_t index);
	void (*unwatch)(void *ctx, int fd);
};

#endif
