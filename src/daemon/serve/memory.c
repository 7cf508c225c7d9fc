// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Resident memory into a snapshot (memory.h). Only reads the daemon's state;
 * the /proc reads here are the lanes' (v->off_loop), or a breakdown's, which
 * is asked for only by requests the lanes serve.
 */
#include "daemon/serve/memory.h"
#include "daemon/core/resident.h"
#include "daemon/core/tracker.h"
#include "daemon/proc/memmap.h"
#include "daemon/proc/rss.h"
#include "daemon/proc/smaps.h"
#include "common/util.h"

#include <stdlib.h>
#include <string.h>

/* Now, in the timeline's terms: since tracing began. */
static uint64_t since_start(const struct tracker *t)
{
	uint64_t now = time_monotonic_ns();

	return now > t->start_ns ? now - t->start_ns : 0;
}

static void fill_target(const struct daemon_view *v, int k, struct snap_resident *out)
{
	const struct resident_target *rt = resident_get(v->resident, (uint32_t)k);
	const struct view_target tg = view_target(v, k);
	struct mt_resident now;
	char why[200];

	if (rt)
		*out = (struct snap_resident){.sampled = 1,
					      .time_ns = rt->time_ns,
					      .r = rt->last,
					      .peak_bytes = rt->peak_bytes,
					      .peak_time_ns = rt->peak_time_ns};
	/* a lane may wait for the walk: the snapshot's figures are of its moment */
	if (!v->off_loop || tg.state != SNAP_TARGET_ATTACHED ||
	    rss_read(tg.pid, &now, why, sizeof(why)))
		return;
	out->sampled = 1;
	out->time_ns = since_start(v->tracker);
	out->r = now;
	if (!rt || now.resident_bytes > out->peak_bytes) {
		out->peak_bytes = now.resident_bytes;
		out->peak_time_ns = out->time_ns;
	}
}

void memory_fill_resident(const struct daemon_view *v, const int *view_index, struct snapshot *s)
{
	for (uint32_t i = 0; i < s->ntargets; i++) {
		fill_target(v, view_index[i], &s->targets[i].resident);
		s->has_resident |= s->targets[i].resident.sampled;
	}
	/* the timeline's points came with theirs (collect.c) */
	for (uint32_t i = 0; i < s->ntimeline; i++)
		s->has_resident |= s->timeline[i].total.has_resident;
}

/* One breakdown being made: its target's space (the key of its blocks) and mappings. */
struct making {
	uint32_t space;
	struct smaps maps;
	struct memmap mm;
	int ok;
};

void memory_fill_breakdowns(const struct daemon_view *v, const int *view_index, struct snapshot *s)
{
	struct making *mk = xcalloc(s->ntargets ? s->ntargets : 1, sizeof(*mk));
	struct heap_block b;
	uint64_t pos = 0;
	uint32_t n = 0, last = 0, nok = 0;

	s->has_memory = 1;
	s->memory = xcalloc(s->ntargets ? s->ntargets : 1, sizeof(*s->memory));
	for (uint32_t i = 0; i < s->ntargets; i++) {
		const struct view_target tg = view_target(v, view_index[i]);
		struct snap_memory *m = &s->memory[n];
		char why[256];

		if (tg.state != SNAP_TARGET_ATTACHED)
			continue; /* it has no memory now, or it is not this program's */
		m->target = i;
		m->time_ns = since_start(v->tracker);
		mk[n].space = tg.space;
		if (smaps_read(tg.pid, &mk[n].maps, why, sizeof(why))) {
			m->error = xstrdup(why);
		} else {
			memmap_init(&mk[n].mm, &mk[n].maps);
			mk[n].ok = 1;
			nok++;
		}
		n++;
	}
	s->nmemory = n;
	/* one walk of the live heap for them all: each block in the mapping holding it */
	while (nok && heap_next(&v->tracker->heap, &pos, &b)) {
		if (mk[last].space != b.tgid || !mk[last].ok) {
			uint32_t k;

			for (k = 0; k < n && !(mk[k].ok && mk[k].space == b.tgid); k++)
				;
			if (k == n)
				continue; /* another target's, or an older generation's */
			last = k;
		}
		memmap_add_block(&mk[last].mm, b.addr, b.size);
	}
	for (uint32_t k = 0; k < n; k++) {
		if (!mk[k].ok)
			continue;
		memmap_sum(&mk[k].mm, &s->memory[k].m);
		memmap_free(&mk[k].mm);
		smaps_free(&mk[k].maps);
	}
	free(mk);
}
