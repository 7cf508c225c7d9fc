/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Interned stacks and their totals. A stack is (tgid, return addresses
 * innermost first); stack_intern() maps equal stacks to one index that stays
 * valid for the daemon's life, so the heap table stores 4 bytes per block.
 * Frames live in one arena; the index is an open-addressing table of entry
 * numbers keyed by a hash of the whole stack, compared in full (no collision
 * ever merges two stacks).
 */
#ifndef MEMTRACE_STACKS_H
#define MEMTRACE_STACKS_H

#include <stddef.h>
#include <stdint.h>

#define STACK_NONE UINT32_MAX

struct stack_totals {
	uint64_t allocations;
	uint64_t bytes_allocated;
	uint64_t frees;
	uint64_t bytes_freed;
	uint64_t live_allocations;
	uint64_t live_bytes;
	uint64_t peak_live_bytes; /* live_bytes when the global peak epoch was peak_epoch */
	uint64_t peak_epoch;
	uint64_t temporary_allocations; /* freed before N more allocations in their thread */
	uint64_t temporary_bytes;
};

struct stack_entry {
	uint64_t hash;
	uint64_t frames_off;
	uint32_t tgid;
	uint32_t nframes;
	uint16_t stack_end; /* enum mt_stack_end of the event that made it */
	struct stack_totals t;
};

struct stack_table {
	struct stack_entry *v;
	uint32_t count;
	uint32_t cap;
	uint32_t max_stacks; /* 0 = unbounded */
	uint32_t *index;     /* STACK_NONE = empty */
	size_t index_mask;
	uint64_t *frames;
	size_t frames_len;
	size_t frames_cap;
};

int stacks_init(struct stack_table *t, uint32_t max_stacks);
void stacks_destroy(struct stack_table *t);

/*
 * The index of (tgid, frames[0..n)), added if new (*is_new set to 1).
 * Returns STACK_NONE when the table is full or memory runs out.
 */
uint32_t stack_intern(struct stack_table *t, uint32_t tgid, const uint64_t *frames, uint32_t n,
		      int *is_new);

static inline struct stack_entry *stack_get(const struct stack_table *t, uint32_t idx)
{
	return &t->v[idx];
}

static inline const uint64_t *stack_frames(const struct stack_table *t, uint32_t idx)
{
	return t->frames + t->v[idx].frames_off;
}

#endif
