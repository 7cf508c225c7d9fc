// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The live blocks of one target (see blocks.h): the views' walk of every
 * heap (viewrows.h), which lists each forked child's inherited blocks
 * under rows of its own, kept to the target's own blocks and its rows.
 */
#include "daemon/core/blocks.h"
#include "daemon/core/stacks.h"
#include "daemon/core/tracker.h"
#include "daemon/core/viewrows.h"

struct each {
	const struct tracker *t;
	const struct viewrows *rows;
	uint32_t gen;
	int (*fn)(void *arg, const struct heap_block *b, int inherited);
	void *arg;
};

static int keep(void *arg, uint32_t id, const struct heap_block *b)
{
	struct each *e = arg;
	struct heap_block shown;
	uint32_t row_gen;

	/*
	 * Whose row: a stack's (own blocks, and the blocks a child inherited
	 * with the same frames as one of its own stacks), or an inherited row's.
	 */
	if (id < e->rows->nstacks)
		row_gen = stack_get(&e->t->stacks, id)->tgid;
	else if (id - e->rows->nstacks < e->rows->nrows)
		row_gen = e->t->targets[e->rows->rows[id - e->rows->nstacks].target].gen;
	else
		return 0;
	if (row_gen != e->gen)
		return 0;
	if (b->tgid == e->gen)
		return e->fn(e->arg, b, 0);
	shown = *b;
	shown.stack = viewrows_stack(e->rows, id);
	return e->fn(e->arg, &shown, 1);
}

int target_blocks_each(const struct tracker *t, uint32_t gen,
		       int (*fn)(void *arg, const struct heap_block *b, int inherited), void *arg)
{
	const struct tracker_target *tt = tracker_find_gen(t, gen);
	struct viewrows rows = {0};
	struct each e = {.t = t, .rows = &rows, .gen = gen, .fn = fn, .arg = arg};

	if (!tt)
		return 0;
	if (viewrows_build(t, tt->tgid, 1, &rows))
		return -1;
	viewrows_blocks(t, &rows, keep, &e);
	viewrows_free(&rows);
	return 0;
}
