// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The side tables' map (see addrmap.h): linear probing, grown at half full,
 * backward-shift deletion (Knuth's algorithm R).
 */
#include "daemon/core/addrmap.h"

#include <stdlib.h>
#include <string.h>

static inline size_t home(uint64_t key, size_t mask)
{
	uint64_t x = key;

	/* addresses are aligned and clustered: mix every bit */
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x & mask;
}

static int grow(struct addrmap *m)
{
	size_t slots = m->mask ? 2 * (m->mask + 1) : 64, i, j;
	uint64_t *keys = calloc(slots, sizeof(*keys));
	uint32_t *vals = malloc(slots * sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -1;
	}
	for (i = 0; m->mask && i <= m->mask; i++) {
		if (!m->keys[i])
			continue;
		for (j = home(m->keys[i], slots - 1); keys[j]; j = (j + 1) & (slots - 1))
			;
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->mask = slots - 1;
	return 0;
}

/* The slot of key, or of the empty slot where it would go. */
static size_t find(const struct addrmap *m, uint64_t key)
{
	size_t i = home(key, m->mask);

	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & m->mask;
	return i;
}

int addrmap_put(struct addrmap *m, uint64_t key, uint32_t val)
{
	size_t i;

	if (!key)
		return -1;
	if (m->mask) {
		i = find(m, key);
		if (m->keys[i]) {
			m->vals[i] = val;
			return 0;
		}
	}
	if ((m->count + 1) * 2 > (m->mask ? m->mask + 1 : 0) && grow(m))
		return -1;
	i = find(m, key);
	m->keys[i] = key;
	m->vals[i] = val;
	m->count++;
	return 0;
}

int addrmap_get(const struct addrmap *m, uint64_t key, uint32_t *val)
{
	size_t i;

	if (!m->count || !key)
		return 0;
	i = find(m, key);
	if (!m->keys[i])
		return 0;
	if (val)
		*val = m->vals[i];
	return 1;
}

int addrmap_del(struct addrmap *m, uint64_t key, uint32_t *val)
{
	size_t i, j;

	if (!m->count || !key)
		return 0;
	i = find(m, key);
	if (!m->keys[i])
		return 0;
	if (val)
		*val = m->vals[i];
	/* shift back every later key of the run that may move into the hole */
	for (j = (i + 1) & m->mask; m->keys[j]; j = (j + 1) & m->mask) {
		size_t h = home(m->keys[j], m->mask);

		/* the key at j stays if its home lies cyclically in (i, j] */
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		i = j;
	}
	m->keys[i] = 0;
	m->count--;
	return 1;
}

size_t addrmap_bytes(const struct addrmap *m)
{
	return m->mask ? (m->mask + 1) * (sizeof(*m->keys) + sizeof(*m->vals)) : 0;
}

void addrmap_free(struct addrmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}
