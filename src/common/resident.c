// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The tables generated from include/memtrace/resident.h (the resident
 * figures and the kinds of mapping) and the few sums both programs make of
 * them, so that the daemon and every renderer add them up the same way.
 */
#include "memtrace/resident.h"

const struct mt_resident_desc mt_resident_descs[] = {
#define MT_RESIDENT_DESC(field, name, prom, source, key, help)                                     \
	{name, offsetof(struct mt_resident, field), prom, source, key, help},
    MT_RESIDENT(MT_RESIDENT_DESC)
#undef MT_RESIDENT_DESC
};

_Static_assert(sizeof(struct mt_resident) == MT_NRESIDENT * sizeof(uint64_t),
	       "every resident figure is in the table");
_Static_assert(sizeof(struct mt_mem_figures) == MT_NMEM_FIELDS * sizeof(uint64_t),
	       "every breakdown figure is in the table");

const struct mt_mem_kind_desc mt_mem_kind_descs[MT_MEM_KIND_COUNT] = {
#define MT_MEM_KIND_DESC(id, name, heap, help) [MT_MEM_##id] = {name, heap, help},
    MT_MEM_KINDS(MT_MEM_KIND_DESC)
#undef MT_MEM_KIND_DESC
};

const char *const mt_mem_field_names[MT_NMEM_FIELDS] = {
#define MT_MEM_FIELD_NAME(field) #field,
    MT_MEM_FIELDS(MT_MEM_FIELD_NAME)
#undef MT_MEM_FIELD_NAME
};

void mt_resident_add(struct mt_resident *out, const struct mt_resident *r)
{
	for (size_t i = 0; i < MT_NRESIDENT; i++)
		mt_resident_set(out, i, mt_resident_get(out, i) + mt_resident_get(r, i));
}

void mt_memory_heap(const struct mt_memory *m, struct mt_heap_summary *out)
{
	out->resident_bytes = 0;
	out->live_bytes = 0;
	for (size_t k = 0; k < MT_MEM_KIND_COUNT; k++) {
		if (!mt_mem_kind_descs[k].heap)
			continue;
		out->resident_bytes += m->kinds[k].resident_bytes;
		out->live_bytes += m->kinds[k].live_bytes;
	}
	out->overhead_bytes = (int64_t)(out->resident_bytes - out->live_bytes);
}
