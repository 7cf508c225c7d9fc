/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The live heap: every block allocated since tracing began and not yet freed,
 * keyed by (tgid, address). Open addressing with linear probing and
 * backward-shift deletion (no tombstones), 40 bytes per slot.
 * Invariant: addr == 0 marks an empty slot (no allocator returns NULL as a
 * block), and count == number of non-empty slots.
 */
#ifndef MEMTRACE_HEAP_H
#define MEMTRACE_HEAP_H

#include <stddef.h>
#include <stdint.h>

struct heap_block {
	uint64_t addr;
	uint64_t size;	  /* requested bytes */
	uint64_t time_ns; /* when allocated (CLOCK_MONOTONIC) */
	uint32_t tgid;
	uint32_t stack; /* index in the stack table */
	uint32_t tid;	/* the thread that allocated it */
	uint32_t seq;	/* that thread's allocation count, this one included */
};

struct heap {
	struct heap_block *slots;
	size_t mask;	  /* capacity - 1; capacity is a power of two */
	size_t count;	  /* live blocks */
	size_t max_count; /* refuse inserts past this (0 = unbounded) */
};

int heap_init(struct heap *h, size_t max_count);
void heap_destroy(struct heap *h);

enum heap_insert_result {
	HEAP_INSERTED = 0,
	HEAP_REPLACED = 1, /* the address was live already; *old gets it */
	HEAP_FULL = -1,	   /* max_count reached or out of memory */
};

/* Insert b; if (b->tgid, b->addr) is live, replace it and return the old one. */
int heap_insert(struct heap *h, const struct heap_block *b, struct heap_block *old);

/* Remove (tgid, addr). Returns 1 and the block in *out, or 0 if not live. */
int heap_remove(struct heap *h, uint32_t tgid, uint64_t addr, struct heap_block *out);

/* Look up without removing; NULL if not live. */
const struct heap_block *heap_find(const struct heap *h, uint32_t tgid, uint64_t addr);

/* The same, for changing the block's size or stack (never its key). */
struct heap_block *heap_find_mut(struct heap *h, uint32_t tgid, uint64_t addr);

/* Iterate: for (i = 0; (b = heap_next(h, &i));) ... */
const struct heap_block *heap_next(const struct heap *h, size_t *pos);

#endif
