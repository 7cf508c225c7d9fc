/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Memory over time: the daemon samples live bytes and the cumulative
 * allocation counters every interval into a bounded series, in total and for
 * each target traced at that moment. When the series is full (of points, or
 * of targets' figures), every other point is dropped and the interval
 * doubles, so a day of tracing stays at most TIMELINE_MAX_POINTS points and
 * TIMELINE_MAX_FIGURES targets' figures, and the newest point is never older
 * than two intervals. Each kept point is an exact sample, with every target
 * traced then. A point's resident memory (in total and per target) comes
 * later, when the sampler has read it (src/daemon/sample.c).
 *
 * The points and figures are the snapshot's own (include/memtrace/snapshot.h,
 * struct snap_timeline_point and snap_timeline_target); here a figure's
 * target is the daemon's target index.
 */
#ifndef MEMTRACE_TIMELINE_H
#define MEMTRACE_TIMELINE_H

#include <stdint.h>

#include "memtrace/counters.h"
#include "memtrace/resident.h"
#include "memtrace/snapshot.h"

#define TIMELINE_MAX_POINTS 1024
/*
 * Targets' figures over all points: 64 targets (memtraced's --max-targets
 * default) at every point of a full series. More targets at once make the
 * series coarser, never a target left out.
 */
#define TIMELINE_MAX_FIGURES (TIMELINE_MAX_POINTS * 64)

struct timeline {
	struct snap_timeline_point points[TIMELINE_MAX_POINTS];
	uint32_t npoints;
	uint64_t interval_ns;		      /* between kept points; doubles at each merge */
	struct snap_timeline_target *targets; /* the points' targets, point by point */
	uint32_t ntargets, cap;
};

/* A target traced at the moment of a sample: its index and its counters. */
struct timeline_target {
	uint32_t target;
	const struct mt_counters *c;
};

void timeline_init(struct timeline *tl, uint64_t interval_ns);
void timeline_free(struct timeline *tl);

/* Whether a sample at now_ns would be kept: an interval has passed since the last point. */
int timeline_due(const struct timeline *tl, uint64_t now_ns);

/*
 * Offer a sample at time now_ns (since tracing began) of the totals c and
 * of the n targets traced now (by increasing index; at most
 * TIMELINE_MAX_FIGURES); it is kept when at least one interval has passed
 * since the last kept point (the first sample is always kept). Returns 1
 * when kept.
 */
int timeline_sample(struct timeline *tl, uint64_t now_ns, const struct mt_counters *c,
		    const struct timeline_target *t, uint32_t n);

/*
 * The resident memory read for the point sampled at time_ns, of every target
 * together, or of one target: 1 when that point (and the target in it) is
 * still kept (a merge may have dropped it meanwhile), else 0.
 */
int timeline_set_resident(struct timeline *tl, uint64_t time_ns, const struct mt_resident *r);
int timeline_set_target_resident(struct timeline *tl, uint64_t time_ns, uint32_t target,
				 const struct mt_resident *r);
/* The same for a target's memory cgroup usage and limit (MT_CGROUP_NO_LIMIT: none). */
int timeline_set_target_cgroup(struct timeline *tl, uint64_t time_ns, uint32_t target,
			       uint64_t usage, uint64_t limit);

#endif
