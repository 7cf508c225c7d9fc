// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Stack interning (see stacks.h). Entries, nodes and words only grow; an
 * index handed out is never invalidated or reused. A known stack is found
 * with one hash of its words and one comparison along its nodes; only a new
 * one numbers its words and finds (or adds) its nodes, from the outermost.
 * The ids the BPF side registered map to those indices.
 */
#include "daemon/core/stacks.h"
#include "daemon/core/pages.h"

#include <stdlib.h>
#include <string.h>

static uint64_t stack_hash(uint32_t tgid, const uint64_t *frames, uint32_t n)
{
	/* FNV-1a over 64-bit words, with a final avalanche. */
	uint64_t h = 0xcbf29ce484222325ull ^ tgid ^ ((uint64_t)n << 32);
	uint32_t i;

	for (i = 0; i < n; i++) {
		h ^= frames[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

static size_t word_home(const struct stack_table *t, uint64_t w)
{
	uint64_t x = w * 0x9e3779b97f4a7c15ull;

	return (size_t)(x ^ x >> 29) & t->word_mask;
}

int stacks_init(struct stack_table *t, uint32_t max_stacks)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	t->max_stacks = max_stacks;
	t->index_mask = 1023;
	t->index = pages_alloc((t->index_mask + 1) * sizeof(*t->index));
	if (!t->index)
		return -1;
	for (i = 0; i <= t->index_mask; i++)
		t->index[i] = STACK_NONE;
	return 0;
}

void stacks_destroy(struct stack_table *t)
{
	pages_free(t->v, (size_t)t->cap * sizeof(*t->v));
	if (t->index)
		pages_free(t->index, (t->index_mask + 1) * sizeof(*t->index));
	pages_free(t->nodes, t->nodes_cap * sizeof(*t->nodes));
	pages_free(t->node_index, (size_t)t->node_cap * sizeof(*t->node_index));
	pages_free(t->words, (size_t)t->words_cap * sizeof(*t->words));
	if (t->word_index)
		pages_free(t->word_index, (t->word_mask + 1) * sizeof(*t->word_index));
	memset(t, 0, sizeof(*t));
}

size_t stacks_bytes(const struct stack_table *t)
{
	return (size_t)t->count * sizeof(*t->v) + (t->index_mask + 1) * sizeof(*t->index) +
	       t->nodes_len * sizeof(*t->nodes) + (size_t)t->node_cap * sizeof(*t->node_index) +
	       (size_t)t->nwords * sizeof(*t->words) +
	       (t->word_index ? (t->word_mask + 1) * sizeof(*t->word_index) : 0);
}

static int stacks_grow_index(struct stack_table *t)
{
	size_t cap = (t->index_mask + 1) * 2, i, j;
	uint32_t *index = pages_alloc(cap * sizeof(*index));

	if (!index)
		return -1;
	for (i = 0; i < cap; i++)
		index[i] = STACK_NONE;
	for (i = 0; i < t->count; i++) {
		j = t->v[i].hash & (cap - 1);
		while (index[j] != STACK_NONE)
			j = (j + 1) & (cap - 1);
		index[j] = (uint32_t)i;
	}
	pages_free(t->index, (t->index_mask + 1) * sizeof(*t->index));
	t->index = index;
	t->index_mask = cap - 1;
	return 0;
}

/* The number of word w, added if new; UINT32_MAX when memory runs out. */
static uint32_t word_number(struct stack_table *t, uint64_t w)
{
	size_t i;

	if (!t->word_index || ((size_t)t->nwords + 1) * 2 > t->word_mask + 1) {
		size_t cap = t->word_index ? 2 * (t->word_mask + 1) : 1024;
		uint32_t *index = pages_alloc(cap * sizeof(*index));

		if (!index)
			return UINT32_MAX;
		if (t->word_index)
			pages_free(t->word_index, (t->word_mask + 1) * sizeof(*t->word_index));
		t->word_index = index;
		t->word_mask = cap - 1;
		for (uint32_t k = 0; k < t->nwords; k++) {
			for (i = word_home(t, t->words[k]); index[i]; i = (i + 1) & t->word_mask)
				;
			index[i] = k + 1;
		}
	}
	for (i = word_home(t, w); t->word_index[i]; i = (i + 1) & t->word_mask)
		if (t->words[t->word_index[i] - 1] == w)
			return t->word_index[i] - 1;
	if (t->nwords == t->words_cap) {
		uint32_t cap = t->words_cap ? 2 * t->words_cap : 1024;
		uint64_t *v = cap > t->words_cap
				  ? pages_realloc(t->words, (size_t)t->words_cap * sizeof(*v),
						  (size_t)cap * sizeof(*v))
				  : NULL;

		if (!v)
			return UINT32_MAX;
		t->words = v;
		t->words_cap = cap;
	}
	t->words[t->nwords] = w;
	t->word_index[i] = ++t->nwords;
	return t->nwords - 1;
}

static uint32_t node_home(uint32_t parent, const uint32_t *nums, uint32_t n, uint32_t cap)
{
	uint64_t x = ((uint64_t)parent << 32 | n) * 0x9e3779b97f4a7c15ull;

	for (uint32_t k = 0; k < n; k++) {
		x = (x ^ nums[k]) * 0xff51afd7ed558ccdull;
		x ^= x >> 29;
	}
	return (uint32_t)(((x & 0xffffffffull) * cap) >> 32);
}

/* The node of the n frames nums (word numbers, innermost first) called from
 * node parent (0: none), added if new; 0 when memory runs out. */
static uint32_t node_get(struct stack_table *t, uint32_t parent, const uint32_t *nums, uint32_t n)
{
	uint32_t i, x;

	/* at most 4/5 full, grown by half */
	if ((uint64_t)(t->nnodes + 1) * 5 > (uint64_t)t->node_cap * 4) {
		uint64_t cap = t->node_cap ? (uint64_t)t->node_cap + t->node_cap / 2 : 1024;
		uint32_t *index;

		if (cap > UINT32_MAX || !(index = pages_alloc(cap * sizeof(*index))))
			return 0;
		for (size_t o = 0; o < t->nodes_len; o += 2 + t->nodes[o + 1]) {
			for (i = node_home(t->nodes[o], &t->nodes[o + 2], t->nodes[o + 1],
					   (uint32_t)cap);
			     index[i]; i = i + 1 == cap ? 0 : i + 1)
				;
			index[i] = (uint32_t)o + 1;
		}
		pages_free(t->node_index, (size_t)t->node_cap * sizeof(*t->node_index));
		t->node_index = index;
		t->node_cap = (uint32_t)cap;
	}
	for (i = node_home(parent, nums, n, t->node_cap); (x = t->node_index[i]);
	     i = i + 1 == t->node_cap ? 0 : i + 1) {
		const uint32_t *v = &t->nodes[x - 1];

		if (v[0] == parent && v[1] == n && !memcmp(v + 2, nums, n * sizeof(*nums)))
			return x;
	}
	/* a node's number is its offset + 1 */
	if (t->nodes_len + 2 + n >= UINT32_MAX)
		return 0;
	if (t->nodes_len + 2 + n > t->nodes_cap) {
		size_t cap = t->nodes_cap ? 2 * t->nodes_cap : 4096;
		uint32_t *v = pages_realloc(t->nodes, t->nodes_cap * sizeof(*v), cap * sizeof(*v));

		if (!v)
			return 0;
		t->nodes = v;
		t->nodes_cap = cap;
	}
	x = (uint32_t)t->nodes_len + 1;
	t->nodes[t->nodes_len] = parent;
	t->nodes[t->nodes_len + 1] = n;
	memcpy(&t->nodes[t->nodes_len + 2], nums, n * sizeof(*nums));
	t->nodes_len += 2 + n;
	t->nnodes++;
	t->node_index[i] = x;
	return x;
}

static int stacks_reserve(struct stack_table *t)
{
	if (t->count == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 256;
		struct stack_entry *v =
		    pages_realloc(t->v, (size_t)t->cap * sizeof(*v), (size_t)cap * sizeof(*v));

		if (!v)
			return -1;
		t->v = v;
		t->cap = cap;
	}
	if ((size_t)(t->count + 1) * 4 > (t->index_mask + 1) * 3)
		return stacks_grow_index(t);
	return 0;
}

static int stack_equal(const struct stack_table *t, const struct stack_entry *e, uint32_t tgid,
		       const uint64_t *frames, uint32_t n)
{
	uint32_t k = 0;

	if (e->tgid != tgid || e->nframes != n)
		return 0;
	for (uint32_t node = e->leaf; node; node = t->nodes[node - 1]) {
		const uint32_t *x = &t->nodes[node - 1];

		for (uint32_t j = 0; j < x[1]; j++)
			if (t->words[x[2 + j]] != frames[k++])
				return 0;
	}
	return 1;
}

uint32_t stack_intern(struct stack_table *t, uint32_t tgid, const uint64_t *frames, uint32_t n,
		      int *is_new)
{
	uint32_t h = (uint32_t)stack_hash(tgid, frames, n);
	size_t i = h & t->index_mask;
	struct stack_entry *e;
	uint32_t idx, leaf = 0;

	*is_new = 0;
	if (n > STACK_MAX_FRAMES)
		return STACK_NONE;
	while ((idx = t->index[i]) != STACK_NONE) {
		e = &t->v[idx];
		if (e->hash == h && stack_equal(t, e, tgid, frames, n))
			return idx;
		i = (i + 1) & t->index_mask;
	}
	if (t->max_stacks && t->count >= t->max_stacks)
		return STACK_NONE;
	if (stacks_reserve(t))
		return STACK_NONE;
	/* its nodes, from the outermost frame, STACK_RUN frames at a time */
	for (uint32_t end = n, start; end; end = start) {
		uint32_t nums[STACK_RUN];

		start = end > STACK_RUN ? end - STACK_RUN : 0;
		for (uint32_t k = start; k < end; k++)
			if ((nums[k - start] = word_number(t, frames[k])) == UINT32_MAX)
				return STACK_NONE;
		if (!(leaf = node_get(t, leaf, nums, end - start)))
			return STACK_NONE;
	}
	/* the index may have been rebuilt: find the free slot again */
	i = h & t->index_mask;
	while (t->index[i] != STACK_NONE)
		i = (i + 1) & t->index_mask;
	idx = t->count++;
	t->index[i] = idx;
	e = &t->v[idx];
	memset(e, 0, sizeof(*e));
	e->hash = h;
	e->tgid = tgid;
	e->nframes = (uint16_t)n;
	e->leaf = leaf;
	*is_new = 1;
	return idx;
}

/* ---- the registered stack ids -------------------------------------------- */

/* Grown to twice its size past half full, so that a lookup meets an empty
 * slot within a few probes. */

void stackids_init(struct stack_ids *m)
{
	memset(m, 0, sizeof(*m));
}

void stackids_destroy(struct stack_ids *m)
{
	if (m->slots)
		pages_free(m->slots, (m->mask + 1) * sizeof(*m->slots));
	memset(m, 0, sizeof(*m));
}

size_t stackids_bytes(const struct stack_ids *m)
{
	return m->slots ? (m->mask + 1) * sizeof(*m->slots) : 0;
}

static int stackids_grow(struct stack_ids *m)
{
	size_t cap = m->slots ? 2 * (m->mask + 1) : 1024, i, j;
	struct stack_id_slot *v = pages_alloc(cap * sizeof(*v));

	if (!v)
		return -1;
	for (i = 0; m->slots && i <= m->mask; i++) {
		if (!m->slots[i].id)
			continue;
		for (j = m->slots[i].id & (cap - 1); v[j].id; j = (j + 1) & (cap - 1))
			;
		v[j] = m->slots[i];
	}
	if (m->slots)
		pages_free(m->slots, (m->mask + 1) * sizeof(*m->slots));
	m->slots = v;
	m->mask = cap - 1;
	return 0;
}

int stackids_put(struct stack_ids *m, uint64_t id, uint32_t stack)
{
	size_t i;

	if (!id)
		return -1;
	if ((!m->slots || (m->count + 1) * 2 > m->mask + 1) && stackids_grow(m))
		return -1;
	for (i = id & m->mask; m->slots[i].id; i = (i + 1) & m->mask) {
		if (m->slots[i].id == id) {
			m->slots[i].stack = stack;
			return 0;
		}
	}
	m->slots[i].id = id;
	m->slots[i].stack = stack;
	m->count++;
	return 0;
}
