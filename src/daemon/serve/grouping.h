/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Views that group a large heap, answered in the daemon so that only what is
 * shown travels: rows requests (rows of stacks by stack, function, file,
 * line, module, allocation site, or the cgroup, unit or container of their
 * process, exactly as group.c makes them in the
 * client, the top ones sent). Reads the core only: run on a frozen core
 * (worker.h). Leaks are leaks.h's.
 */
#ifndef MEMTRACE_SERVE_GROUPING_H
#define MEMTRACE_SERVE_GROUPING_H

#include <stdint.h>

#include "memtrace/snapshot.h"
#include "common/proto.h"

struct daemon_view;
struct stack_ends;

/*
 * Fill s's stacks (with their frames) and groups section for a rows
 * request: sel[0..nsel) are the stacks it selects, in the order of reports.
 * s's targets are filled already (their cgroups key rows by cgroup, unit or
 * container).
 */
void grouping_rows(const struct daemon_view *v, const struct stack_ends *ends,
		   const struct proto_rows *r, const uint32_t *sel, uint32_t nsel,
		   struct snapshot *s);

#endif
