// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of rows by a stack's target labels (--by cgroup, unit, container:
 * group.c with groupkey.c's group_target_key()) and of the --cgroup PATH
 * filter (fetch_filter_cgroup()), on a hand-made snapshot of processes in
 * several cgroups: exact sums per row, "(none)", the newest target of a pid,
 * the filter's path boundaries, diff by cgroup, and the rendered rows; stats
 * --cgroup's targets and totals (fetch_filter_cgroup_targets()).
 */
#include "unit.h"

#include "ctl/fetch.h"
#include "ctl/render/rows.h"
#include "ctl/view/group.h"
#include "ctl/view/rows.h"

#include <stdlib.h>
#include <string.h>

static struct snap_frame fr[] = {{0x1010, 0x10, "alloc_a", "/usr/bin/prog", "prog.c", 10, 0}};
static struct snap_frame *frp[] = {&fr[0]};

/*
 * pid 10: a.service; pid 20: a container (its memory cgroup under kubepods,
 * unified path "/"); pid 30: cgroup not known; pid 40: moved from old.slice
 * (an older entry of the pid) to b.service; pid 50: below a.service.
 */
static struct snap_target targets[] = {
    {.pid = 10, .cgroup = {.known = 1, .path = "/system.slice/a.service", .unit = "a.service"}},
    {.pid = 20,
     .cgroup = {.known = 1,
		.path = "/",
		.memory_path = "/kubepods/pod1/abc",
		.container = "abc",
		.runtime = "containerd"}},
    {.pid = 30},
    {.pid = 40, .cgroup = {.known = 1, .path = "/old.slice", .unit = "old.service"}},
    {.pid = 40, .cgroup = {.known = 1, .path = "/system.slice/b.service", .unit = "b.service"}},
    {.pid = 50, .cgroup = {.known = 1, .path = "/system.slice/a.service/sub", .unit = "a.service"}},
};

#define STACK(p, live)                                                                             \
	{                                                                                          \
		.pid = p, .nframes = 1, .frames = frp, .t.allocations = 1,                         \
		.t.bytes_allocated = live, .t.live_allocations = 1, .t.live_bytes = live,          \
		.t.peak_live_bytes = live                                                          \
	}

static const struct snap_stack new_stacks[] = {
    STACK(10, 100), STACK(10, 200),  STACK(20, 400),
    STACK(30, 800), STACK(40, 1600), STACK(50, 3200),
};
static const struct snap_stack old_stacks[] = {STACK(10, 50), STACK(20, 400)};

/* A snapshot of the targets and a malloc'd copy of stacks (the filter edits them). */
static void make(struct snapshot *s, const struct snap_stack *stacks, uint32_t n)
{
	memset(s, 0, sizeof(*s));
	s->ntargets = sizeof(targets) / sizeof(targets[0]);
	s->targets = targets;
	s->stacks = malloc(n * sizeof(*stacks));
	memcpy(s->stacks, stacks, n * sizeof(*stacks));
	s->nstacks = s->stacks_total = n;
	for (uint32_t i = 0; i < n; i++) {
		s->totals.live_bytes += stacks[i].t.live_bytes;
		s->totals.live_allocations += stacks[i].t.live_allocations;
	}
}

static uint64_t live_of(const struct group_table *t, const char *key, uint32_t *nstacks)
{
	const struct group_row *r = group_find(t, key);

	if (nstacks)
		*nstacks = r ? r->nstacks : 0;
	return r ? r->t.live_bytes : UINT64_MAX;
}

TEST(names_and_keys)
{
	struct snapshot s;

	CHECK(group_by_from_name("cgroup") == GROUP_CGROUP);
	CHECK(group_by_from_name("unit") == GROUP_UNIT);
	CHECK(group_by_from_name("container") == GROUP_CONTAINER);
	CHECK_STR(group_by_name(GROUP_CONTAINER), "container");
	/* the wire's numbers go on after site */
	CHECK_EQ_U64(GROUP_CGROUP, 7);
	CHECK_EQ_U64(GROUP_CONTAINER, 9);
	CHECK(group_by_target(GROUP_UNIT) && !group_by_target(GROUP_SITE));
	make(&s, new_stacks, 6);
	CHECK_STR(group_target_key(&s, 10, GROUP_CGROUP), "/system.slice/a.service");
	CHECK_STR(group_target_key(&s, 20, GROUP_CGROUP), "/kubepods/pod1/abc"); /* as status */
	CHECK_STR(group_target_key(&s, 40, GROUP_UNIT), "b.service");		 /* the newest */
	CHECK_STR(group_target_key(&s, 30, GROUP_CGROUP), "(none)");
	CHECK_STR(group_target_key(&s, 10, GROUP_CONTAINER), "(none)");
	CHECK_STR(group_target_key(&s, 99, GROUP_UNIT), "(none)"); /* no target at all */
	free(s.stacks);
}

