// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The bounded memory-over-time series (see timeline.h). O(1) per sample and
 * target but for a merge every TIMELINE_MAX_POINTS / 2 samples (or when the
 * targets' figures fill up), which moves half of each array: amortized O(1).
 * The points are static; the targets' figures grow as they need, up to
 * TIMELINE_MAX_FIGURES.
 */
#include "daemon/core/timeline.h"
#include "common/search.h"
#include "common/util.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

void timeline_init(struct timeline *tl, uint64_t interval_ns)
{
	memset(tl, 0, sizeof(*tl));
	tl->interval_ns = interval_ns ? interval_ns : 1;
}

void timeline_free(struct timeline *tl)
{
	free(tl->targets);
	tl->targets = NULL;
	tl->ntargets = tl->cap = 0;
}

/* Keep points 1, 3, 5, ... and their targets: the newest survives, and spacing doubles. */
static void timeline_merge(struct timeline *tl)
{
	uint32_t n = 0, nt = 0;

	for (uint32_t i = (tl->npoints & 1) ? 0 : 1; i < tl->npoints; i += 2) {
		struct snap_timeline_point p = tl->points[i];

		if (p.ntargets)
			memmove(&tl->targets[nt], &tl->targets[p.first],
				p.ntargets * sizeof(*tl->targets));
		p.first = nt;
		nt += p.ntargets;
		tl->points[n++] = p;
	}
	tl->npoints = n;
	tl->ntargets = nt;
	tl->interval_ns *= 2;
}

static void figures_of(struct snap_figures *f, const struct mt_counters *c)
{
	*f = (struct snap_figures){.live_bytes = c->live_bytes,
				   .live_allocations = c->live_allocations,
				   .allocations = c->allocations,
				   .bytes_allocated = c->bytes_allocated};
}

int timeline_due(const struct timeline *tl, uint64_t now_ns)
{
	const struct snap_timeline_point *last = tl->npoints ? &tl->points[tl->npoints - 1] : NULL;

	return !last || (now_ns >= last->time_ns && now_ns - last->time_ns >= tl->interval_ns);
}

int timeline_sample(struct timeline *tl, uint64_t now_ns, const struct mt_counters *c,
		    const struct timeline_target *t, uint32_t n)
{
	struct snap_timeline_point *p;

	if (!timeline_due(tl, now_ns))
		return 0;
	if (n > TIMELINE_MAX_FIGURES)
		n = TIMELINE_MAX_FIGURES; /* more than a snapshot holds targets: never so many */
	if (tl->npoints == TIMELINE_MAX_POINTS)
		timeline_merge(tl);
	while (tl->npoints > 1 && tl->ntargets + n > TIMELINE_MAX_FIGURES)
		timeline_merge(tl);
	if (tl->ntargets + n > TIMELINE_MAX_FIGURES) /* one point left, and it is in the way */
		tl->npoints = tl->ntargets = 0;
	if (tl->ntargets + n > tl->cap) {
		uint32_t cap = tl->cap ? tl->cap : 64;

		while (cap < tl->ntargets + n)
			cap *= 2;
		if (cap > TIMELINE_MAX_FIGURES)
			cap = TIMELINE_MAX_FIGURES;
		tl->targets = xrealloc(tl->targets, (size_t)cap * sizeof(*tl->targets));
		tl->cap = cap;
	}
	p = &tl->points[tl->npoints++];
	p->time_ns = now_ns;
	figures_of(&p->total, c);
	p->first = tl->ntargets;
	p->ntargets = n;
	for (uint32_t i = 0; i < n; i++) {
		struct snap_timeline_target *e = &tl->targets[tl->ntargets++];

		assert(!i || t[i].target > t[i - 1].target);
		e->target = t[i].target;
		figures_of(&e->f, t[i].c);
	}
	return 1;
}

/* The point sampled at time_ns, or NULL. */
static struct snap_timeline_point *point_at(struct timeline *tl, uint64_t time_ns)
{
	/* points are in time order; it is nearly always the newest */
	uint32_t lo = (uint32_t)SEARCH_FIRST(0, tl->npoints, tl->points[mid].time_ns >= time_ns);

	return lo < tl->npoints && tl->points[lo].time_ns == time_ns ? &tl->points[lo] : NULL;
}

int timeline_set_resident(struct timeline *tl, uint64_t time_ns, const struct mt_resident *r)
{
	struct snap_timeline_point *p = point_at(tl, time_ns);

	if (!p)
		return 0;
	p->total.has_resident = 1;
	p->total.resident = *r;
	return 1;
}

/* Target's figures at the point sampled at time_ns, or NULL (merged away, or not traced then). */
static struct snap_figures *target_at(struct timeline *tl, uint64_t time_ns, uint32_t target)
{
	struct snap_timeline_point *p = point_at(tl, time_ns);
	uint32_t lo, hi;

	if (!p)
		return NULL;
	/* a point's targets are by increasing index */
	hi = p->first + p->ntargets;
	lo = (uint32_t)SEARCH_FIRST(p->first, hi, tl->targets[mid].target >= target);
	if (lo == hi || tl->targets[lo].target != target)
		return NULL;
	return &tl->targets[lo].f;
}

int timeline_set_target_resident(struct timeline *tl, uint64_t time_ns, uint32_t target,
				 const struct mt_resident *r)
{
	struct snap_figures *f = target_at(tl, time_ns, target);

	if (!f)
		return 0;
	f->has_resident = 1;
	f->resident = *r;
	return 1;
}

int timeline_set_target_cgroup(struct timeline *tl, uint64_t time_ns, uint32_t target,
			       uint64_t usage, uint64_t limit)
{
	struct snap_figures *f = target_at(tl, time_ns, target);

	if (!f)
		return 0;
	f->has_cgroup = 1;
	f->cgroup_usage_bytes = usage;
	f->cgroup_limit_bytes = limit;
	return 1;
}
