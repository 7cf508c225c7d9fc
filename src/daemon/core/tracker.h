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

#include "daemon/core/heap.h"
#include "daemon/core/stacks.h"
#include "daemon/core/stackids.h"
#include "daemon/core/recent.h"
#include "memtrace/event.h"
#include "memtrace/counters.h"

/* A realloc between its entry and return event: the old block, off the heap. */
struct tracker_parked {
	uint32_t tid;
	int known; /* the old block was live (else it predates tracing) */
	uint64_t old_addr;
	struct heap_block block;
	struct recent_mark mark; /* whether it may still be temporary */
};

/*
 * A part of a traced mmap block (MT_FN_MMAP) that is still mapped: [start,
 * end), page-aligned. A block is one piece until a munmap takes part of it;
 * the sizes of a block's pieces always add up to its heap size.
 */
struct tracker_mapping {
	uint64_t start, end;
	uint64_t block; /* the block's address: its heap key */
};

struct tracker_target {
	uint32_t tgid;
	/*
	 * The key of its blocks and stacks: its tgid while it is the newest
	 * generation of that process, then a retired key (TRACKER_RETIRED
	 * bit set) once a newer generation (after an exec, a re-attach or a
	 * reused pid) takes the tgid. Symbolizer and Python frames follow it.
	 */
	uint32_t space;
	uint32_t empty_stack; /* where allocations go when the stack table is full */
	uint64_t start_ns;    /* tracing of this target began (CLOCK_MONOTONIC) */
	struct mt_counters c;
	struct tracker_parked *parked;
	uint32_t nparked;
	uint32_t parked_cap;
	int ended; /* executed a new program (or detached): its events no longer count */
	struct tracker_mapping *maps; /* sorted by start, never overlapping */
	uint32_t nmaps;
	uint32_t maps_cap;
};

/* Keys of retired generations: above any pid (pid_max is at most 2^22). */
#define TRACKER_RETIRED 0x80000000u

typedef void (*tracker_new_stack_fn)(void *arg, uint32_t tgid, const uint64_t *frames, uint32_t n);

struct tracker {
	struct heap heap;
	struct stack_table stacks;
	struct mt_counters totals;
	uint64_t start_ns;   /* tracing began (first target) */
	uint64_t peak_epoch; /* grows each time totals.live_bytes sets a new peak */
	uint64_t events_received;
	uint64_t events_foreign;    /* from a process that is not a target */
	uint64_t events_malformed;  /* shorter than their header says */
	struct stack_ids ids;	    /* the BPF side's stack ids (MT_SF_ID) -> stacks */
	uint64_t stack_id_events;   /* allocations whose stack came as an id */
	uint64_t stack_ids_unknown; /* ... an id never registered: stackless */
	/* Every allocation of every target, by size bin and by function called. */
	uint64_t size_histogram[SNAP_HISTOGRAM_BINS];
	uint64_t allocations_by_func[SNAP_MAX_FUNCS];
	uint64_t bytes_by_func[SNAP_MAX_FUNCS];
	struct tracker_target *targets;
	uint32_t ntargets;
	uint32_t temporary_threshold;	   /* N: freed before N more allocations (0 = off) */
	struct recent recent;		   /* each thread's last N allocations still live */
	uint32_t retired;		   /* retired keys handed out */
	uint32_t last_found;		   /* index tracker_find_target() found last */
	tracker_new_stack_fn on_new_stack; /* optional: called for each new stack */
	void *on_new_stack_arg;
};

/* temporary_threshold is 1 (heaptrack's definition); set it after init to change it. */
int tracker_init(struct tracker *t, size_t max_live_blocks, uint32_t max_stacks);
void tracker_destroy(struct tracker *t);

/*
 * Start accounting for a new generation of tgid (space = tgid). An older
 * generation of the same tgid is retired first (tracker_retire). Returns
 * NULL if tgid has a generation that has not ended, or out of memory.
 */
struct tracker_target *tracker_add_target(struct tracker *t, uint32_t tgid, uint64_t start_ns);
/* The generation of tgid whose events count now; NULL if none. */
struct tracker_target *tracker_find_target(struct tracker *t, uint32_t tgid);
/* The generation keyed by space; NULL if none. */
const struct tracker_target *tracker_find_space(const struct tracker *t, uint32_t space);
/* The pid of a space (itself, or the tgid of the retired generation). */
uint32_t tracker_space_pid(const struct tracker *t, uint32_t space);

/*
 * The current generation of tgid executed a new program (or stopped being
 * traced): from now on its events count as events_foreign, its data so far
 * stays. Also what an MT_EV_EXEC event does. 0, or -1 if tgid has no
 * current generation.
 */
int tracker_target_exec(struct tracker *t, uint32_t tgid);

/*
 * Move every generation keyed by tgid to a retired key of its own: its live
 * blocks and stacks follow, so a new generation of tgid starts empty.
 * Returns the new key, or 0 when no generation was keyed by tgid.
 */
uint32_t tracker_retire(struct tracker *t, uint32_t tgid);

/* Apply one event as read from the ring buffer (len bytes, untrusted size). */
void tracker_event(struct tracker *t, const void *data, size_t len);

/*
 * Start a new peak window (tracemalloc.reset_peak): the peak becomes the
 * current live bytes, at now_ns, in total and per target; every stack's
 * value at the peak becomes its current live bytes.
 */
void tracker_reset_peak(struct tracker *t, uint64_t now_ns);

/* Bin of SNAP_HISTOGRAM_BINS for an allocation of size bytes. */
static inline unsigned tracker_size_bin(uint64_t size)
{
	return size ? 64 - (unsigned)__builtin_clzll(size) : 0;
}

/* This stack's live bytes at the moment of the global peak. */
uint64_t tracker_stack_peak_bytes(const struct tracker *t, const struct stack_entry *s);

#endif
