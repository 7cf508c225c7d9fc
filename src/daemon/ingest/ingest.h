/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Ingest (ingest.c): ring buffer records into the accounting core, in the
 * order the BPF programs wrote them, and the freeze that holds them back
 * while a request reads the core.
 *
 * The freeze. A reader on another thread (a request lane of the server)
 * may read the core only while it does not change. The loop thread freezes
 * it for the reader (ingest_freeze): everything queued in the ring buffer is
 * applied first, and from then on each record drained goes into a queue
 * (evqueue.h) instead of the core. When the last reader thaws
 * (ingest_thaw), each drain applies a slice of the queue (about 2 ms),
 * newer records still queuing behind it, until it is empty; then the core
 * moves again and the resumed hook runs (what waited: target exits,
 * requests that change the core, the next freeze). While frozen or
 * catching up (ingest_frozen) nothing but ingest's catch-up may change the
 * core.
 *
 * Invariants: one thread (the loop) drains, applies, freezes and thaws;
 * records are applied exactly once, in the order drained; a reader that
 * froze the core saw every record drained before its freeze and none after
 * until its thaw. Ingest knows nothing of who reads: the layers above ask.
 */
#ifndef MEMTRACE_DAEMON_INGEST_H
#define MEMTRACE_DAEMON_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/ingest/evqueue.h"
#include "memtrace/event.h"
#include "memtrace/snapshot.h"

struct ring_buffer;
struct tracker;
struct symbolizer;
struct pystacks;
struct unwinder;

/* What records move beyond the core: the targets' lifecycle (loop.c wires it). */
struct ingest_hooks {
	void *ctx;
	/* a control record (exec, ld.so, CPython allocator, fork, match), after
	 * the tracker applied it */
	void (*control)(void *ctx, const struct mt_event *ev);
	/* a whole drain applied every record queued before it */
	void (*drained)(void *ctx);
	/* the core moves again after a freeze: what waited for that goes on */
	void (*resumed)(void *ctx);
};

struct ingest_freeze_stats {
	uint64_t freezes;	  /* times the core was frozen for readers */
	uint64_t freeze_max_ns;	  /* the longest freeze */
	uint64_t deferred_events; /* records queued during freezes, then applied */
	uint64_t deferred_max;	  /* the most queued by one freeze */
};

struct ingest {
	/* where records go */
	struct tracker *tracker;
	struct symbolizer *sym;	 /* a new stack's modules are noted while its process lives */
	struct pystacks *py;	 /* ... and its Python code objects */
	struct unwinder *unwind; /* NULL under walkers other than dwarf */
	struct ingest_hooks hooks;
	struct ring_buffer *rb;
	unsigned left; /* records the drain in progress may still take */
	int applying;  /* a record is being applied (ingest_record) */
	/* how ingest keeps up (section SEC_DAEMON), since start or ingest_reset_figures */
	uint64_t last_drain_ns;	   /* when the ring buffer was last drained */
	uint64_t drain_gap_max_ns; /* longest time between two drains */
	/* the freeze */
	int readers;		 /* readers of the frozen core */
	uint64_t frozen_at;	 /* when the freeze began */
	uint64_t ndeferred;	 /* records queued since then */
	struct evqueue deferred; /* drained while frozen or catching up, not applied yet */
	int keeper;		 /* the queue's keeper thread runs */
	struct ingest_freeze_stats stats;
};

/* Set in the fields above (tracker, sym, py, unwind, hooks) first. */
void ingest_init(struct ingest *in);
/* Map the ring buffer of fd and hook the tracker's new stacks; 0 or -1 (errno). */
int ingest_open(struct ingest *in, int ringbuf_fd);
/* The ring buffer's descriptor, for the loop's epoll set. */
int ingest_epoll_fd(const struct ingest *in);
void ingest_close(struct ingest *in);

/* Take every record queued in the ring buffer now (applied, or queued while
 * frozen), then a slice of the queue if thawed. Nothing, when called while a
 * record is applied (from a hook): those queued come after it, in order. */
void ingest_drain(struct ingest *in);
/* The same, DRAIN_SLICE records at most: the loop's routine drains. */
void ingest_drain_slice(struct ingest *in);

/* Apply one record now: to the tracker, then the hooks (what a drain does
 * with each, in order, when not frozen). */
void ingest_record(struct ingest *in, const void *data, size_t len);
/* One record as a drain takes it: applied, or queued while frozen. */
void ingest_take(struct ingest *in, const void *data, size_t len);

/*
 * The ring buffer's producer position now (bytes ever reserved; any thread):
 * every record written before lies before it. UINT64_MAX when unknown.
 */
uint64_t ingest_ring_produced(void);
/* Its consumer position: every record before it has been drained. */
uint64_t ingest_ring_consumed(void);

/* ---- the freeze (loop thread, but ingest_freeze_prepare) ---------------- */

/* Frozen for a reader, or catching up after the thaw: the core must not change. */
int ingest_frozen(const struct ingest *in);

/*
 * Freeze the core for n more readers. Not frozen yet: every record queued
 * in the ring buffer is applied first. Frozen already: they join, and read
 * the core as it froze. 0; -1 while catching up after a thaw (ask again
 * when the resumed hook runs).
 */
int ingest_freeze(struct ingest *in, unsigned n);
/* One reader is done. The last one's thaw lets the queue be applied. */
void ingest_thaw(struct ingest *in);

/*
 * Readers to come (any thread): get the queue's memory ready, so that the
 * loop never touches new memory while frozen; the first call on the loop
 * thread (ingest_freeze_start) starts a keeper thread that keeps it ready.
 */
void ingest_freeze_prepare(struct ingest *in);
void ingest_freeze_start(struct ingest *in);

/* Section SEC_DAEMON's ingest figures: drain gaps, freezes, records deferred. */
void ingest_figures(const struct ingest *in, struct snap_daemon *out);
/* reset-peak: a new window for the drain gap. */
void ingest_reset_figures(struct ingest *in);

#endif
