/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Allocation sites: the innermost frames of a snapshot's stacks, each with
 * the sums of the stacks that end there (memray's "top allocating
 * locations"). Two frames are one site when they name the same function at
 * the same line, or, without a function, the same module offset.
 */
#ifndef MEMTRACE_CTL_SITES_H
#define MEMTRACE_CTL_SITES_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/snapshot.h"

/* stats shows this many top allocation sites, by bytes and by count. */
#define STATS_TOP_SITES 5

struct site {
	const struct snap_frame *frame; /* NULL for stacks without frames */
	struct mt_stack_counters t;	/* the sums of the stacks that end there */
};

/* The sites of s's stacks, in no particular order; *out is malloc'd. */
size_t sites_collect(const struct snapshot *s, struct site **out);

/* Order sites largest first by bytes allocated, or by allocations with
 * by_count; ties by site (group_order(), common/order.h, as the daemon
 * orders them), so the order is the same on every run. */
void sites_rank(struct site *sites, size_t n, int by_count);

#endif
