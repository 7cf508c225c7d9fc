// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of the memory-over-time series (src/daemon/core/timeline.c: sampling interval,
 * bounded size, merging keeps exact samples and the newest one), of
 * tracker_reset_peak (a new peak window whose per-stack values still sum to
 * the peak) and of temporary allocations (freed before N more allocations
 * of the same thread).
 */
#include <stdlib.h>

#include "daemon/core/timeline.h"
#include "daemon/core/tracker.h"
#include "unit.h"

#define PID 100

static unsigned char evbuf[sizeof(struct mt_event) + 16];
static uint64_t now_ns = 1000;

static void send(struct tracker *t, int kind, uint64_t addr, uint64_t size, uint64_t site)
{
	struct mt_event *ev = (struct mt_event *)evbuf;

	memset(evbuf, 0, sizeof(evbuf));
	ev->kind = (uint8_t)kind;
	ev->func = kind == MT_EV_ALLOC ? MT_FN_MALLOC : MT_FN_FREE;
	ev->tgid = PID;
	ev->tid = PID;
	ev->time_ns = now_ns += 10;
	ev->addr = addr;
	ev->size = size;
	ev->nframes = 1;
	ev->frames[0] = site;
	tracker_event(t, evbuf, sizeof(*ev) + 8);
}

static uint64_t peak_sum(struct tracker *t)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < t->stacks.count; i++)
		sum += tracker_stack_peak_bytes(t, stack_get(&t->stacks, i));
	return sum;
}

TEST(sample_interval)
{
	static struct timeline tl;
	struct mt_counters c = {.live_bytes = 10, .allocations = 1};

	timeline_init(&tl, 100);
	CHECK(timeline_sample(&tl, 5, &c, NULL, 0) == 1); /* the first is always kept */
	CHECK(timeline_sample(&tl, 50, &c, NULL, 0) == 0);
	CHECK(timeline_sample(&tl, 104, &c, NULL, 0) == 0);
	c.live_bytes = 20;
	CHECK(timeline_sample(&tl, 105, &c, NULL, 0) == 1);
	CHECK(timeline_sample(&tl, 3, &c, NULL, 0) == 0); /* time going back is ignored */
	CHECK_EQ_U64(tl.npoints, 2);
	CHECK_EQ_U64(tl.points[1].time_ns, 105);
	CHECK_EQ_U64(tl.points[1].total.live_bytes, 20);
	CHECK_EQ_U64(tl.points[1].total.allocations, 1);
}

TEST(bounded_merge)
{
	static struct timeline tl;
	struct mt_counters c = {0};
	uint64_t t;

	timeline_init(&tl, 10);
	for (t = 0; t < 10 * 100000; t += 10) {
		c.live_bytes = t; /* each point's value is its own time: exact samples */
		timeline_sample(&tl, t, &c, NULL, 0);
		CHECK(tl.npoints <= TIMELINE_MAX_POINTS);
	}
	CHECK(tl.npoints > TIMELINE_MAX_POINTS / 2);
	CHECK(tl.interval_ns > 10);
	/* the newest point is within two intervals of the last sample */
	CHECK(t - 10 - tl.points[tl.npoints - 1].time_ns < 2 * tl.interval_ns);
	for (uint32_t i = 0; i < tl.npoints; i++) {
		CHECK_EQ_U64(tl.points[i].total.live_bytes, tl.points[i].time_ns);
		if (i)
			CHECK(tl.points[i].time_ns > tl.points[i - 1].time_ns);
	}
}

/* Sample at time t with n targets, indexes first, first + 1, ...: live bytes t + index. */
static int sample_targets(struct timeline *tl, uint64_t t, uint32_t first, uint32_t n)
{
	static struct mt_counters c[4096];
	static struct timeline_target tt[4096];
	struct mt_counters total = {.live_bytes = t};

	for (uint32_t i = 0; i < n; i++) {
		c[i] = (struct mt_counters){.live_bytes = t + first + i, .allocations = first + i};
		tt[i] = (struct timeline_target){.target = first + i, .c = &c[i]};
	}
	return timeline_sample(tl, t, &total, tt, n);
}

/* Each point's targets, checked: by increasing index, each with its own figures. */
static void check_targets(const struct timeline *tl)
{
	uint32_t next = 0;

	for (uint32_t i = 0; i < tl->npoints; i++) {
		const struct snap_timeline_point *p = &tl->points[i];

		CHECK_EQ_U64(p->first, next); /* point by point, nothing between */
		next += p->ntargets;
		for (uint32_t k = 0; k < p->ntargets; k++) {
			const struct snap_timeline_target *e = &tl->targets[p->first + k];

			CHECK_EQ_U64(e->f.live_bytes, p->time_ns + e->target);
			CHECK_EQ_U64(e->f.allocations, e->target);
			if (k)
				CHECK(e->target > e[-1].target);
		}
	}
	CHECK_EQ_U64(next, tl->ntargets);
	CHECK(tl->ntargets <= TIMELINE_MAX_FIGURES);
}

