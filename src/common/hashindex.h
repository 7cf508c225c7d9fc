/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one hash index of both programs: open addressing from a hash to the
 * number of an entry the caller keeps in its own arrays (entries are
 * numbered 0, 1, ... in the order they were added), and the hashes to feed
 * it (FNV-1a over bytes, a mixer for keys of several numbers). The snapshot
 * encoder, string tables (strtab.h), the symbol cache, the daemon's grouping
 * and the pprof and HTML outputs all look up through it.
 *
 * Running out of memory: hash_index_try_find() says so and changes nothing
 * (the encoder must not take the daemon down); hash_index_find() aborts, as
 * xmalloc() does, for bookkeeping that is small and bounded.
 */
#ifndef MEMTRACE_HASHINDEX_H
#define MEMTRACE_HASHINDEX_H

#include <stddef.h>
#include <stdint.h>

struct hash_index {
	uint64_t *hashes; /* by entry number; room for nslots / 2 */
	uint32_t *slots;  /* entry number + 1; 0 is empty */
	size_t nslots;	  /* a power of two, more than twice count (or 0) */
	size_t count;
};

#define HASH_SEED 0xcbf29ce484222325ull /* FNV-1a's offset basis */

/* FNV-1a of p[0..n) from h (HASH_SEED to start). */
static inline uint64_t hash_bytes(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* Mix v into the hash h (for keys of several numbers). */
static inline uint64_t hash_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

/* Is entry i the one looked for (arg says what)? */
typedef int hash_eq_fn(const void *arg, size_t i);

/* Twice the slots: 0, or -1 when memory ran out (t unchanged). */
int hash_index_grow(struct hash_index *t);
void hash_index_free(struct hash_index *t);

/* The number of the entry with this hash for which eq(arg, i) holds, or SIZE_MAX. */
static inline size_t hash_index_get(const struct hash_index *t, uint64_t hash, hash_eq_fn *eq,
				    const void *arg)
{
	size_t mask = t->nslots - 1;

	if (!t->nslots)
		return SIZE_MAX;
	for (size_t pos = hash & mask; t->slots[pos]; pos = (pos + 1) & mask) {
		size_t i = t->slots[pos] - 1;

		if (t->hashes[i] == hash && eq(arg, i))
			return i;
	}
	return SIZE_MAX;
}

/*
 * The number of the entry with this hash for which eq(arg, i) holds; else a
 * new entry's, count before the call, with *is_new set: the caller stores the
 * entry under that number in its arrays before the next lookup. SIZE_MAX when
 * memory ran out (nothing added).
 */
static inline size_t hash_index_try_find(struct hash_index *t, uint64_t hash, hash_eq_fn *eq,
					 const void *arg, int *is_new)
{
	size_t mask, pos;

	*is_new = 0;
	if ((t->count + 1) * 2 > t->nslots && hash_index_grow(t))
		return SIZE_MAX;
	mask = t->nslots - 1;
	for (pos = hash & mask; t->slots[pos]; pos = (pos + 1) & mask) {
		size_t i = t->slots[pos] - 1;

		if (t->hashes[i] == hash && eq(arg, i))
			return i;
	}
	t->hashes[t->count] = hash;
	t->slots[pos] = (uint32_t)t->count + 1;
	*is_new = 1;
	return t->count++;
}

/* Says "out of memory" and aborts, as xmalloc() does. */
void hash_index_out_of_memory(void) __attribute__((noreturn));

/* hash_index_try_find(), aborting with a message when memory runs out. */
static inline size_t hash_index_find(struct hash_index *t, uint64_t hash, hash_eq_fn *eq,
				     const void *arg, int *is_new)
{
	size_t i = hash_index_try_find(t, hash, eq, arg, is_new);

	if (i == SIZE_MAX)
		hash_index_out_of_memory();
	return i;
}

#endif
