/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Renderers of the rows view/rows.h computes (diff, peak, leaks, report
 * --by, watch) and of memory over time (timeline), as text or JSON. The text
 * prints tracemalloc's statistic lines; the JSON gives exact integers under
 * the names of docs/metrics.md.
 */
#ifndef MEMTRACE_CTL_RENDER_ROWS_H
#define MEMTRACE_CTL_RENDER_ROWS_H

#include "common/util.h"
#include "ctl/render/render.h"
#include "ctl/view/rows.h"
#include "ctl/view/series.h"

/* Largest absolute growth first; groups only in new are "new", only in old
 * "vanished". */
void render_diff(struct buf *out, const struct diff_view *v, const struct render_opts *o);

/* The groups live at the peak; the text says what they sum to, or warns
 * when they cannot sum to peak_live_bytes. */
void render_peak(struct buf *out, const struct peak_view *v, const struct render_opts *o);

/* Live blocks at least that old, by stack, with their age range. */
void render_leaks(struct buf *out, const struct leaks_view *v, const struct render_opts *o);

/* report --by: "key: size=..., count=..., average=..." per group. */
void render_grouped(struct buf *out, const struct grouped_view *v, const struct render_opts *o);

/* One refresh of watch: live bytes, allocation rate, peak, lost events and
 * the groups that grew most. tty: the screen is cleared first, and a line
 * says how to quit. */
void render_watch(struct buf *out, const struct watch_view *v, int tty);

/* Live bytes, resident memory and allocation rate over time, of every target
 * or of one pid: a text chart of at most o->rows rows, or every point as JSON. */
void render_timeline(struct buf *out, const struct series *v, const struct render_opts *o);

#endif
