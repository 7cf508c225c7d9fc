// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The orders of grouped rows and leaking stacks (see order.h). */
#include "common/order.h"
#include "common/groupkey.h"

/* -1 when a is larger (it comes first), 1 when b is, 0 when equal. */
static int larger_first(uint64_t a, uint64_t b)
{
	return a > b ? -1 : a < b;
}

int group_order(const struct mt_stack_counters *a, const struct mt_stack_counters *b, int sort,
		int by)
{
	int c = larger_first(mt_sort_value(a, sort), mt_sort_value(b, sort));

	if (c || by == GROUP_SITE)
		return c;
	return larger_first(a->allocations, b->allocations);
}

int leak_order(const struct snap_leak *a, const struct snap_leak *b)
{
	int c = larger_first(a->bytes, b->bytes);

	return c ? c : larger_first(a->blocks, b->blocks);
}
