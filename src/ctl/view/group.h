/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Grouping of a decoded snapshot's stacks into rows by one key: the whole
 * stack, or the innermost frame's function, source file, file:line or module
 * (tracemalloc's statistics('lineno'/'filename'/'traceback')). With
 * cumulative, every distinct key among a stack's frames gets the stack's
 * numbers once, as tracemalloc's cumulative mode. Pure functions of the
 * snapshot: report, diff, peak and leaks all group through here.
 */
#ifndef MEMTRACE_CTL_GROUP_H
#define MEMTRACE_CTL_GROUP_H

#include <stddef.h>
#include <stdint.h>

#include "common/groupkey.h"
#include "memtrace/snapshot.h"

struct group_row {
	char *key;			/* malloc'd; see group_frame_key() */
	const struct snap_stack *stack; /* the first stack grouped here (for its frames) */
	uint32_t nstacks;		/* stacks grouped into this row */
	struct mt_stack_counters t;	/* sums over the stacks grouped here */
};

struct group_table {
	struct group_row *rows;
	size_t nrows;
	int by;		/* enum group_by */
	int cumulative; /* rows overlap: their sums may exceed the totals */
	int sort;	/* enum mt_sort group_sort() ordered the rows by (else by key) */
	/*
	 * A snapshot the daemon grouped holds only the top rows; the others
	 * are counted here: how many, how many with live blocks, with
	 * allocations, with bytes at the peak, and their sums.
	 */
	uint64_t rest_rows, rest_rows_live, rest_rows_allocated, rest_rows_peak;
	struct mt_stack_counters rest;
};

/*
 * Group the stacks of s (all of them, in any order) into out, ordered by key.
 * A stack without frames is keyed "(no stack)". GROUP_STACK keys a stack by
 * its frames' locations, so equal stacks of two snapshots of one program
 * have equal keys. GROUP_CGROUP, GROUP_UNIT and GROUP_CONTAINER key a stack
 * by its process's target label (group_target_key()). cumulative is ignored
 * for GROUP_STACK and those. A snapshot the
 * daemon grouped the same way (its groups section) gives its rows as they
 * are, with what the rows it did not send add up to in rest.
 */
void group_snapshot(const struct snapshot *s, int by, int cumulative, struct group_table *out);

/* Find a row by key in a table ordered by key (as group_snapshot leaves it). */
const struct group_row *group_find(const struct group_table *t, const char *key);

/* Order rows by one enum mt_sort key, as group_order() (common/order.h) says. */
void group_sort(struct group_table *t, int sort);

void group_free(struct group_table *t);

#endif
