/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The rows of the grouped views, computed from decoded snapshots: diff of
 * two snapshots, what was live at the peak, old live blocks (leaks), the
 * groups watch shows growing, and report --by. Each view is built, handed to
 * its renderer (render/rows.h), and freed; none prints anything. Every group
 * comes from group.h, so a "function" or "file:line" means the same in every
 * view.
 */
#ifndef MEMTRACE_CTL_ROWS_H
#define MEMTRACE_CTL_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "ctl/view/group.h"
#include "memtrace/snapshot.h"

/* Which rows a view computes. */
struct view_opts {
	int by;		     /* enum group_by */
	int cumulative;	     /* group by every frame, not the innermost */
	uint32_t top;	     /* rows shown; 0 = all */
	uint64_t older_than; /* leaks: nanoseconds */
	int sort;	     /* report --by: the rows' order (enum mt_sort) */
	uint32_t pid;	     /* watch: the snapshot is of this pid's targets (0: all) */
};

/* ---- diff: tracemalloc's compare_to ---------------------------------------- */

struct diff_row {
	const struct group_row *row;  /* the group in new, else in old: key and stack */
	struct mt_stack_counters now; /* in new; zero when the group is not there */
	struct mt_stack_counters was; /* in old; zero when the group is not there */
	int64_t size_diff;	      /* live bytes now - then */
	int64_t count_diff;	      /* live blocks now - then */
};

struct diff_view {
	const struct snapshot *old, *new;
	struct group_table was, now; /* the groups of old and new; rows point into them */
	struct diff_row *rows;	     /* groups live in either, largest growth first */
	size_t nrows;
	size_t shown;	 /* the first rows --top keeps */
	double interval; /* seconds from old to new; negative when new is older */
};

/* Groups of new against groups of old by live bytes; only live memory is
 * compared, so a group with nothing live in either has no row. */
void diff_view_build(struct diff_view *v, const struct snapshot *old, const struct snapshot *new,
		     const struct view_opts *o);
void diff_view_free(struct diff_view *v);

/* "new" (nothing was live before), "vanished" (nothing is now), "changed"
 * or "unchanged". */
const char *diff_row_status(const struct diff_row *d);

/* ---- peak ---------------------------------------------------------------------- */

struct peak_view {
	const struct snapshot *s;
	struct group_table groups; /* by peak_live_bytes, largest first */
	size_t nrows;		   /* the groups live at the peak: they come first */
	size_t shown;
	uint64_t sum;	    /* peak_live_bytes of the nrows groups */
	uint64_t shown_sum; /* of the shown ones */
};

/* What was live at the moment of peak_live_bytes, by group; the groups sum
 * to peak_live_bytes when the snapshot holds every stack and o is not
 * cumulative. */
void peak_view_build(struct peak_view *v, const struct snapshot *s, const struct view_opts *o);
void peak_view_free(struct peak_view *v);

/* ---- leaks --------------------------------------------------------------------- */

struct leak_row {
	uint32_t stack;	    /* index into the snapshot's stacks */
	struct snap_leak l; /* its blocks at least older_than old, their bytes and ages */
};

struct leaks_view {
	const struct snapshot *s;
	uint64_t older_than;   /* nanoseconds */
	struct leak_row *rows; /* stacks with such blocks, in leak_order() (common/order.h) */
	size_t nrows;
	size_t shown;
	uint64_t blocks, bytes; /* all blocks at least older_than old */
};

/* Live blocks at least o->older_than old, by stack, with their age range. */
void leaks_view_build(struct leaks_view *v, const struct snapshot *s, const struct view_opts *o);
void leaks_view_free(struct leaks_view *v);

/* ---- report --by: tracemalloc's statistics() ------------------------------------ */

struct grouped_view {
	const struct snapshot *s;
	struct group_table groups; /* by o->sort, largest first */
	int sort;		   /* enum mt_sort */
	int allocated; /* rows count what was allocated (sort allocated or count), else what is live
			*/
	size_t nrows;  /* groups with something to count: they come first */
	size_t shown;
};

void grouped_view_build(struct grouped_view *v, const struct snapshot *s,
			const struct view_opts *o);
void grouped_view_free(struct grouped_view *v);

/* ---- watch --------------------------------------------------------------------- */

/* What watch remembers between refreshes: the last groups (keys and totals only). */
struct watch_state {
	int have_prev;
	uint64_t prev_uptime_ns;
	uint64_t prev_allocations;
	uint64_t prev_bytes_allocated;
	struct group_table prev; /* its rows' stack pointers are cleared: never read */
};

struct growth {
	const struct group_row *row;
	int64_t grew; /* live bytes since the last refresh (the first: since tracing began) */
};

struct watch_view {
	const struct snapshot *s;
	struct group_table groups;
	struct growth *rows; /* the groups that grew, most first */
	size_t nrows;
	size_t shown;
	double rate;	  /* allocations per second since the last refresh; 0 on the first */
	double byte_rate; /* bytes allocated per second, likewise */
	uint32_t pid;	  /* watch --pid: the totals are this pid's (0: every target's) */
};

void watch_view_build(struct watch_view *v, const struct watch_state *w, const struct snapshot *s,
		      const struct view_opts *o);
/* Keep v's groups (keys and totals) in w for the next refresh; v keeps none. */
void watch_state_keep(struct watch_state *w, struct watch_view *v);
void watch_view_free(struct watch_view *v);
void watch_state_free(struct watch_state *w);

#endif
