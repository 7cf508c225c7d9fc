/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Resident memory in a snapshot (memory.c): each target's sampled figures
 * (read anew when a request lane builds the snapshot), the timeline's, and
 * for a memory request (stats --memory) and a whole snapshot the breakdown
 * of each traced target's mappings by kind with the live heap in each: its
 * smaps read then, and one walk of the live heap.
 */
#ifndef MEMTRACE_SERVE_MEMORY_H
#define MEMTRACE_SERVE_MEMORY_H

#include "daemon/serve/service.h"
#include "memtrace/snapshot.h"

/* s->targets[i] is v->targets[view_index[i]]: their resident figures. */
void memory_fill_resident(const struct daemon_view *v, const int *view_index, struct snapshot *s);

/* The breakdowns of the snapshot's targets that are traced now (section 46). */
void memory_fill_breakdowns(const struct daemon_view *v, const int *view_index, struct snapshot *s);

#endif
