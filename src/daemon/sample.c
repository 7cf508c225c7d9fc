// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory over time (sample.h): the live heap into the timeline, and the
 * resident memory of the targets traced at that moment, asked of the
 * sampler thread and taken when it has read them. A round's readings count
 * only for targets still traced, under the same pid, when they are taken.
 */
#include <stdlib.h>

#include "daemon/daemon.h"
#include "daemon/sample.h"
#include "daemon/targets.h"
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
		    rd[i].index < (uint32_t)d->ntargets ? &d->targets[rd[i].index] : NULL;

		/* gone meanwhile (it exited, was detached, executed another program) */
		if (!tg || tg->pid != rd[i].pid || tg->state != SNAP_TARGET_ATTACHED)
			continue;
		if (rd[i].err) {
			if (resident_failed(&d->resident, rd[i].index))
				log_msg("pid %d: no resident memory figures: %s", rd[i].pid,
					rd[i].why);
			failed = 1;
			continue;
		}
		resident_record(&d->resident, rd[i].index, round_ns, &rd[i].r);
		mt_resident_add(&sum, &rd[i].r);
		any = 1;
	}
	if (any && !failed)
		timeline_set_resident(&d->timeline, round_ns, &sum);
}

/* A round for every target traced now. */
static void ask_round(struct daemon *d, uint64_t round_ns)
{
	struct rss_request *req = xmalloc((size_t)(d->ntargets ? d->ntargets : 1) * sizeof(*req));
	size_t n = 0;

	for (int k = 0; k < d->ntargets; k++) {
		if (d->targets[k].state == SNAP_TARGET_ATTACHED)
			req[n++] =
			    (struct rss_request){.index = (uint32_t)k, .pid = d->targets[k].pid};
	}
	/* busy: the last round is still being read, this point goes without */
	if (n)
		rss_sampler_ask(d->sampler, round_ns, req, n);
	free(req);
}

void sample_tick(struct daemon *d)
{
	const struct rss_reading *rd;
	uint64_t now = time_monotonic_ns(), round;
	size_t n;

	if (d->sampler && rss_sampler_take(d->sampler, &round, &rd, &n))
		take_round(d, round, rd, n);
	if (!d->tracker.ntargets || now < d->tracker.start_ns)
		return;
	if (timeline_sample(&d->timeline, now - d->tracker.start_ns, &d->tracker.totals) &&
	    d->sampler)
		ask_round(d, now - d->tracker.start_ns);
}

void sample_reset_peak(struct daemon *d, uint64_t now_ns)
{
	if (d->tracker.ntargets && now_ns >= d->tracker.start_ns)
		resident_reset_peak(&d->resident, now_ns - d->tracker.start_ns);
}
