// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of the views (src/ctl/view/rows.c) and their renderers
 * (src/ctl/render/rows.c) on hand-made snapshots: diff order and new/vanished
 * groups, peak sums and their warning, leaks by age, the timeline's rates,
 * and watch's growth between refreshes. The rows are checked as computed,
 * text line by line, JSON through the numbers scripts read.
 */
#include "unit.h"

#include "ctl/render/report.h"
#include "ctl/render/rows.h"
#include "ctl/view/resident.h"
#include "ctl/view/rows.h"

#include <stdlib.h>

static struct snap_frame fa[] = {{0x1010, 0x10, "grow", "/usr/bin/prog", "prog.c", 10}};
static struct snap_frame fb[] = {{0x1020, 0x20, "shrink", "/usr/bin/prog", "prog.c", 20}};
static struct snap_frame fc[] = {{0x1030, 0x30, "fresh", "/usr/bin/prog", "prog.c", 30}};
static struct snap_frame *fap[] = {&fa[0]}, *fbp[] = {&fb[0]}, *fcp[] = {&fc[0]};

static struct snap_stack old_stacks[] = {
    {.pid = 1,
     .nframes = 1,
     .frames = fap,
     .t.allocations = 1,
     .t.bytes_allocated = 100,
     .t.live_allocations = 1,
     .t.live_bytes = 100,
     .t.peak_live_bytes = 100},
    {.pid = 1,
     .nframes = 1,
     .frames = fbp,
     .t.allocations = 2,
     .t.bytes_allocated = 50,
     .t.live_allocations = 2,
     .t.live_bytes = 50,
     .t.peak_live_bytes = 50},
};

static struct snap_stack new_stacks[] = {
    {.pid = 1,
     .nframes = 1,
     .frames = fap,
     .t.allocations = 3,
     .t.bytes_allocated = 300,
     .t.live_allocations = 3,
     .t.live_bytes = 300,
     .t.peak_live_bytes = 200},
    {.pid = 1,
     .nframes = 1,
     .frames = fcp,
     .t.allocations = 1,
     .t.bytes_allocated = 40,
     .t.live_allocations = 1,
     .t.live_bytes = 40,
     .t.peak_live_bytes = 5000},
    {.pid = 1,
     .nframes = 1,
     .frames = fbp,
     .t.allocations = 2,
     .t.bytes_allocated = 50,
     .t.frees = 2,
     .t.bytes_freed = 50},
};

static struct snap_block new_blocks[] = {
    {.address = 0x10, .size = 100, .age_ns = 5000000000ull, .stack = 0},
    {.address = 0x20, .size = 100, .age_ns = 7000000000ull, .stack = 0},
    {.address = 0x30, .size = 100, .age_ns = 1000000000ull, .stack = 0},
    {.address = 0x40, .size = 40, .age_ns = 9000000000ull, .stack = 1},
};

static struct snap_block_list new_block_list = {.nblocks = 4, .blocks = new_blocks};

static struct snap_timeline_point points[] = {
    {.time_ns = 0, .total = {.live_bytes = 0, .allocations = 0}},
    {.time_ns = 1000000000ull, .total = {.live_bytes = 150, .allocations = 3}},
    {.time_ns = 3000000000ull, .total = {.live_bytes = 340, .allocations = 13}},
};

static void snaps(struct snapshot *old, struct snapshot *new)
{
	memset(old, 0, sizeof(*old));
	memset(new, 0, sizeof(*new));
	old->nstacks = 2;
	old->stacks = old_stacks;
	old->totals.live_bytes = 150;
	old->totals.live_allocations = 3;
	old->created_unix_ns = 1000000000ull;
	new->nstacks = 3;
	new->stacks = new_stacks;
	new->totals.live_bytes = 340;
	new->totals.live_allocations = 4;
	new->totals.peak_live_bytes = 5200;
	new->totals.allocations = 6;
	new->created_unix_ns = 3000000000ull;
	new->block_list = &new_block_list;
	new->ntimeline = 3;
	new->timeline = points;
	new->timeline_interval_ns = 1000000000ull;
}

