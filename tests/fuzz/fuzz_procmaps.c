// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the /proc/PID/maps parser (src/daemon/proc/procmaps.c), and the
 * epoll fdinfo and timers ones (kroots.c) on the same bytes (smaps: fuzz_rss). The kernel
 * writes that text, but a path in it is whatever the target named its files.
 */
#include <stdint.h>
#include <stdlib.h>

#include "daemon/proc/kroots.h"
#include "daemon/proc/procmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proc_maps m;
	struct kroots k = {0};

	kroots_parse_epoll((const char *)data, size, &k);
	kroots_parse_timers((const char *)data, size, &k);
	kroots_free(&k);
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
