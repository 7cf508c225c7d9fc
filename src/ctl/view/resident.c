// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Totals of resident memory from a snapshot (resident.h). A target that
 * exited or stopped being traced has no resident memory now: its last
 * figures are shown as its own, never added to the totals.
 */
#include "ctl/view/resident.h"
#include "ctl/view/series.h"

#include <string.h>

int resident_target_current(const struct snap_target *t)
{
	return t->resident.sampled &&
	       (t->state == SNAP_TARGET_ATTACHED || t->state == SNAP_TARGET_ATTACHING);
}

void resident_view_build(struct resident_view *v, const struct snapshot *s)
{
	resident_view_of_pid(v, s, 0);
}

void resident_view_totals(struct resident_view *v, const struct snapshot *s, uint32_t pid)
{
	memset(v, 0, sizeof(*v));
	v->present = (int)s->has_resident;
	if (!v->present)
		return;
	for (uint32_t i = 0; i < s->ntargets; i++) {
		const struct snap_target *t = &s->targets[i];

		if (pid && t->pid != pid)
			continue;
		if (!t->resident.sampled &&
		    (t->state == SNAP_TARGET_ATTACHED || t->state == SNAP_TARGET_ATTACHING))
			v->unread++;
		if (!resident_target_current(t))
			continue;
		mt_resident_add(&v->total, &s->targets[i].resident.r);
		v->targets++;
	}
}

void resident_view_of_pid(struct resident_view *v, const struct snapshot *s, uint32_t pid)
{
	struct series sv;
	const char *why;

	resident_view_totals(v, s, pid);
	if (!v->present)
		return;
	/* the pid's own series when the snapshot has it, else the timeline's of all */
	if (!pid || series_build(&sv, s, pid, &why))
		series_build(&sv, s, 0, &why);
	v->has_peak = sv.has_peak;
	v->peak_bytes = sv.peak_bytes;
	v->peak_time_ns = sv.peak_time_ns;
	series_free(&sv);
}
