/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A map from nonzero 64-bit keys (addresses, or packed small numbers) to
 * 32-bit values: open addressing with linear probing at most half full and
 * backward-shift deletion, so lookups stay short however the map was used
 * and no tombstones pile up. The process families' side tables (family.c)
 * are made of it: they hold what a parent or a child changed after a fork,
 * so they are small next to the heap and need deletion, which the heap's own
 * table (heap.c, keyed through the stack table) is not shaped for.
 * Invariant: count == number of nonzero keys; every key is reachable from
 * its home slot without crossing an empty slot.
 */
#ifndef MEMTRACE_ADDRMAP_H
#define MEMTRACE_ADDRMAP_H

#include <stddef.h>
#include <stdint.h>

struct addrmap {
	uint64_t *keys; /* 0 = empty */
	uint32_t *vals;
	size_t mask; /* slots - 1, a power of two minus one; 0 before the first put */
	size_t count;
};

/* Set key (nonzero) to val: 0, or -1 when memory runs out (the map is unchanged). */
int addrmap_put(struct addrmap *m, uint64_t key, uint32_t val);
/* 1 and the value in *val (may be NULL), or 0 when key is absent. */
int addrmap_get(const struct addrmap *m, uint64_t key, uint32_t *val);
/* Remove key: 1 and its value in *val (may be NULL), or 0 when absent. */
int addrmap_del(struct addrmap *m, uint64_t key, uint32_t *val);
/* Bytes the map holds. */
size_t addrmap_bytes(const struct addrmap *m);
void addrmap_free(struct addrmap *m);

#endif
