// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of grouping (src/ctl/view/group.c): keys per frame, sums per row, cumulative
 * mode counting a recursive stack once, lookup, ordering, and tracemalloc's
 * size and line formats.
 */
#include "unit.h"

#include "ctl/view/group.h"

#include <stdlib.h>

static struct snap_frame f_a = {0x1010, 0x10, "alloc_a", "/usr/bin/prog", "prog.c", 10, 0};
static struct snap_frame f_a2 = {0x1020, 0x20, "alloc_a", "/usr/bin/prog", "prog.c", 12, 0};
static struct snap_frame f_main = {0x1100, 0x100, "main", "/usr/bin/prog", "main.c", 5, 0};
static struct snap_frame f_anon = {0x7f0000001000, 0x1000, NULL, "/lib/libx.so", NULL, 0, 0};
static struct snap_frame f_none = {0x7fff0000, 0, NULL, NULL, NULL, 0, 0};

static struct snap_frame s0[] = {{0x1010, 0x10, "alloc_a", "/usr/bin/prog", "prog.c", 10, 0},
				 {0x1100, 0x100, "main", "/usr/bin/prog", "main.c", 5, 0}};
static struct snap_frame s1[] = {{0x1020, 0x20, "alloc_a", "/usr/bin/prog", "prog.c", 12, 0},
				 {0x1100, 0x100, "main", "/usr/bin/prog", "main.c", 5, 0}};
/* recursive: alloc_a twice in one stack */
static struct snap_frame s2[] = {{0x1010, 0x10, "alloc_a", "/usr/bin/prog", "prog.c", 10, 0},
				 {0x1020, 0x20, "alloc_a", "/usr/bin/prog", "prog.c", 12, 0},
				 {0x1100, 0x100, "main", "/usr/bin/prog", "main.c", 5, 0}};
static struct snap_frame s3[] = {{0x7f0000001000, 0x1000, NULL, "/lib/libx.so", NULL, 0, 0}};
/* stacks hold pointers to (shared) frames */
static struct snap_frame *s0p[] = {&s0[0], &s0[1]};
static struct snap_frame *s1p[] = {&s1[0], &s1[1]};
static struct snap_frame *s2p[] = {&s2[0], &s2[1], &s2[2]};
static struct snap_frame *s3p[] = {&s3[0]};

static struct snap_stack stacks[] = {
    {.pid = 1,
     .nframes = 2,
     .frames = s0p,
     .t.allocations = 10,
     .t.bytes_allocated = 1000,
     .t.frees = 4,
     .t.bytes_freed = 400,
     .t.live_allocations = 6,
     .t.live_bytes = 600,
     .t.peak_live_bytes = 700},
    {.pid = 1,
     .nframes = 2,
     .frames = s1p,
     .t.allocations = 3,
     .t.bytes_allocated = 300,
     .t.live_allocations = 3,
     .t.live_bytes = 300,
     .t.peak_live_bytes = 300},
    {.pid = 1,
     .nframes = 3,
     .frames = s2p,
     .t.allocations = 1,
     .t.bytes_allocated = 50,
     .t.live_allocations = 1,
     .t.live_bytes = 50},
    {.pid = 1,
     .nframes = 1,
     .frames = s3p,
     .t.allocations = 2,
     .t.bytes_allocated = 2048,
     .t.live_allocations = 2,
     .t.live_bytes = 2048,
     .t.peak_live_bytes = 4096},
    {.pid = 1,
     .nframes = 0,
     .frames = NULL,
     .t.allocations = 1,
     .t.bytes_allocated = 7,
     .t.live_allocations = 1,
     .t.live_bytes = 7},
};

static struct snapshot snap = {.nstacks = 5, .stacks = stacks};

