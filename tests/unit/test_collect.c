// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of what serving builds from the daemon's state: the snapshot a
 * request asks for (serve/collect.c: counters in total and per pid, the
 * stacks it selects and their order, blocks, truncations) and the Prometheus
 * exposition (serve/metrics.c). The state is made by hand: a tracker fed
 * ring buffer events, a table of targets, a timeline; the pids are near the
 * top of the pid range, and no frame address is in any mapping.
 */
#include <stdlib.h>

#include "common/groupkey.h"
#include "daemon/core/resident.h"
#include "daemon/core/timeline.h"
#include "daemon/core/tracker.h"
#include "daemon/serve/collect.h"
#include "daemon/serve/metrics.h"
#include "daemon/symbols/pystacks.h"
#include "daemon/symbols/symbolize.h"
#include "daemon/attach/allocator.h"
#include "unit.h"

#define PID_A 4190001u /* two generations: an exec made the second */
#define PID_B 4190002u

struct fixture {
	struct tracker t;
	struct timeline tl;
	struct resident_table res;
	struct view_target targets[3];
	struct allocator alloc; /* none resolved */
	struct snap_options options;
	struct daemon_view v;
	struct stack_ends ends;
	uint64_t now;
};

static void event(struct fixture *f, uint32_t pid, int kind, uint64_t addr, uint64_t size,
		  uint64_t site, int end)
{
	unsigned char buf[sizeof(struct mt_event) + 3 * 8];
	struct mt_event *ev = (struct mt_event *)buf;
	size_t len = sizeof(*ev);

	memset(buf, 0, sizeof(buf));
	ev->kind = (uint8_t)kind;
	ev->func = kind == MT_EV_FREE ? MT_FN_FREE : MT_FN_MALLOC;
	ev->tgid = pid;
	ev->tid = pid;
	ev->time_ns = f->now += 10;
	ev->addr = addr;
	ev->size = size;
	ev->stack_end = site ? (uint8_t)end : MT_STACK_NONE;
	if (site) {
		ev->nframes = 3;
		ev->frames[0] = site;
		ev->frames[1] = 0x401000;
		ev->frames[2] = 0x400100;
		len += 3 * 8;
	}
	tracker_event(&f->t, buf, len);
}

static void alloc_n(struct fixture *f, uint32_t pid, uint64_t base, int n, uint64_t size,
		    uint64_t site)
{
	for (int i = 0; i < n; i++)
		event(f, pid, MT_EV_ALLOC, base + 64 * (uint64_t)i, size, site, MT_STACK_BROKEN);
}

static void release(struct fixture *f, uint32_t pid, uint64_t addr)
{
	event(f, pid, MT_EV_FREE, addr, 0, 0, 0);
}

/* The view's targets are the fixture's array. */
static void get_target(const void *targets, int k, struct view_target *out)
{
	*out = ((const struct view_target *)targets)[k];
}

/*
 * Site 0x1111 (pid A, first program): 4 blocks of 100 B, 1 freed.
 * Then pid A executes a new program:
 * site 0x2222 (pid A): 3 blocks of 100 B; site 0x3333 (pid A): 6 blocks of
 * 50 B (the same live bytes, more allocations); site 0x4444 (pid B): 10
 * blocks of 1000 B, all freed; site 0x5555 (pid B): 1 block of 7 B.
 */
