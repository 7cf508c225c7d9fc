// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Stack interning (see stacks.h). Entries and frames only grow; an index
 * handed out is never invalidated or reused.
 */
#include "daemon/core/stacks.h"

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

int stacks_init(struct stack_table *t, uint32_t max_stacks)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	t->max_stacks = max_stacks;
	t->index_mask = 1023;
	t->index = malloc((t->index_mask + 1) * sizeof(*t->index));
	if (!t->index)
		return -1;
	for (i = 0; i <= t->index_mask; i++)
		t->index[i] = STACK_NONE;
	return 0;
}

void stacks_destroy(struct stack_table *t)
{
	free(t->v);
	free(t->index);
	free(t->frames);
	memset(t, 0, sizeof(*t));
}

static int stacks_grow_index(struct stack_table *t)
{
	size_t cap = (t->index_mask + 1) * 2, i, j;
	uint32_t *index = malloc(cap * sizeof(*index));

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
	free(t->index);
	t->index = index;
	t->index_mask = cap - 1;
	return 0;
}

static int stacks_reserve(struct stack_table *t, uint32_t nframes)
{
	if (t->count == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 256;
		struct stack_entry *v = realloc(t->v, (size_t)cap * sizeof(*v));

		if (!v)
			return -1;
		t->v = v;
		t->cap = cap;
	}
	if (t->frames_len + nframes > t->frames_cap) {
		size_t cap = t->frames_cap ? t->frames_cap : 4096;
		uint64_t *f;

		while (cap < t->frames_len + nframes)
			cap *= 2;
		f = realloc(t->frames, cap * sizeof(*f));
		if (!f)
			return -1;
		t->frames = f;
		t->frames_cap = cap;
	}
	if ((size_t)(t->count + 1) * 4 > (t->index_mask + 1) * 3)
		return stacks_grow_index(t);
	return 0;
}

uint32_t stack_intern(struct stack_table *t, uint32_t tgid, const uint64_t *frames, uint32_t n,
		      int *is_new)
{
	uint64_t h = stack_hash(tgid, frames, n);
	size_t i = h & t->index_mask;
	struct stack_entry *e;
	uint32_t idx;

	*is_new = 0;
	while ((idx = t->index[i]) != STACK_NONE) {
		e = &t->v[idx];
		if (e->hash == h && e->tgid == tgid && e->nframes == n &&
		    !memcmp(t->frames + e->frames_off, frames, n * sizeof(*frames)))
			return idx;
		i = (i + 1) & t->index_mask;
	}
	if (t->max_stacks && t->count >= t->max_stacks)
		return STACK_NONE;
	if (stacks_reserve(t, n))
		return STACK_NONE;
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
	e->nframes = n;
	e->frames_off = t->frames_len;
	if (n)
		memcpy(t->frames + t->frames_len, frames, n * sizeof(*frames));
	t->frames_len += n;
	*is_new = 1;
	return idx;
}