TEST(names)
{
	CHECK_STR(group_by_name(GROUP_LINE), "line");
	CHECK(group_by_from_name("module") == GROUP_MODULE);
	CHECK(group_by_from_name("stack") == GROUP_STACK);
	CHECK(group_by_from_name("lines") == -1);
	CHECK(group_by_name(GROUP_BY_COUNT) == NULL);
	CHECK(group_by_name(GROUP_NONE) == NULL);
	CHECK(group_by_from_name("none") == -1);
	CHECK(group_by_from_name("site") == GROUP_SITE);
	/* the numbers are the wire's (the groups section's "by") */
	CHECK_EQ_U64(GROUP_STACK, 1);
	CHECK_EQ_U64(GROUP_MODULE, 5);
	CHECK_EQ_U64(GROUP_SITE, 6);
}

TEST(frame_keys)
{
	char k[256];

	group_frame_key(&f_a, GROUP_FUNCTION, k, sizeof(k));
	CHECK_STR(k, "alloc_a");
	group_frame_key(&f_a2, GROUP_LINE, k, sizeof(k));
	CHECK_STR(k, "prog.c:12");
	group_frame_key(&f_main, GROUP_FILE, k, sizeof(k));
	CHECK_STR(k, "main.c");
	group_frame_key(&f_main, GROUP_MODULE, k, sizeof(k));
	CHECK_STR(k, "/usr/bin/prog");
	/* unknown: where it is, never a guess */
	group_frame_key(&f_anon, GROUP_FUNCTION, k, sizeof(k));
	CHECK_STR(k, "/lib/libx.so+0x1000");
	group_frame_key(&f_anon, GROUP_LINE, k, sizeof(k));
	CHECK_STR(k, "/lib/libx.so+0x1000");
	group_frame_key(&f_none, GROUP_MODULE, k, sizeof(k));
	CHECK_STR(k, "0x7fff0000");
}

TEST(by_function)
{
	struct group_table t;
	const struct group_row *r;

	group_snapshot(&snap, GROUP_FUNCTION, 0, &t);
	CHECK_EQ_U64(t.nrows, 3);
	r = group_find(&t, "alloc_a");
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_U64(r->nstacks, 3);
		CHECK_EQ_U64(r->t.live_bytes, 950);
		CHECK_EQ_U64(r->t.live_allocations, 10);
		CHECK_EQ_U64(r->t.allocations, 14);
		CHECK_EQ_U64(r->t.bytes_allocated, 1350);
		CHECK_EQ_U64(r->t.frees, 4);
		CHECK_EQ_U64(r->t.bytes_freed, 400);
		CHECK_EQ_U64(r->t.peak_live_bytes, 1000);
	}
	r = group_find(&t, "(no stack)");
	CHECK(r && r->t.live_bytes == 7);
	CHECK(group_find(&t, "main") == NULL);
	group_sort(&t, MT_SORT_LIVE);
	CHECK_STR(t.rows[0].key, "/lib/libx.so+0x1000");
	CHECK_STR(t.rows[1].key, "alloc_a");
	group_sort(&t, MT_SORT_COUNT);
	CHECK_STR(t.rows[0].key, "alloc_a");
	group_free(&t);
}

TEST(by_line_and_stack)
{
	struct group_table t;
	const struct group_row *r;
	uint64_t sum = 0;

	group_snapshot(&snap, GROUP_LINE, 0, &t);
	CHECK_EQ_U64(t.nrows, 4);
	r = group_find(&t, "prog.c:10");
	CHECK(r && r->t.live_bytes == 650 && r->nstacks == 2);
	r = group_find(&t, "prog.c:12");
	CHECK(r && r->t.live_bytes == 300);
	group_free(&t);

	group_snapshot(&snap, GROUP_STACK, 1, &t);
	CHECK(!t.cumulative);
	CHECK_EQ_U64(t.nrows, 5);
	for (size_t i = 0; i < t.nrows; i++)
		sum += t.rows[i].t.live_bytes;
	CHECK_EQ_U64(sum, 600 + 300 + 50 + 2048 + 7);
	r = group_find(&t, "/usr/bin/prog+0x10;/usr/bin/prog+0x100");
	CHECK(r && r->stack == &stacks[0]);
	group_free(&t);
}

