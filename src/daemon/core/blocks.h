/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The live blocks of one target: the one way to list what a generation of a
 * process holds in its address space now (a leak scan copies them from
 * here). Its own blocks, and, for a forked child, the blocks it inherited
 * from its ancestors at the fork and holds still (family.h: shared with
 * them, not copied), each with the stack that allocated it (an ancestor's,
 * for an inherited block).
 */
#ifndef MEMTRACE_CORE_BLOCKS_H
#define MEMTRACE_CORE_BLOCKS_H

#include <stdint.h>

#include "daemon/core/heap.h"

struct tracker;

/*
 * Call fn(arg, block, inherited) for each live block of the generation keyed
 * by generation (in no particular order; block->stack is the stack that
 * allocated it: for an inherited block, the ancestor's stack, or the
 * child's own stack of the same frames when it has one); fn returns nonzero
 * to stop. Reads the core only. 0, or -1 when out of memory.
 */
int target_blocks_each(const struct tracker *t, uint32_t gen,
		       int (*fn)(void *arg, const struct heap_block *b, int inherited), void *arg);

#endif