static void setup(struct fixture *f)
{
	uint32_t retired;

	memset(f, 0, sizeof(*f));
	f->now = 1000;
	CHECK(tracker_init(&f->t, 0, 0) == 0);
	timeline_init(&f->tl, 1000000);
	CHECK(tracker_add_target(&f->t, PID_A, f->now) != NULL);
	CHECK(tracker_add_target(&f->t, PID_B, f->now) != NULL);
	alloc_n(f, PID_A, 0x10000, 4, 100, 0x1111);
	release(f, PID_A, 0x10000);
	CHECK(tracker_target_exec(&f->t, PID_A) == 0);
	retired = tracker_retire(&f->t, PID_A);
	CHECK(retired != 0);
	CHECK(tracker_add_target(&f->t, PID_A, f->now) != NULL);
	alloc_n(f, PID_A, 0x20000, 3, 100, 0x2222);
	alloc_n(f, PID_A, 0x30000, 6, 50, 0x3333);
	alloc_n(f, PID_B, 0x40000, 10, 1000, 0x4444);
	for (int i = 0; i < 10; i++)
		release(f, PID_B, 0x40000 + 64 * (uint64_t)i);
	alloc_n(f, PID_B, 0x50000, 1, 7, 0x5555);
	{ /* at 5 ns, A's second program and B were traced: targets 1 and 2 below */
		struct timeline_target tt[2] = {
		    {1, &tracker_find_gen(&f->t, PID_A)->c},
		    {2, &tracker_find_gen(&f->t, PID_B)->c},
		};

		CHECK(timeline_sample(&f->tl, 5, &f->t.totals, tt, 2) == 1);
	}

	f->targets[0] = (struct view_target){.pid = (int)PID_A,
					     .gen = retired,
					     .state = SNAP_TARGET_EXECED,
					     .command = "prog a",
					     .alloc = &f->alloc,
					     .exit_status = -1,
					     .attach_ns = 1,
					     .end_ns = 2};
	f->targets[1] = (struct view_target){.pid = (int)PID_A,
					     .gen = PID_A,
					     .state = SNAP_TARGET_ATTACHED,
					     .command = "prog \"a\"\\2\n",
					     .alloc = &f->alloc,
					     .exit_status = -1,
					     .attach_ns = 2};
	f->targets[2] = (struct view_target){.pid = (int)PID_B,
					     .gen = PID_B,
					     .state = SNAP_TARGET_EXITED,
					     .command = "b",
					     .alloc = &f->alloc,
					     .exit_status = 0,
					     .attach_ns = 1,
					     .end_ns = 3};
	f->options.stack_depth = 64;
	f->v = (struct daemon_view){.tracker = &f->t,
				    .targets = f->targets,
				    .target = get_target,
				    .ntargets = 3,
				    .timeline = &f->tl,
				    .options = &f->options,
				    .sym = symbolizer_new(),
				    .py = pystacks_new(),
				    .start_ns = 1};
	f->v.events_lost[0] = 7;
	f->v.events_lost[MT_EV_FREE] = 2;
}

static void teardown(struct fixture *f)
{
	symbolizer_free(f->v.sym);
	pystacks_free(f->v.py);
	stack_ends_free(&f->ends);
	tracker_destroy(&f->t);
	resident_free(&f->res);
	timeline_free(&f->tl);
}

static int collect(struct fixture *f, const char *line, struct snapshot *s)
{
	struct proto_request r;
	char err[256];

	CHECK(proto_request_parse(line, strlen(line), &r, err, sizeof(err)) == 0);
	/* as the server does first, on the loop thread */
	stack_ends_check(&f->v, &f->ends, UINT64_MAX);
	return collect_snapshot(&f->v, &f->ends, &r, NULL, 0, s, err, sizeof(err));
}

static uint64_t site_of(const struct snap_stack *st)
{
	return st->nframes ? st->frames[0]->address : 0;
}

TEST(test_totals)
{
	struct fixture f;
	struct snapshot s;

	setup(&f);
	CHECK(collect(&f, "status v=2", &s) == 0);
	CHECK_EQ_U64(s.nstacks, 0);
	CHECK_EQ_U64(s.totals.allocations, 4 + 3 + 6 + 10 + 1);
	CHECK_EQ_U64(s.totals.frees, 1 + 10);
	CHECK_EQ_U64(s.totals.live_bytes, 300 + 300 + 300 + 7);
	CHECK_EQ_U64(s.totals.live_allocations, 3 + 3 + 6 + 1);
	CHECK_EQ_U64(s.events_lost[0], 7);
	CHECK_EQ_U64(s.events_lost[MT_EV_FREE], 2);
	CHECK_EQ_U64(s.ntargets, 3);
	CHECK_STR(s.targets[2].command, "b");
	CHECK_EQ_U64(s.targets[2].counters.allocations, 11);
	CHECK_EQ_U64(s.ntimeline, 1);
	CHECK_EQ_U64(s.timeline[0].total.live_bytes, s.totals.live_bytes);
	/* the point's targets, by their index in the snapshot */
	CHECK(s.timeline_targets && s.timeline_targets->nfigures == 2);
	CHECK(s.timeline[0].first == 0 && s.timeline[0].ntargets == 2);
	CHECK_EQ_U64(s.timeline_targets->figures[0].target, 1);
	CHECK_EQ_U64(s.timeline_targets->figures[0].f.live_bytes, 600);
	CHECK_EQ_U64(s.timeline_targets->figures[0].f.allocations, 9);
	CHECK_EQ_U64(s.timeline_targets->figures[1].target, 2);
	CHECK_EQ_U64(s.timeline_targets->figures[1].f.live_bytes, 7);
	CHECK_EQ_U64(s.timeline_targets->figures[1].f.live_allocations, 1);
	CHECK(!s.timeline_targets->figures[1].f.has_resident);
	CHECK_EQ_U64(s.options.stack_depth, 64);
	snapshot_free(&s);
	teardown(&f);
}

