/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The accounting core's state: the targets, the live heap, the stack table
 * and the totals, as tracker.c (the rules) and family.c (the sharing of a
 * forked child's heap) keep them and the views read them. Types only: the
 * operations are tracker.h's.
 */
#ifndef MEMTRACE_CORE_STATE_H
#define MEMTRACE_CORE_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/core/addrmap.h"
#include "daemon/core/heap.h"
#include "daemon/core/stacks.h"
#include "daemon/core/recent.h"
#include "memtrace/counters.h"
#include "memtrace/snapshot.h"

struct family;

/* A realloc between its entry and return event: the old block, off the heap. */
struct tracker_parked {
	uint32_t tid;
	int known;     /* the old block was live (else it predates tracing) */
	int inherited; /* it was an inherited block (family.h): its stack is an ancestor's */
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
	uint32_t gen;
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
	/* Process families (family.h): its heap began as its parent's at the fork. */
	uint32_t parent;	  /* index + 1 in targets of the generation it forked from */
	uint32_t fork_epoch;	  /* t->forks right after its fork */
	uint32_t last_fork;	  /* epoch of its latest fork (0: none, or forgotten) */
	uint32_t refs;		  /* children holding on to its view */
	int holds_parent;	  /* it counts in its parent's refs */
	int released;		  /* its inherited blocks left its heap (its generation ended) */
	int peak_holder;	  /* released, but the current peak counts its inherited blocks */
	uint64_t fork_peak_epoch; /* t->peak_epoch before its fork was counted */
	uint64_t inherited_live, inherited_live_bytes; /* inherited blocks it has not freed */
	struct family *fam;			       /* side tables, NULL until needed */
	/*
	 * Addresses it freed while traced and has not allocated since (at most
	 * TRACKER_FREED_MAX, then forgotten all at once): a free of one of
	 * them is the allocator's own second free of a block the program
	 * freed (glibc frees each exiting thread's cached chunks again), not a
	 * free of a block allocated before the attach (tracker.c, refree).
	 */
	struct addrmap freed;
	int refrees; /* its allocator frees some addresses twice (glibc): keep freed */
};

/* chunks in a thread's cache may have been freed long before (node frees 128 000 addresses
 * it never allocates again): 24 MiB of table at the bound */
#define TRACKER_FREED_MAX (1u << 20)

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
	uint64_t events_refree;	    /* frees of addresses freed already: nothing (refree) */
	int losses_seen;	    /* an event said the BPF side lost one (MT_EVF_LOSSES) */
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
	uint32_t forks;	       /* forks seen: the epoch of family.h */
	uint32_t peak_holders; /* targets with peak_holder set */
};

#endif