static char *text(struct buf *b)
{
	buf_put(b, "", 1);
	return (char *)b->data;
}

static int has_line(const char *out, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = out; (p = strstr(p, line)); p++)
		if ((p == out || p[-1] == '\n') && (p[n] == '\n' || !p[n]))
			return 1;
	return 0;
}

static struct view_opts opts(int by)
{
	return (struct view_opts){.by = by};
}

/* Each view: built, rendered into b in format, freed. */
static void diff(struct buf *b, const struct snapshot *old, const struct snapshot *new,
		 const struct view_opts *o, int format)
{
	struct render_opts ro = {.format = format};
	struct diff_view v;

	diff_view_build(&v, old, new, o);
	render_diff(b, &v, &ro);
	diff_view_free(&v);
}

static void peak(struct buf *b, const struct snapshot *s, const struct view_opts *o)
{
	struct render_opts ro = {.format = RENDER_TEXT};
	struct peak_view v;

	peak_view_build(&v, s, o);
	render_peak(b, &v, &ro);
	peak_view_free(&v);
}

static void leaks(struct buf *b, const struct snapshot *s, const struct view_opts *o, int format)
{
	struct render_opts ro = {.format = format};
	struct leaks_view v;

	leaks_view_build(&v, s, o);
	render_leaks(b, &v, &ro);
	leaks_view_free(&v);
}

static void watch(struct buf *b, struct watch_state *w, const struct snapshot *s,
		  const struct view_opts *o, int tty)
{
	struct watch_view v;

	watch_view_build(&v, w, s, o);
	render_watch(b, &v, tty);
	watch_state_keep(w, &v);
	watch_view_free(&v);
}

TEST(rows_computed)
{
	struct snapshot old, new;
	struct view_opts o = opts(GROUP_FUNCTION);
	struct diff_view d;
	struct peak_view p;
	struct leaks_view l;

	snaps(&old, &new);
	o.top = 2;
	diff_view_build(&d, &old, &new, &o);
	CHECK_EQ_U64(d.nrows, 3);
	CHECK_EQ_U64(d.shown, 2);
	CHECK_STR(d.rows[0].row->key, "grow");
	CHECK_EQ_U64(d.rows[0].size_diff, 200);
	CHECK_EQ_U64(d.rows[0].was.live_bytes, 100);
	CHECK_STR(d.rows[1].row->key, "shrink");
	CHECK_EQ_U64(d.rows[1].count_diff, (uint64_t)-2);
	CHECK_STR(diff_row_status(&d.rows[1]), "vanished");
	CHECK_STR(d.rows[2].row->key, "fresh");
	CHECK_STR(diff_row_status(&d.rows[2]), "new");
	CHECK(d.interval == 2.0);
	diff_view_free(&d);

	o.top = 0;
	peak_view_build(&p, &new, &o);
	CHECK_EQ_U64(p.nrows, 2); /* shrink had nothing live at the peak */
	CHECK_STR(p.groups.rows[0].key, "fresh");
	CHECK_EQ_U64(p.sum, 5200);
	CHECK_EQ_U64(p.shown_sum, 5200);
	peak_view_free(&p);

	o.older_than = 6000000000ull;
	leaks_view_build(&l, &new, &o);
	CHECK_EQ_U64(l.nrows, 2);
	CHECK_EQ_U64(l.blocks, 2);
	CHECK_EQ_U64(l.bytes, 140);
	CHECK_EQ_U64(l.rows[0].stack, 0); /* 100 B older than 6 s */
	CHECK_EQ_U64(l.rows[0].l.oldest_ns, 7000000000ull);
	CHECK_EQ_U64(l.rows[1].stack, 1);
	leaks_view_free(&l);
}

