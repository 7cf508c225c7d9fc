/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Hash lookups for the outputs (pprof, HTML): a hash index, open addressing
 * from a hash to the index of an entry the caller keeps in its own arrays,
 * and on it a string table, each string held once and numbered in the order
 * it was first seen.
 */
#ifndef MEMTRACE_CTL_STRTAB_H
#define MEMTRACE_CTL_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct hash_index {
	uint64_t *hashes; /* by entry index */
	uint32_t *slots;  /* entry index + 1; 0 is empty */
	size_t nslots, count;
};

/* Mix v into the hash h (for keys of several numbers). */
uint64_t hash_mix(uint64_t h, uint64_t v);

/*
 * The index of the entry with this hash for which eq(arg, index) holds; else
 * the index of a new entry (count before the call) with *is_new set, which the
 * caller then stores at that index of its arrays.
 */
size_t hash_index_find(struct hash_index *t, uint64_t hash, int (*eq)(const void *arg, size_t i),
		       const void *arg, int *is_new);
/* The same without adding: the index of the entry, or SIZE_MAX when there is none. */
size_t hash_index_get(const struct hash_index *t, uint64_t hash,
		      int (*eq)(const void *arg, size_t i), const void *arg);
void hash_index_free(struct hash_index *t);

struct strtab {
	struct hash_index index; /* index.count strings */
	char **strs;		 /* NUL-terminated copies, in the order first seen */
	size_t *lens;
	size_t cap;
};

/* The number of s[0..len) in t, adding a copy when it is new. */
size_t strtab_intern(struct strtab *t, const char *s, size_t len);
static inline size_t strtab_count(const struct strtab *t)
{
	return t->index.count;
}
void strtab_free(struct strtab *t);

#endif