/* Each point keeps the figures of every target traced then; merges keep them exact. */
TEST(targets_merge)
{
	static struct timeline tl;
	struct mt_resident r = {.resident_bytes = 8192};
	uint64_t t;

	timeline_init(&tl, 10);
	CHECK(sample_targets(&tl, 0, 3, 2) == 1);
	CHECK(sample_targets(&tl, 10, 4, 1) == 1); /* target 3 is gone */
	CHECK(tl.points[0].ntargets == 2 && tl.points[1].ntargets == 1);
	CHECK(timeline_set_target_resident(&tl, 10, 4, &r) == 1);
	CHECK(timeline_set_target_resident(&tl, 10, 3, &r) == 0); /* not traced then */
	CHECK(timeline_set_target_resident(&tl, 5, 4, &r) == 0);  /* no such point */
	CHECK(tl.targets[2].f.has_resident && tl.targets[2].f.resident.resident_bytes == 8192);
	CHECK(!tl.targets[0].f.has_resident && !tl.points[1].total.has_resident);
	/* a target's memory cgroup usage and limit, as its resident memory */
	CHECK(timeline_set_target_cgroup(&tl, 10, 4, 48 << 20, 64 << 20) == 1);
	CHECK(timeline_set_target_cgroup(&tl, 10, 3, 1, 2) == 0);
	CHECK(timeline_set_target_cgroup(&tl, 5, 4, 1, 2) == 0);
	CHECK(tl.targets[2].f.has_cgroup && tl.targets[2].f.cgroup_usage_bytes == 48 << 20 &&
	      tl.targets[2].f.cgroup_limit_bytes == 64 << 20);
	CHECK(!tl.targets[0].f.has_cgroup && !tl.points[1].total.has_cgroup);
	for (t = 20; t < 10 * 3000; t += 10)
		sample_targets(&tl, t, (uint32_t)(t / 10) % 7, (uint32_t)(t / 10) % 5);
	check_targets(&tl);
	CHECK(tl.npoints > TIMELINE_MAX_POINTS / 2 && tl.npoints <= TIMELINE_MAX_POINTS);
	timeline_free(&tl);
}

/*
 * Many targets at once (and many short-lived ones): the figures stay
 * bounded, the series gets coarser, every kept point has all its targets,
 * and the newest point is within two intervals of the last sample.
 */
TEST(targets_bounded)
{
	static struct timeline tl;
	uint64_t t, last = 0;

	timeline_init(&tl, 10);
	for (t = 0; t < 10 * 20000; t += 10) {
		/* 200 targets at a time, a new set every 50 samples */
		if (sample_targets(&tl, t, (uint32_t)(t / 500) * 200, 200))
			last = t;
		CHECK(tl.ntargets <= TIMELINE_MAX_FIGURES);
	}
	check_targets(&tl);
	for (uint32_t i = 0; i < tl.npoints; i++)
		CHECK_EQ_U64(tl.points[i].ntargets, 200);
	CHECK(tl.npoints * 200 > TIMELINE_MAX_FIGURES / 2);
	CHECK(tl.points[tl.npoints - 1].time_ns == last);
	CHECK(t - 10 - last < 2 * tl.interval_ns);
	/* more targets at once than the figures can hold twice over: one point, whole */
	CHECK(sample_targets(&tl, t + tl.interval_ns, 0, 4096) == 1);
	check_targets(&tl);
	CHECK_EQ_U64(tl.points[tl.npoints - 1].ntargets, 4096);
	timeline_free(&tl);
}

TEST(reset_peak)
{
	struct tracker t;

	CHECK(tracker_init(&t, 0, 0) == 0);
	CHECK(tracker_add_target(&t, PID, 1000) != NULL);
	send(&t, MT_EV_ALLOC, 0x1000, 100, 0xa);
	send(&t, MT_EV_ALLOC, 0x2000, 1000, 0xb); /* peak 1100 */
	send(&t, MT_EV_FREE, 0x2000, 0, 0);
	CHECK_EQ_U64(t.totals.peak_live_bytes, 1100);
	CHECK_EQ_U64(peak_sum(&t), 1100);

	tracker_reset_peak(&t, now_ns + 500);
	CHECK_EQ_U64(t.totals.peak_live_bytes, 100);
	CHECK_EQ_U64(t.targets[0].c.peak_live_bytes, 100);
	CHECK_EQ_U64(t.totals.peak_time_ns, now_ns + 500 - 1000);
	CHECK_EQ_U64(peak_sum(&t), 100);

	send(&t, MT_EV_ALLOC, 0x3000, 30, 0xc); /* new peak 130 */
	send(&t, MT_EV_FREE, 0x1000, 0, 0);
	CHECK_EQ_U64(t.totals.peak_live_bytes, 130);
	CHECK_EQ_U64(peak_sum(&t), 130);
	tracker_destroy(&t);
}

