// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the parsers of /proc/PID/status, smaps_rollup and smaps
 * (src/daemon/proc/rss.c, smaps.c) and the sorting of mappings into kinds
 * (memmap.c). The kernel writes that text, but the paths in smaps are
 * whatever the target named its files and mappings. A parse either fails
 * with a reason or gives figures the breakdown adds up exactly.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/proc/memmap.h"
#include "daemon/proc/rss.h"
#include "daemon/proc/smaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct mt_resident r = {0};
	struct mt_memory mem;
	struct memmap mm;
	struct smaps m;
	char err[256];
	uint64_t rss = 0, kinds_rss = 0, mappings = 0;

	err[0] = '\0';
	if (rss_parse(text, size, MT_FROM_STATUS, &r, err, sizeof(err)) && !err[0])
		abort(); /* a failure always says why */
	err[0] = '\0';
	if (rss_parse(text, size, MT_FROM_ROLLUP, &r, err, sizeof(err)) && !err[0])
		abort();
	err[0] = '\0';
	if (smaps_parse(text, size, &m, err, sizeof(err))) {
		if (!err[0] || m.n || m.v)
			abort();
		return 0;
	}
	memmap_init(&mm, &m);
	for (size_t i = 0; i < m.n; i++) {
		const struct map_entry *e = &m.v[i].map;

		if (e->start >= e->end || (i && e->start < m.v[i - 1].map.end))
			abort();
		if (smaps_find(&m, e->start) != (long)i || smaps_find(&m, e->end - 1) != (long)i)
			abort();
		rss += m.v[i].rss;
		/* a block in every other mapping, one in none */
		if (i & 1)
			memmap_add_block(&mm, e->start, 16);
	}
	memmap_add_block(&mm, 0, 1);
	memmap_sum(&mm, &mem);
	for (size_t k = 0; k < MT_MEM_KIND_COUNT; k++) {
		kinds_rss += mem.kinds[k].resident_bytes;
		mappings += mem.kinds[k].mappings;
	}
	if (kinds_rss != rss || mappings != m.n)
		abort();
	memmap_free(&mm);
	smaps_free(&m);
	return 0;
}