TEST(rows_by_labels)
{
	struct snapshot s;
	struct group_table t;
	uint32_t n;

	make(&s, new_stacks, 6);
	group_snapshot(&s, GROUP_CGROUP, 1, &t); /* cumulative means nothing here */
	CHECK(!t.cumulative);
	CHECK_EQ_U64(t.nrows, 5);
	CHECK_EQ_U64(live_of(&t, "/system.slice/a.service", &n), 300);
	CHECK_EQ_U64(n, 2);
	CHECK_EQ_U64(live_of(&t, "/system.slice/a.service/sub", NULL), 3200);
	CHECK_EQ_U64(live_of(&t, "/kubepods/pod1/abc", NULL), 400);
	CHECK_EQ_U64(live_of(&t, "/system.slice/b.service", NULL), 1600);
	CHECK_EQ_U64(live_of(&t, "(none)", NULL), 800);
	CHECK(group_find(&t, "/old.slice") == NULL);
	group_sort(&t, MT_SORT_LIVE);
	CHECK_STR(t.rows[0].key, "/system.slice/a.service/sub");
	group_free(&t);

	group_snapshot(&s, GROUP_UNIT, 0, &t);
	CHECK_EQ_U64(t.nrows, 3);
	CHECK_EQ_U64(live_of(&t, "a.service", &n), 3500);
	CHECK_EQ_U64(n, 3);
	CHECK_EQ_U64(live_of(&t, "b.service", NULL), 1600);
	CHECK_EQ_U64(live_of(&t, "(none)", NULL), 1200);
	group_free(&t);

	group_snapshot(&s, GROUP_CONTAINER, 0, &t);
	CHECK_EQ_U64(t.nrows, 2);
	CHECK_EQ_U64(live_of(&t, "abc", NULL), 400);
	CHECK_EQ_U64(live_of(&t, "(none)", NULL), 100 + 200 + 800 + 1600 + 3200);
	group_free(&t);
	free(s.stacks);
}

/* How many stacks and live bytes --cgroup path keeps. */
static void filtered(const char *path, uint32_t *nstacks, uint64_t *live)
{
	struct snapshot s;

	make(&s, new_stacks, 6);
	CHECK(fetch_filter_cgroup(&s, path, "test") == 0);
	*nstacks = s.nstacks;
	*live = s.totals.live_bytes;
	free(s.stacks);
}

TEST(cgroup_filter)
{
	struct snapshot s;
	uint32_t n;
	uint64_t live;

	filtered("/system.slice/a.service", &n, &live); /* itself and below it */
	CHECK_EQ_U64(n, 3);
	CHECK_EQ_U64(live, 100 + 200 + 3200);
	make(&s, new_stacks, 6);
	s.totals.peak_live_bytes = 9999;
	CHECK(fetch_filter_cgroup(&s, "/system.slice/b.service", "test") == 0);
	CHECK_EQ_U64(s.totals.peak_live_bytes, 1600); /* its share at the peak's moment */
	CHECK_EQ_U64(s.totals.live_allocations, 1);
	free(s.stacks);
	filtered("/system.slice/a.service/", &n, &live); /* a trailing slash */
	CHECK_EQ_U64(n, 3);
	filtered("/system.slice/a", &n, &live); /* a prefix of a name is not a parent */
	CHECK_EQ_U64(n, 0);
	CHECK_EQ_U64(live, 0);
	filtered("/system.slice", &n, &live);
	CHECK_EQ_U64(live, 100 + 200 + 1600 + 3200);
	filtered("/kubepods", &n, &live); /* by the memory cgroup's path */
	CHECK_EQ_U64(n, 1);
	CHECK_EQ_U64(live, 400);
	filtered("/old.slice", &n, &live); /* pid 40's newest entry is elsewhere */
	CHECK_EQ_U64(n, 0);
	filtered("/", &n, &live); /* every process whose cgroup is known */
	CHECK_EQ_U64(n, 5);
	CHECK_EQ_U64(live, 6300 - 800);

	/* a snapshot the daemon grouped cannot be filtered */
	make(&s, new_stacks, 6);
	s.kind = SNAP_ROWS;
	CHECK(fetch_filter_cgroup(&s, "/", "test") == -1);
	s.kind = SNAP_STACKS;
	free(s.stacks);
}

/* stats --cgroup: the targets of path (each by its own labels), their counters as the totals. */
static void targets_in(const char *path, struct snapshot *s)
{
	static const uint64_t live[] = {100, 200, 400, 800, 1600, 3200};
	uint32_t n = sizeof(targets) / sizeof(targets[0]);

	memset(s, 0, sizeof(*s));
	s->targets = malloc(n * sizeof(*s->targets));
	memcpy(s->targets, targets, n * sizeof(*s->targets));
	s->ntargets = n;
	for (uint32_t i = 0; i < n; i++) {
		s->targets[i].counters = (struct mt_counters){.allocations = i + 1,
							      .live_bytes = live[i],
							      .peak_live_bytes = 2 * live[i],
							      .peak_time_ns = 1000 + i};
		mt_counters_merge(&s->totals, &s->targets[i].counters);
	}
	s->breakdowns = calloc(1, sizeof(*s->breakdowns));
	s->breakdowns->nmemory = 3; /* of targets 0, 4 and 5 */
	s->breakdowns->memory = calloc(3, sizeof(*s->breakdowns->memory));
	s->breakdowns->memory[0].target = 0;
	s->breakdowns->memory[1].target = 4;
	s->breakdowns->memory[2].target = 5;
	s->timeline_targets = calloc(1, sizeof(*s->timeline_targets));
	fetch_filter_cgroup_targets(s, path);
}

