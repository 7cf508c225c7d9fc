/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A FIFO of ring buffer records, for events drained while the core is
 * frozen (ingest.h) and applied afterwards in order. Records go into 1 MiB
 * chunks; chunks come from a pool another thread keeps filled with memory
 * already touched (evqueue_prepare), so that the thread that drains never
 * waits on page faults, which some virtual machines make very slow.
 *
 * Invariants: one thread pushes and pops (the loop); evqueue_prepare may
 * run on another thread at the same time (the pool has its own lock).
 */
#ifndef MEMTRACE_EVQUEUE_H
#define MEMTRACE_EVQUEUE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define EVQUEUE_CHUNK_BYTES (1u << 20)

struct evchunk;

struct evqueue {
	struct evchunk *head, *tail; /* pop from head, push to tail */
	size_t head_pos;	     /* next record in head */
	uint64_t count;		     /* records queued */
	uint64_t bytes;		     /* their bytes, headers included */
	pthread_mutex_t pool_lock;
	struct evchunk *pool; /* touched, unused chunks */
	unsigned npool;
	uint64_t chunks_faulted; /* chunks the pushing thread had to make itself */
	/* the keeper thread (evqueue_keeper_start), under pool_lock */
	pthread_t keeper;
	pthread_cond_t keeper_cond;
	int keeper_on, keeper_stop, trim_wanted;
	unsigned low; /* the pool is refilled below this many chunks */
};

void evqueue_init(struct evqueue *q);
void evqueue_free(struct evqueue *q);

/* Append a record of len bytes (len < EVQUEUE_CHUNK_BYTES / 2). */
void evqueue_push(struct evqueue *q, const void *data, size_t len);

/* The oldest record (valid until the next pop or push), or NULL when empty. */
const void *evqueue_peek(struct evqueue *q, size_t *len);
void evqueue_pop(struct evqueue *q);

/* Keep at least n chunks of touched memory in the pool (any thread). */
void evqueue_prepare(struct evqueue *q, unsigned n);

/*
 * Start a thread that keeps at least low chunks of touched memory in the
 * pool, refilling it as the pushing thread takes them (a busy target fills
 * tens of MiB while a large request reads a frozen core), so that the
 * pushing thread never touches new memory itself. 0, or -1 (then only
 * evqueue_prepare fills the pool). Stopped by evqueue_free.
 */
int evqueue_keeper_start(struct evqueue *q, unsigned low);

/* The queue is empty for now: the keeper gives the pool back to the system
 * down to its low mark (emptied chunks stay in the pool until then). */
void evqueue_trim(struct evqueue *q);

#endif
