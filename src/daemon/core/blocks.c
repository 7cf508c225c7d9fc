// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The live blocks of one target (see blocks.h): a walk of the heap table
 * keeping the blocks of one key. Reads the core only.
 */
#include "daemon/core/blocks.h"
#include "daemon/core/tracker.h"

void target_blocks_begin(struct target_blocks *it, const struct tracker *t, uint32_t space)
{
	it->t = t;
	it->space = space;
	it->pos = 0;
}

int target_blocks_next(struct target_blocks *it, struct heap_block *out)
{
	while (heap_next(&it->t->heap, &it->pos, out))
		if (out->tgid == it->space)
			return 1;
	return 0;
}
