// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The live heap table (see heap.h). Grows by doubling at 3/4 load; deletion
 * shifts later members of the probe run back so lookups never need
 * tombstones and the table never degrades under malloc/free churn.
 */
#include "daemon/core/heap.h"

#include <stdlib.h>
#include <string.h>

#define HEAP_MIN_CAPACITY 1024

static inline size_t heap_hash(uint32_t tgid, uint64_t addr)
{
	/* Addresses are 16-byte aligned and clustered: mix all bits
	 * (the 64-bit finalizer of MurmurHash3). */
	uint64_t x = addr ^ ((uint64_t)tgid << 47) ^ tgid;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return (size_t)x;
}

int heap_init(struct heap *h, size_t max_count)
{
	memset(h, 0, sizeof(*h));
	h->slots = calloc(HEAP_MIN_CAPACITY, sizeof(*h->slots));
	if (!h->slots)
		return -1;
	h->mask = HEAP_MIN_CAPACITY - 1;
	h->max_count = max_count;
	return 0;
}

void heap_destroy(struct heap *h)
{
	free(h->slots);
	memset(h, 0, sizeof(*h));
}

static struct heap_block *heap_slot(const struct heap *h, uint32_t tgid, uint64_t addr)
{
	size_t i = heap_hash(tgid, addr) & h->mask;

	for (;;) {
		struct heap_block *s = &h->slots[i];

		if (!s->addr || (s->addr == addr && s->tgid == tgid))
			return s;
		i = (i + 1) & h->mask;
	}
}

static int heap_grow(struct heap *h)
{
	size_t old_cap = h->mask + 1, i;
	struct heap_block *old = h->slots, *slots;

	slots = calloc(old_cap * 2, sizeof(*slots));
	if (!slots)
		return -1;
	h->slots = slots;
	h->mask = old_cap * 2 - 1;
	for (i = 0; i < old_cap; i++) {
		if (old[i].addr)
			*heap_slot(h, old[i].tgid, old[i].addr) = old[i];
	}
	free(old);
	return 0;
}

int heap_insert(struct heap *h, const struct heap_block *b, struct heap_block *old)
{
	struct heap_block *s = heap_slot(h, b->tgid, b->addr);

	if (s->addr) {
		if (old)
			*old = *s;
		*s = *b;
		return HEAP_REPLACED;
	}
	if (h->max_count && h->count >= h->max_count)
		return HEAP_FULL;
	if ((h->count + 1) * 4 > (h->mask + 1) * 3) {
		if (heap_grow(h))
			return HEAP_FULL;
		s = heap_slot(h, b->tgid, b->addr);
	}
	*s = *b;
	h->count++;
	return HEAP_INSERTED;
}

const struct heap_block *heap_find(const struct heap *h, uint32_t tgid, uint64_t addr)
{
	const struct heap_block *s;

	if (!addr)
		return NULL;
	s = heap_slot(h, tgid, addr);
	return s->addr ? s : NULL;
}

struct heap_block *heap_find_mut(struct heap *h, uint32_t tgid, uint64_t addr)
{
	return (struct heap_block *)heap_find(h, tgid, addr);
}

int heap_remove(struct heap *h, uint32_t tgid, uint64_t addr, struct heap_block *out)
{
	struct heap_block *s;
	size_t hole, i;

	if (!addr)
		return 0;
	s = heap_slot(h, tgid, addr);
	if (!s->addr)
		return 0;
	if (out)
		*out = *s;
	/* Backward-shift deletion: move each later member of the run into the
	 * hole when its home slot is not cyclically between hole and it. */
	hole = (size_t)(s - h->slots);
	i = hole;
	for (;;) {
		size_t home;

		i = (i + 1) & h->mask;
		if (!h->slots[i].addr)
			break;
		home = heap_hash(h->slots[i].tgid, h->slots[i].addr) & h->mask;
		if (((i - home) & h->mask) >= ((i - hole) & h->mask)) {
			h->slots[hole] = h->slots[i];
			hole = i;
		}
	}
	memset(&h->slots[hole], 0, sizeof(h->slots[hole]));
	h->count--;
	return 1;
}

const struct heap_block *heap_next(const struct heap *h, size_t *pos)
{
	while (*pos <= h->mask) {
		const struct heap_block *s = &h->slots[(*pos)++];

		if (s->addr)
			return s;
	}
	return NULL;
}