TEST(cumulative)
{
	struct group_table t;
	const struct group_row *r;

	group_snapshot(&snap, GROUP_FUNCTION, 1, &t);
	CHECK(t.cumulative);
	/* main is in three stacks; the recursive stack counts once for alloc_a */
	r = group_find(&t, "main");
	CHECK(r && r->t.live_bytes == 950 && r->nstacks == 3);
	r = group_find(&t, "alloc_a");
	CHECK(r && r->t.live_bytes == 950 && r->t.allocations == 14);
	group_free(&t);

	group_snapshot(&snap, GROUP_FILE, 1, &t);
	r = group_find(&t, "prog.c");
	CHECK(r && r->t.live_bytes == 950);
	r = group_find(&t, "main.c");
	CHECK(r && r->t.live_bytes == 950);
	group_free(&t);
}

TEST(empty)
{
	struct snapshot none = {0};
	struct group_table t;

	group_snapshot(&none, GROUP_MODULE, 0, &t);
	CHECK_EQ_U64(t.nrows, 0);
	CHECK(group_find(&t, "x") == NULL);
	group_sort(&t, MT_SORT_PEAK);
	group_free(&t);
}

/* A CPython stack: native allocator frames, then the Python frames. */
static struct snap_frame py0[] = {
    {0x7f00001000, 0x1000, "PyBytes_FromSize", "/usr/lib/libpython3.12.so", "bytes.c", 99, 0},
    {0, 0, "make_bytes", NULL, "app.py", 8, 0},
    {0, 0, "<module>", NULL, "app.py", 19, 0}};
static struct snap_frame py1[] = {
    {0x7f00002000, 0x2000, "list_resize", "/usr/lib/libpython3.12.so", "list.c", 82, 0},
    {0, 0, "make_bytes", NULL, "app.py", 8, 0},
    {0, 0, "<module>", NULL, "app.py", 19, 0}};
static struct snap_frame *py0p[] = {&py0[0], &py0[1], &py0[2]};
static struct snap_frame *py1p[] = {&py1[0], &py1[1], &py1[2]};
static struct snap_stack py_stacks[] = {
    {.pid = 2, .nframes = 3, .frames = py0p, .t.live_allocations = 5, .t.live_bytes = 5000},
    {.pid = 2, .nframes = 3, .frames = py1p, .t.live_allocations = 1, .t.live_bytes = 80},
    {.pid = 2, .nframes = 2, .frames = s0p, .t.live_allocations = 1, .t.live_bytes = 7}};
static struct snapshot py_snap = {.nstacks = 3, .stacks = py_stacks};

TEST(python_frames_first)
{
	struct group_table t;
	const struct group_row *r;

	/* by line: the innermost Python frame, as tracemalloc does */
	group_snapshot(&py_snap, GROUP_LINE, 0, &t);
	CHECK_EQ_U64(t.nrows, 2);
	r = group_find(&t, "app.py:8");
	CHECK(r && r->t.live_bytes == 5080 && r->nstacks == 2);
	r = group_find(&t, "prog.c:10");
	CHECK(r && r->t.live_bytes == 7);
	group_free(&t);
	group_snapshot(&py_snap, GROUP_FUNCTION, 0, &t);
	r = group_find(&t, "make_bytes");
	CHECK(r && r->t.live_bytes == 5080);
	group_free(&t);
	/* cumulative still counts every frame */
	group_snapshot(&py_snap, GROUP_LINE, 1, &t);
	r = group_find(&t, "app.py:19");
	CHECK(r && r->t.live_bytes == 5080);
	r = group_find(&t, "bytes.c:99");
	CHECK(r && r->t.live_bytes == 5000);
	group_free(&t);
}

UNIT_MAIN()
