// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The string table (see strtab.h). */
#include "common/strtab.h"
#include "common/util.h"

#include <stdlib.h>
#include <string.h>

struct str_key {
	const struct strtab *t;
	const char *s;
	size_t len;
};

static int str_eq(const void *arg, size_t i)
{
	const struct str_key *k = arg;

	return k->t->lens[i] == k->len && !memcmp(k->t->strs[i], k->s, k->len);
}

size_t strtab_intern(struct strtab *t, const char *s, size_t len)
{
	struct str_key key = {t, s, len};
	int is_new;
	size_t i = hash_index_find(&t->index, hash_bytes(s, len, HASH_SEED), str_eq, &key, &is_new);

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