static void targets_free(struct snapshot *s)
{
	free(s->targets);
	free(s->breakdowns->memory);
	free(s->breakdowns);
}

TEST(stats_cgroup_targets)
{
	struct snapshot s;

	targets_in("/system.slice/a.service", &s); /* itself and below it */
	CHECK_EQ_U64(s.ntargets, 2);
	CHECK(s.targets[0].pid == 10 && s.targets[1].pid == 50);
	CHECK_EQ_U64(s.totals.allocations, 1 + 6);
	CHECK_EQ_U64(s.totals.live_bytes, 100 + 3200);
	CHECK_EQ_U64(s.totals.peak_live_bytes, 6400); /* the largest of their peaks */
	CHECK_EQ_U64(s.totals.peak_time_ns, 1005);    /* with its time */
	CHECK(s.timeline_targets == NULL);
	CHECK_EQ_U64(s.breakdowns->nmemory, 2); /* renumbered as the targets */
	CHECK(s.breakdowns->memory[0].target == 0 && s.breakdowns->memory[1].target == 1);
	targets_free(&s);

	targets_in("/old.slice", &s); /* pid 40's older entry, by its own labels */
	CHECK_EQ_U64(s.ntargets, 1);
	CHECK(s.targets[0].pid == 40 && s.targets[0].cgroup.unit &&
	      !strcmp(s.targets[0].cgroup.unit, "old.service"));
	CHECK_EQ_U64(s.totals.live_bytes, 800);
	CHECK_EQ_U64(s.breakdowns->nmemory, 0);
	targets_free(&s);

	targets_in("/kubepods/pod1", &s); /* by the memory cgroup's path */
	CHECK_EQ_U64(s.ntargets, 1);
	CHECK_EQ_U64(s.totals.live_bytes, 200);
	targets_free(&s);

	targets_in("/system.slice/a", &s); /* a prefix of a name is not a parent */
	CHECK_EQ_U64(s.ntargets, 0);
	CHECK_EQ_U64(s.totals.live_bytes, 0);
	CHECK_EQ_U64(s.totals.allocations, 0);
	targets_free(&s);

	targets_in("/", &s); /* every target whose cgroup is known: not pid 30's */
	CHECK_EQ_U64(s.ntargets, 5);
	CHECK_EQ_U64(s.totals.live_bytes, 100 + 200 + 800 + 1600 + 3200);
	CHECK_EQ_U64(s.totals.allocations, 1 + 2 + 4 + 5 + 6);
	targets_free(&s);
}

TEST(diff_by_cgroup)
{
	struct snapshot old, new;
	struct view_opts o = {.by = GROUP_CGROUP};
	struct render_opts ro = {.format = RENDER_TEXT};
	struct diff_view v;
	struct buf b = {0};

	make(&old, old_stacks, 2);
	make(&new, new_stacks, 6);
	diff_view_build(&v, &old, &new, &o);
	CHECK_EQ_U64(v.nrows, 5);
	CHECK_STR(v.rows[0].row->key, "/system.slice/a.service/sub"); /* largest growth first */
	CHECK_EQ_U64((uint64_t)v.rows[0].size_diff, 3200);
	for (size_t i = 0; i < v.nrows; i++) {
		if (!strcmp(v.rows[i].row->key, "/system.slice/a.service"))
			CHECK_EQ_U64((uint64_t)v.rows[i].size_diff, 250);
		if (!strcmp(v.rows[i].row->key, "/kubepods/pod1/abc"))
			CHECK_EQ_U64((uint64_t)v.rows[i].size_diff, 0);
	}
	render_diff(&b, &v, &ro);
	buf_put(&b, "", 1);
	CHECK(strstr((const char *)b.data, "/system.slice/a.service: size=300 B (+250 B)") != NULL);
	diff_view_free(&v);

	/* diff --cgroup: both snapshots filtered the same way */
	CHECK(fetch_filter_cgroup(&old, "/system.slice/a.service", "old") == 0);
	CHECK(fetch_filter_cgroup(&new, "/system.slice/a.service", "new") == 0);
	diff_view_build(&v, &old, &new, &o);
	CHECK_EQ_U64(v.nrows, 2);
	diff_view_free(&v);
	buf_free(&b);
	free(old.stacks);
	free(new.stacks);
}

UNIT_MAIN()