static const struct stack_entry *site_stack(struct tracker *t, uint64_t site)
{
	for (uint32_t i = 0; i < t->stacks.count; i++) {
		const struct stack_entry *s = stack_get(&t->stacks, i);

		if (s->nframes && stack_word(&t->stacks, i, 0) == site)
			return s;
	}
	return NULL;
}

/* Allocation (site) or free in thread tid. */
static void in_thread(struct tracker *t, uint32_t tid, int kind, uint64_t addr, uint64_t size,
		      uint64_t site)
{
	struct mt_event *ev = (struct mt_event *)evbuf;

	memset(evbuf, 0, sizeof(evbuf));
	ev->kind = (uint8_t)kind;
	ev->func = kind == MT_EV_ALLOC ? MT_FN_MALLOC : MT_FN_FREE;
	ev->tgid = PID;
	ev->tid = tid;
	ev->time_ns = now_ns += 10;
	ev->addr = addr;
	ev->size = size;
	ev->nframes = 1;
	ev->frames[0] = site;
	tracker_event(t, evbuf, sizeof(*ev) + 8);
}

TEST(temporary_threshold_1)
{
	struct tracker t;
	const struct stack_entry *a, *b;

	CHECK(tracker_init(&t, 0, 0) == 0);
	CHECK(tracker_add_target(&t, PID, 1000) != NULL);
	in_thread(&t, 7, MT_EV_ALLOC, 0x1000, 10, 0xa);
	in_thread(&t, 7, MT_EV_FREE, 0x1000, 0, 0); /* nothing between: temporary */
	in_thread(&t, 7, MT_EV_ALLOC, 0x1000, 10, 0xa);
	in_thread(&t, 7, MT_EV_ALLOC, 0x2000, 20, 0xb);
	in_thread(&t, 7, MT_EV_FREE, 0x1000, 0, 0); /* one allocation between: not */
	in_thread(&t, 8, MT_EV_ALLOC, 0x3000, 30, 0xb);
	in_thread(&t, 7, MT_EV_FREE, 0x2000, 0, 0); /* another thread's allocation: still is */
	in_thread(&t, 8, MT_EV_FREE, 0x3000, 0, 0);
	in_thread(&t, 7, MT_EV_ALLOC, 0x4000, 40, 0xb);
	in_thread(&t, 8, MT_EV_FREE, 0x4000, 0, 0); /* freed by another thread: not */
	a = site_stack(&t, 0xa);
	b = site_stack(&t, 0xb);
	CHECK(a && a->t.temporary_allocations == 1 && a->t.temporary_bytes == 10);
	CHECK(b && b->t.temporary_allocations == 2 && b->t.temporary_bytes == 50);
	CHECK_EQ_U64(t.totals.temporary_allocations, 3);
	CHECK_EQ_U64(t.totals.temporary_bytes, 60);
	CHECK_EQ_U64(t.targets[0].c.temporary_allocations, 3);
	tracker_destroy(&t);
}

TEST(temporary_threshold_n)
{
	struct tracker t;

	CHECK(tracker_init(&t, 0, 0) == 0);
	t.temporary_threshold = 3;
	CHECK(tracker_add_target(&t, PID, 1000) != NULL);
	in_thread(&t, 7, MT_EV_ALLOC, 0x1000, 10, 0xa);
	in_thread(&t, 7, MT_EV_ALLOC, 0x2000, 1, 0xb);
	in_thread(&t, 7, MT_EV_ALLOC, 0x3000, 1, 0xb);
	in_thread(&t, 7, MT_EV_FREE, 0x1000, 0, 0); /* 2 allocations between, < 3 */
	in_thread(&t, 7, MT_EV_ALLOC, 0x1000, 10, 0xa);
	for (uint64_t i = 0; i < 3; i++)
		in_thread(&t, 7, MT_EV_ALLOC, 0x5000 + i * 16, 1, 0xb);
	in_thread(&t, 7, MT_EV_FREE, 0x1000, 0, 0); /* 3 between: not */
	CHECK_EQ_U64(site_stack(&t, 0xa)->t.temporary_allocations, 1);
	CHECK_EQ_U64(t.totals.temporary_allocations, 1);
	/* many threads: the table grows and keeps every count */
	for (uint32_t tid = 100; tid < 400; tid++)
		in_thread(&t, tid, MT_EV_ALLOC, 0x100000 + tid * 16, 1, 0xc);
	for (uint32_t tid = 100; tid < 400; tid++)
		in_thread(&t, tid, MT_EV_FREE, 0x100000 + tid * 16, 0, 0);
	CHECK_EQ_U64(site_stack(&t, 0xc)->t.temporary_allocations, 300);
	t.temporary_threshold = 0; /* off */
	in_thread(&t, 7, MT_EV_ALLOC, 0x9000, 1, 0xd);
	in_thread(&t, 7, MT_EV_FREE, 0x9000, 0, 0);
	CHECK_EQ_U64(site_stack(&t, 0xd)->t.temporary_allocations, 0);
	tracker_destroy(&t);
}

UNIT_MAIN()