/* Both generations of a pid add up; its peak is the higher of theirs. */
TEST(test_pid_totals)
{
	struct fixture f;
	struct snapshot s;
	char line[64];

	setup(&f);
	snprintf(line, sizeof(line), "status v=2 pid=%u", PID_A);
	CHECK(collect(&f, line, &s) == 0);
	CHECK_EQ_U64(s.ntargets, 2);
	CHECK_EQ_U64(s.totals.allocations, 4 + 3 + 6);
	CHECK_EQ_U64(s.totals.frees, 1);
	CHECK_EQ_U64(s.totals.live_bytes, 900);
	CHECK_EQ_U64(s.totals.peak_live_bytes, 600); /* the new program's */
	/* the timeline keeps the whole of its totals, and of its targets A's only */
	CHECK(s.ntimeline == 1 && s.timeline[0].ntargets == 1);
	CHECK_EQ_U64(s.timeline[0].total.live_bytes, 907);
	CHECK_EQ_U64(s.timeline_targets->figures[0].target,
		     1); /* the daemon's 1 is the snapshot's 1 */
	CHECK_EQ_U64(s.timeline_targets->figures[0].f.live_bytes, 600);
	snapshot_free(&s);
	snprintf(line, sizeof(line), "status v=2 pid=%u", PID_B);
	CHECK(collect(&f, line, &s) == 0);
	CHECK(s.ntargets == 1 && s.timeline[0].ntargets == 1);
	CHECK_EQ_U64(s.timeline_targets->figures[0].target, 0); /* the daemon's 2 */
	CHECK_EQ_U64(s.timeline_targets->figures[0].f.live_bytes, 7);
	snapshot_free(&s);

	CHECK(collect(&f, "report v=2 pid=4242", &s) == -1);
	teardown(&f);
}

/*
 * Top N by live bytes: three stacks hold 300 B each; the one with more
 * allocations comes first, then the earlier stack (mt_rank_sort, as the
 * client orders a file). Stacks with nothing under the key are left out
 * and not counted in stacks_total.
 */
TEST(test_top_n)
{
	struct fixture f;
	struct snapshot s;

	setup(&f);
	CHECK(collect(&f, "report v=2 top=3 sort=live", &s) == 0);
	CHECK_EQ_U64(s.nstacks, 3);
	CHECK_EQ_U64(s.stacks_total, 4); /* 0x4444 has no live bytes */
	CHECK_EQ_U64(site_of(&s.stacks[0]), 0x3333);
	CHECK_EQ_U64(site_of(&s.stacks[1]), 0x1111); /* 3 live of 4 allocations */
	CHECK_EQ_U64(site_of(&s.stacks[2]), 0x2222);
	CHECK_EQ_U64(s.stacks[0].t.live_bytes, 300);
	CHECK_EQ_U64(s.stacks[0].t.allocations, 6);
	CHECK_EQ_U64(s.stacks[1].pid, PID_A); /* a retired generation shows its pid */
	snapshot_free(&s);

	CHECK(collect(&f, "report v=2 top=1 sort=allocated", &s) == 0);
	CHECK_EQ_U64(s.nstacks, 1);
	CHECK_EQ_U64(s.stacks_total, 5);
	CHECK_EQ_U64(site_of(&s.stacks[0]), 0x4444);
	CHECK_EQ_U64(s.stacks[0].t.frees, 10);
	snapshot_free(&s);

	CHECK(collect(&f, "report v=2 sort=count", &s) == 0);
	CHECK_EQ_U64(s.nstacks, 5);
	CHECK_EQ_U64(site_of(&s.stacks[0]), 0x4444);
	CHECK_EQ_U64(site_of(&s.stacks[1]), 0x3333);
	CHECK_EQ_U64(site_of(&s.stacks[4]), 0x5555);
	snapshot_free(&s);
	teardown(&f);
}

TEST(test_pid_stacks)
{
	struct fixture f;
	struct snapshot s;
	char line[64];

	setup(&f);
	snprintf(line, sizeof(line), "report v=2 pid=%u sort=allocated", PID_B);
	CHECK(collect(&f, line, &s) == 0);
	CHECK_EQ_U64(s.nstacks, 2);
	CHECK_EQ_U64(s.stacks_total, 2);
	CHECK_EQ_U64(site_of(&s.stacks[0]), 0x4444);
	CHECK_EQ_U64(site_of(&s.stacks[1]), 0x5555);
	CHECK_EQ_U64(s.stacks[1].nframes, 3);
	snapshot_free(&s);
	teardown(&f);
}

/*
 * A whole snapshot: every stack that allocated, every live block pointing
 * at its stack, ages; a report with ages: its stacks' oldest blocks only.
 */
