/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Renderers: a decoded struct snapshot to the text people read and the JSON
 * scripts read, for each memtracectl view. Every number has the name it has
 * in docs/metrics.md, in both forms; the JSON keys are a stable contract.
 */
#ifndef MEMTRACE_RENDER_H
#define MEMTRACE_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/snapshot.h"
#include "common/util.h"

enum render_format {
	RENDER_TEXT = 0,
	RENDER_JSON,
	RENDER_FOLDED, /* src/ctl/render/folded.c */
	RENDER_PPROF,  /* src/ctl/render/pprof.c */
	RENDER_HTML,   /* src/ctl/render/html.c */
};

struct render_opts {
	int format;   /* enum render_format */
	int pretty;   /* JSON: newlines and two-space indentation */
	int sort;     /* enum mt_sort the stacks are ordered by (text shows peak for PEAK) */
	uint32_t pid; /* the report is limited to this target; 0 = all */
	int oldest;   /* report: each stack's oldest live block (snapshots with ages) */
	int sample;   /* folded and html: enum mt_sort, not temporary */
	int peak;     /* pprof: the profile of what was live at the peak */
};

/* Daemon uptime, events and the table of targets. */
void render_status(struct buf *out, const struct snapshot *s, const struct render_opts *o);
/* Every counter of docs/metrics.md, totals and per target. */
void render_stats(struct buf *out, const struct snapshot *s, const struct render_opts *o);
/* Totals, then the stacks in the order the snapshot holds them. */
void render_report(struct buf *out, const struct snapshot *s, const struct render_opts *o);

/* Pieces the other views (views.c) share with these. */
struct json_writer;
/* One frame as an indented text line, and as a JSON object. */
void render_text_frame(struct buf *out, const struct snap_frame *f);
void render_json_frame(struct json_writer *w, const struct snap_frame *f);

#endif
