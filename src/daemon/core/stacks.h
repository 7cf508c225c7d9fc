/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Interned stacks and their totals. A stack is (tgid, return addresses
 * innermost first); stack_intern() maps equal stacks to one index that stays
 * valid for the daemon's life, so the heap table stores 4 bytes per block.
 * Each distinct word (a return address, or a Python frame word) is stored
 * once and numbered. The frames of all stacks make one tree of nodes, from
 * the outermost frame: a node is a run of up to STACK_RUN frames (their word
 * numbers) and the node of the frames that called them, held once for every
 * stack that shares them (stacks of one program share their outer frames:
 * main, its loops, their handlers), and a stack is its innermost node. A
 * stack's frames are cut into runs from the outermost, STACK_RUN at a time,
 * so that equal frames are the same node, in every process; a run of
 * frames rather than one frame a node keeps a stack a few nodes (a walk of
 * its frames a few cache lines). The index is an open-addressing table of entry numbers
 * keyed by a hash of the whole stack, compared in full (no collision ever
 * merges two stacks). The stack ids the BPF side registered are a second
 * index of the same entries (struct stack_ids, below).
 */
#ifndef MEMTRACE_STACKS_H
#define MEMTRACE_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/counters.h"

#define STACK_NONE UINT32_MAX
/* A stack has at most this many frames (native and Python). */
#define STACK_MAX_FRAMES 256
/* Frames a node of the tree holds at most. */
#define STACK_RUN 8

/* The counters a stack keeps: those of MT_STACK_COUNTERS but the inherited
 * ones (section SEC_META), which only the views of forked children fill in. */
#define STACK_KEPT_0(field) uint64_t field;
#define STACK_KEPT_1(field) uint64_t field;
#define STACK_KEPT_2(field)
struct stack_counters {
#define STACK_KEPT(field, name, section) STACK_KEPT_##section(field)
	MT_STACK_COUNTERS(STACK_KEPT)
#undef STACK_KEPT
};

struct stack_entry {
	uint32_t hash; /* of the whole stack (its low half: enough to place it) */
	uint32_t leaf; /* its innermost node (0: no frames) */
	uint32_t tgid;
	uint16_t nframes;
	uint16_t stack_end; /* enum mt_stack_end of the event that made it */
	struct stack_counters t;
	/* t.peak_live_bytes is its live bytes when the global peak epoch's low
	 * 32 bits were peak_epoch (see tracker_stack_peak_bytes); 0 is never
	 * the global epoch's */
	uint32_t peak_epoch;
	/* process families (family.h): the newest record of its live values
	 * kept for forks (+ 1; 0: none), whose epoch is the fork it was kept for */
	uint32_t hist;
};

