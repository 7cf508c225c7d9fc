/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The orders views show rows in, written once for the daemon, which picks
 * the top rows of a large heap before it answers, and the client, which
 * orders the rows of a file (or of every stack) itself: both must choose the
 * same rows. Each function says which of two rows comes first as far as
 * their numbers decide; on a tie it returns 0 and the rows' keys decide, as
 * its comment says: the client compares the key strings, the daemon the
 * same order without writing keys out (serve/grouping.c). (A report's
 * stacks: mt_rank_sort in include/memtrace/counters.h.)
 */
#ifndef MEMTRACE_ORDER_H
#define MEMTRACE_ORDER_H

#include "memtrace/counters.h"
#include "memtrace/snapshot.h"

/*
 * Rows grouped by by (enum group_by): the larger value under sort (enum
 * mt_sort) first; then, except for allocation sites, more allocations first.
 * Negative when a comes first, positive when b does, 0 on a tie: then the
 * smaller key (strcmp) comes first, and for sites the smaller site
 * (group_site_cmp).
 */
int group_order(const struct mt_stack_counters *a, const struct mt_stack_counters *b, int sort,
		int by);

/*
 * Stacks by their leaking blocks (leaks): most bytes first, then most
 * blocks. Negative, positive, or 0 on a tie: then the stack that comes
 * first in the request's order (its place in the snapshot) comes first.
 */
int leak_order(const struct snap_leak *a, const struct snap_leak *b);

#endif
