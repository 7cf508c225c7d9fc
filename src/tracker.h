/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The accounting core: applies ring buffer events to the live heap, the stack
 * table and the counters, with the semantics of docs/metrics.md. Pure logic,
 * no I/O, so every rule is unit tested (tests/unit/test_tracker.c).
 *
 * Invariants, per target and in total:
 *   live_allocations == allocations - frees - missed_frees - untracked_allocations
 *   live_bytes == bytes_allocated - bytes_freed - missed_free_bytes - untracked bytes
 *   peak_live_bytes >= live_bytes
 */
#ifndef MEMTRACE_TRACKER_H
#define MEMTRACE_TRACKER_H

#include <stddef.h>
#include <stdint.h>

#include "heap.h"
#include "stacks.h"
#include "memtrace/event.h"
#include "memtrace/snapshot.h"

/* A realloc between its entry and return event: the old block, off the heap. */
struct tracker_parked {
	uint32_t tid;
	int known; /* the old block was live (else it predates tracing) */
	uint64_t old_addr;
	struct heap_block block;
};

struct tracker_target {
	uint32_t tgid;
	uint32_t empty_stack; /* where allocations go when the stack table is full */
	uint64_t start_ns;    /* tracing of this target began (CLOCK_MONOTONIC) */
	struct mt_counters c;
	struct tracker_parked *parked;
	uint32_t nparked;
	uint32_t parked_cap;
};

typedef void (*tracker_new_stack_fn)(void *arg, uint32_t tgid, const uint64_t *frames, uint32_t n);

struct tracker {
	struct heap heap;
	struct stack_table stacks;
	struct mt_counters totals;
	uint64_t start_ns;   /* tracing began (first target) */
	uint64_t peak_epoch; /* grows each time totals.live_bytes sets a new peak */
	uint64_t events_received;
	uint64_t events_foreign;   /* from a process that is not a target */
	uint64_t events_malformed; /* shorter than their header says */
	/* Every allocation of every target, by size bin and by function called. */
	uint64_t size_histogram[SNAP_HISTOGRAM_BINS];
	uint64_t allocations_by_func[SNAP_MAX_FUNCS];
	uint64_t bytes_by_func[SNAP_MAX_FUNCS];
	struct tracker_target *targets;
	uint32_t ntargets;
	tracker_new_stack_fn on_new_stack; /* optional: called for each new stack */
	void *on_new_stack_arg;
};

int tracker_init(struct tracker *t, size_t max_live_blocks, uint32_t max_stacks);
void tracker_destroy(struct tracker *t);

/* Start accounting for tgid; returns NULL if it is a target already. */
struct tracker_target *tracker_add_target(struct tracker *t, uint32_t tgid, uint64_t start_ns);
struct tracker_target *tracker_find_target(struct tracker *t, uint32_t tgid);

/* Apply one event as read from the ring buffer (len bytes, untrusted size). */
void tracker_event(struct tracker *t, const void *data, size_t len);

/* Bin of SNAP_HISTOGRAM_BINS for an allocation of size bytes. */
static inline unsigned tracker_size_bin(uint64_t size)
{
	return size ? 64 - (unsigned)__builtin_clzll(size) : 0;
}

/* This stack's live bytes at the moment of the global peak. */
uint64_t tracker_stack_peak_bytes(const struct tracker *t, const struct stack_entry *s);

#endif