TEST(diff_text)
{
	struct snapshot old, new;
	struct view_opts o = opts(GROUP_FUNCTION);
	struct buf b = {0};
	char *out;

	snaps(&old, &new);
	diff(&b, &old, &new, &o, RENDER_TEXT);
	out = text(&b);
	CHECK(has_line(out, "live 340 B (+190 B) in 4 blocks (+1) over 2.0 s; by function, 3 of 3 "
			    "groups, largest growth first"));
	CHECK(has_line(out, "grow: size=300 B (+200 B), count=3 (+2), average=100 B"));
	CHECK(has_line(out, "shrink: size=0 B (-50 B), count=0 (-2) [vanished]"));
	CHECK(has_line(out, "fresh: size=40 B (+40 B), count=1 (+1), average=40 B [new]"));
	/* largest absolute growth first */
	CHECK(strstr(out, "grow:") < strstr(out, "shrink:"));
	CHECK(strstr(out, "shrink:") < strstr(out, "fresh:"));
	buf_free(&b);

	o.top = 1;
	diff(&b, &old, &new, &o, RENDER_TEXT);
	out = text(&b);
	CHECK(strstr(out, "1 of 3 groups") != NULL);
	CHECK(strstr(out, "fresh") == NULL);
	buf_free(&b);
}

TEST(diff_vanished_and_json)
{
	struct snapshot old, new;
	struct view_opts o = opts(GROUP_LINE);
	struct buf b = {0};
	char *out;

	snaps(&old, &new);
	/* the other way round: fresh vanished, shrink new */
	diff(&b, &new, &old, &o, RENDER_JSON);
	out = text(&b);
	CHECK(strstr(out, "\"key\":\"prog.c:30\",\"status\":\"vanished\",\"live_bytes\":0,"
			  "\"live_bytes_diff\":-40") != NULL);
	CHECK(strstr(out, "\"key\":\"prog.c:20\",\"status\":\"new\",\"live_bytes\":50,"
			  "\"live_bytes_diff\":50") != NULL);
	CHECK(strstr(out, "\"live_bytes_diff\":-190") != NULL);
	CHECK(strstr(out, "\"interval\":-2.0,") != NULL);
	buf_free(&b);
}

TEST(peak_sums)
{
	struct snapshot old, new;
	struct view_opts o = opts(GROUP_STACK);
	struct buf b = {0};
	char *out;

	snaps(&old, &new);
	o.top = 1;
	peak(&b, &new, &o);
	out = text(&b);
	CHECK(has_line(out, "peak_live_bytes 5200 (5200 B) at 0.000 s; live at that moment, by "
			    "stack (1 of 2 groups):"));
	CHECK(has_line(out, "fresh: at peak=5000 B, live now=40 B"));
	CHECK(has_line(out, "... 1 more groups hold 200 B at the peak"));
	CHECK(strstr(out, "warning") == NULL);
	buf_free(&b);

	new.totals.peak_live_bytes = 9999; /* a snapshot without every stack */
	peak(&b, &new, &o);
	CHECK(has_line(text(&b), "warning: the groups sum to 5200 B, not peak_live_bytes; the "
				 "snapshot does not hold every stack"));
	buf_free(&b);
}

TEST(leaks_by_age)
{
	struct snapshot old, new;
	struct view_opts o = opts(GROUP_STACK);
	struct buf b = {0};
	char *out;

	snaps(&old, &new);
	o.older_than = 4000000000ull;
	leaks(&b, &new, &o, RENDER_TEXT);
	out = text(&b);
	CHECK(has_line(out,
		       "3 live blocks (240 B) older than 4.0s, of 4 live (340 B); 2 of 2 stacks, "
		       "most bytes first"));
	CHECK(has_line(out, "#1  2 blocks, 200 B, age 5.0s to 7.0s"));
	CHECK(has_line(out, "#2  1 blocks, 40 B, age 9.0s to 9.0s"));
	buf_free(&b);

	o.older_than = 8000000000ull;
	leaks(&b, &new, &o, RENDER_JSON);
	out = text(&b);
	CHECK(strstr(out, "\"blocks\":1,\"bytes\":40,") != NULL);
	CHECK(strstr(out, "\"oldest_age\":9") != NULL);
	buf_free(&b);
}

