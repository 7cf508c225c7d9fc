/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The live heap: every block allocated since tracing began and not yet freed,
 * keyed by (tgid, address). 18 bytes per block: the address (40 bits), the
 * allocation time (48 bits of microseconds), the requested size (24 bits)
 * and the stack, whose tgid is the block's (stacks.h), so that retiring a
 * generation renames its blocks with its stacks. The address is held as its
 * key: a 48-bit mix of it that can be undone (heap.c), whose top 8 bits pick
 * one of 256 shards and are not stored. Each shard is a Robin Hood table up
 * to 9/10 full that grows by a quarter: no tombstones (backward-shift
 * deletion), no table-wide rehash (a growth moves one shard), and at most
 * 25 bytes of table per live block. Shards are in pages of their own from
 * 64 KiB on (pages.h), so that the ones a growth leaves go back.
 *
 * A block a slot cannot hold (an address from 2^48 on, a size from 16 MiB
 * on) is kept whole in a side table (wide): a few of a program's blocks.
 *
 * Invariants: in each shard a slot is empty exactly when its stack is 0,
 * count == number of non-empty slots, every block lies at or after its home
 * slot, ordered by home (Robin Hood); a (tgid, address) is in a shard or in
 * wide, never both.
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

/*
 * A block in a shard, 18 bytes, little-endian fields at byte offsets: 0 its
 * key (40 bits: the address's mix but the shard's 8 bits), 5 the time in
 * microseconds (48), 11 the size (24), 14 the stack + 1 (32; 0: empty).
 */
struct heap_slot {
	uint8_t b[18];
};
#define HEAP_SLOT_MAX_SIZE ((1u << 24) - 1)

struct heap_shard {
	struct heap_slot *slots;
	uint32_t cap; /* any number: homes are mapped by multiplication */
	uint32_t count;
};

/* A block a slot cannot hold, whole. */
struct heap_wide_slot {
	uint64_t addr; /* 0: empty */
	uint64_t size;
	uint64_t time_us;
	uint32_t stack;
};

/* Linear probing by the address's hash, half full at most, backward-shift deletion. */
struct heap_wide {
	struct heap_wide_slot *slots;
	size_t mask; /* slots - 1 (a power of two); 0 before the first */
	size_t count;
};

struct heap {
	struct heap_shard shards[HEAP_SHARDS];
	struct heap_wide wide;
	size_t count;			  /* live blocks */
	size_t max_count;		  /* refuse inserts past this (0 = unbounded) */
	size_t bytes;			  /* of all the shards' slots and wide's */
	const struct stack_table *stacks; /* where a block's tgid is */
};

/* The blocks' tgids are those of their stacks in stacks (which the heap only reads). */
int heap_init(struct heap *h, size_t max_count, const struct stack_table *stacks);
void heap_destroy(struct heap *h);

enum heap_insert_result {
	HEAP_INSERTED = 0,
	HEAP_REPLACED = 1, /* the address was live already; *old gets it */
	HEAP_FULL = -1, /* max_count reached, out of memory, address 0, or a size it cannot hold */
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

/* How far slot i of shard k holds its block from the block's home; -1: empty. */
int64_t heap_slot_distance(const struct heap *h, unsigned k, uint32_t i);

#endif
