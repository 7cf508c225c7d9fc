/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Memory over time: the daemon samples live bytes and the cumulative
 * allocation counters every interval into a bounded series. When the series
 * is full, every other point is dropped and the interval doubles, so a day of
 * tracing stays at most TIMELINE_MAX_POINTS points and the newest point is
 * never older than two intervals. Each kept point is an exact sample.
 * A point's resident memory (summed over the targets traced then) comes
 * later, when the sampler has read it (src/daemon/sample.c).
 */
#ifndef MEMTRACE_TIMELINE_H
#define MEMTRACE_TIMELINE_H

#include <stdint.h>

#include "memtrace/counters.h"
#include "memtrace/resident.h"

#define TIMELINE_MAX_POINTS 1024

struct timeline_point {
	uint64_t time_ns; /* since tracing began */
	uint64_t live_bytes;
	uint64_t live_allocations;
	uint64_t allocations;	  /* cumulative, at that time */
	uint64_t bytes_allocated; /* cumulative, at that time */
	int has_resident;	  /* resident below was read for this point */
	struct mt_resident resident;
};

struct timeline {
	struct timeline_point points[TIMELINE_MAX_POINTS];
	uint32_t npoints;
	uint64_t interval_ns; /* between kept points; doubles at each merge */
};

void timeline_init(struct timeline *tl, uint64_t interval_ns);

/*
 * Offer a sample at time now_ns (since tracing began); it is kept when at
 * least one interval has passed since the last kept point (the first sample
 * is always kept). Returns 1 when kept.
 */
int timeline_sample(struct timeline *tl, uint64_t now_ns, const struct mt_counters *c);

/*
 * The resident memory read for the point sampled at time_ns: 1 when that
 * point is still kept (a merge may have dropped it meanwhile), else 0.
 */
int timeline_set_resident(struct timeline *tl, uint64_t time_ns, const struct mt_resident *r);

#endif
