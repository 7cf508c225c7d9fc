// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The bounded memory-over-time series (see timeline.h). O(1) per sample but
 * for a merge every TIMELINE_MAX_POINTS / 2 samples, which moves half the
 * array: amortized O(1), in static memory.
 */
#include "daemon/core/timeline.h"
#include "common/search.h"

#include <string.h>

void timeline_init(struct timeline *tl, uint64_t interval_ns)
{
	memset(tl, 0, sizeof(*tl));
	tl->interval_ns = interval_ns ? interval_ns : 1;
}

/* Keep points 1, 3, 5, ...: the newest survives, and spacing doubles. */
static void timeline_merge(struct timeline *tl)
{
	uint32_t n = 0;

	for (uint32_t i = (tl->npoints & 1) ? 0 : 1; i < tl->npoints; i += 2)
		tl->points[n++] = tl->points[i];
	tl->npoints = n;
	tl->interval_ns *= 2;
}

int timeline_sample(struct timeline *tl, uint64_t now_ns, const struct mt_counters *c)
{
	struct timeline_point *p;

	if (tl->npoints && (now_ns < tl->points[tl->npoints - 1].time_ns ||
			    now_ns - tl->points[tl->npoints - 1].time_ns < tl->interval_ns))
		return 0;
	if (tl->npoints == TIMELINE_MAX_POINTS)
		timeline_merge(tl);
	p = &tl->points[tl->npoints++];
	p->time_ns = now_ns;
	p->live_bytes = c->live_bytes;
	p->live_allocations = c->live_allocations;
	p->allocations = c->allocations;
	p->bytes_allocated = c->bytes_allocated;
	p->has_resident = 0;
	memset(&p->resident, 0, sizeof(p->resident));
	return 1;
}

int timeline_set_resident(struct timeline *tl, uint64_t time_ns, const struct mt_resident *r)
{
	/* points are in time order; it is nearly always the newest */
	uint32_t lo = (uint32_t)SEARCH_FIRST(0, tl->npoints, tl->points[mid].time_ns >= time_ns);

	if (lo == tl->npoints || tl->points[lo].time_ns != time_ns)
		return 0;
	tl->points[lo].has_resident = 1;
	tl->points[lo].resident = *r;
	return 1;
}
