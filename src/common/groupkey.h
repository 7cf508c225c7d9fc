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
	GROUP_BY_COUNT
};

/* "stack", "function", "file", "line", "module", "site"; NULL for none or a bad value. */
const char *group_by_name(int by);
/* enum group_by for one of those names, or -1. */
int group_by_from_name(const char *name);

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
