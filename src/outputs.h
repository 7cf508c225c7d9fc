/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Pieces the ecosystem outputs share (stats extras, folded stacks, pprof,
 * HTML): which number of a stack a view shows, how a frame is named, and the
 * allocation sites (innermost frame) a snapshot's stacks add up to.
 */
#ifndef MEMTRACE_OUTPUTS_H
#define MEMTRACE_OUTPUTS_H

#include <stddef.h>
#include <stdint.h>

/* stats shows this many top allocation sites, by bytes and by count. */
#define STATS_TOP_SITES 5

#include "json.h"
#include "memtrace/snapshot.h"
#include "util.h"

/* What one stack contributes to a profile or flame graph (--sample). */
enum view_sample {
	SAMPLE_LIVE = 0,  /* live_bytes */
	SAMPLE_ALLOCATED, /* bytes_allocated */
	SAMPLE_COUNT,	  /* allocations */
	SAMPLE_PEAK,	  /* peak_live_bytes */
	SAMPLE_KEY_COUNT
};

/* "live", "allocated", "count", "peak" and back; -1 for a bad name. */
const char *view_sample_name(int sample);
int view_sample_from_name(const char *name);
/* The enum snap_sort that asks the daemon for the stacks a sample needs. */
int view_sample_sort(int sample);
uint64_t view_stack_value(const struct snap_stack *st, int sample);

/* The allocator function an enum mt_func names ("malloc", ...), or NULL. */
const char *view_func_name(unsigned func);

/*
 * One frame's name for folded stacks and flame graphs: the function, else
 * "module+0xOFFSET", else "0xADDRESS". Characters that would break a folded
 * line (';', newline, control characters) become '?'.
 */
void view_frame_name(struct buf *b, const struct snap_frame *f);

/* An allocation site: the innermost frame of the stacks that share it. */
struct view_site {
	const struct snap_frame *frame; /* NULL for stacks without frames */
	uint64_t allocations;
	uint64_t bytes_allocated;
	uint64_t live_allocations;
	uint64_t live_bytes;
};

/* The sites of s's stacks, in no particular order; *out is malloc'd. */
size_t view_sites(const struct snapshot *s, struct view_site **out);

/* The histogram, allocator mix and top sites of `memtracectl stats`. */
void view_stats_text(struct buf *b, const struct snapshot *s);
void view_stats_json(struct json_writer *w, const struct snapshot *s);

struct render_opts;

/* `report --format folded`: "root;...;leaf VALUE" lines, largest first. */
void render_folded(struct buf *out, const struct snapshot *s, const struct render_opts *o);
/* `report --format pprof`: a gzip-compressed profile.proto. Returns 0, or -1
 * with a message logged. */
int render_pprof(struct buf *out, const struct snapshot *s, const struct render_opts *o);
/* `report --format html`: one self-contained page. */
void render_html(struct buf *out, const struct snapshot *s, const struct render_opts *o);

#endif
