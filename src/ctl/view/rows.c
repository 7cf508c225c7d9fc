// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The rows of diff, peak, leaks, report --by and watch (see rows.h): which
 * groups or stacks each view shows, in which order, with which sums. What
 * the rows look like is render/rows.c's business.
 */
#include "ctl/view/rows.h"
#include "common/order.h"
#include "common/util.h"

#include <stdlib.h>
#include <string.h>

/* The first rows --top keeps of n (0 keeps them all). */
static size_t top_rows(uint32_t top, size_t n)
{
	return top && top < n ? top : n;
}

/* ---- diff ---------------------------------------------------------------------- */

static uint64_t abs64(int64_t v)
{
	return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

static int diff_cmp(const void *a, const void *b)
{
	const struct diff_row *x = a, *y = b;

	/* tracemalloc's order: growth, then size, then count growth, then count */
	if (abs64(x->size_diff) != abs64(y->size_diff))
		return abs64(x->size_diff) > abs64(y->size_diff) ? -1 : 1;
	if (x->now.live_bytes != y->now.live_bytes)
		return x->now.live_bytes > y->now.live_bytes ? -1 : 1;
	if (abs64(x->count_diff) != abs64(y->count_diff))
		return abs64(x->count_diff) > abs64(y->count_diff) ? -1 : 1;
	return strcmp(x->row->key, y->row->key);
}

void diff_view_build(struct diff_view *v, const struct snapshot *old, const struct snapshot *new,
		     const struct view_opts *o)
{
	size_t i = 0, j = 0;

	memset(v, 0, sizeof(*v));
	v->old = old;
	v->new = new;
	/* NEW may be the older one: the interval is signed */
	v->interval = ((double)new->created_unix_ns - (double)old->created_unix_ns) / 1e9;
	group_snapshot(old, o->by, o->cumulative, &v->was);
	group_snapshot(new, o->by, o->cumulative, &v->now);
	v->rows = xcalloc(v->was.nrows + v->now.nrows + 1, sizeof(*v->rows));
	/* both tables are ordered by key: walk them side by side */
	while (i < v->was.nrows || j < v->now.nrows) {
		int c = i == v->was.nrows   ? 1
			: j == v->now.nrows ? -1
					    : strcmp(v->was.rows[i].key, v->now.rows[j].key);
		const struct group_row *was = c <= 0 ? &v->was.rows[i++] : NULL;
		const struct group_row *now = c >= 0 ? &v->now.rows[j++] : NULL;
		struct diff_row *d = &v->rows[v->nrows];

		d->row = now ? now : was;
		d->now = now ? now->t : (struct mt_stack_counters){0};
		d->was = was ? was->t : (struct mt_stack_counters){0};
		/* as tracemalloc, only live memory is compared: nothing live, no row */
		if (!d->was.live_allocations && !d->now.live_allocations)
			continue;
		d->size_diff = (int64_t)(d->now.live_bytes - d->was.live_bytes);
		d->count_diff = (int64_t)(d->now.live_allocations - d->was.live_allocations);
		v->nrows++;
	}
	if (v->nrows)
		qsort(v->rows, v->nrows, sizeof(*v->rows), diff_cmp);
	v->shown = top_rows(o->top, v->nrows);
}

void diff_view_free(struct diff_view *v)
{
	free(v->rows);
	group_free(&v->was);
	group_free(&v->now);
}

const char *diff_row_status(const struct diff_row *d)
{
	if (!d->was.live_allocations)
		return "new";
	if (!d->now.live_allocations)
		return "vanished";
	return d->size_diff || d->count_diff ? "changed" : "unchanged";
}

/* ---- peak ---------------------------------------------------------------------- */

void peak_view_build(struct peak_view *v, const struct snapshot *s, const struct view_opts *o)
{
	memset(v, 0, sizeof(*v));
	v->s = s;
	group_snapshot(s, o->by, o->cumulative, &v->groups);
	group_sort(&v->groups, MT_SORT_PEAK);
	while (v->nrows < v->groups.nrows && v->groups.rows[v->nrows].t.peak_live_bytes)
		v->nrows++;
	v->shown = top_rows(o->top, v->nrows);
	for (size_t k = 0; k < v->nrows; k++) {
		v->sum += v->groups.rows[k].t.peak_live_bytes;
		if (k < v->shown)
			v->shown_sum += v->groups.rows[k].t.peak_live_bytes;
	}
	/* the rows the daemon kept (it sends the top ones) */
	v->nrows += v->groups.rest_rows_peak;
	v->sum += v->groups.rest.peak_live_bytes;
}

void peak_view_free(struct peak_view *v)
{
	group_free(&v->groups);
}

/* ---- leaks --------------------------------------------------------------------- */

/* leak_order() (common/order.h), then the stack's place in the snapshot. */
static int leak_cmp(const void *a, const void *b)
{
	const struct leak_row *x = a, *y = b;
	int c = leak_order(&x->l, &y->l);

	return c ? c : (x->stack > y->stack) - (x->stack < y->stack);
}

void leaks_view_build(struct leaks_view *v, const struct snapshot *s, const struct view_opts *o)
{
	memset(v, 0, sizeof(*v));
	v->s = s;
	v->older_than = o->older_than;
	v->rows = xcalloc(s->nstacks + 1, sizeof(*v->rows));
	for (uint32_t i = 0; i < s->nstacks; i++)
		v->rows[i].stack = i;
	/* the daemon counted them (leaks section): its top stacks, and the totals */
	for (uint32_t i = 0; s->kind == SNAP_LEAKS && i < s->nstacks; i++)
		v->rows[i].l = s->leaks.stacks[i];
	if (s->kind == SNAP_LEAKS) {
		v->blocks = s->leaks.blocks;
		v->bytes = s->leaks.bytes;
	}
	for (uint32_t i = 0; s->kind != SNAP_LEAKS && s->block_list && i < s->block_list->nblocks;
	     i++) {
		const struct snap_block *b = &s->block_list->blocks[i];
		struct snap_leak *r = &v->rows[b->stack].l;

		if (b->age_ns < o->older_than)
			continue;
		if (!r->blocks || b->age_ns > r->oldest_ns)
			r->oldest_ns = b->age_ns;
		if (!r->blocks || b->age_ns < r->youngest_ns)
			r->youngest_ns = b->age_ns;
		r->blocks++;
		r->bytes += b->size;
		v->blocks++;
		v->bytes += b->size;
	}
	if (s->nstacks)
		qsort(v->rows, s->nstacks, sizeof(*v->rows), leak_cmp);
	while (v->nrows < s->nstacks && v->rows[v->nrows].l.blocks)
		v->nrows++;
	v->shown = top_rows(o->top, v->nrows);
	if (s->kind == SNAP_LEAKS)
		v->nrows = (size_t)s->leaks.stacks_total;
}

void leaks_view_free(struct leaks_view *v)
{
	free(v->rows);
}

/* ---- report --by --------------------------------------------------------------- */

void grouped_view_build(struct grouped_view *v, const struct snapshot *s, const struct view_opts *o)
{
	memset(v, 0, sizeof(*v));
	v->s = s;
	v->sort = o->sort;
	v->allocated = o->sort == MT_SORT_ALLOCATED || o->sort == MT_SORT_COUNT;
	group_snapshot(s, o->by, o->cumulative, &v->groups);
	group_sort(&v->groups, o->sort);
	for (; v->nrows < v->groups.nrows; v->nrows++) {
		const struct mt_stack_counters *t = &v->groups.rows[v->nrows].t;

		if (!(v->allocated ? t->allocations : t->live_allocations))
			break;
	}
	v->shown = top_rows(o->top, v->nrows);
	/* the rows the daemon kept (it sends the top ones) */
	v->nrows += v->allocated ? v->groups.rest_rows_allocated : v->groups.rest_rows_live;
}

void grouped_view_free(struct grouped_view *v)
{
	group_free(&v->groups);
}

/* ---- watch --------------------------------------------------------------------- */

static int growth_cmp(const void *a, const void *b)
{
	const struct growth *x = a, *y = b;

	if (x->grew != y->grew)
		return x->grew > y->grew ? -1 : 1;
	return strcmp(x->row->key, y->row->key);
}

void watch_view_build(struct watch_view *v, const struct watch_state *w, const struct snapshot *s,
		      const struct view_opts *o)
{
	memset(v, 0, sizeof(*v));
	v->s = s;
	v->pid = o->pid;
	group_snapshot(s, o->by, o->cumulative, &v->groups);
	if (w->have_prev && s->uptime_ns > w->prev_uptime_ns) {
		double dt = (double)(s->uptime_ns - w->prev_uptime_ns) / 1e9;

		v->rate = (double)(s->totals.allocations - w->prev_allocations) / dt;
		v->byte_rate = (double)(s->totals.bytes_allocated - w->prev_bytes_allocated) / dt;
	}
	v->rows = xcalloc(v->groups.nrows + 1, sizeof(*v->rows));
	for (size_t i = 0; i < v->groups.nrows; i++) {
		const struct group_row *r = &v->groups.rows[i];
		const struct group_row *was = w->have_prev ? group_find(&w->prev, r->key) : NULL;
		/* the first refresh: growth since tracing began */
		int64_t grew = (int64_t)(r->t.live_bytes - (was ? was->t.live_bytes : 0));

		if (grew > 0)
			v->rows[v->nrows++] = (struct growth){r, grew};
	}
	if (v->nrows)
		qsort(v->rows, v->nrows, sizeof(*v->rows), growth_cmp);
	v->shown = top_rows(o->top, v->nrows);
}

void watch_state_keep(struct watch_state *w, struct watch_view *v)
{
	watch_state_free(w);
	w->prev = v->groups;
	memset(&v->groups, 0, sizeof(v->groups));
	for (size_t i = 0; i < w->prev.nrows; i++)
		w->prev.rows[i].stack = NULL; /* the snapshot goes; its stacks with it */
	w->have_prev = 1;
	w->prev_uptime_ns = v->s->uptime_ns;
	w->prev_allocations = v->s->totals.allocations;
	w->prev_bytes_allocated = v->s->totals.bytes_allocated;
}

void watch_view_free(struct watch_view *v)
{
	free(v->rows);
	group_free(&v->groups);
}

void watch_state_free(struct watch_state *w)
{
	group_free(&w->prev);
	w->have_prev = 0;
}