TEST(timeline_rates)
{
	struct snapshot old, new;
	struct render_opts o = {.format = RENDER_JSON, .rows = 20};
	struct buf b = {0};
	char *out;

	struct series v;
	const char *why = NULL;

	snaps(&old, &new);
	CHECK(series_build(&v, &new, 0, &why) == 0);
	render_timeline(&b, &v, &o);
	out = text(&b);
	CHECK(strstr(out, "\"allocation_rate\":null") != NULL);
	CHECK(strstr(out, "\"allocation_rate\":3") != NULL);
	CHECK(strstr(out, "\"allocation_rate\":5") != NULL); /* 10 in 2 s */
	buf_free(&b);

	o.format = RENDER_TEXT;
	o.rows = 2; /* the first and the newest: the rate spans both intervals */
	render_timeline(&b, &v, &o);
	out = text(&b);
	CHECK(
	    has_line(out, "    0.000s         0 B  |                                        |  0"));
	CHECK(
	    has_line(out, "    3.000s       340 B  |########################################|  4"));
	buf_free(&b);
	series_free(&v);
	/* no figures per target in this snapshot: a pid's series cannot be told */
	new.ntargets = 1;
	new.targets = &(struct snap_target){.pid = 42};
	CHECK(series_build(&v, &new, 42, &why) == -1 && strstr(why, "of its own"));
	CHECK(series_build(&v, &new, 43, &why) == -1 && !strcmp(why, "is not traced"));
}

/*
 * A pid's own series: its targets' figures at each point it was traced at
 * (pid 7 from the second point on, its two generations at the third, one
 * unread), its rates, resident peak and live peak (its targets' merged).
 */
TEST(timeline_of_pid)
{
	static struct snap_target targets[] = {
	    {.pid = 5, .counters = {.peak_live_bytes = 900, .peak_time_ns = 2000000000ull}},
	    {.pid = 7,
	     .state = SNAP_TARGET_EXECED,
	     .started_ns = 1000000000ull,
	     .counters = {.peak_live_bytes = 40, .peak_time_ns = 0}},
	    /* its peak time is since its own start */
	    {.pid = 7,
	     .started_ns = 2000000000ull,
	     .counters = {.peak_live_bytes = 70, .peak_time_ns = 1000000000ull}},
	};
	static struct snap_timeline_point pts[] = {
	    {.time_ns = 0, .total = {.live_bytes = 10}, .first = 0, .ntargets = 1},
	    {.time_ns = 1000000000ull, .total = {.live_bytes = 50}, .first = 1, .ntargets = 2},
	    {.time_ns = 3000000000ull, .total = {.live_bytes = 990}, .first = 3, .ntargets = 3},
	};
	static struct snap_timeline_target figs[] = {
	    {0, {.live_bytes = 10, .allocations = 1}},
	    {0, {.live_bytes = 10, .allocations = 1}},
	    {1,
	     {.live_bytes = 40,
	      .allocations = 4,
	      .has_resident = 1,
	      .resident = {.resident_bytes = 8192}}},
	    {0, {.live_bytes = 900, .allocations = 9, .has_resident = 1}},
	    {1, {.live_bytes = 20, .allocations = 6}},
	    {2,
	     {.live_bytes = 50,
	      .allocations = 10,
	      .has_resident = 1,
	      .resident = {.resident_bytes = 4096}}},
	};
	static struct snap_timeline_targets tt = {.nfigures = 6, .figures = figs};
	struct snapshot s = {.targets = targets,
			     .ntargets = 3,
			     .timeline = pts,
			     .ntimeline = 3,
			     .timeline_interval_ns = 1000000000ull,
			     .timeline_targets = &tt,
			     .has_resident = 1};
	struct render_opts o = {.format = RENDER_JSON};
	struct series v;
	struct buf b = {0};
	const char *why = NULL;
	char *out;

	CHECK(series_build(&v, &s, 7, &why) == 0);
	CHECK(v.npoints == 2 && v.points[0].time_ns == 1000000000ull);
	CHECK_EQ_U64(v.points[1].total.live_bytes, 70); /* both generations */
	CHECK(v.points[0].total.has_resident && !v.points[1].total.has_resident);
	CHECK(v.has_peak && v.peak_bytes == 8192 && v.peak_time_ns == 1000000000ull);
	CHECK_EQ_U64(v.live.peak_live_bytes, 70);
	render_timeline(&b, &v, &o);
	out = text(&b);
	CHECK(strstr(out, "{\"pid\":7,\"interval\":1.0,\"peak_live_bytes\":70,\"peak_time\":3.0,"
			  "\"peak_resident_bytes\":8192,\"peak_resident_time\":1.0,\"points\":[") ==
	      out);
	CHECK(strstr(out, "\"allocation_rate\":6.0,\"resident_bytes\":null") !=
	      NULL); /* 12 in 2 s */
	buf_free(&b);
	o.format = RENDER_TEXT;
	render_timeline(&b, &v, &o);
	out = text(&b);
	CHECK(strstr(out, "memory of pid 7 over time: 2 points, one every 1.000 s; peak 70 B at "
			  "3.000 s; resident peak 8192 B at 1.000 s\n") == out);
	buf_free(&b);
	series_free(&v);
	CHECK(series_build(&v, &s, 5, &why) == 0 && v.npoints == 3);
	CHECK(!v.has_peak || v.peak_bytes == 0);
	series_free(&v);
}

