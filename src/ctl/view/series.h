/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Memory over time as the views show it (series.c): the timeline's points of
 * every target together, or of the targets of one pid (`timeline --pid`,
 * `report --format html --pid`), from the figures each point keeps of the
 * targets traced then (section SEC_TIMELINE_TARGETS). Computed once from a snapshot for every
 * renderer.
 */
#ifndef MEMTRACE_CTL_VIEW_SERIES_H
#define MEMTRACE_CTL_VIEW_SERIES_H

#include <stdint.h>

#include "memtrace/snapshot.h"

/* A memory cgroup's figures at a point of every target's series (limit MT_CGROUP_NO_LIMIT: none) */
struct series_cgroup_point {
	uint32_t has; /* read for that moment */
	uint64_t usage_bytes, limit_bytes;
};

struct series {
	uint32_t pid;				  /* 0: every target together */
	const struct snap_timeline_point *points; /* oldest first: the snapshot's, or own */
	uint32_t npoints;			  /* with pid, the points it was traced at */
	uint64_t interval_ns;			  /* the timeline's, between points now */
	struct snap_timeline_point *own;	  /* a pid's points (their total is the pid's) */
	int resident;		 /* the snapshot carries resident memory: show the column */
	int cgroup;		 /* a pid's series: some point has its memory cgroup's usage */
	int has_peak;		 /* some point has resident figures */
	uint64_t peak_bytes;	 /* the largest resident_bytes of them */
	uint64_t peak_time_ns;	 /* when, since tracing began */
	struct mt_counters live; /* the counters the live peak is of: the totals, or the pid's
				  * targets' merged (peak_time_ns since tracing began, as the
				  * points' times) */
	/*
	 * Every target's series: the memory cgroups its targets' figures were
	 * read of (each target's by the path status shows, its labels now), in
	 * path order, and point i's figures of cgroup c at cgroup_points[i *
	 * ncgroups + c] (from its newest target read then: one cgroup, one
	 * reading). None in a pid's series, or without figures.
	 */
	uint32_t ncgroups;
	const char **cgroups; /* the snapshot's strings */
	struct series_cgroup_point *cgroup_points;
};

/*
 * The series of pid (0: every target). -1 when the snapshot cannot say:
 * pid traced in none of its targets, or a snapshot without its targets'
 * figures (written before section SEC_TIMELINE_TARGETS); *why says which.
 */
int series_build(struct series *v, const struct snapshot *s, uint32_t pid, const char **why);
void series_free(struct series *v);

/* Allocations per second between points from and i of the series; 0 when i is the first. */
double series_rate(const struct series *v, uint32_t from, uint32_t i);

#endif
