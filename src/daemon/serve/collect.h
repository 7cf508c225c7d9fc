/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Building the snapshot a request asks for from the daemon's state
 * (collect.c): counters, targets and their resident memory always, the
 * stacks it selects (one pid
 * or all, ordered by one key, the top N) symbolized, and the live blocks or
 * ages when asked; grouped views and leaks are counted and only the rows
 * shown go (grouping.c, leaks.c). It only reads the state, so a worker lane
 * can run it on a frozen core (worker.h).
 */
#ifndef MEMTRACE_SERVE_COLLECT_H
#define MEMTRACE_SERVE_COLLECT_H

#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"
#include "daemon/serve/framebuild.h"
#include "daemon/serve/service.h"
#include "memtrace/snapshot.h"

/*
 * Fill s (zeroed first) for request r, as its kind says (proto.h): 0, or -1
 * with a one-line reason in err. For attach, detach and reset-peak, their
 * answer (as status, of the process attached or detached); for a scan, what
 * its answer has beside the scan (scan.c). ends must be up to date with the
 * stack table (stack_ends_check) for the truncations to count every stack;
 * stacks past it show what the walk said. Every string of s is its own
 * (the frames' copied from the symbolizer's, framebuild.h): s may be encoded
 * after the core and the symbolizer moved on. cgroup, cgroup_len: the path
 * that came after a report's or rows' line (cgroup=; NULL, 0 for none): only
 * the stacks of processes in that cgroup or below it, and the totals' live,
 * allocated and peak figures theirs.
 */
int collect_snapshot(const struct daemon_view *v, const struct stack_ends *ends,
		     const struct proto_request *r, const char *cgroup, size_t cgroup_len,
		     struct snapshot *s, char *err, size_t errlen);

#endif
