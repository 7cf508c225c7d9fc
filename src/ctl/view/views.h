/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The views over time and between moments: diff of two snapshots, what was
 * live at the peak, old live blocks (leaks), memory over time and the watch
 * screen. Pure functions of decoded snapshots into text or JSON, like
 * render.h; memtracectl fetches the snapshots and prints what these write.
 */
#ifndef MEMTRACE_VIEWS_H
#define MEMTRACE_VIEWS_H

#include <stdint.h>

#include "ctl/view/group.h"
#include "ctl/render/render.h"

struct view_opts {
	int format;	     /* enum render_format */
	int pretty;	     /* JSON: indented */
	int by;		     /* enum group_by */
	int cumulative;	     /* group by every frame, not the innermost */
	uint32_t top;	     /* rows shown; 0 = all */
	uint64_t older_than; /* leaks: nanoseconds */
	uint32_t rows;	     /* timeline: text rows at most */
};

/*
 * tracemalloc's compare_to: groups of new against groups of old by live
 * bytes, largest absolute growth first; groups only in new are "new", only
 * in old "vanished".
 */
void render_diff(struct buf *out, const struct snapshot *old, const struct snapshot *new,
		 const struct view_opts *o);

/*
 * What was live at the moment of peak_live_bytes, by group; the groups sum
 * to peak_live_bytes (the text says so, or warns when they cannot).
 */
void render_peak(struct buf *out, const struct snapshot *s, const struct view_opts *o);

/*
 * report --by KEY [--cumulative]: the stacks grouped as tracemalloc's
 * statistics() does, "key: size=..., count=..., average=..." per row; live
 * bytes and blocks, or allocated bytes and calls when sort is allocated or
 * count.
 */
void render_report_grouped(struct buf *out, const struct snapshot *s, const struct view_opts *o,
			   int sort);

/* Live blocks at least o->older_than old, by stack, with their age range. */
void render_leaks(struct buf *out, const struct snapshot *s, const struct view_opts *o);

/* Live bytes and allocation rate over time: a text chart, or every point as JSON. */
void render_timeline(struct buf *out, const struct snapshot *s, const struct view_opts *o);

/* What watch remembers between refreshes: the last groups (keys and totals only). */
struct watch_state {
	int have_prev;
	uint64_t prev_uptime_ns;
	uint64_t prev_allocations;
	uint64_t prev_bytes_allocated;
	struct group_table prev; /* its rows' stack pointers are stale: never read */
};

/*
 * One refresh of watch: live bytes, allocation rate since the last refresh,
 * peak, lost events, and the groups that grew most since then. tty: the
 * screen is cleared first.
 */
void render_watch(struct buf *out, struct watch_state *w, const struct snapshot *s,
		  const struct view_opts *o, int tty);
void watch_state_free(struct watch_state *w);

#endif
