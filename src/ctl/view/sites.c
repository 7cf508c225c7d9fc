// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Allocation sites (see sites.h): each stack gives its innermost frame and
 * its sums; sorted by site, runs of one site are added up.
 */
#include "ctl/view/sites.h"
#include "common/groupkey.h"
#include "common/order.h"
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
		v[i].t = st->t;
	}
	qsort(v, s->nstacks, sizeof(*v), site_sort_cmp);
	for (uint32_t i = 0; i < s->nstacks; i++) {
		if (n && !site_cmp(v[n - 1].frame, v[i].frame)) {
			mt_stack_counters_add(&v[n - 1].t, &v[i].t);
		} else {
			v[n++] = v[i];
		}
	}
	*out = v;
	return n;
}

static int rank_cmp(const void *x, const void *y, void *arg)
{
	const struct site *a = x, *b = y;
	int c = group_order(&a->t, &b->t, *(const int *)arg, GROUP_SITE);

	return c ? c : site_cmp(a->frame, b->frame);
}

void sites_rank(struct site *sites, size_t n, int by_count)
{
	int sort = by_count ? MT_SORT_COUNT : MT_SORT_ALLOCATED;

	qsort_r(sites, n, sizeof(*sites), rank_cmp, &sort);
}
