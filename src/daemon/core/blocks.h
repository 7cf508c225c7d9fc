/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The live blocks of one target: the one way to list what a generation of
 * a process holds (a leak scan copies them from here). Today the heap table
 * holds each block under its stack's key, so this walks the table and keeps
 * that key's; when a forked child's heap begins as its parent's (shared
 * copy on write), what the child inherited is listed here too, and nothing
 * that uses this iterator changes.
 */
#ifndef MEMTRACE_CORE_BLOCKS_H
#define MEMTRACE_CORE_BLOCKS_H

#include <stdint.h>

#include "daemon/core/heap.h"

struct tracker;

struct target_blocks {
	const struct tracker *t;
	uint32_t space; /* the generation's key (tracker_target.space) */
	uint64_t pos;
};

/* Begin listing the live blocks of the generation keyed by space. */
void target_blocks_begin(struct target_blocks *it, const struct tracker *t, uint32_t space);

/* The next block in *out (in no particular order): 1, or 0 when done. */
int target_blocks_next(struct target_blocks *it, struct heap_block *out);

#endif
