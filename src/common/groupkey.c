// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The keys rows are grouped by (groupkey.h): one definition for the client,
 * which groups a snapshot's stacks, and the daemon, which groups a large
 * heap before it answers. Both must key a frame the same way.
 */
#include "common/groupkey.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *const group_names[GROUP_BY_COUNT] = {
    [GROUP_STACK] = "stack",   [GROUP_FUNCTION] = "function", [GROUP_FILE] = "file",
    [GROUP_LINE] = "line",     [GROUP_MODULE] = "module",     [GROUP_SITE] = "site",
    [GROUP_CGROUP] = "cgroup", [GROUP_UNIT] = "unit",	      [GROUP_CONTAINER] = "container",
};

const char *group_by_name(int by)
{
	return by > GROUP_NONE && by < GROUP_BY_COUNT ? group_names[by] : NULL;
}

int group_by_from_name(const char *name)
{
	for (int i = GROUP_NONE + 1; i < GROUP_BY_COUNT; i++)
		if (!strcmp(name, group_names[i]))
			return i;
	return -1;
}

int group_by_target(int by)
{
	return by == GROUP_CGROUP || by == GROUP_UNIT || by == GROUP_CONTAINER;
}

const char *group_target_key(const struct snapshot *s, uint32_t pid, int by)
{
	for (uint32_t i = s->ntargets; i-- > 0;) {
		const struct snap_cgroup *cg = &s->targets[i].cgroup;
		const char *v;

		if (s->targets[i].pid != pid || !cg->known)
			continue;
		/* the path status shows: the memory cgroup's (hybrid hosts: the v1 one) */
		v = by == GROUP_CGROUP ? (cg->memory_path ? cg->memory_path : cg->path)
		    : by == GROUP_UNIT ? cg->unit
				       : cg->container;
		return v && *v ? v : NO_LABEL_KEY;
	}
	return NO_LABEL_KEY;
}

int group_cgroup_below(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	while (n > 1 && prefix[n - 1] == '/')
		n--;
	if (!path || strncmp(path, prefix, n))
		return 0;
	return n == 1 || path[n] == '\0' || path[n] == '/';
}

int group_target_in_cgroup(const struct snapshot *s, uint32_t pid, const char *prefix)
{
	for (uint32_t i = s->ntargets; i-- > 0;) {
		const struct snap_cgroup *cg = &s->targets[i].cgroup;

		if (s->targets[i].pid == pid && cg->known)
			return group_cgroup_below(cg->memory_path, prefix) ||
			       group_cgroup_below(cg->path, prefix);
	}
	return 0;
}

static int str_cmp(const char *a, const char *b)
{
	if (!a || !b)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

int group_site_cmp(const struct snap_frame *a, const struct snap_frame *b)
{
	int c;

	if (!a || !b)
		return (a != NULL) - (b != NULL);
	if ((c = str_cmp(a->function, b->function)))
		return c;
	if (a->function) {
		if ((c = str_cmp(a->file, b->file)))
			return c;
		return a->line < b->line ? -1 : a->line > b->line;
	}
	if ((c = str_cmp(a->module, b->module)))
		return c;
	if (a->module)
		return a->offset < b->offset ? -1 : a->offset > b->offset;
	return a->address < b->address ? -1 : a->address > b->address;
}

void group_frame_location(const struct snap_frame *f, char *dst, size_t len)
{
	if (f->module)
		snprintf(dst, len, "%s+0x%" PRIx64, f->module, f->offset);
	else
		snprintf(dst, len, "0x%" PRIx64, f->address);
}

void group_frame_key(const struct snap_frame *f, int by, char *dst, size_t len)
{
	switch (by) {
	case GROUP_FUNCTION:
		if (f->function) {
			snprintf(dst, len, "%s", f->function);
			return;
		}
		break;
	case GROUP_FILE:
		if (f->file) {
			snprintf(dst, len, "%s", f->file);
			return;
		}
		break;
	case GROUP_LINE:
		if (f->file) {
			snprintf(dst, len, "%s:%" PRId64, f->file, f->line);
			return;
		}
		break;
	case GROUP_MODULE:
		if (f->module) {
			snprintf(dst, len, "%s", f->module);
			return;
		}
		break;
	}
	group_frame_location(f, dst, len);
}

int group_python_frame(const struct snap_frame *f)
{
	return !f->address && !f->module && f->file;
}
