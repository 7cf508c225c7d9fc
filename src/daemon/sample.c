// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory over time (sample.h): the live heap into the timeline, in total and
 * of each target traced at that moment, and the resident memory of those
 * targets, asked of the sampler thread and taken when it has read them. A
 * round's readings count only for targets still traced, under the same pid,
 * when they are taken. Each reading brings the target's cgroup too: its
 * labels anew and its memory cgroup's figures.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/sample.h"
#include "daemon/targets.h"
#include "daemon/core/tracker.h"
#include "daemon/proc/cgroup.h"
#include "daemon/proc/sampler.h"
#include "common/util.h"

/*
 * Readings of the round asked at round_ns (since tracing began). The point
 * gets their sum only when every target still traced was read: a sum that
 * left one out would say less than was resident.
 */
static void take_round(struct daemon *d, uint64_t round_ns, const struct rss_reading *rd, size_t n)
{
	struct mt_resident sum = {0};
	int any = 0, failed = 0;

	for (size_t i = 0; i < n; i++) {
		const struct target *tg =
		    rd[i].index < (uint32_t)d->ntargets ? d->targets[rd[i].index] : NULL;

		/* gone meanwhile (it exited, was detached, executed another program) */
		if (!tg || tg->pid != rd[i].pid || !lc_traced(tg->phase))
			continue;
		/* (when the process is gone, its resident reading's line says so) */
		if (rd[i].cg_err && !rd[i].err && resident_cgroup_failed(&d->resident, rd[i].index))
			log_msg("pid %d: no cgroup labels or figures: %s", rd[i].pid, rd[i].cg_why);
		if (!rd[i].cg_err) {
			resident_set_labels(&d->resident, rd[i].index, &rd[i].labels);
			resident_record_cgroup(&d->resident, rd[i].index, round_ns, &rd[i].cg,
					       rd[i].cg_why);
			if (rd[i].cg.version && (rd[i].cg.have & 1u)) /* usage read */
				timeline_set_target_cgroup(
				    &d->timeline, round_ns, rd[i].index, rd[i].cg.f.usage_bytes,
				    (rd[i].cg.have & 2u) ? rd[i].cg.f.limit_bytes
							 : MT_CGROUP_NO_LIMIT);
		}
		if (rd[i].err) {
			if (resident_failed(&d->resident, rd[i].index))
				log_msg("pid %d: no resident memory figures: %s", rd[i].pid,
					rd[i].why);
			failed = 1;
			continue;
		}
		resident_record(&d->resident, rd[i].index, round_ns, &rd[i].r);
		timeline_set_target_resident(&d->timeline, round_ns, rd[i].index, &rd[i].r);
		mt_resident_add(&sum, &rd[i].r);
		any = 1;
	}
	if (any && !failed)
		timeline_set_resident(&d->timeline, round_ns, &sum);
}

/* A round for the n targets the point of round_ns holds: every target traced now. */
static void ask_round(struct daemon *d, uint64_t round_ns, const struct timeline_target *tt,
		      uint32_t n)
{
	struct rss_request *req = xmalloc((size_t)(n ? n : 1) * sizeof(*req));

	for (uint32_t i = 0; i < n; i++)
		req[i] = (struct rss_request){.index = tt[i].target,
					      .pid = d->targets[tt[i].target]->pid};
	/* busy: the last round is still being read, this point goes without */
	if (n)
		rss_sampler_ask(d->sampler, round_ns, req, n);
	free(req);
}

/*
 * Label each target traced now that has no labels yet. Entries are labelled
 * when they are made (target_attach, an exec, a fork: docs/design.md, "The
 * cgroup, with the same round"), so this is for one whose reading failed
 * then: its cgroup and NSpid, two small reads of /proc. A process gone
 * meanwhile gets empty labels, and is not read again until a sample reads it.
 */
static void label_new_targets(struct daemon *d)
{
	for (int k = 0; k < d->ntargets; k++) {
		struct mt_cgroup_labels *l;
		char err[256];

		if (!lc_traced(d->targets[k]->phase) ||
		    resident_get_cgroup(&d->resident, (uint32_t)k))
			continue;
		l = xcalloc(1, sizeof(*l));
		if (cgroup_read(d->targets[k]->pid, l, NULL, NULL, 0, err, sizeof(err)))
			memset(l, 0, sizeof(*l));
		resident_set_labels(&d->resident, (uint32_t)k, l);
		free(l);
	}
}

void sample_tick(struct daemon *d)
{
	static const struct mt_counters none;
	const struct rss_reading *rd;
	struct timeline_target *tt;
	uint64_t now = time_monotonic_ns(), round;
	uint32_t n = 0;
	size_t nrd;

	label_new_targets(d);
	if (d->sampler && rss_sampler_take(d->sampler, &round, &rd, &nrd))
		take_round(d, round, rd, nrd);
	if (!d->tracker.ntargets || now < d->tracker.start_ns ||
	    !timeline_due(&d->timeline, now - d->tracker.start_ns))
		return;
	/* the targets traced now, each with its own counters */
	tt = xmalloc((size_t)(d->ntargets ? d->ntargets : 1) * sizeof(*tt));
	for (int k = 0; k < d->ntargets; k++) {
		const struct tracker_target *t;

		if (!lc_traced(d->targets[k]->phase))
			continue;
		t = tracker_find_gen(&d->tracker, d->targets[k]->gen);
		tt[n++] = (struct timeline_target){.target = (uint32_t)k, .c = t ? &t->c : &none};
	}
	if (timeline_sample(&d->timeline, now - d->tracker.start_ns, &d->tracker.totals, tt, n) &&
	    d->sampler)
		ask_round(d, now - d->tracker.start_ns, tt, n);
	free(tt);
}

void sample_reset_peak(struct daemon *d, uint64_t now_ns)
{
	if (d->tracker.ntargets && now_ns >= d->tracker.start_ns)
		resident_reset_peak(&d->resident, now_ns - d->tracker.start_ns);
}