TEST(test_blocks)
{
	struct fixture f;
	struct snapshot s;

	setup(&f);
	CHECK(collect(&f, "snapshot v=2", &s) == 0);
	CHECK_EQ_U64(s.nstacks, 5);
	CHECK_EQ_U64(site_of(&s.stacks[0]), 0x4444); /* by allocations */
	CHECK(s.block_list && s.has_ages && s.breakdowns);
	CHECK_EQ_U64(s.block_list->nblocks, 3 + 3 + 6 + 1);
	for (uint32_t i = 0; i < s.block_list->nblocks; i++) {
		const struct snap_stack *st = &s.stacks[s.block_list->blocks[i].stack];

		CHECK(s.block_list->blocks[i].stack < s.nstacks);
		CHECK_EQ_U64(s.block_list->blocks[i].size,
			     st->t.live_bytes / st->t.live_allocations);
	}
	snapshot_free(&s);

	CHECK(collect(&f, "report v=2 top=2 ages=1", &s) == 0);
	CHECK_EQ_U64(s.nstacks, 2);
	CHECK(s.has_ages && !s.block_list && !s.breakdowns);
	CHECK(s.stacks[0].oldest_live_age_ns > 0);
	snapshot_free(&s);
	teardown(&f);
}

/*
 * The kinds that count in the daemon: rows (each sent stack stands for a
 * row, with its sums) and leaks (per stack, its blocks past an age); the
 * answers of attach and detach: their process's status.
 */
TEST(test_kinds)
{
	struct fixture f;
	struct snapshot s;
	char line[64];

	setup(&f);
	/* every stack has frames 0x401000 and 0x400100 (in no module: keyed by address) */
	CHECK(collect(&f, "rows v=2 select=count by=function cumulative=1 order=allocated top=1",
		      &s) == 0);
	CHECK_EQ_U64(s.kind, SNAP_ROWS);
	CHECK_EQ_U64(s.groups.by, GROUP_FUNCTION);
	CHECK_EQ_U64(s.groups.cumulative, 1);
	CHECK_EQ_U64(s.groups.order, MT_SORT_ALLOCATED);
	CHECK_EQ_U64(s.nstacks, 1);
	CHECK_EQ_U64(s.stacks_total, 5);
	CHECK_STR(s.groups.rows[0].key, "0x400100"); /* tied with 0x401000: the smaller key */
	CHECK_EQ_U64(s.groups.rows[0].stacks, 5);
	CHECK_EQ_U64(s.stacks[0].t.allocations, 4 + 3 + 6 + 10 + 1);
	CHECK_EQ_U64(s.groups.rest_rows, 6); /* 0x401000 and the five sites */
	snapshot_free(&s);
	CHECK(collect(&f, "rows v=2 select=live by=line order=live top=0", &s) == 0);
	CHECK_EQ_U64(s.nstacks, 4); /* a row per stack with live bytes */
	CHECK_EQ_U64(s.groups.rest_rows, 0);
	snapshot_free(&s);

	CHECK(collect(&f, "leaks v=2 older_than=0 top=2", &s) == 0);
	CHECK(s.kind == SNAP_LEAKS && !s.block_list);
	CHECK_EQ_U64(s.nstacks, 2);
	CHECK_EQ_U64(s.leaks.stacks_total, 4); /* every stack holding live blocks */
	CHECK_EQ_U64(s.leaks.blocks, 3 + 3 + 6 + 1);
	CHECK_EQ_U64(s.leaks.bytes, 300 + 300 + 300 + 7);
	CHECK_EQ_U64(s.leaks.stacks[0].bytes, 300);
	CHECK_EQ_U64(site_of(&s.stacks[0]), 0x3333); /* 300 B in more blocks */
	snapshot_free(&s);

	snprintf(line, sizeof(line), "attach v=2 pid=%u", PID_B);
	CHECK(collect(&f, line, &s) == 0);
	CHECK(s.ntargets == 1 && s.targets[0].pid == PID_B && !s.nstacks);
	snapshot_free(&s);
	teardown(&f);
}

/*
 * Rows by the cgroup, unit or container of a stack's process, made in the
 * daemon from the answer's targets: pid A's newest target (its second
 * program) keys all of A's stacks, its first program's too; pid B has no
 * cgroup known: "(none)".
 */
