// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * leaks requests, answered in the daemon (leaks.h): one walk of the
 * live heap counts, per selected stack, its blocks at least older_than_ns
 * old; only the top stacks and the totals travel, not the block list.
 */
#include "daemon/serve/leaks.h"
#include "daemon/serve/framebuild.h"
#include "daemon/serve/service.h"
#include "daemon/core/tracker.h"
#include "common/order.h"
#include "common/util.h"

#include <stdlib.h>
#include <string.h>

struct leak_item {
	uint32_t stack; /* daemon index */
	uint32_t pos;	/* position in the request's order */
	struct snap_leak l;
};

/* The client's order (leak_order(), then the stack's place in the request's order). */
static int leak_cmp(const void *x, const void *y)
{
	const struct leak_item *a = x, *b = y;
	int c = leak_order(&a->l, &b->l);

	return c ? c : (a->pos > b->pos) - (a->pos < b->pos);
}

struct leak_walk {
	const struct proto_leaks *r;
	struct snapshot *s;
	struct leak_item *items;
	const uint32_t *pos_of;
	uint64_t now;
};

static int count_leak(void *arg, uint32_t id, const struct heap_block *b)
{
	struct leak_walk *w = arg;
	uint64_t age = w->now > b->time_ns ? w->now - b->time_ns : 0;
	struct snap_leak *l;
	uint32_t p;

	if (age < w->r->older_than_ns || (p = w->pos_of[id]) == UINT32_MAX)
		return 0;
	l = &w->items[p].l;
	if (!l->blocks || age > l->oldest_ns)
		l->oldest_ns = age;
	if (!l->blocks || age < l->youngest_ns)
		l->youngest_ns = age;
	l->blocks++;
	l->bytes += b->size;
	w->s->leaks.blocks++;
	w->s->leaks.bytes += b->size;
	return 0;
}

void leaks_rows(const struct daemon_view *v, const struct stack_ends *ends,
		const struct proto_leaks *r, const uint32_t *sel, uint32_t nsel, struct snapshot *s)
{
	uint32_t nrows = framebuild_nrows(v), *pos_of, n = 0, top;
	struct leak_walk w = {.r = r, .s = s, .now = time_monotonic_ns()};
	struct leak_item *items;
	struct framebuild *fb;
	uint64_t *frames_at;

	/* per selected row, where it is in the request's order */
	pos_of = xmalloc((nrows ? nrows : 1) * sizeof(*pos_of));
	memset(pos_of, 0xff, (nrows ? nrows : 1) * sizeof(*pos_of));
	for (uint32_t i = 0; i < nsel; i++)
		pos_of[sel[i]] = i;
	items = xcalloc(nsel ? nsel : 1, sizeof(*items));
	for (uint32_t i = 0; i < nsel; i++) {
		items[i].stack = sel[i];
		items[i].pos = i;
	}
	memset(&s->leaks, 0, sizeof(s->leaks));
	s->leaks.older_than_ns = r->older_than_ns;
	/* one walk of the live heaps (a forked child's inherited blocks in its rows) */
	w.items = items;
	w.pos_of = pos_of;
	viewrows_blocks(v->tracker, v->rows, count_leak, &w);
	free(pos_of);
	/* the stacks with such blocks, most bytes first */
	for (uint32_t i = 0; i < nsel; i++)
		if (items[i].l.blocks)
			items[n++] = items[i];
	s->leaks.stacks_total = n;
	qsort(items, n, sizeof(*items), leak_cmp);
	top = r->top && r->top < n ? r->top : n;
	s->kind = SNAP_LEAKS;
	s->leaks.stacks = xcalloc(top ? top : 1, sizeof(*s->leaks.stacks));
	s->stacks = xcalloc(top ? top : 1, sizeof(*s->stacks));
	frames_at = xmalloc((top ? top : 1) * sizeof(*frames_at));
	s->nstacks = top;
	fb = framebuild_new(v, ends);
	for (uint32_t i = 0; i < top; i++) {
		framebuild_fill(fb, items[i].stack, &s->stacks[i], &frames_at[i]);
		s->leaks.stacks[i] = items[i].l;
	}
	framebuild_finish(fb, s, frames_at);
	free(frames_at);
	free(items);
}
