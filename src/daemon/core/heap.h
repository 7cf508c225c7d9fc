/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The live heap: every block allocated since tracing began and not yet freed,
 * keyed by (tgid, address). 24 bytes per block: the address, the requested
 * size and the allocation time (48 bits each: sizes and microseconds), and
 * the stack, whose tgid is the block's (stacks.h), so that retiring a
 * generation renames its blocks with its stacks. 256 shards by address hash,
 * each a Robin Hood table up to 9/10 full that grows by a quarter: no
 * tombstones (backward-shift deletion), no table-wide rehash (a growth moves
 * one shard), and at most about 33 bytes of table per live block.
 * Invariants: addr == 0 marks an empty slot (no allocator returns NULL as a
 * block), count == number of non-empty slots, and in each shard every
 * block lies at or after its home slot, ordered by home (Robin Hood).
 */
#ifndef MEMTRACE_HEAP_H
#define MEMTRACE_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "stacks.h"

#define HEAP_SHARDS 256
/* Sizes and times past 48 bits cannot be held: such a block is refused (HEAP_FULL). */
#define HEAP_MAX_SIZE ((1ull << 48) - 1)

/* A block as the heap's users see it. */
struct heap_block {
	uint64_t addr;
	uint64_t size;	  /* requested bytes */
	uint64_t time_ns; /* when allocated (CLOCK_MONOTONIC), to the microsecond */
	uint32_t tgid;	  /* its stack's */
	uint32_t stack;	  /* index in the stack table */
};

struct heap_slot {
	uint64_t addr;
	uint32_t stack;
	uint16_t size_hi, time_hi; /* bits 32-47 */
	uint32_t size_lo, time_lo;
};

struct heap_shard {
	struct heap_slot *slots;
	uint32_t cap; /* any number: homes are mapped by multiplication */
	uint32_t count;
};

struct heap {
	struct heap_shard shards[HEAP_SHARDS];
	size_t count;			  /* live blocks */
	size_t max_count;		  /* refuse inserts past this (0 = unbounded) */
	size_t bytes;			  /* of all the shards' slots */
	const struct stack_table *stacks; /* where a block's tgid is */
};

/* The blocks' tgids are those of their stacks in stacks (which the heap only reads). */
int heap_init(struct heap *h, size_t max_count, const struct stack_table *stacks);
void heap_destroy(struct heap *h);

enum heap_insert_result {
	HEAP_INSERTED = 0,
	HEAP_REPLACED = 1, /* the address was live already; *old gets it */
	HEAP_FULL = -1,	   /* max_count reached, out of memory, or a size it cannot hold */
};

/* Insert b (b->stack's tgid must be b->tgid); if (b->tgid, b->addr) is live,
 * replace it and return the old one. */
int heap_insert(struct heap *h, const struct heap_block *b, struct heap_block *old);

/* Remove (tgid, addr). Returns 1 and the block in *out, or 0 if not live. */
int heap_remove(struct heap *h, uint32_t tgid, uint64_t addr, struct heap_block *out);

/* Look up without removing: 1 and the block in *out (may be NULL), or 0 if not live. */
int heap_get(const struct heap *h, uint32_t tgid, uint64_t addr, struct heap_block *out);

/* Change a live block's size: 1, or 0 if not live (or the size cannot be held). */
int heap_set_size(struct heap *h, uint32_t tgid, uint64_t addr, uint64_t size);

/* Iterate: for (pos = 0; heap_next(h, &pos, &b);) ... (in no particular order). */
int heap_next(const struct heap *h, uint64_t *pos, struct heap_block *out);

/* The table's invariants (above), checked slot by slot: 1 if they hold. */
int heap_valid(const struct heap *h);

#endif