/*
 * Every target's timeline with its memory cgroups: each cgroup's usage and
 * limit at each point from its targets' figures (the newest target read
 * then), keyed by the path status shows; points and cgroups not read say
 * nothing.
 */
TEST(timeline_cgroups)
{
	static struct snap_target targets[] = {
	    {.pid = 5, .cgroup = {.known = 1, .path = "/", .memory_path = "/shop"}},
	    {.pid = 6, .cgroup = {.known = 1, .path = "/shop"}}, /* no memory cgroup: its path */
	    {.pid = 7, .cgroup = {.known = 1, .path = "/batch", .memory_path = "/batch"}},
	    {.pid = 8}, /* never read */
	};
	static struct snap_timeline_point pts[] = {
	    {.time_ns = 0, .total = {.live_bytes = 10}, .first = 0, .ntargets = 2},
	    {.time_ns = 1000000000ull, .total = {.live_bytes = 50}, .first = 2, .ntargets = 4},
	};
	static struct snap_timeline_target figs[] = {
	    {0, {.has_cgroup = 1, .cgroup_usage_bytes = 100, .cgroup_limit_bytes = 1000}},
	    {3, {.live_bytes = 1}},
	    {0, {.has_cgroup = 1, .cgroup_usage_bytes = 200, .cgroup_limit_bytes = 1000}},
	    {1, {.has_cgroup = 1, .cgroup_usage_bytes = 300, .cgroup_limit_bytes = 1000}},
	    {2, {.has_cgroup = 1, .cgroup_usage_bytes = 7, .cgroup_limit_bytes = UINT64_MAX}},
	    {3, {.live_bytes = 2}},
	};
	static struct snap_timeline_targets tt = {.nfigures = 6, .figures = figs};
	struct snapshot s = {.targets = targets,
			     .ntargets = 4,
			     .timeline = pts,
			     .ntimeline = 2,
			     .timeline_interval_ns = 1000000000ull,
			     .timeline_targets = &tt};
	struct render_opts o = {.format = RENDER_JSON};
	struct series v;
	struct buf b = {0};
	const char *why = NULL;
	char *out;

	CHECK(series_build(&v, &s, 0, &why) == 0);
	CHECK_EQ_U64(v.ncgroups, 2);
	CHECK_STR(v.cgroups[0], "/batch");
	CHECK_STR(v.cgroups[1], "/shop");
	CHECK(!v.cgroup_points[0].has); /* /batch at 0 s */
	CHECK(v.cgroup_points[1].has && v.cgroup_points[1].usage_bytes == 100);
	CHECK(v.cgroup_points[2].has && v.cgroup_points[2].limit_bytes == UINT64_MAX);
	CHECK_EQ_U64(v.cgroup_points[3].usage_bytes, 300); /* pid 6's, the newer target */
	render_timeline(&b, &v, &o);
	out = text(&b);
	CHECK(strstr(out, "\"cgroups\":[\"/batch\",\"/shop\"],\"points\":[") != NULL);
	CHECK(strstr(out, "\"allocation_rate\":null,\"cgroups\":[{\"path\":\"/shop\","
			  "\"cgroup_usage_bytes\":100,\"cgroup_limit_bytes\":1000}]}") != NULL);
	CHECK(strstr(out, "\"cgroups\":[{\"path\":\"/batch\",\"cgroup_usage_bytes\":7,"
			  "\"cgroup_limit_bytes\":null},{\"path\":\"/shop\","
			  "\"cgroup_usage_bytes\":300,\"cgroup_limit_bytes\":1000}]}]}") != NULL);
	buf_free(&b);
	o.format = RENDER_TEXT;
	render_timeline(&b, &v, &o);
	out = text(&b);
	CHECK(strstr(out, "  cgroup /shop 100 B of 1000 B\n") != NULL);
	CHECK(strstr(out, "  cgroup /batch 7 B (no limit), /shop 300 B of 1000 B\n") != NULL);
	buf_free(&b);
	series_free(&v);

	/* a pid's series keeps its own cgroup column, not these */
	CHECK(series_build(&v, &s, 7, &why) == 0);
	CHECK(v.ncgroups == 0 && v.cgroup);
	series_free(&v);
	/* without the targets' figures (an older snapshot): none */
	s.timeline_targets = NULL;
	CHECK(series_build(&v, &s, 0, &why) == 0);
	CHECK(v.ncgroups == 0 && v.cgroup_points == NULL);
	series_free(&v);
}

