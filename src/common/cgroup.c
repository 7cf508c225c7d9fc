// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The table generated from include/memtrace/cgroup.h (a memory cgroup's
 * figures), so that the daemon and every renderer name them the same way.
 */
#include "memtrace/cgroup.h"

const struct mt_cgroup_desc mt_cgroup_descs[] = {
#define MT_CGROUP_DESC(field, name, prom, type, v2, v1, help)                                      \
	{name, offsetof(struct mt_cgroup_figures, field), prom, type, v2, v1, help},
    MT_CGROUP_FIGURES(MT_CGROUP_DESC)
#undef MT_CGROUP_DESC
};

_Static_assert(sizeof(struct mt_cgroup_figures) == MT_NCGROUP * sizeof(uint64_t),
	       "every cgroup figure is in the table");
_Static_assert(MT_NCGROUP <= 32, "have is a bit per figure");

const char *mt_cgroup_version_name(uint32_t version)
{
	return version == MT_CGROUP_V1 ? "v1" : version == MT_CGROUP_V2 ? "v2" : "none";
}
