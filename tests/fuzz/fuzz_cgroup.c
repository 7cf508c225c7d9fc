// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the parsers of a process's cgroup (src/daemon/proc/
 * cgroup.c): /proc/PID/cgroup, whose paths are whatever a container
 * runtime or a user named their cgroups, what such a path names, NSpid,
 * and every memory controller file. A parse either fails with a reason and
 * changes nothing, or gives labels that are NUL-terminated within their
 * fields and figures whose bits say what was read.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/proc/cgroup.h"

static void check_label(const char *s, size_t cap)
{
	if (!memchr(s, '\0', cap))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct cgroup_where w;
	struct mt_cgroup_labels l;
	char err[256], *path;
	int32_t nspid = -7;

	err[0] = '\0';
	memset(&w, 'x', sizeof(w));
	if (cgroup_parse_proc(text, size, &w, err, sizeof(err))) {
		if (!err[0] || w.v2[0] != 'x')
			abort(); /* a failure says why, and leaves out alone */
	} else {
		check_label(w.v2, sizeof(w.v2));
		check_label(w.memory, sizeof(w.memory));
		if ((w.v2[0] && w.v2[0] != '/') || (w.memory[0] && w.memory[0] != '/'))
			abort();
	}
	/* the bytes as a path (up to their first NUL) */
	path = malloc(size + 1);
	if (!path)
		return 0;
	memcpy(path, data, size);
	path[size] = '\0';
	memset(&l, 'x', sizeof(l));
	cgroup_identify(path, &l);
	check_label(l.unit, sizeof(l.unit));
	check_label(l.container, sizeof(l.container));
	check_label(l.runtime, sizeof(l.runtime));
	check_label(l.pod, sizeof(l.pod));
	if (l.container[0] && (strlen(l.container) != 64 || !l.runtime[0]))
		abort();
	free(path);
	err[0] = '\0';
	if (cgroup_parse_nspid(text, size, &nspid, err, sizeof(err))) {
		if (!err[0] || nspid != -7)
			abort();
	} else if (nspid <= 0) {
		abort();
	}
	for (int f = 0; f < CG_NFILES; f++) {
		struct mt_cgroup_memory m = {0}, before;

		memset(&m.f, 0x55, sizeof(m.f));
		before = m;
		err[0] = '\0';
		if (cgroup_parse_file((enum cgroup_file)f, text, size, &m, err, sizeof(err))) {
			if (!err[0] || memcmp(&m, &before, sizeof(m)))
				abort();
		} else if (!m.version || (m.have >> MT_NCGROUP)) {
			abort();
		}
	}
	return 0;
}
