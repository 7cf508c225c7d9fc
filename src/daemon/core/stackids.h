/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The stack ids the BPF side registered (include/memtrace/event.h, MT_SF_ID):
 * each id, as the event that registered it carried it, mapped to the stack
 * table's index of its frames (or STACK_NONE, a registration whose stack
 * could not be kept). An id is registered once for the programs' life, so
 * the map only grows; a lookup of an id never registered is the caller's
 * to count, never a guess. Open addressing, linear probing, keys never 0.
 */
#ifndef MEMTRACE_STACKIDS_H
#define MEMTRACE_STACKIDS_H

#include <stddef.h>
#include <stdint.h>

struct stack_id_slot {
	uint64_t id; /* 0: empty */
	uint32_t stack;
};

struct stack_ids {
	struct stack_id_slot *slots;
	size_t mask; /* slots - 1, a power of two minus one; 0 before the first put */
	size_t count;
};

void stackids_init(struct stack_ids *m);
void stackids_destroy(struct stack_ids *m);

/* Map id (not 0) to stack, replacing what it mapped to. 0, or -1 out of memory. */
int stackids_put(struct stack_ids *m, uint64_t id, uint32_t stack);

/* 1 and *stack when id is registered, else 0. */
static inline int stackids_get(const struct stack_ids *m, uint64_t id, uint32_t *stack)
{
	size_t i;

	if (!m->count)
		return 0;
	/* ids are hashes already: their low bits place them */
	for (i = id & m->mask; m->slots[i].id; i = (i + 1) & m->mask) {
		if (m->slots[i].id == id) {
			*stack = m->slots[i].stack;
			return 1;
		}
	}
	return 0;
}

/* Bytes it holds, for the figures. */
size_t stackids_bytes(const struct stack_ids *m);

#endif
