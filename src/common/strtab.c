// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Hash index and string table (see strtab.h). */
#include "common/strtab.h"
#include "common/util.h"

#include <stdlib.h>
#include <string.h>

uint64_t hash_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

/* Twice the slots; hashes[] holds the most entries the slots take (half). */
static void hash_index_grow(struct hash_index *t)
{
	size_t nslots = t->nslots ? t->nslots * 2 : 1024;
	uint32_t *slots = xcalloc(nslots, sizeof(*slots));

	for (size_t i = 0; i < t->count; i++) {
		size_t pos = t->hashes[i] & (nslots - 1);

		while (slots[pos])
			pos = (pos + 1) & (nslots - 1);
		slots[pos] = (uint32_t)i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	t->hashes = xrealloc(t->hashes, nslots / 2 * sizeof(*t->hashes));
}

size_t hash_index_find(struct hash_index *t, uint64_t hash, int (*eq)(const void *arg, size_t i),
		       const void *arg, int *is_new)
{
	size_t pos;

	if ((t->count + 1) * 2 > t->nslots)
		hash_index_grow(t);
	for (pos = hash & (t->nslots - 1); t->slots[pos]; pos = (pos + 1) & (t->nslots - 1)) {
		size_t i = t->slots[pos] - 1;

		if (t->hashes[i] == hash && eq(arg, i)) {
			*is_new = 0;
			return i;
		}
	}
	t->hashes[t->count] = hash;
	t->slots[pos] = (uint32_t)t->count + 1;
	*is_new = 1;
	return t->count++;
}

size_t hash_index_get(const struct hash_index *t, uint64_t hash,
		      int (*eq)(const void *arg, size_t i), const void *arg)
{
	size_t pos;

	if (!t->nslots)
		return SIZE_MAX;
	for (pos = hash & (t->nslots - 1); t->slots[pos]; pos = (pos + 1) & (t->nslots - 1)) {
		size_t i = t->slots[pos] - 1;

		if (t->hashes[i] == hash && eq(arg, i))
			return i;
	}
	return SIZE_MAX;
}

void hash_index_free(struct hash_index *t)
{
	free(t->hashes);
	free(t->slots);
	*t = (struct hash_index){0};
}

/* ---- strings ------------------------------------------------------------- */

struct str_key {
	const struct strtab *t;
	const char *s;
	size_t len;
};

static uint64_t str_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
	return h;
}

static int str_eq(const void *arg, size_t i)
{
	const struct str_key *k = arg;

	return k->t->lens[i] == k->len && !memcmp(k->t->strs[i], k->s, k->len);
}

size_t strtab_intern(struct strtab *t, const char *s, size_t len)
{
	struct str_key key = {t, s, len};
	int is_new;
	size_t i = hash_index_find(&t->index, str_hash(s, len), str_eq, &key, &is_new);

	if (!is_new)
		return i;
	if (i == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 1024;
		t->strs = xrealloc(t->strs, t->cap * sizeof(*t->strs));
		t->lens = xrealloc(t->lens, t->cap * sizeof(*t->lens));
	}
	t->strs[i] = xmalloc(len + 1);
	memcpy(t->strs[i], s, len);
	t->strs[i][len] = '\0';
	t->lens[i] = len;
	return i;
}

void strtab_free(struct strtab *t)
{
	for (size_t i = 0; i < strtab_count(t); i++)
		free(t->strs[i]);
	free(t->strs);
	free(t->lens);
	hash_index_free(&t->index);
	*t = (struct strtab){0};
}