TEST(test_rows_by_cgroup)
{
	struct fixture f;
	struct snapshot s;
	struct mt_cgroup_labels old = {.path = "/old.slice", .unit = "old.service"};
	struct mt_cgroup_labels a = {.path = "/",
				     .memory_path = "/kubepods/pod1/abc",
				     .container = "abc",
				     .runtime = "containerd"};

	setup(&f);
	f.v.resident = &f.res;
	resident_set_labels(&f.res, 0, &old);
	resident_set_labels(&f.res, 1, &a);
	CHECK(collect(&f, "rows v=2 select=count by=cgroup order=live top=0", &s) == 0);
	CHECK_EQ_U64(s.kind, SNAP_ROWS);
	CHECK_EQ_U64(s.groups.by, GROUP_CGROUP);
	CHECK_EQ_U64(s.nstacks, 2);
	CHECK_STR(s.groups.rows[0].key, "/kubepods/pod1/abc");
	CHECK_EQ_U64(s.groups.rows[0].stacks, 3); /* 0x1111, 0x2222, 0x3333 */
	CHECK_EQ_U64(s.stacks[0].t.live_bytes, 300 + 300 + 300);
	CHECK_EQ_U64(s.stacks[0].t.allocations, 4 + 3 + 6);
	CHECK_STR(s.groups.rows[1].key, "(none)");
	CHECK_EQ_U64(s.groups.rows[1].stacks, 2);
	CHECK_EQ_U64(s.stacks[1].t.live_bytes, 7);
	CHECK_EQ_U64(s.stacks[1].t.allocations, 11);
	snapshot_free(&s);
	/* the same rows the client makes of the stacks themselves */
	CHECK(collect(&f, "rows v=2 select=count by=container order=live top=1", &s) == 0);
	CHECK_EQ_U64(s.nstacks, 1);
	CHECK_STR(s.groups.rows[0].key, "abc");
	CHECK_EQ_U64(s.groups.rest_rows, 1);
	CHECK_EQ_U64(s.groups.rest.live_bytes, 7);
	snapshot_free(&s);
	CHECK(collect(&f, "rows v=2 select=live by=unit order=live top=0", &s) == 0);
	CHECK_EQ_U64(s.nstacks, 1); /* A has no unit, B's one stack with live bytes neither */
	CHECK_STR(s.groups.rows[0].key, "(none)");
	CHECK_EQ_U64(s.stacks[0].t.live_bytes, 900 + 7);
	snapshot_free(&s);
	teardown(&f);
}

/* A report's or rows' line and the cgroup path after it (cgroup=). */
static int collect_in(struct fixture *f, const char *line, const char *cgroup, struct snapshot *s,
		      char *err, size_t errlen)
{
	struct proto_request r;

	CHECK(proto_request_parse(line, strlen(line), &r, err, errlen) == 0);
	stack_ends_check(&f->v, &f->ends, UINT64_MAX);
	return collect_snapshot(&f->v, &f->ends, &r, cgroup, strlen(cgroup), s, err, errlen);
}

/*
 * cgroup=: only the stacks of processes in the cgroup or below it (pid A's,
 * by its newest target's memory cgroup path), and the totals are theirs.
 */
TEST(test_cgroup_filter)
{
	struct fixture f;
	struct snapshot s;
	char err[256];
	struct mt_cgroup_labels a = {
	    .path = "/", .memory_path = "/kubepods/pod1/abc", .container = "abc"};

	setup(&f);
	f.v.resident = &f.res;
	resident_set_labels(&f.res, 1, &a);
	CHECK(collect_in(&f, "rows v=2 select=count by=function order=live top=0 cgroup=9",
			 "/kubepods", &s, err, sizeof(err)) == 0);
	CHECK_EQ_U64(s.stacks_total, 3); /* A's three sites, B's two left out */
	CHECK_EQ_U64(s.totals.live_bytes, 900);
	CHECK_EQ_U64(s.totals.allocations, 4 + 3 + 6);
	CHECK_EQ_U64(s.ntargets, 3); /* every target stays, with its labels */
	snapshot_free(&s);
	CHECK(collect_in(&f, "report v=2 sort=live top=1 cgroup=18", "/kubepods/pod1/abc", &s, err,
			 sizeof(err)) == 0);
	CHECK_EQ_U64(s.nstacks, 1);
	CHECK_EQ_U64(s.stacks_total, 3);
	CHECK_EQ_U64(s.stacks[0].pid, PID_A);
	CHECK_EQ_U64(s.totals.live_allocations, 3 + 3 + 6);
	snapshot_free(&s);
	CHECK(collect_in(&f, "report v=2 cgroup=8", "/kubepod", &s, err, sizeof(err)) == 0);
	CHECK_EQ_U64(s.nstacks, 0); /* a prefix of a name is not a parent */
	CHECK_EQ_U64(s.totals.live_bytes, 0);
	snapshot_free(&s);
	CHECK(collect_in(&f, "report v=2 cgroup=3", "a/b", &s, err, sizeof(err)) == -1);
	CHECK_STR(err, "bad request: the cgroup is not a path from the hierarchy's root");
	CHECK(collect_in(&f, "report v=2 cgroup=4", "/a", &s, err, sizeof(err)) == -1);
	CHECK_STR(err, "bad request: cgroup= says 4 bytes, 2 came");
	teardown(&f);
}

/* Stacks whose walk broke are counted by the module of their last frame
 * (none here: these addresses are in no process). */
TEST(test_truncations)
{
	struct fixture f;
	struct snapshot s;

	setup(&f);
	CHECK(collect(&f, "report v=2 top=1", &s) == 0);
	CHECK_EQ_U64(s.ntruncations, 1);
	CHECK_STR(s.truncations[0].module, "(no module)");
	CHECK_EQ_U64(s.truncations[0].stacks, 5);
	CHECK_EQ_U64(s.truncations[0].allocations, 24);
	CHECK_EQ_U64(s.stacks[0].stack_end, MT_STACK_BROKEN);
	snapshot_free(&s);
	/* the verdicts are cached on the serving side; the core keeps the walk's */
	CHECK(f.ends.cap > 0);
	teardown(&f);
}

