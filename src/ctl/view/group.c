// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Grouping stacks into rows (see group.h). Each stack yields one (key,
 * stack) pair, or one per distinct key among its frames when cumulative; the
 * pairs are sorted by key and runs of equal keys summed. O(n log n) in the
 * frames of the snapshot, no hash table to get wrong.
 */
#include "ctl/view/group.h"
#include "common/order.h"
#include "common/util.h"
#include "common/search.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A stack's key: its frames' locations, innermost first, joined by ';'. */
static char *stack_key(const struct snap_stack *st)
{
	struct buf b = {0};
	char loc[4096];

	if (!st->nframes)
		return xstrdup(NO_STACK_KEY);
	for (uint32_t i = 0; i < st->nframes; i++) {
		group_frame_location(st->frames[i], loc, sizeof(loc));
		if (i)
			buf_put(&b, ";", 1);
		buf_put(&b, loc, strlen(loc));
	}
	buf_put(&b, "", 1);
	return (char *)b.data;
}

/*
 * The frame a non-cumulative key comes from: the innermost Python frame
 * when the stack has one, as tracemalloc attributes memory to the Python
 * line that asked for it; else frame 0.
 */
static const struct snap_frame *key_frame(const struct snap_stack *st)
{
	for (uint32_t i = 0; i < st->nframes; i++) {
		const struct snap_frame *f = st->frames[i];

		if (group_python_frame(f))
			return f;
	}
	return st->frames[0];
}

struct pair {
	char *key;
	uint32_t stack;
};

static int pair_cmp(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int row_key_cmp(const void *a, const void *b)
{
	return strcmp(((const struct group_row *)a)->key, ((const struct group_row *)b)->key);
}

/* The daemon's rows (section SEC_GROUPS): one per stack, its sums on the stack. */
static void group_from_rows(const struct snapshot *s, struct group_table *out)
{
	const struct snap_groups *g = &s->groups;

	out->rows = xcalloc(s->nstacks ? s->nstacks : 1, sizeof(*out->rows));
	for (uint32_t i = 0; i < s->nstacks; i++) {
		struct group_row *row = &out->rows[out->nrows++];

		row->key = xstrdup(g->rows[i].key ? g->rows[i].key : "");
		row->stack = &s->stacks[i];
		row->nstacks = (uint32_t)g->rows[i].stacks;
		row->t = s->stacks[i].t;
	}
	if (out->nrows)
		qsort(out->rows, out->nrows, sizeof(*out->rows), row_key_cmp);
	out->rest_rows = g->rest_rows;
	out->rest_rows_live = g->rest_rows_live;
	out->rest_rows_allocated = g->rest_rows_allocated;
	out->rest_rows_peak = g->rest_rows_peak;
	out->rest = g->rest;
}

void group_snapshot(const struct snapshot *s, int by, int cumulative, struct group_table *out)
{
	struct pair *pairs = NULL;
	size_t npairs = 0, cap = 0;
	char key[4096];

	memset(out, 0, sizeof(*out));
	out->by = by;
	out->cumulative = cumulative && by != GROUP_STACK && !group_by_target(by);
	if (s->kind == SNAP_ROWS && s->groups.by == (uint32_t)by &&
	    s->groups.cumulative == (uint32_t)out->cumulative) {
		group_from_rows(s, out);
		return;
	}
	for (uint32_t i = 0; i < s->nstacks; i++) {
		const struct snap_stack *st = &s->stacks[i];
		uint32_t nkeys =
		    !st->nframes || by == GROUP_STACK || !out->cumulative ? 1 : st->nframes;

		if (group_by_target(by)) { /* a label of its process, frames or not */
			if (npairs + 1 > cap) {
				cap = (npairs + 1) * 2;
				pairs = xrealloc(pairs, cap * sizeof(*pairs));
			}
			pairs[npairs++] =
			    (struct pair){xstrdup(group_target_key(s, st->pid, by)), i};
			continue;
		}
		size_t first = npairs;

		if (npairs + nkeys > cap) {
			cap = (npairs + nkeys) * 2;
			pairs = xrealloc(pairs, cap * sizeof(*pairs));
		}
		for (uint32_t j = 0; j < nkeys; j++) {
			int dup = 0;

			if (by == GROUP_STACK) {
				pairs[npairs++] = (struct pair){stack_key(st), i};
				continue;
			}
			if (!st->nframes)
				snprintf(key, sizeof(key), "%s", NO_STACK_KEY);
			else if (!out->cumulative)
				group_frame_key(key_frame(st), by, key, sizeof(key));
			else
				group_frame_key(st->frames[j], by, key, sizeof(key));
			/* a recursive stack counts once per key */
			for (size_t k = first; k < npairs && !dup; k++)
				dup = !strcmp(pairs[k].key, key);
			if (!dup)
				pairs[npairs++] = (struct pair){xstrdup(key), i};
		}
	}
	if (npairs)
		qsort(pairs, npairs, sizeof(*pairs), pair_cmp);
	out->rows = xcalloc(npairs ? npairs : 1, sizeof(*out->rows));
	for (size_t i = 0; i < npairs; i++) {
		struct group_row *row;

		if (out->nrows && !strcmp(out->rows[out->nrows - 1].key, pairs[i].key)) {
			row = &out->rows[out->nrows - 1];
			free(pairs[i].key);
		} else {
			row = &out->rows[out->nrows++];
			row->key = pairs[i].key;
			row->stack = &s->stacks[pairs[i].stack];
		}
		row->nstacks++;
		mt_stack_counters_add(&row->t, &s->stacks[pairs[i].stack].t);
	}
	free(pairs);
}

const struct group_row *group_find(const struct group_table *t, const char *key)
{
	size_t i = SEARCH_FIRST(0, t->nrows, strcmp(t->rows[mid].key, key) >= 0);

	return i < t->nrows && !strcmp(t->rows[i].key, key) ? &t->rows[i] : NULL;
}

static int row_cmp(const void *a, const void *b, void *arg)
{
	const struct group_row *x = a, *y = b;
	const struct group_table *t = arg;
	int c = group_order(&x->t, &y->t, t->sort, t->by);

	return c ? c : strcmp(x->key, y->key);
}

void group_sort(struct group_table *t, int sort)
{
	t->sort = sort;
	if (t->nrows)
		qsort_r(t->rows, t->nrows, sizeof(*t->rows), row_cmp, t);
}

void group_free(struct group_table *t)
{
	for (size_t i = 0; i < t->nrows; i++)
		free(t->rows[i].key);
	free(t->rows);
	memset(t, 0, sizeof(*t));
}
