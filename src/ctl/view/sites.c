// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Allocation sites (see sites.h): each stack gives its innermost frame and
 * its sums; sorted by site, runs of one site are added up.
 */
#include "ctl/view/sites.h"
#include "common/groupkey.h"
#include "common/util.h"

#include <stdlib.h>
#include <string.h>

/* Sites are equal when they name the same function at the same line, or,
 * without a function, the same module offset (common/groupkey.c). */
static int site_cmp(const struct snap_frame *a, const struct snap_frame *b)
{
	return group_site_cmp(a, b);
}

static int site_sort_cmp(const void *x, const void *y)
{
	return site_cmp(((const struct site *)x)->frame, ((const struct site *)y)->frame);
}

size_t sites_collect(const struct snapshot *s, struct site **out)
{
	struct site *v = xcalloc(s->nstacks ? s->nstacks : 1, sizeof(*v));
	size_t n = 0;

	for (uint32_t i = 0; i < s->nstacks; i++) {
		const struct snap_stack *st = &s->stacks[i];

		v[i].frame = st->nframes ? st->frames[0] : NULL;
		v[i].allocations = st->t.allocations;
		v[i].bytes_allocated = st->t.bytes_allocated;
		v[i].live_allocations = st->t.live_allocations;
		v[i].live_bytes = st->t.live_bytes;
	}
	qsort(v, s->nstacks, sizeof(*v), site_sort_cmp);
	for (uint32_t i = 0; i < s->nstacks; i++) {
		if (n && !site_cmp(v[n - 1].frame, v[i].frame)) {
			v[n - 1].allocations += v[i].allocations;
			v[n - 1].bytes_allocated += v[i].bytes_allocated;
			v[n - 1].live_allocations += v[i].live_allocations;
			v[n - 1].live_bytes += v[i].live_bytes;
		} else {
			v[n++] = v[i];
		}
	}
	*out = v;
	return n;
}

static int bytes_cmp(const void *x, const void *y)
{
	const struct site *a = x, *b = y;

	if (a->bytes_allocated != b->bytes_allocated)
		return a->bytes_allocated < b->bytes_allocated ? 1 : -1;
	return site_cmp(a->frame, b->frame);
}

static int count_cmp(const void *x, const void *y)
{
	const struct site *a = x, *b = y;

	if (a->allocations != b->allocations)
		return a->allocations < b->allocations ? 1 : -1;
	return site_cmp(a->frame, b->frame);
}

void sites_rank(struct site *sites, size_t n, int by_count)
{
	qsort(sites, n, sizeof(*sites), by_count ? count_cmp : bytes_cmp);
}
