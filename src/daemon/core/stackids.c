// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The registered stack ids (see stackids.h): grown to twice its size past
 * half full, so that a lookup meets an empty slot within a few probes.
 */
#include "daemon/core/stackids.h"
#include "daemon/core/pages.h"

#include <stdlib.h>
#include <string.h>

void stackids_init(struct stack_ids *m)
{
	memset(m, 0, sizeof(*m));
}

void stackids_destroy(struct stack_ids *m)
{
	if (m->slots)
		pages_free(m->slots, (m->mask + 1) * sizeof(*m->slots));
	memset(m, 0, sizeof(*m));
}

size_t stackids_bytes(const struct stack_ids *m)
{
	return m->slots ? (m->mask + 1) * sizeof(*m->slots) : 0;
}

static int grow(struct stack_ids *m)
{
	size_t cap = m->slots ? 2 * (m->mask + 1) : 1024, i, j;
	struct stack_id_slot *v = pages_alloc(cap * sizeof(*v));

	if (!v)
		return -1;
	for (i = 0; m->slots && i <= m->mask; i++) {
		if (!m->slots[i].id)
			continue;
		for (j = m->slots[i].id & (cap - 1); v[j].id; j = (j + 1) & (cap - 1))
			;
		v[j] = m->slots[i];
	}
	if (m->slots)
		pages_free(m->slots, (m->mask + 1) * sizeof(*m->slots));
	m->slots = v;
	m->mask = cap - 1;
	return 0;
}

int stackids_put(struct stack_ids *m, uint64_t id, uint32_t stack)
{
	size_t i;

	if (!id)
		return -1;
	if ((!m->slots || (m->count + 1) * 2 > m->mask + 1) && grow(m))
		return -1;
	for (i = id & m->mask; m->slots[i].id; i = (i + 1) & m->mask) {
		if (m->slots[i].id == id) {
			m->slots[i].stack = stack;
			return 0;
		}
	}
	m->slots[i].id = id;
	m->slots[i].stack = stack;
	m->count++;
	return 0;
}
