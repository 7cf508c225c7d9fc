/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What rows of stacks are keyed by: the whole stack, or one frame's
 * function, source file, file:line or module, and stats' allocation sites.
 * One definition for the client (ctl/view/group.c) and the daemon
 * (daemon/serve/grouping.c), so that a row the daemon grouped has the key
 * the client would have given it.
 */
#ifndef MEMTRACE_GROUPKEY_H
#define MEMTRACE_GROUPKEY_H

#include <stddef.h>

#include "memtrace/snapshot.h"

/* The key of a stack without frames. */
#define NO_STACK_KEY "(no stack)"

/*
 * What rows are keyed by: one enum for the client's views, the daemon's
 * grouping and the protocol. The numbers are the wire's (a groups section's
 * "by", docs/snapshot-format.md); a rows request names them (by=stack).
 */
enum group_by {
	GROUP_NONE = 0, /* not grouped */
	GROUP_STACK,	/* the whole stack: its frames' locations */
	GROUP_FUNCTION,
	GROUP_FILE,
	GROUP_LINE, /* file:line */
	GROUP_MODULE,
	GROUP_SITE, /* stats' allocation sites: the innermost frame (group_site_cmp) */
	/* where a stack's process runs: a label of its target (group_target_key) */
	GROUP_CGROUP,
	GROUP_UNIT,
	GROUP_CONTAINER,
	GROUP_BY_COUNT
};

/* The key of a stack whose target has no such label (no unit, no container). */
#define NO_LABEL_KEY "(none)"

/* "stack", "function", "file", "line", "module", "site", "cgroup", "unit", "container";
 * NULL for none or a bad value. */
const char *group_by_name(int by);
/* enum group_by for one of those names, or -1. */
int group_by_from_name(const char *name);

/* Is by keyed by a stack's target (cgroup, unit, container) rather than its frames? */
int group_by_target(int by);

/*
 * The key of a stack of process pid by a target label: the cgroup path (the
 * memory cgroup's when there is one, as status shows it), the
 * systemd unit or the container id of the newest target of pid whose cgroup
 * is known (as the pprof profile labels a sample), else NO_LABEL_KEY.
 */
const char *group_target_key(const struct snapshot *s, uint32_t pid, int by);

/* Is cgroup path (a target's) prefix or below it? Both absolute; prefix "/" holds all. */
int group_cgroup_below(const char *path, const char *prefix);

/*
 * Is the newest target of pid whose cgroup is known in cgroup prefix or below
 * it, by its memory cgroup's path or its unified (v2) one? 0 when none is known.
 */
int group_target_in_cgroup(const struct snapshot *s, uint32_t pid, const char *prefix);

/*
 * The key of one frame: the function name, the source file, "file:line" or
 * the module path. A frame without that information is keyed by where it is,
 * "module+0xoffset" (or "0xaddress" outside any module), never by a guess.
 */
void group_frame_key(const struct snap_frame *f, int by, char *dst, size_t len);

/* "module+0xoffset", or "0xaddress" outside any module: where a frame is. */
void group_frame_location(const struct snap_frame *f, char *dst, size_t len);

/* A Python frame (address 0, no module, a file): non-cumulative keys come from
 * a stack's first one, when it has one, else from its frame 0. */
int group_python_frame(const struct snap_frame *f);

/*
 * stats' allocation sites: frames are one site when they name the same
 * function at the same line, or, without a function, the same module offset.
 */
int group_site_cmp(const struct snap_frame *a, const struct snap_frame *b);

#endif
