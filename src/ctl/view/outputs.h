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

#include "ctl/render/json.h"
#include "memtrace/snapshot.h"
#include "common/util.h"

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
