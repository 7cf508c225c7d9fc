// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The live blocks of one target (see blocks.h): the views' walk of every
 * heap (viewrows.h), which lists each forked child's inherited blocks
 * under rows of its own, kept to the target's own blocks and its rows.
 */
#include "daemon/core/blocks.h"
#include "daemon/core/tracker.h"
#include "daemon/core/viewrows.h"

struct each {
	const struct tracker *t;
	const struct viewrows *rows;
	uint32_t space;
	int (*fn)(void *arg, const struct heap_block *b, int inherited);
	void *arg;
};

static int keep(void *arg, uint32_t id, const struct heap_block *b)
{
	struct each *e = arg;
	struct heap_block shown;

	if (id < e->rows->nstacks) /* an own block of some target */
		return b->tgid == e->space ? e->fn(e->arg, b, 0) : 0;
	/* an inherited block, under the row of the child that holds it */
	if (id - e->rows->nstacks >= e->rows->nrows)
		return 0;
	if (e->t->targets[e->rows->rows[id - e->rows->nstacks].target].space != e->space)
		return 0;
	shown = *b;
	shown.stack = viewrows_stack(e->rows, id);
	return e->fn(e->arg, &shown, 1);
}

int target_blocks_each(const struct tracker *t, uint32_t space,
		       int (*fn)(void *arg, const struct heap_block *b, int inherited), void *arg)
{
	const struct tracker_target *tt = tracker_find_space(t, space);
	struct viewrows rows = {0};
	struct each e = {.t = t, .rows = &rows, .space = space, .fn = fn, .arg = arg};

	if (!tt)
		return 0;
	if (viewrows_build(t, tt->tgid, 1, &rows))
		return -1;
	viewrows_blocks(t, &rows, keep, &e);
	viewrows_free(&rows);
	return 0;
}
