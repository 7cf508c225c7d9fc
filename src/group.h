/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Grouping of a decoded snapshot's stacks into rows by one key: the whole
 * stack, or the innermost frame's function, source file, file:line or module
 * (tracemalloc's statistics('lineno'/'filename'/'traceback')). With
 * cumulative, every distinct key among a stack's frames gets the stack's
 * numbers once, as tracemalloc's cumulative mode. Pure functions of the
 * snapshot: report, diff, peak and leaks all group through here.
 */
#ifndef MEMTRACE_GROUP_H
#define MEMTRACE_GROUP_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/snapshot.h"

enum group_by {
	GROUP_STACK = 0,
	GROUP_FUNCTION,
	GROUP_FILE,
	GROUP_LINE,
	GROUP_MODULE,
	GROUP_BY_COUNT
};

/* The numbers of one row: sums over the stacks grouped into it. */
struct group_totals {
	uint64_t live_bytes;
	uint64_t live_allocations;
	uint64_t allocations;
	uint64_t bytes_allocated;
	uint64_t frees;
	uint64_t bytes_freed;
	uint64_t peak_live_bytes;
	uint64_t temporary_allocations;
	uint64_t temporary_bytes;
};

struct group_row {
	char *key;			/* malloc'd; see group_frame_key() */
	const struct snap_stack *stack; /* the first stack grouped here (for its frames) */
	uint32_t nstacks;		/* stacks grouped into this row */
	struct group_totals t;
};

struct group_table {
	struct group_row *rows;
	size_t nrows;
	int by;		/* enum group_by */
	int cumulative; /* rows overlap: their sums may exceed the totals */
	/*
	 * A snapshot the daemon grouped holds only the top rows; the others
	 * are counted here: how many, how many with live blocks, with
	 * allocations, with bytes at the peak, and their sums.
	 */
	uint64_t rest_rows, rest_rows_live, rest_rows_allocated, rest_rows_peak;
	struct group_totals rest;
};

/* "stack", "function", "file", "line", "module"; NULL for a bad value. */
const char *group_by_name(int by);
/* enum group_by for a name, or -1. */
int group_by_from_name(const char *name);

/*
 * The key of one frame: the function name, the source file, "file:line" or
 * the module path. A frame without that information is keyed by where it is,
 * "module+0xoffset" (or "0xaddress" outside any module), never by a guess.
 */
void group_frame_key(const struct snap_frame *f, int by, char *dst, size_t len);

/* "module+0xoffset", or "0xaddress" outside any module: where a frame is. */
void group_frame_location(const struct snap_frame *f, char *dst, size_t len);

/* A Python frame (address 0, no module, a file): non-cumulative keys come from
 * a stack's first one, when it has one, else from its frame 0. */
int group_python_frame(const struct snap_frame *f);

/*
 * stats' allocation sites: frames are one site when they name the same
 * function at the same line, or, without a function, the same module offset.
 */
int group_site_cmp(const struct snap_frame *a, const struct snap_frame *b);

/*
 * Group the stacks of s (all of them, in any order) into out, ordered by key.
 * A stack without frames is keyed "(no stack)". GROUP_STACK keys a stack by
 * its frames' locations, so equal stacks of two snapshots of one program
 * have equal keys. cumulative is ignored for GROUP_STACK. A snapshot the
 * daemon grouped the same way (its groups section) gives its rows as they
 * are, with what the rows it did not send add up to in rest.
 */
void group_snapshot(const struct snapshot *s, int by, int cumulative, struct group_table *out);

/* Find a row by key in a table ordered by key (as group_snapshot leaves it). */
const struct group_row *group_find(const struct group_table *t, const char *key);

/*
 * Order rows by one enum snap_sort key, largest first (ties: more
 * allocations first, then by key).
 */
void group_sort(struct group_table *t, int sort);

void group_free(struct group_table *t);

/*
 * tracemalloc's size format: "117 B", "8173 KiB", "12.5 MiB" (one decimal
 * below 100 units, none above). With sign, a '+' before positive values.
 */
void group_format_size(char *dst, size_t len, int64_t bytes, int sign);

/*
 * One text line of a row, as tracemalloc prints a statistic:
 * "site_a: size=4855 KiB, count=39328, average=126 B" (no newline).
 */
void group_format_line(char *dst, size_t len, const char *key, uint64_t size, uint64_t count);

/* The same with growth since old: "size=8173 KiB (+4428 KiB), count=71332 (+39369), ..." */
void group_format_diff_line(char *dst, size_t len, const char *key, uint64_t size,
			    uint64_t old_size, uint64_t count, uint64_t old_count);

#endif
