/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The snapshot encoder's hash index: open addressing over entry indices (the
 * entries live in the caller's arrays, the index holds their hashes), FNV-1a
 * for the hashes. An allocation failure sets *nomem and returns -1, never
 * aborts.
 */
#ifndef MEMTRACE_DEDUP_H
#define MEMTRACE_DEDUP_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

static inline uint64_t hash_bytes(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull; /* FNV-1a */
	return h;
}

static inline uint64_t hash_u64(uint64_t h, uint64_t v)
{
	return hash_bytes(&v, sizeof(v), h);
}

#define HASH_SEED 0xcbf29ce484222325ull

/* Open addressing over entry indices; entries live in the caller's arrays. */
struct dedup {
	uint32_t *slots; /* entry index + 1; 0 = empty */
	size_t nslots;	 /* power of two */
	uint64_t *hashes;
	size_t count, cap;
};

static inline uint32_t *dedup_slot(struct dedup *d, uint64_t hash, size_t *pos)
{
	*pos = hash & (d->nslots - 1);
	return &d->slots[*pos];
}

static inline uint32_t *dedup_next(struct dedup *d, size_t *pos)
{
	*pos = (*pos + 1) & (d->nslots - 1);
	return &d->slots[*pos];
}

/* Make room for one more entry; rehashes when half full. */
static inline int dedup_reserve(struct dedup *d, int *nomem)
{
	uint32_t *slots;
	size_t nslots, pos;

	if (d->count + 1 > d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 64;
		uint64_t *h = realloc(d->hashes, cap * sizeof(*h));

		if (!h) {
			*nomem = 1;
			return -1;
		}
		d->hashes = h;
		d->cap = cap;
	}
	if (d->nslots && (d->count + 1) * 2 <= d->nslots)
		return 0;
	nslots = d->nslots ? d->nslots * 2 : 256;
	slots = calloc(nslots, sizeof(*slots));
	if (!slots) {
		*nomem = 1;
		return -1;
	}
	free(d->slots);
	d->slots = slots;
	d->nslots = nslots;
	for (size_t i = 0; i < d->count; i++) {
		uint32_t *slot = dedup_slot(d, d->hashes[i], &pos);

		while (*slot)
			slot = dedup_next(d, &pos);
		*slot = (uint32_t)i + 1;
	}
	return 0;
}

static inline void dedup_free(struct dedup *d)
{
	free(d->slots);
	free(d->hashes);
}

#endif