TEST(watch_growth)
{
	struct snapshot old, new;
	struct view_opts o = opts(GROUP_FUNCTION);
	struct watch_state w = {0};
	struct buf b = {0};
	char *out;

	snaps(&old, &new);
	old.uptime_ns = 1000000000ull;
	new.uptime_ns = 3000000000ull;
	old.totals.allocations = 2;
	watch(&b, &w, &old, &o, 0);
	out = text(&b);
	/* the first refresh: growth since tracing began */
	CHECK(has_line(out, "      +100 B  grow: size=100 B, count=1, average=100 B"));
	CHECK(has_line(out, "       +50 B  shrink: size=50 B, count=2, average=25 B"));
	CHECK(strchr(out, '\033') == NULL);
	buf_free(&b);

	watch(&b, &w, &new, &o, 1);
	out = text(&b);
	CHECK(!strncmp(out, "\033[H\033[2J", 7));
	CHECK(strstr(out, " live 340 B in 4 blocks, 2 allocs/s (0 B/s), peak 5200 B, lost 0\n"));
	CHECK(has_line(out, "      +200 B  grow: size=300 B, count=3, average=100 B"));
	CHECK(has_line(out, "       +40 B  fresh: size=40 B, count=1, average=40 B"));
	CHECK(strstr(out, "shrink") == NULL); /* it shrank */
	CHECK(strstr(out, "q or Ctrl-C quits") != NULL);
	buf_free(&b);
	watch_state_free(&w);
}

/* Resident memory beside live: its totals over the targets traced now, in diff, watch and timeline.
 */
