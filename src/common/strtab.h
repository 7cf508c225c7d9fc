/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A string table on the hash index (hashindex.h): each string held once and
 * numbered in the order it was first seen.
 */
#ifndef MEMTRACE_STRTAB_H
#define MEMTRACE_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include "common/hashindex.h"

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
