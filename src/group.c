// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Grouping stacks into rows (see group.h). Each stack yields one (key,
 * stack) pair, or one per distinct key among its frames when cumulative; the
 * pairs are sorted by key and runs of equal keys summed. O(n log n) in the
 * frames of the snapshot, no hash table to get wrong.
 */
#include "group.h"
#include "util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const group_names[GROUP_BY_COUNT] = {
    [GROUP_STACK] = "stack", [GROUP_FUNCTION] = "function", [GROUP_FILE] = "file",
    [GROUP_LINE] = "line",   [GROUP_MODULE] = "module",
};

#define NO_STACK_KEY "(no stack)"

const char *group_by_name(int by)
{
	return by >= 0 && by < GROUP_BY_COUNT ? group_names[by] : NULL;
}

int group_by_from_name(const char *name)
{
	for (int i = 0; i < GROUP_BY_COUNT; i++)
		if (!strcmp(name, group_names[i]))
			return i;
	return -1;
}

static int str_cmp(const char *a, const char *b)
{
	if (!a || !b)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

int group_site_cmp(const struct snap_frame *a, const struct snap_frame *b)
{
	int c;

	if (!a || !b)
		return (a != NULL) - (b != NULL);
	if ((c = str_cmp(a->function, b->function)))
		return c;
	if (a->function) {
		if ((c = str_cmp(a->file, b->file)))
			return c;
		return a->line < b->line ? -1 : a->line > b->line;
	}
	if ((c = str_cmp(a->module, b->module)))
		return c;
	if (a->module)
		return a->offset < b->offset ? -1 : a->offset > b->offset;
	return a->address < b->address ? -1 : a->address > b->address;
}

void group_frame_location(const struct snap_frame *f, char *dst, size_t len)
{
	if (f->module)
		snprintf(dst, len, "%s+0x%" PRIx64, f->module, f->offset);
	else
		snprintf(dst, len, "0x%" PRIx64, f->address);
}

void group_frame_key(const struct snap_frame *f, int by, char *dst, size_t len)
{
	switch (by) {
	case GROUP_FUNCTION:
		if (f->function) {
			snprintf(dst, len, "%s", f->function);
			return;
		}
		break;
	case GROUP_FILE:
		if (f->file) {
			snprintf(dst, len, "%s", f->file);
			return;
		}
		break;
	case GROUP_LINE:
		if (f->file) {
			snprintf(dst, len, "%s:%" PRId64, f->file, f->line);
			return;
		}
		break;
	case GROUP_MODULE:
		if (f->module) {
			snprintf(dst, len, "%s", f->module);
			return;
		}
		break;
	}
	group_frame_location(f, dst, len);
}

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
 * (address 0, no module, a file) when the stack has one, as tracemalloc
 * attributes memory to the Python line that asked for it; else frame 0.
 */
int group_python_frame(const struct snap_frame *f)
{
	return !f->address && !f->module && f->file;
}

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

static void add_totals(struct group_totals *t, const struct snap_stack *st)
{
	t->live_bytes += st->live_bytes;
	t->live_allocations += st->live_allocations;
	t->allocations += st->allocations;
	t->bytes_allocated += st->bytes_allocated;
	t->frees += st->frees;
	t->bytes_freed += st->bytes_freed;
	t->peak_live_bytes += st->peak_live_bytes;
	t->temporary_allocations += st->temporary_allocations;
	t->temporary_bytes += st->temporary_bytes;
}

static int row_key_cmp(const void *a, const void *b)
{
	return strcmp(((const struct group_row *)a)->key, ((const struct group_row *)b)->key);
}

/* The daemon's rows (section 41): one per stack, its sums on the stack. */
static void group_from_rows(const struct snapshot *s, struct group_table *out)
{
	const struct snap_groups *g = &s->groups;

	out->rows = xcalloc(s->nstacks ? s->nstacks : 1, sizeof(*out->rows));
	for (uint32_t i = 0; i < s->nstacks; i++) {
		struct group_row *row = &out->rows[out->nrows++];

		row->key = xstrdup(g->rows[i].key ? g->rows[i].key : "");
		row->stack = &s->stacks[i];
		row->nstacks = (uint32_t)g->rows[i].stacks;
		add_totals(&row->t, &s->stacks[i]);
	}
	if (out->nrows)
		qsort(out->rows, out->nrows, sizeof(*out->rows), row_key_cmp);
	out->rest_rows = g->rest_rows;
	out->rest_rows_live = g->rest_rows_live;
	out->rest_rows_allocated = g->rest_rows_allocated;
	out->rest_rows_peak = g->rest_rows_peak;
	out->rest.live_bytes = g->rest.live_bytes;
	out->rest.live_allocations = g->rest.live_allocations;
	out->rest.allocations = g->rest.allocations;
	out->rest.bytes_allocated = g->rest.bytes_allocated;
	out->rest.frees = g->rest.frees;
	out->rest.bytes_freed = g->rest.bytes_freed;
	out->rest.peak_live_bytes = g->rest.peak_live_bytes;
	out->rest.temporary_allocations = g->rest.temporary_allocations;
	out->rest.temporary_bytes = g->rest.temporary_bytes;
}

void group_snapshot(const struct snapshot *s, int by, int cumulative, struct group_table *out)
{
	struct pair *pairs = NULL;
	size_t npairs = 0, cap = 0;
	char key[4096];

	memset(out, 0, sizeof(*out));
	out->by = by;
	out->cumulative = cumulative && by != GROUP_STACK;
	if (s->has_groups && s->groups.by == (uint32_t)by + 1 &&
	    s->groups.cumulative == (uint32_t)out->cumulative) {
		group_from_rows(s, out);
		return;
	}
	for (uint32_t i = 0; i < s->nstacks; i++) {
		const struct snap_stack *st = &s->stacks[i];
		uint32_t nkeys =
		    !st->nframes || by == GROUP_STACK || !out->cumulative ? 1 : st->nframes;
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
		add_totals(&row->t, &s->stacks[pairs[i].stack]);
	}
	free(pairs);
}

const struct group_row *group_find(const struct group_table *t, const char *key)
{
	size_t lo = 0, hi = t->nrows;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(t->rows[mid].key, key);

		if (!c)
			return &t->rows[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int sort_key; /* qsort has no context argument */

static uint64_t row_value(const struct group_row *r, int sort)
{
	switch (sort) {
	case SNAP_SORT_ALLOCATED:
		return r->t.bytes_allocated;
	case SNAP_SORT_COUNT:
		return r->t.allocations;
	case SNAP_SORT_PEAK:
		return r->t.peak_live_bytes;
	case SNAP_SORT_TEMPORARY:
		return r->t.temporary_allocations;
	default:
		return r->t.live_bytes;
	}
}

static int row_cmp(const void *a, const void *b)
{
	const struct group_row *x = a, *y = b;
	uint64_t vx = row_value(x, sort_key), vy = row_value(y, sort_key);

	if (vx != vy)
		return vx > vy ? -1 : 1;
	if (x->t.allocations != y->t.allocations)
		return x->t.allocations > y->t.allocations ? -1 : 1;
	return strcmp(x->key, y->key);
}

void group_sort(struct group_table *t, int sort)
{
	sort_key = sort;
	if (t->nrows)
		qsort(t->rows, t->nrows, sizeof(*t->rows), row_cmp);
}

void group_free(struct group_table *t)
{
	for (size_t i = 0; i < t->nrows; i++)
		free(t->rows[i].key);
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

static void format_size_double(char *dst, size_t len, double size, int sign)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};

	for (size_t u = 0; u < ARRAY_SIZE(units); u++) {
		double mag = size < 0 ? -size : size;

		if (mag < 100 && u) {
			snprintf(dst, len, sign ? "%+.1f %s" : "%.1f %s", size, units[u]);
			return;
		}
		if (mag < 10 * 1024 || u + 1 == ARRAY_SIZE(units)) {
			snprintf(dst, len, sign ? "%+.0f %s" : "%.0f %s", size, units[u]);
			return;
		}
		size /= 1024;
	}
}

void group_format_size(char *dst, size_t len, int64_t bytes, int sign)
{
	format_size_double(dst, len, (double)bytes, sign);
}

static void format_average(char *dst, size_t len, uint64_t size, uint64_t count)
{
	char avg[32];

	if (!count) {
		dst[0] = '\0';
		return;
	}
	format_size_double(avg, sizeof(avg), (double)size / (double)count, 0);
	snprintf(dst, len, ", average=%s", avg);
}

void group_format_line(char *dst, size_t len, const char *key, uint64_t size, uint64_t count)
{
	char sz[32], avg[48];

	group_format_size(sz, sizeof(sz), (int64_t)size, 0);
	format_average(avg, sizeof(avg), size, count);
	snprintf(dst, len, "%s: size=%s, count=%" PRIu64 "%s", key, sz, count, avg);
}

void group_format_diff_line(char *dst, size_t len, const char *key, uint64_t size,
			    uint64_t old_size, uint64_t count, uint64_t old_count)
{
	char sz[32], dsz[32], avg[48];

	group_format_size(sz, sizeof(sz), (int64_t)size, 0);
	group_format_size(dsz, sizeof(dsz), (int64_t)(size - old_size), 1);
	format_average(avg, sizeof(avg), size, count);
	snprintf(dst, len, "%s: size=%s (%s), count=%" PRIu64 " (%+" PRId64 ")%s", key, sz, dsz,
		 count, (int64_t)(count - old_count), avg);
}