static int has_line(const struct buf *b, const char *line)
{
	const char *p = (const char *)b->data, *end = p + b->len;
	size_t n = strlen(line);

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (len == n && !memcmp(p, line, n))
			return 1;
		p += len + 1;
	}
	return 0;
}

TEST(test_metrics)
{
	struct fixture f;
	struct buf b = {0};
	char line[256];

	setup(&f);
	metrics_render(&f.v, &b);
	buf_put(&b, "", 1);
	b.len--;
	/* every counter has its help, type and one series per pid (the newest
	 * generation), the command escaped as a label value */
	for (size_t i = 0; i < MT_NCOUNTERS; i++) {
		snprintf(line, sizeof(line), "# TYPE %s %s", mt_counter_descs[i].prometheus,
			 mt_counter_descs[i].prometheus_type);
		CHECK(has_line(&b, line));
	}
	snprintf(line, sizeof(line),
		 "memtrace_allocations_total{pid=\"%u\",command=\"prog \\\"a\\\"\\\\2\\n\"} 9",
		 PID_A);
	CHECK(has_line(&b, line));
	snprintf(line, sizeof(line), "memtrace_allocations_total{pid=\"%u\",command=\"prog a\"} 4",
		 PID_A);
	CHECK(!has_line(&b, line)); /* superseded by the exec */
	snprintf(line, sizeof(line), "memtrace_frees_total{pid=\"%u\",command=\"b\"} 10", PID_B);
	CHECK(has_line(&b, line));
	snprintf(line, sizeof(line), "memtrace_live_bytes{pid=\"%u\",command=\"b\"} 7", PID_B);
	CHECK(has_line(&b, line));
	CHECK(has_line(&b, "memtrace_events_lost_total{kind=\"inflight_full\"} 7"));
	CHECK(has_line(&b, "memtrace_events_lost_total{kind=\"free\"} 2"));
	snprintf(line, sizeof(line), "memtrace_events_received_total %llu",
		 (unsigned long long)f.t.events_received);
	CHECK(f.t.events_received == 4 + 1 + 3 + 6 + 10 + 10 + 1 && has_line(&b, line));
	snprintf(line, sizeof(line),
		 "memtrace_target_state{pid=\"%u\",command=\"b\",state=\"exited\"} 1", PID_B);
	CHECK(has_line(&b, line));
	CHECK(!strstr((const char *)b.data, "matches_over_limit")); /* not whole-host */
	CHECK(!strstr((const char *)b.data, "stack_walker"));	    /* not said */
	CHECK(has_line(&b, "memtrace_oom_kills_total 0"));
	buf_free(&b);
	/* the OOM killer chose b: counted, and its state says so */
	{
		struct snap_oom oom = {.killed = 1, .live_bytes = 7};

		f.targets[2].oom = &oom;
		metrics_render(&f.v, &b);
		buf_put(&b, "", 1);
		b.len--;
		CHECK(has_line(&b, "# TYPE memtrace_oom_kills_total counter"));
		CHECK(has_line(&b, "memtrace_oom_kills_total 1"));
		snprintf(line, sizeof(line),
			 "memtrace_target_state{pid=\"%u\",command=\"b\",state=\"oom-killed\"} 1",
			 PID_B);
		CHECK(has_line(&b, line));
		f.targets[2].oom = NULL;
		buf_free(&b);
	}
	/* the stack walker and why, in Prometheus and in snapshots */
	f.v.walker =
	    (struct snap_walker){.name = "fp",
				 .reason = "dwarf refused by the verifier: walk_dwarf: \"x\"",
				 .refused = 1};
	metrics_render(&f.v, &b);
	buf_put(&b, "", 1);
	b.len--;
	CHECK(has_line(&b, "# TYPE memtrace_stack_walker_info gauge"));
	CHECK(has_line(&b, "memtrace_stack_walker_info{walker=\"fp\",reason=\"dwarf refused by the "
			   "verifier: walk_dwarf: \\\"x\\\"\"} 1"));
	buf_free(&b);
	{
		struct snapshot s;

		CHECK(collect(&f, "status v=2", &s) == 0);
		CHECK(s.walker && s.walker->name != f.v.walker.name);
		CHECK_STR(s.walker->name, "fp");
		CHECK_STR(s.walker->reason, "dwarf refused by the verifier: walk_dwarf: \"x\"");
		CHECK(s.walker->refused == 1);
		snapshot_free(&s);
	}
	/* whole-host mode: the matches not traced, in Prometheus and in snapshots */
	f.v.has_match = 1;
	f.v.match =
	    (struct snap_match){.what = "--comm b", .max_targets = 2, .traced = 1, .over_limit = 5};
	metrics_render(&f.v, &b);
	buf_put(&b, "", 1);
	b.len--;
	CHECK(has_line(&b, "# TYPE memtrace_matches_over_limit_total counter"));
	CHECK(has_line(&b, "memtrace_matches_over_limit_total 5"));
	buf_free(&b);
	{
		struct snapshot s;

		CHECK(collect(&f, "status v=2", &s) == 0);
		CHECK(s.match && s.match->what != f.v.match.what);
		CHECK_STR(s.match->what, "--comm b");
		CHECK(s.match->max_targets == 2 && s.match->traced == 1 &&
		      s.match->over_limit == 5);
		snapshot_free(&s);
	}
	teardown(&f);
}

