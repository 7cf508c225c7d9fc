/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Interned stacks and their totals. A stack is (tgid, return addresses
 * innermost first); stack_intern() maps equal stacks to one index that stays
 * valid for the daemon's life, so the heap table stores 4 bytes per block.
 * Each distinct word (a return address, or a Python frame word) is stored
 * once and numbered; a stack holds the numbers of its words, 4 bytes a frame,
 * in one arena. The index is an open-addressing table of entry numbers
 * keyed by a hash of the whole stack, compared in full (no collision ever
 * merges two stacks).
 */
#ifndef MEMTRACE_STACKS_H
#define MEMTRACE_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/counters.h"

#define STACK_NONE UINT32_MAX

struct stack_entry {
	uint32_t hash;	     /* of the whole stack (its low half: enough to place it) */
	uint32_t frames_off; /* its first word number in the arena */
	uint32_t tgid;
	uint16_t nframes;
	uint16_t stack_end; /* enum mt_stack_end of the event that made it */
	/* t.peak_live_bytes is its live bytes when the global peak epoch was
	 * peak_epoch (see tracker_stack_peak_bytes) */
	struct mt_stack_counters t;
	uint64_t peak_epoch;
	/* process families (family.h): the newest record of its live values
	 * kept for forks (+ 1; 0: none), and the fork epoch it was kept for */
	uint32_t hist;
	uint32_t hist_epoch;
};

struct stack_table {
	struct stack_entry *v;
	uint32_t count;
	uint32_t cap;
	uint32_t max_stacks; /* 0 = unbounded */
	uint32_t *index;     /* STACK_NONE = empty */
	size_t index_mask;
	uint32_t *frames; /* word numbers of every stack, one after the other */
	size_t frames_len;
	size_t frames_cap;
	uint64_t *words; /* each distinct word once, by number */
	uint32_t nwords, words_cap;
	uint32_t *word_index; /* word number + 1 by hash; 0 = empty */
	size_t word_mask;
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

/* Word k (0 = innermost) of stack idx. */
static inline uint64_t stack_word(const struct stack_table *t, uint32_t idx, uint32_t k)
{
	return t->words[t->frames[t->v[idx].frames_off + k]];
}

/* Bytes the table holds (entries, word numbers, words, indices), for the figures. */
size_t stacks_bytes(const struct stack_table *t);

#endif
