/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Temporary allocations without a cost per live block. A block is temporary
 * when the thread that allocated it frees it before N further allocations of
 * that thread (heaptrack's definition for N = 1; memtraced
 * --temporary-threshold). Only a thread's last N allocations can be: this
 * keeps those of them still live, in a FIFO per thread (evicted as the
 * thread allocates on), found by (generation, address). Memory: the blocks among
 * each thread's last N allocations, a few per thread at the default N = 1.
 * Invariant: an entry exists for a live block exactly while fewer than N
 * allocations of its thread followed it (counts modulo 2^32, as before).
 */
#ifndef MEMTRACE_RECENT_H
#define MEMTRACE_RECENT_H

#include <stddef.h>
#include <stdint.h>

struct recent_entry;
struct recent_thread;

struct recent {
	uint32_t threshold; /* N; 0: off */
	struct recent_entry *pool;
	uint32_t npool, pool_cap, free_list; /* free_list: pool index + 1, or 0 */
	uint32_t *index;		     /* (generation, address) -> pool index + 1; 0 empty */
	size_t index_mask, count;
	struct recent_thread *threads; /* by tid, open addressing; tid 0 empty */
	size_t threads_mask, nthreads;
	size_t last_thread; /* the slot thread_get() found last */
};

/* What a block parked off the heap (a realloc in flight) takes with it. */
struct recent_mark {
	int valid; /* it was among its thread's last N allocations */
	uint32_t tid, seq;
};

void recent_init(struct recent *r, uint32_t threshold);
void recent_destroy(struct recent *r);

/*
 * Thread tid allocated a block at (generation, addr): count it, and remember it
 * when held (kept on the heap). An older entry at that key (a block whose
 * free was missed) is forgotten. tid 0 is counted nowhere.
 */
void recent_alloc(struct recent *r, uint32_t tid, uint32_t gen, uint64_t addr, int held);

/*
 * The block at (generation, addr) leaves the heap, freed by thread tid (0 when
 * its free was not seen): returns whether it was temporary, and forgets it.
 */
int recent_release(struct recent *r, uint32_t gen, uint64_t addr, uint32_t tid);

/* A block parked off the heap: take its entry into *m (forgotten meanwhile). */
void recent_take(struct recent *r, uint32_t gen, uint64_t addr, struct recent_mark *m);
/* The parked block is freed by tid: was it temporary? */
int recent_judge(const struct recent *r, const struct recent_mark *m, uint32_t tid);
/* The parked block goes back on the heap: remember it again while it may be temporary. */
void recent_restore(struct recent *r, uint32_t gen, uint64_t addr, const struct recent_mark *m);

#endif
