/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Resident memory as the views show it (resident.c): the totals over the
 * targets traced when the snapshot was taken, and the peak of the
 * timeline's resident series, computed once from a snapshot for every
 * renderer (stats, timeline, watch, the HTML report).
 */
#ifndef MEMTRACE_CTL_VIEW_RESIDENT_H
#define MEMTRACE_CTL_VIEW_RESIDENT_H

#include <stdint.h>

#include "memtrace/snapshot.h"

struct resident_view {
	int present;		  /* the snapshot carries resident memory (section SEC_RESIDENT) */
	uint32_t targets;	  /* targets traced then with figures: the totals' terms */
	uint32_t unread;	  /* targets traced then without figures (/proc would not say) */
	struct mt_resident total; /* their last figures summed */
	int has_peak;		  /* the series has resident points */
	uint64_t peak_bytes;	  /* the largest resident_bytes of the series */
	uint64_t peak_time_ns;	  /* when, since tracing began */
};

void resident_view_build(struct resident_view *v, const struct snapshot *s);
/* The same over the targets of one pid (0: all); the peak is that pid's series' (the
 * timeline's of all in a snapshot that has no series per target). */
void resident_view_of_pid(struct resident_view *v, const struct snapshot *s, uint32_t pid);
/* Only its totals (present, targets, unread, total; no peak: the series is not read). */
void resident_view_totals(struct resident_view *v, const struct snapshot *s, uint32_t pid);

/* Whether target t's figures count as now: it was traced when the snapshot was taken. */
int resident_target_current(const struct snap_target *t);

#endif