struct stack_table {
	struct stack_entry *v;
	uint32_t count;
	uint32_t cap;
	uint32_t max_stacks; /* 0 = unbounded */
	uint32_t *index;     /* STACK_NONE = empty */
	size_t index_mask;
	/* the tree: node x is nodes[x - 1 ..]: the node of its callers (0:
	 * none), its number of frames (1..STACK_RUN), their word numbers,
	 * innermost first */
	uint32_t *nodes;
	size_t nodes_len, nodes_cap;
	uint32_t nnodes;
	uint32_t *node_index; /* node by hash of its content; 0 = empty */
	uint32_t node_cap;    /* its slots: any number (homes are mapped by multiplication) */
	uint64_t *words;      /* each distinct word once, by number */
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

/* The word numbers of stack idx, innermost first, into out (room for its
 * nframes, at most STACK_MAX_FRAMES); returns how many. */
static inline uint32_t stack_nums(const struct stack_table *t, uint32_t idx, uint32_t *out)
{
	uint32_t n = 0;

	for (uint32_t node = t->v[idx].leaf; node; node = t->nodes[node - 1]) {
		const uint32_t *x = &t->nodes[node - 1];

		for (uint32_t k = 0; k < x[1]; k++)
			out[n++] = x[2 + k];
	}
	return n;
}

/* Its words, likewise. */
static inline uint32_t stack_words(const struct stack_table *t, uint32_t idx, uint64_t *out)
{
	uint32_t n = 0;

	for (uint32_t node = t->v[idx].leaf; node; node = t->nodes[node - 1]) {
		const uint32_t *x = &t->nodes[node - 1];

		for (uint32_t k = 0; k < x[1]; k++)
			out[n++] = t->words[x[2 + k]];
	}
	return n;
}

/* A stack's word numbers one at a time, innermost first. */
struct stack_cursor {
	const struct stack_table *t;
	const uint32_t *node; /* the node of the next one (NULL: the end) */
	uint32_t k;	      /* its place in the node */
};

/* At word from (0 = innermost) of stack idx, which has more than from words
 * (or exactly from: then at the end). */
static inline void stack_cursor_init(struct stack_cursor *c, const struct stack_table *t,
				     uint32_t idx, uint32_t from)
{
	uint32_t leaf = t->v[idx].leaf;

	c->t = t;
	c->node = leaf ? &t->nodes[leaf - 1] : NULL;
	while (c->node && from >= c->node[1]) {
		from -= c->node[1];
		c->node = c->node[0] ? &t->nodes[c->node[0] - 1] : NULL;
	}
	c->k = from;
}

/* The next word number into *num: 1, or 0 at the end. */
static inline int stack_cursor_next(struct stack_cursor *c, uint32_t *num)
{
	if (!c->node)
		return 0;
	*num = c->node[2 + c->k];
	if (++c->k == c->node[1]) {
		c->node = c->node[0] ? &c->t->nodes[c->node[0] - 1] : NULL;
		c->k = 0;
	}
	return 1;
}

/* Word k (0 = innermost) of stack idx. */
static inline uint64_t stack_word(const struct stack_table *t, uint32_t idx, uint32_t k)
{
	const uint32_t *x = &t->nodes[t->v[idx].leaf - 1];

	while (k >= x[1]) {
		k -= x[1];
		x = &t->nodes[x[0] - 1];
	}
	return t->words[x[2 + k]];
}

/* The counters as reports carry them (the inherited ones 0). */
static inline struct mt_stack_counters stack_counters(const struct stack_entry *e)
{
	struct mt_stack_counters c = {0};

#define STACK_COPY_0(field) c.field = e->t.field;
#define STACK_COPY_1(field) c.field = e->t.field;
#define STACK_COPY_2(field)
#define STACK_COPY(field, name, section) STACK_COPY_##section(field)
	MT_STACK_COUNTERS(STACK_COPY)
#undef STACK_COPY
#undef STACK_COPY_0
#undef STACK_COPY_1
#undef STACK_COPY_2
	return c;
}

/* Bytes the table holds (entries, nodes, words, indices), for the figures. */
size_t stacks_bytes(const struct stack_table *t);

/*
 * The stack ids the BPF side registered (include/memtrace/event.h, MT_SF_ID):
 * each id, as the event that registered it carried it, mapped to the index
 * of its frames in this table (or STACK_NONE, a registration whose stack
 * could not be kept). An id is registered once for the programs' life, so
 * the map only grows; a lookup of an id never registered is the caller's
 * to count, never a guess. Open addressing, linear probing, keys never 0.
 */
struct stack_id_slot {
	uint64_t id; /* 0: empty */
	uint32_t stack;
};

struct stack_ids {
	struct stack_id_slot *slots;
	size_t mask; /* slots - 1, a power of two minus one; 0 before the first put */
	size_t count;
};

void stackids_init(struct stack_ids *m);
void stackids_destroy(struct stack_ids *m);

/* Map id (not 0) to stack, replacing what it mapped to. 0, or -1 out of memory. */
int stackids_put(struct stack_ids *m, uint64_t id, uint32_t stack);

/* 1 and *stack when id is registered, else 0. */
static inline int stackids_get(const struct stack_ids *m, uint64_t id, uint32_t *stack)
{
	size_t i;

	if (!m->count)
		return 0;
	/* ids are hashes already: their low bits place them */
	for (i = id & m->mask; m->slots[i].id; i = (i + 1) & m->mask) {
		if (m->slots[i].id == id) {
			*stack = m->slots[i].stack;
			return 1;
		}
	}
	return 0;
}

/* Bytes it holds, for the figures. */
size_t stackids_bytes(const struct stack_ids *m);

#endif
