// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of the orders the daemon and the client share (common/order.h):
 * grouped rows by value, then allocations (not for sites), a tie left to
 * the keys; leaking stacks by bytes, then blocks, a tie left to their place.
 * And the client's views keep them: group_sort() and the leaks view.
 */
#include "unit.h"

#include "common/groupkey.h"
#include "common/order.h"
#include "ctl/view/group.h"
#include "ctl/view/rows.h"

#include <stdlib.h>

static struct mt_stack_counters counters(uint64_t live_bytes, uint64_t allocations,
					 uint64_t bytes_allocated)
{
	return (struct mt_stack_counters){.live_bytes = live_bytes,
					  .allocations = allocations,
					  .bytes_allocated = bytes_allocated};
}

TEST(test_group_order)
{
	struct mt_stack_counters a = counters(100, 1, 10), b = counters(50, 9, 10);
	struct mt_stack_counters c = counters(100, 3, 10);

	/* the value first: larger first */
	CHECK(group_order(&a, &b, MT_SORT_LIVE, GROUP_FUNCTION) < 0);
	CHECK(group_order(&b, &a, MT_SORT_LIVE, GROUP_FUNCTION) > 0);
	CHECK(group_order(&b, &a, MT_SORT_COUNT, GROUP_FUNCTION) < 0);
	/* tied on the value: more allocations first */
	CHECK(group_order(&c, &a, MT_SORT_LIVE, GROUP_LINE) < 0);
	CHECK(group_order(&a, &c, MT_SORT_LIVE, GROUP_STACK) > 0);
	/* ... except for sites, whose ties go to the site */
	CHECK_EQ_U64(group_order(&c, &a, MT_SORT_LIVE, GROUP_SITE), 0);
	CHECK_EQ_U64(group_order(&b, &a, MT_SORT_ALLOCATED, GROUP_SITE), 0);
	/* all tied: the key decides */
	CHECK_EQ_U64(group_order(&a, &a, MT_SORT_PEAK, GROUP_MODULE), 0);
}

TEST(test_leak_order)
{
	struct snap_leak big = {.blocks = 1, .bytes = 1000}, many = {.blocks = 9, .bytes = 500};
	struct snap_leak more = {.blocks = 2, .bytes = 1000};

	CHECK(leak_order(&big, &many) < 0);
	CHECK(leak_order(&many, &big) > 0);
	CHECK(leak_order(&more, &big) < 0); /* bytes tied: more blocks first */
	CHECK_EQ_U64(leak_order(&big, &big), 0);
}

TEST(test_views_keep_them)
{
	struct group_table t = {0};
	struct group_row rows[4] = {
	    {.key = "b", .t = counters(10, 5, 0)},
	    {.key = "a", .t = counters(10, 5, 0)},
	    {.key = "c", .t = counters(10, 6, 0)},
	    {.key = "d", .t = counters(20, 1, 0)},
	};
	struct snap_stack stacks[3] = {{0}};
	struct snap_leak leaks[3] = {
	    {.blocks = 1, .bytes = 8}, {.blocks = 2, .bytes = 8}, {.blocks = 2, .bytes = 8}};
	struct snapshot s = {.nstacks = 3, .stacks = stacks, .kind = SNAP_LEAKS};
	struct view_opts o = {.by = GROUP_STACK};
	struct leaks_view v;

	t.rows = rows;
	t.nrows = 4;
	t.by = GROUP_FUNCTION;
	group_sort(&t, MT_SORT_LIVE);
	CHECK_STR(t.rows[0].key, "d");
	CHECK_STR(t.rows[1].key, "c");
	CHECK_STR(t.rows[2].key, "a");
	CHECK_STR(t.rows[3].key, "b");

	s.leaks.stacks = leaks;
	s.leaks.stacks_total = 3;
	leaks_view_build(&v, &s, &o);
	CHECK_EQ_U64(v.nrows, 3);
	CHECK_EQ_U64(v.rows[0].stack, 1); /* tied with stack 2: the earlier first */
	CHECK_EQ_U64(v.rows[1].stack, 2);
	CHECK_EQ_U64(v.rows[2].stack, 0);
	leaks_view_free(&v);
}

UNIT_MAIN()