/* Each target's sampled resident memory, the timeline's, and Prometheus' series of it. */
TEST(test_resident)
{
	struct fixture f;
	struct snapshot s;
	struct buf b = {0};
	struct mt_resident r[3] = {{0}};
	char line[256];

	setup(&f);
	f.v.resident = &f.res;
	CHECK(collect(&f, "status v=2", &s) == 0);
	CHECK(!s.has_resident); /* nothing sampled yet: no section */
	snapshot_free(&s);
	for (uint32_t i = 0; i < 3; i++) {
		r[i].resident_bytes = 4096 * (i + 1);
		r[i].pss_bytes = 1000 + i;
		resident_record(&f.res, i, 5, &r[i]);
	}
	resident_record(&f.res, 1, 7, &r[0]); /* lower now: the peak stays */
	CHECK(timeline_set_resident(&f.tl, 5, &r[2]) == 1);
	CHECK(timeline_set_target_resident(&f.tl, 5, 2, &r[2]) == 1);
	CHECK(timeline_set_target_resident(&f.tl, 5, 0, &r[0]) == 0); /* not traced then */
	CHECK(collect(&f, "status v=2", &s) == 0);
	CHECK(s.has_resident && s.ntargets == 3);
	CHECK(s.targets[1].resident.sampled && s.targets[1].resident.time_ns == 7);
	CHECK_EQ_U64(s.targets[1].resident.r.resident_bytes, 4096);
	CHECK_EQ_U64(s.targets[1].resident.peak_bytes, 8192);
	CHECK_EQ_U64(s.targets[1].resident.peak_time_ns, 5);
	CHECK_EQ_U64(s.targets[2].resident.r.pss_bytes, 1002);
	CHECK(s.ntimeline == 1 && s.timeline[0].total.has_resident);
	CHECK_EQ_U64(s.timeline[0].total.resident.resident_bytes, 3 * 4096);
	CHECK(!s.timeline_targets->figures[0]
		   .f.has_resident); /* target 1: its reading is still to come */
	CHECK(s.timeline_targets->figures[1].f.has_resident);
	CHECK_EQ_U64(s.timeline_targets->figures[1].f.resident.pss_bytes, 1002);
	snapshot_free(&s);
	/* one pid: its figures stay its own */
	snprintf(line, sizeof(line), "status v=2 pid=%u", PID_B);
	CHECK(collect(&f, line, &s) == 0);
	CHECK(s.ntargets == 1 && s.targets[0].resident.r.resident_bytes == 3 * 4096);
	snapshot_free(&s);
	/* a breakdown is of the targets traced now; /proc says there is no such process */
	CHECK(collect(&f, "memory v=2", &s) == 0);
	CHECK(s.breakdowns && s.breakdowns->nmemory == 1 && s.breakdowns->memory[0].target == 1);
	snprintf(line, sizeof(line), "cannot read /proc/%u/smaps: No such file or directory",
		 PID_A);
	CHECK_STR(s.breakdowns->memory[0].error, line);
	for (size_t k = 0; k < MT_MEM_KIND_COUNT; k++)
		CHECK(s.breakdowns->memory[0].m.kinds[k].mappings == 0);
	snapshot_free(&s);
	/* Prometheus: the traced target's, not the older generation's nor the exited one's */
	metrics_render(&f.v, &b);
	buf_put(&b, "", 1);
	b.len--;
	for (size_t i = 0; i < MT_NRESIDENT; i++) {
		snprintf(line, sizeof(line), "# TYPE %s gauge", mt_resident_descs[i].prometheus);
		CHECK(has_line(&b, line));
	}
	snprintf(line, sizeof(line),
		 "memtrace_resident_bytes{pid=\"%u\",command=\"prog \\\"a\\\"\\\\2\\n\"} 4096",
		 PID_A);
	CHECK(has_line(&b, line));
	snprintf(line, sizeof(line),
		 "memtrace_peak_resident_bytes{pid=\"%u\",command=\"prog \\\"a\\\"\\\\2\\n\"} 8192",
		 PID_A);
	CHECK(has_line(&b, line));
	snprintf(line, sizeof(line),
		 "memtrace_pss_bytes{pid=\"%u\",command=\"prog \\\"a\\\"\\\\2\\n\"} 1000", PID_A);
	CHECK(has_line(&b, line));
	CHECK(!strstr((const char *)b.data,
		      "memtrace_resident_bytes{pid=\"4190001\",command=\"prog a\"}"));
	CHECK(!strstr((const char *)b.data, "memtrace_resident_bytes{pid=\"4190002\""));
	buf_free(&b);
	teardown(&f);
}

