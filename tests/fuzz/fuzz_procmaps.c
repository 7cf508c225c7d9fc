// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the /proc/PID/maps parser (src/daemon/proc/procmaps.c), and the
 * smaps one (smaps.c) and the epoll fdinfo and timers ones (kroots.c) on the same bytes. The kernel
 * writes that text, but a path in it is whatever the target named its files.
 */
#include <stdint.h>
#include <stdlib.h>

#include "daemon/proc/kroots.h"
#include "daemon/proc/procmaps.h"
#include "daemon/proc/smaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proc_maps m;
	struct smaps sm;
	struct kroots k = {0};

	kroots_parse_epoll((const char *)data, size, &k);
	kroots_parse_timers((const char *)data, size, &k);
	kroots_free(&k);
	if (!smaps_parse((const char *)data, size, &sm)) {
		for (size_t i = 1; i < sm.n; i++)
			if (sm.v[i].start < sm.v[i - 1].end || sm.v[i].end < sm.v[i].start)
				abort(); /* in order, never overlapping */
		smaps_free(&sm);
	}
	if (procmaps_parse((const char *)data, size, &m))
		return 0;
	for (size_t i = 0; i < m.n; i++) {
		const struct map_entry *e = &m.v[i];

		if (e->end < e->start)
			abort();
		/* sorted and non-overlapping: a mapping's first byte finds it */
		if (e->start < e->end && procmaps_find(&m, e->start) != e)
			abort();
		procmaps_is_file(e);
	}
	procmaps_find(&m, 0);
	procmaps_find(&m, UINT64_MAX);
	procmaps_free(&m);
	return 0;
}
