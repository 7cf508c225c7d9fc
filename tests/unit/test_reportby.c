// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report --by on fixed data: tracemalloc's statistics lines, exactly, by
 * function, by line, cumulative, and sorted by allocated bytes.
 */
#include "unit.h"

#include "ctl/render/rows.h"
#include "ctl/view/rows.h"

#include <stdlib.h>

static struct snap_frame s0[] = {{0x1010, 0x10, "alloc_a", "/usr/bin/prog", "prog.c", 10},
				 {0x1100, 0x100, "main", "/usr/bin/prog", "main.c", 5}};
static struct snap_frame s1[] = {{0x1020, 0x20, "alloc_b", "/usr/bin/prog", "prog.c", 20},
				 {0x1110, 0x110, "main", "/usr/bin/prog", "main.c", 6}};
static struct snap_frame s2[] = {{0x1030, 0x30, "alloc_a", "/usr/bin/prog", "prog.c", 11},
				 {0x1120, 0x120, "alloc_b", "/usr/bin/prog", "prog.c", 21},
				 {0x1130, 0x130, "main", "/usr/bin/prog", "main.c", 7}};
static struct snap_frame *s0p[] = {&s0[0], &s0[1]};
static struct snap_frame *s1p[] = {&s1[0], &s1[1]};
static struct snap_frame *s2p[] = {&s2[0], &s2[1], &s2[2]};

static struct snap_stack stacks[] = {
    {.pid = 1,
     .nframes = 2,
     .frames = s0p,
     .t.allocations = 10,
     .t.bytes_allocated = 20480,
     .t.live_allocations = 4,
     .t.live_bytes = 8192},
    {.pid = 1,
     .nframes = 2,
     .frames = s1p,
     .t.allocations = 100,
     .t.bytes_allocated = 100000,
     .t.live_allocations = 1,
     .t.live_bytes = 100},
    {.pid = 1,
     .nframes = 3,
     .frames = s2p,
     .t.allocations = 3,
     .t.bytes_allocated = 300,
     .t.live_allocations = 3,
     .t.live_bytes = 300},
};

static char *grouped(int by, int cumulative, int sort)
{
	struct snapshot s = {.version = SNAPSHOT_VERSION, .nstacks = 3, .stacks = stacks};
	struct view_opts o = {.by = by, .cumulative = cumulative, .sort = sort};
	struct render_opts ro = {.format = RENDER_TEXT};
	struct grouped_view v;
	struct buf b = {0};

	s.totals.live_bytes = 8592;
	s.totals.live_allocations = 8;
	grouped_view_build(&v, &s, &o);
	render_grouped(&b, &v, &ro);
	grouped_view_free(&v);
	buf_put(&b, "", 1);
	return (char *)b.data;
}

TEST(by_function)
{
	char *out = grouped(GROUP_FUNCTION, 0, MT_SORT_LIVE);

	CHECK_STR(out, "live 8592 B in 8 blocks; live by function, largest first (2 of 2 groups)\n"
		       "alloc_a: size=8492 B, count=7, average=1213 B\n"
		       "alloc_b: size=100 B, count=1, average=100 B\n");
	free(out);
}

TEST(by_line_allocated)
{
	char *out = grouped(GROUP_LINE, 0, MT_SORT_ALLOCATED);

	CHECK_STR(out, "live 8592 B in 8 blocks; allocated by line, largest first (3 of 3 groups)\n"
		       "prog.c:20: size=97.7 KiB, count=100, average=1000 B\n"
		       "prog.c:10: size=20.0 KiB, count=10, average=2048 B\n"
		       "prog.c:11: size=300 B, count=3, average=100 B\n");
	free(out);
}

TEST(cumulative)
{
	char *out = grouped(GROUP_FUNCTION, 1, MT_SORT_LIVE);

	/* every stack counts once under each function it passes through */
	CHECK_STR(out,
		  "live 8592 B in 8 blocks; live by function (cumulative), largest first (3 of 3 "
		  "groups)\n"
		  "main: size=8592 B, count=8, average=1074 B\n"
		  "alloc_a: size=8492 B, count=7, average=1213 B\n"
		  "alloc_b: size=400 B, count=4, average=100 B\n");
	free(out);
}

UNIT_MAIN()