/*
 * Each target's cgroup: its labels and memory cgroup figures into the
 * snapshot (section SEC_CGROUP), Prometheus labels on its series, and each traced
 * memory cgroup's figures once (a limit not set is +Inf).
 */
TEST(test_cgroup)
{
	struct fixture f;
	struct snapshot s;
	struct buf b = {0};
	struct mt_cgroup_labels l = {.path = "/system.slice/docker-ab.scope",
				     .memory_path = "/system.slice/docker-ab.scope",
				     .unit = "docker-ab.scope",
				     .container = "ab",
				     .runtime = "docker",
				     .nspid = 1};
	struct mt_cgroup_memory m = {.version = MT_CGROUP_V1};
	struct mt_resident r = {.resident_bytes = 4096};
	char line[512];

	setup(&f);
	f.v.resident = &f.res;
	CHECK(collect(&f, "status v=2", &s) == 0);
	for (uint32_t i = 0; i < s.ntargets; i++)
		CHECK(!s.targets[i].cgroup.known); /* nothing read yet */
	snapshot_free(&s);
	m.f.usage_bytes = 48 << 20;
	m.f.limit_bytes = 64 << 20;
	m.f.oom_kills = 0;
	m.have = (1u << 0) | (1u << 1) | (1u << 12);
	resident_record(&f.res, 1, 5, &r);
	resident_set_labels(&f.res, 1, &l);
	resident_record_cgroup(&f.res, 1, 5, &m, "");
	CHECK(collect(&f, "status v=2", &s) == 0);
	CHECK(s.targets[1].cgroup.known);
	CHECK_STR(s.targets[1].cgroup.path, "/system.slice/docker-ab.scope");
	CHECK_STR(s.targets[1].cgroup.unit, "docker-ab.scope");
	CHECK_STR(s.targets[1].cgroup.runtime, "docker");
	CHECK(!s.targets[1].cgroup.pod && !s.targets[1].cgroup.why);
	CHECK_EQ_U64(s.targets[1].cgroup.nspid, 1);
	CHECK_EQ_U64(s.targets[1].cgroup.m.f.limit_bytes, 64 << 20);
	CHECK(!s.targets[0].cgroup.known);
	snapshot_free(&s);
	metrics_render(&f.v, &b);
	buf_put(&b, "", 1);
	b.len--;
	snprintf(line, sizeof(line),
		 "memtrace_resident_bytes{pid=\"%u\",command=\"prog \\\"a\\\"\\\\2\\n\","
		 "cgroup=\"/system.slice/docker-ab.scope\",unit=\"docker-ab.scope\","
		 "container=\"ab\",runtime=\"docker\",nspid=\"1\"} 4096",
		 PID_A);
	CHECK(has_line(&b, line));
	CHECK(has_line(&b, "# TYPE memtrace_cgroup_limit_bytes gauge"));
	CHECK(has_line(&b, "memtrace_cgroup_limit_bytes{cgroup=\"/system.slice/docker-ab.scope\","
			   "version=\"v1\"} 67108864"));
	CHECK(has_line(&b, "memtrace_cgroup_usage_bytes{cgroup=\"/system.slice/docker-ab.scope\","
			   "version=\"v1\"} 50331648"));
	CHECK(has_line(&b, "# TYPE memtrace_cgroup_oom_kills_total counter"));
	CHECK(!strstr((const char *)b.data, "memtrace_cgroup_high_bytes")); /* not read (v1) */
	b.len = 0;
	m.f.limit_bytes = MT_CGROUP_NO_LIMIT;
	resident_record_cgroup(&f.res, 1, 9, &m, "a note");
	metrics_render(&f.v, &b);
	buf_put(&b, "", 1);
	CHECK(has_line(&b, "memtrace_cgroup_limit_bytes{cgroup=\"/system.slice/docker-ab.scope\","
			   "version=\"v1\"} +Inf"));
	CHECK(collect(&f, "status v=2", &s) == 0);
	CHECK_STR(s.targets[1].cgroup.why, "a note");
	CHECK_EQ_U64(s.targets[1].cgroup.time_ns, 9);
	snapshot_free(&s);
	buf_free(&b);
	teardown(&f);
}

UNIT_MAIN()