TEST(resident_beside_live)
{
	struct snapshot old, new;
	struct view_opts o = opts(GROUP_FUNCTION);
	struct render_opts ro = {.format = RENDER_TEXT};
	struct watch_state w = {0};
	struct snap_target ot[1] = {{0}}, nt[3] = {{0}};
	struct snap_timeline_point pts[3];
	struct resident_view v;
	struct series sv;
	const char *why;
	struct buf b = {0};
	char *out;

	snaps(&old, &new);
	old.uptime_ns = 1000000000ull;
	new.uptime_ns = 3000000000ull;
	old.totals.allocations = 2;
	/* without section SEC_RESIDENT, nothing is said of resident memory */
	resident_view_build(&v, &new);
	CHECK(!v.present);
	diff(&b, &old, &new, &o, RENDER_TEXT);
	CHECK(strstr(text(&b), "resident") == NULL);
	buf_free(&b);

	old.has_resident = new.has_resident = 1;
	old.ntargets = 1;
	old.targets = ot;
	ot[0] = (struct snap_target){.pid = 1, .state = SNAP_TARGET_ATTACHED};
	ot[0].resident = (struct snap_resident){.sampled = 1, .r.resident_bytes = 4096};
	new.ntargets = 3;
	new.targets = nt;
	nt[0] = ot[0];
	nt[0].resident.r.resident_bytes = 10240;
	nt[0].resident.r.pss_bytes = 100;
	/* exited: its last figures are its own, not the totals' */
	nt[1] = (struct snap_target){.pid = 2, .state = SNAP_TARGET_EXITED};
	nt[1].resident = (struct snap_resident){.sampled = 1, .r.resident_bytes = 1u << 30};
	/* traced, but never read: counted as such, not guessed */
	nt[2] = (struct snap_target){.pid = 3, .state = SNAP_TARGET_ATTACHED};
	memcpy(pts, points, sizeof(pts));
	pts[1].total.has_resident = 1;
	pts[1].total.resident.resident_bytes = 20480;
	pts[2].total.has_resident = 1;
	pts[2].total.resident.resident_bytes = 10240;
	new.timeline = pts;
	resident_view_build(&v, &new);
	CHECK(v.present && v.targets == 1 && v.unread == 1);
	CHECK_EQ_U64(v.total.resident_bytes, 10240);
	CHECK_EQ_U64(v.total.pss_bytes, 100);
	CHECK(v.has_peak && v.peak_bytes == 20480 && v.peak_time_ns == 1000000000ull);

	diff(&b, &old, &new, &o, RENDER_TEXT);
	out = text(&b);
	CHECK(has_line(out,
		       "live 340 B (+190 B) in 4 blocks (+1), resident 10.0 KiB (+6144 B) over "
		       "2.0 s; by function, 3 of 3 groups, largest growth first"));
	buf_free(&b);
	watch(&b, &w, &new, &o, 0);
	CHECK(strstr(text(&b), " live 340 B in 4 blocks, resident 10.0 KiB, "));
	buf_free(&b);
	CHECK(series_build(&sv, &new, 0, &why) == 0);
	render_timeline(&b, &sv, &ro);
	series_free(&sv);
	out = text(&b);
	CHECK(strstr(out, "; resident peak 20.0 KiB at 1.000 s\n") != NULL);
	/* a point without figures shows none; '.' runs from live on to resident */
	CHECK(has_line(out,
		       "    0.000s         0 B           -  |                                    "
		       "    |  0"));
	CHECK(strstr(
	    out, "  1.000s       150 B    20.0 KiB  |........................................|"));
	CHECK(strstr(
	    out, "  3.000s       340 B    10.0 KiB  |#...................                    |"));
	buf_free(&b);
	watch_state_free(&w);
}

TEST(report_oldest)
{
	struct snapshot old, new;
	struct render_opts ro = {.format = RENDER_TEXT, .oldest = 1};
	struct buf b = {0};
	char *out;

	snaps(&old, &new);
	new.has_ages = 1;
	new_stacks[0].oldest_live_age_ns = 7000000000ull;
	render_report(&b, &new, &ro);
	out = text(&b);
	CHECK(strstr(out, "freed 0 B in 0)  oldest 7.0s\n") != NULL);
	buf_free(&b);
	ro.format = RENDER_JSON;
	render_report(&b, &new, &ro);
	out = text(&b);
	CHECK(strstr(out, "\"oldest_live_age\":7.0,") != NULL);
	CHECK(strstr(out, "\"oldest_live_age\":null,") != NULL); /* nothing live */
	buf_free(&b);
	ro.oldest = 0; /* not asked: not shown */
	render_report(&b, &new, &ro);
	CHECK(strstr(text(&b), "oldest") == NULL);
	buf_free(&b);
	new_stacks[0].oldest_live_age_ns = 0;
}

UNIT_MAIN()
