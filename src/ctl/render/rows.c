// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * diff, peak, leaks, report --by, watch and timeline as text and JSON (see
 * rows.h). The rows come computed and ordered (view/rows.c); this file only
 * decides how they look.
 */
#include "ctl/render/rows.h"
#include "ctl/render/cgroup.h"
#include "ctl/render/format.h"
#include "ctl/render/json.h"
#include "ctl/view/resident.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#define LINE_MAX_LEN 8192
#define BAR_WIDTH    40

/* The name a row shows: its key, or for a stack its innermost frame. */
static void row_label(const struct group_row *r, int by, char *dst, size_t len)
{
	if (by == GROUP_STACK && r->stack && r->stack->nframes)
		group_frame_key(r->stack->frames[0], GROUP_FUNCTION, dst, len);
	else
		snprintf(dst, len, "%s", r->key);
}

static void text_label_line(struct buf *b, const char *line)
{
	format_text(b, line);
	buf_put(b, "\n", 1);
}

/* "by" and "cumulative": how the rows of t were grouped. */
static void json_grouping(struct json_writer *w, const struct group_table *t)
{
	json_kv_string(w, "by", group_by_name(t->by));
	json_kv_bool(w, "cumulative", t->cumulative);
}

/* A group row's counters in JSON, in this order: the first five, or (full) all. */
static const enum mt_stack_counter json_row_keys[] = {
    MT_SC_peak_live_bytes, MT_SC_live_bytes, MT_SC_live_allocations, MT_SC_allocations,
    MT_SC_bytes_allocated, MT_SC_frees,	     MT_SC_bytes_freed,
};
#define JSON_ROW_KEYS_SHORT 5

/* A diff row's counters, each with its change. */
static const enum mt_stack_counter json_diff_keys[] = {MT_SC_live_bytes, MT_SC_live_allocations,
						       MT_SC_allocations, MT_SC_bytes_allocated};

/* One group row as JSON: its key and totals (all of them with full), and
 * its frames when grouped by stack. */
static void json_group_row(struct json_writer *w, const struct group_row *r, int by, int full)
{
	json_begin_object(w);
	json_kv_string(w, "key", r->key);
	render_json_stack_counters(w, &r->t, json_row_keys,
				   full ? ARRAY_SIZE(json_row_keys) : JSON_ROW_KEYS_SHORT, 0);
	if (full)
		json_kv_u64(w, "stacks", r->nstacks);
	if (by == GROUP_STACK)
		render_json_frames(w, r->stack);
	json_end_object(w);
}

/* "entries": the first n rows of t. */
static void json_group_rows(struct json_writer *w, const struct group_table *t, size_t n, int full)
{
	json_key(w, "entries");
	json_begin_array(w);
	for (size_t k = 0; k < n; k++)
		json_group_row(w, &t->rows[k], t->by, full);
	json_end_array(w);
}

/* ---- diff ---------------------------------------------------------------------- */

/* Both snapshots have resident memory of traced targets: their totals. */
static int resident_both(const struct snapshot *old, const struct snapshot *new,
			 struct resident_view *was, struct resident_view *now)
{
	resident_view_build(was, old);
	resident_view_build(now, new);
	return was->present && now->present && was->targets && now->targets;
}

static void json_diff(struct buf *out, const struct diff_view *v, const struct render_opts *o)
{
	const struct snapshot *old = v->old, *new = v->new;
	struct resident_view was, now;
	struct json_writer w;

	json_init(&w, out, o->pretty);
	json_begin_object(&w);
	json_grouping(&w, &v->now);
	json_kv_u64(&w, "live_bytes", new->totals.live_bytes);
	json_kv_i64(&w, "live_bytes_diff",
		    (int64_t)(new->totals.live_bytes - old->totals.live_bytes));
	json_kv_u64(&w, "live_allocations", new->totals.live_allocations);
	json_kv_i64(&w, "live_allocations_diff",
		    (int64_t)(new->totals.live_allocations - old->totals.live_allocations));
	if (resident_both(old, new, &was, &now)) {
		json_kv_u64(&w, "resident_bytes", now.total.resident_bytes);
		json_kv_i64(&w, "resident_bytes_diff",
			    (int64_t)(now.total.resident_bytes - was.total.resident_bytes));
	}
	json_kv_double(&w, "interval", v->interval);
	json_kv_u64(&w, "groups_total", v->nrows);
	json_key(&w, "entries");
	json_begin_array(&w);
	for (size_t k = 0; k < v->shown; k++) {
		const struct diff_row *d = &v->rows[k];

		json_begin_object(&w);
		json_kv_string(&w, "key", d->row->key);
		json_kv_string(&w, "status", diff_row_status(d));
		render_json_stack_diffs(&w, &d->now, &d->was, json_diff_keys,
					ARRAY_SIZE(json_diff_keys));
		if (v->now.by == GROUP_STACK)
			render_json_frames(&w, d->row->stack);
		json_end_object(&w);
	}
	json_end_array(&w);
	json_end_object(&w);
	buf_put(out, "\n", 1);
}

static void text_diff(struct buf *out, const struct diff_view *v)
{
	const struct snapshot *old = v->old, *new = v->new;
	char line[LINE_MAX_LEN], label[4096], sz[32], dsz[32];
	struct resident_view was, now;

	format_size(sz, sizeof(sz), (int64_t) new->totals.live_bytes, 0);
	format_size(dsz, sizeof(dsz), (int64_t)(new->totals.live_bytes - old->totals.live_bytes),
		    1);
	buf_printf(out, "live %s (%s) in %" PRIu64 " blocks (%+" PRId64 ")", sz, dsz,
		   new->totals.live_allocations,
		   (int64_t)(new->totals.live_allocations - old->totals.live_allocations));
	if (resident_both(old, new, &was, &now)) { /* beside it, what the machine sees */
		format_size(sz, sizeof(sz), (int64_t)now.total.resident_bytes, 0);
		format_size(dsz, sizeof(dsz),
			    (int64_t)(now.total.resident_bytes - was.total.resident_bytes), 1);
		buf_printf(out, ", resident %s (%s)", sz, dsz);
	}
	buf_printf(out, " over %.1f s; by %s%s, %zu of %zu groups, largest growth first\n",
		   v->interval, group_by_name(v->now.by), v->now.cumulative ? " (cumulative)" : "",
		   v->shown, v->nrows);
	for (size_t k = 0; k < v->shown; k++) {
		const struct diff_row *d = &v->rows[k];

		row_label(d->row, v->now.by, label, sizeof(label));
		format_stat_diff_line(line, sizeof(line), label, d->now.live_bytes,
				      d->was.live_bytes, d->now.live_allocations,
				      d->was.live_allocations);
		format_text(out, line);
		if (!d->was.live_allocations || !d->now.live_allocations)
			buf_printf(out, " [%s]", diff_row_status(d));
		buf_put(out, "\n", 1);
		if (v->now.by == GROUP_STACK)
			render_text_frames(out, d->row->stack);
	}
}

void render_diff(struct buf *out, const struct diff_view *v, const struct render_opts *o)
{
	if (o->format == RENDER_JSON)
		json_diff(out, v, o);
	else
		text_diff(out, v);
}

/* ---- peak ---------------------------------------------------------------------- */

static void json_peak(struct buf *out, const struct peak_view *v, const struct render_opts *o)
{
	const struct snapshot *s = v->s;
	struct json_writer w;

	json_init(&w, out, o->pretty);
	json_begin_object(&w);
	json_kv_u64(&w, "peak_live_bytes", s->totals.peak_live_bytes);
	json_kv_double(&w, "peak_time", ns_to_seconds(s->totals.peak_time_ns));
	json_kv_u64(&w, "live_bytes", s->totals.live_bytes);
	json_grouping(&w, &v->groups);
	json_kv_u64(&w, "groups_total", v->nrows);
	json_kv_u64(&w, "groups_peak_live_bytes", v->sum);
	json_group_rows(&w, &v->groups, v->shown, 0);
	json_end_object(&w);
	buf_put(out, "\n", 1);
}

static void text_peak(struct buf *out, const struct peak_view *v)
{
	const struct snapshot *s = v->s;
	int by = v->groups.by;
	char line[LINE_MAX_LEN], label[4096], sz[32], now[32];

	format_size(sz, sizeof(sz), (int64_t)s->totals.peak_live_bytes, 0);
	buf_printf(out,
		   "peak_live_bytes %" PRIu64 " (%s) at %.3f s; live at that moment, by %s%s "
		   "(%zu of %zu groups):\n",
		   s->totals.peak_live_bytes, sz, ns_to_seconds(s->totals.peak_time_ns),
		   group_by_name(by), v->groups.cumulative ? " (cumulative)" : "", v->shown,
		   v->nrows);
	for (size_t k = 0; k < v->shown; k++) {
		const struct group_row *r = &v->groups.rows[k];

		row_label(r, by, label, sizeof(label));
		format_size(sz, sizeof(sz), (int64_t)r->t.peak_live_bytes, 0);
		format_size(now, sizeof(now), (int64_t)r->t.live_bytes, 0);
		if (r->t.peak_live_bytes >= 10 * 1024) /* the exact count, where sz rounds */
			snprintf(line, sizeof(line), "%s: at peak=%s (%" PRIu64 " B), live now=%s",
				 label, sz, r->t.peak_live_bytes, now);
		else
			snprintf(line, sizeof(line), "%s: at peak=%s, live now=%s", label, sz, now);
		text_label_line(out, line);
		if (by == GROUP_STACK)
			render_text_frames(out, r->stack);
	}
	if (v->shown < v->nrows)
		buf_printf(out, "... %zu more groups hold %" PRIu64 " B at the peak\n",
			   v->nrows - v->shown, v->sum - v->shown_sum);
	if (!v->groups.cumulative && v->sum != s->totals.peak_live_bytes)
		buf_printf(out,
			   "warning: the groups sum to %" PRIu64 " B, not peak_live_bytes; the "
			   "snapshot does not hold every stack\n",
			   v->sum);
}

void render_peak(struct buf *out, const struct peak_view *v, const struct render_opts *o)
{
	if (o->format == RENDER_JSON)
		json_peak(out, v, o);
	else
		text_peak(out, v);
}

/* ---- leaks --------------------------------------------------------------------- */

static void json_leaks(struct buf *out, const struct leaks_view *v, const struct render_opts *o)
{
	const struct snapshot *s = v->s;
	struct json_writer w;

	json_init(&w, out, o->pretty);
	json_begin_object(&w);
	json_kv_double(&w, "older_than", ns_to_seconds(v->older_than));
	json_kv_u64(&w, "blocks", v->blocks);
	json_kv_u64(&w, "bytes", v->bytes);
	json_kv_u64(&w, "live_allocations", s->totals.live_allocations);
	json_kv_u64(&w, "live_bytes", s->totals.live_bytes);
	json_kv_u64(&w, "stacks_total", v->nrows);
	json_key(&w, "entries");
	json_begin_array(&w);
	for (size_t k = 0; k < v->shown; k++) {
		const struct leak_row *r = &v->rows[k];

		json_begin_object(&w);
		json_kv_u64(&w, "pid", s->stacks[r->stack].pid);
		json_kv_u64(&w, "blocks", r->l.blocks);
		json_kv_u64(&w, "bytes", r->l.bytes);
		json_kv_double(&w, "oldest_age", ns_to_seconds(r->l.oldest_ns));
		json_kv_double(&w, "youngest_age", ns_to_seconds(r->l.youngest_ns));
		render_json_frames(&w, &s->stacks[r->stack]);
		json_end_object(&w);
	}
	json_end_array(&w);
	json_end_object(&w);
	buf_put(out, "\n", 1);
}

static void text_leaks(struct buf *out, const struct leaks_view *v)
{
	const struct snapshot *s = v->s;
	char sz[32], total[32], oldest[32], youngest[32], limit[32];

	format_duration(limit, sizeof(limit), v->older_than);
	format_size(total, sizeof(total), (int64_t)v->bytes, 0);
	format_size(sz, sizeof(sz), (int64_t)s->totals.live_bytes, 0);
	buf_printf(out,
		   "%" PRIu64 " live blocks (%s) older than %s, of %" PRIu64 " live (%s); "
		   "%zu of %zu stacks, most bytes first\n",
		   v->blocks, total, limit, s->totals.live_allocations, sz, v->shown, v->nrows);
	for (size_t k = 0; k < v->shown; k++) {
		const struct leak_row *r = &v->rows[k];

		format_size(sz, sizeof(sz), (int64_t)r->l.bytes, 0);
		format_duration(oldest, sizeof(oldest), r->l.oldest_ns);
		format_duration(youngest, sizeof(youngest), r->l.youngest_ns);
		buf_printf(out, "\n#%zu  %" PRIu64 " blocks, %" PRIu64 " B", k + 1, r->l.blocks,
			   r->l.bytes);
		if (r->l.bytes >= 10 * 1024)
			buf_printf(out, " (%s)", sz);
		buf_printf(out, ", age %s to %s\n", youngest, oldest);
		render_text_frames(out, &s->stacks[r->stack]);
	}
}

void render_leaks(struct buf *out, const struct leaks_view *v, const struct render_opts *o)
{
	if (o->format == RENDER_JSON)
		json_leaks(out, v, o);
	else
		text_leaks(out, v);
}

/* ---- report --by --------------------------------------------------------------- */

static void json_grouped(struct buf *out, const struct grouped_view *v, const struct render_opts *o)
{
	const struct snapshot *s = v->s;
	struct json_writer w;

	json_init(&w, out, o->pretty);
	json_begin_object(&w);
	json_grouping(&w, &v->groups);
	json_kv_string(&w, "sort", mt_sort_name(v->sort));
	json_kv_u64(&w, "live_bytes", s->totals.live_bytes);
	json_kv_u64(&w, "live_allocations", s->totals.live_allocations);
	json_kv_u64(&w, "groups_total", v->nrows);
	json_group_rows(&w, &v->groups, v->shown, 1);
	json_end_object(&w);
	buf_put(out, "\n", 1);
}

static void text_grouped(struct buf *out, const struct grouped_view *v)
{
	const struct snapshot *s = v->s;
	int by = v->groups.by;
	char line[LINE_MAX_LEN], label[4096], sz[32];

	format_size(sz, sizeof(sz), (int64_t)s->totals.live_bytes, 0);
	buf_printf(out,
		   "live %s in %" PRIu64 " blocks; %s by %s%s, largest first (%zu of %zu "
		   "groups)\n",
		   sz, s->totals.live_allocations, v->allocated ? "allocated" : "live",
		   group_by_name(by), v->groups.cumulative ? " (cumulative)" : "", v->shown,
		   v->nrows);
	for (size_t k = 0; k < v->shown; k++) {
		const struct group_row *r = &v->groups.rows[k];

		row_label(r, by, label, sizeof(label));
		if (v->allocated)
			format_stat_line(line, sizeof(line), label, r->t.bytes_allocated,
					 r->t.allocations);
		else
			format_stat_line(line, sizeof(line), label, r->t.live_bytes,
					 r->t.live_allocations);
		text_label_line(out, line);
		if (by == GROUP_STACK)
			render_text_frames(out, r->stack);
	}
}

void render_grouped(struct buf *out, const struct grouped_view *v, const struct render_opts *o)
{
	if (o->format == RENDER_JSON)
		json_grouped(out, v, o);
	else
		text_grouped(out, v);
}

/* ---- watch --------------------------------------------------------------------- */

void render_watch(struct buf *out, const struct watch_view *v, int tty)
{
	const struct snapshot *s = v->s;
	char live[32], peak[32], brate[32], clock[16], label[4096], line[LINE_MAX_LEN],
	    resident[32];
	struct resident_view rv;
	time_t now = (time_t)(s->created_unix_ns / 1000000000ull);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
	format_size(live, sizeof(live), (int64_t)s->totals.live_bytes, 0);
	format_size(peak, sizeof(peak), (int64_t)s->totals.peak_live_bytes, 0);
	format_size(brate, sizeof(brate), (int64_t)v->byte_rate, 0);
	if (tty)
		buf_printf(out, "\033[H\033[2J");
	buf_printf(out, "%s ", clock);
	if (v->pid) /* the daemon sent that pid's targets and totals */
		buf_printf(out, "pid %" PRIu32 " ", v->pid);
	buf_printf(out, "live %s in %" PRIu64 " blocks, ", live, s->totals.live_allocations);
	resident_view_of_pid(&rv, s, v->pid);
	if (rv.present && rv.targets) { /* resident beside live, as sampled */
		format_size(resident, sizeof(resident), (int64_t)rv.total.resident_bytes, 0);
		buf_printf(out, "resident %s, ", resident);
	}
	buf_printf(out, "%.0f allocs/s (%s/s), peak %s, lost %" PRIu64 "\n", v->rate, brate, peak,
		   snapshot_events_lost(s));
	render_text_cgroups(out, s, v->pid); /* the limit beside the heap */
	for (size_t k = 0; k < v->shown; k++) {
		const struct group_row *r = v->rows[k].row;
		char grew[32];

		row_label(r, v->groups.by, label, sizeof(label));
		format_size(grew, sizeof(grew), v->rows[k].grew, 1);
		format_stat_line(line, sizeof(line), label, r->t.live_bytes, r->t.live_allocations);
		buf_printf(out, "  %10s  ", grew);
		text_label_line(out, line);
	}
	if (tty)
		buf_printf(out, "\n(q or Ctrl-C quits; growth since the last refresh, by %s)\n",
			   group_by_name(v->groups.by));
}

/* ---- timeline ------------------------------------------------------------------ */

/* A point's "cgroups": each memory cgroup read then, its usage and limit (null: none). */
static void json_cgroup_points(struct json_writer *w, const struct series_cgroup_point *cp,
			       const struct series *v)
{
	json_key(w, "cgroups");
	json_begin_array(w);
	for (uint32_t c = 0; c < v->ncgroups; c++) {
		if (!cp[c].has)
			continue;
		json_begin_object(w);
		json_kv_string(w, "path", v->cgroups[c]);
		json_kv_u64(w, "cgroup_usage_bytes", cp[c].usage_bytes);
		json_key(w, "cgroup_limit_bytes");
		if (cp[c].limit_bytes != MT_CGROUP_NO_LIMIT)
			json_u64(w, cp[c].limit_bytes);
		else
			json_null(w);
		json_end_object(w);
	}
	json_end_array(w);
}

/* Text: "  cgroup /a 10.0 MiB of 64.0 MiB, /b 3.0 MiB (no limit)" of a point's cgroups read. */
static void text_cgroup_points(struct buf *out, const struct series_cgroup_point *cp,
			       const struct series *v)
{
	for (uint32_t c = 0, first = 1; c < v->ncgroups; c++) {
		char use[32], lim[32];

		if (!cp[c].has)
			continue;
		format_size(use, sizeof(use), (int64_t)cp[c].usage_bytes, 0);
		buf_printf(out, "%s", first ? "  cgroup " : ", ");
		format_text(out, v->cgroups[c]);
		if (cp[c].limit_bytes == MT_CGROUP_NO_LIMIT) {
			buf_printf(out, " %s (no limit)", use);
		} else {
			format_size(lim, sizeof(lim), (int64_t)cp[c].limit_bytes, 0);
			buf_printf(out, " %s of %s", use, lim);
		}
		first = 0;
	}
}

static void json_timeline(struct buf *out, const struct series *v, const struct render_opts *o)
{
	struct json_writer w;

	json_init(&w, out, o->pretty);
	json_begin_object(&w);
	if (v->pid)
		json_kv_u64(&w, "pid", v->pid);
	json_kv_double(&w, "interval", ns_to_seconds(v->interval_ns));
	json_kv_u64(&w, "peak_live_bytes", v->live.peak_live_bytes);
	json_kv_double(&w, "peak_time", ns_to_seconds(v->live.peak_time_ns));
	if (v->resident) { /* the resident series' own peak */
		json_key(&w, "peak_resident_bytes");
		if (v->has_peak)
			json_u64(&w, v->peak_bytes);
		else
			json_null(&w);
		json_key(&w, "peak_resident_time");
		if (v->has_peak)
			json_double(&w, ns_to_seconds(v->peak_time_ns));
		else
			json_null(&w);
	}
	if (v->ncgroups) { /* every target's: the memory cgroups the points name */
		json_key(&w, "cgroups");
		json_begin_array(&w);
		for (uint32_t c = 0; c < v->ncgroups; c++)
			json_string(&w, v->cgroups[c]);
		json_end_array(&w);
	}
	json_key(&w, "points");
	json_begin_array(&w);
	for (uint32_t i = 0; i < v->npoints; i++) {
		const struct snap_timeline_point *p = &v->points[i];

		json_begin_object(&w);
		json_kv_double(&w, "time", ns_to_seconds(p->time_ns));
		json_kv_u64(&w, "live_bytes", p->total.live_bytes);
		json_kv_u64(&w, "live_allocations", p->total.live_allocations);
		json_kv_u64(&w, "allocations", p->total.allocations);
		json_kv_u64(&w, "bytes_allocated", p->total.bytes_allocated);
		json_key(&w, "allocation_rate");
		if (i)
			json_double(&w, series_rate(v, i - 1, i));
		else
			json_null(&w);
		for (size_t k = 0; v->resident && k < MT_NRESIDENT; k++) {
			json_key(&w, mt_resident_descs[k].name);
			if (p->total.has_resident)
				json_u64(&w, mt_resident_get(&p->total.resident, k));
			else
				json_null(&w);
		}
		if (v->cgroup) { /* a pid's: its memory cgroup then (null: not read) */
			const struct snap_figures *f = &p->total;

			json_key(&w, "cgroup_usage_bytes");
			if (f->has_cgroup)
				json_u64(&w, f->cgroup_usage_bytes);
			else
				json_null(&w);
			json_key(&w, "cgroup_limit_bytes");
			if (f->has_cgroup && f->cgroup_limit_bytes != MT_CGROUP_NO_LIMIT)
				json_u64(&w, f->cgroup_limit_bytes);
			else
				json_null(&w);
		}
		if (v->ncgroups)
			json_cgroup_points(&w, &v->cgroup_points[(size_t)i * v->ncgroups], v);
		json_end_object(&w);
	}
	json_end_array(&w);
	json_end_object(&w);
	buf_put(out, "\n", 1);
}

/*
 * One row's bar: '#' up to the live bytes, and with resident memory '.' on
 * from there to the resident bytes (nothing more when live is the larger).
 */
static void put_bar(struct buf *out, uint64_t live, uint64_t resident, uint64_t max)
{
	int bar = max ? (int)((live * (double)BAR_WIDTH) / (double)max + 0.5) : 0;
	int rbar = max ? (int)((resident * (double)BAR_WIDTH) / (double)max + 0.5) : 0;

	buf_put(out, "|", 1);
	for (int c = 0; c < BAR_WIDTH; c++)
		buf_put(out, c < bar ? "#" : c < rbar ? "." : " ", 1);
	buf_put(out, "|", 1);
}

static void text_timeline(struct buf *out, const struct series *v, uint32_t max_rows)
{
	uint64_t max = 0;
	uint32_t rows, last = UINT32_MAX;
	char sz[32], peak[32], rsz[32];

	format_size(peak, sizeof(peak), (int64_t)v->live.peak_live_bytes, 0);
	if (v->pid)
		buf_printf(out, "memory of pid %" PRIu32 " over time: ", v->pid);
	else
		buf_printf(out, "memory over time: ");
	buf_printf(out, "%" PRIu32 " points, one every %.3f s; peak %s at %.3f s", v->npoints,
		   ns_to_seconds(v->interval_ns), peak, ns_to_seconds(v->live.peak_time_ns));
	if (v->has_peak) {
		format_size(rsz, sizeof(rsz), (int64_t)v->peak_bytes, 0);
		buf_printf(out, "; resident peak %s at %.3f s", rsz,
			   ns_to_seconds(v->peak_time_ns));
	}
	buf_printf(out, "\n");
	if (!v->npoints) {
		buf_printf(out, "no samples yet\n");
		return;
	}
	for (uint32_t i = 0; i < v->npoints; i++) {
		const struct snap_timeline_point *p = &v->points[i];

		if (p->total.live_bytes > max)
			max = p->total.live_bytes;
		if (v->resident && p->total.has_resident && p->total.resident.resident_bytes > max)
			max = p->total.resident.resident_bytes;
	}
	rows = max_rows && max_rows < v->npoints ? max_rows : v->npoints;
	if (v->resident)
		buf_printf(out, "%10s  %10s  %10s  %-*s  %s\n", "time", "live", "resident",
			   BAR_WIDTH + 2, "# live, . resident", "allocs/s");
	else
		buf_printf(out, "%10s  %10s  %-*s  %s\n", "time", "live", BAR_WIDTH + 2, "",
			   "allocs/s");
	for (uint32_t r = 0; r < rows; r++) {
		/* evenly spaced, the last row always the newest point */
		uint32_t i = rows == 1 ? v->npoints - 1
				       : (uint32_t)((uint64_t)r * (v->npoints - 1) / (rows - 1));
		const struct snap_timeline_point *p = &v->points[i];
		uint64_t resident = p->total.has_resident ? p->total.resident.resident_bytes : 0;

		if (i == last)
			continue;
		format_size(sz, sizeof(sz), (int64_t)p->total.live_bytes, 0);
		buf_printf(out, "%9.3fs  %10s  ", ns_to_seconds(p->time_ns), sz);
		if (v->resident) {
			if (p->total.has_resident)
				format_size(rsz, sizeof(rsz), (int64_t)resident, 0);
			buf_printf(out, "%10s  ", p->total.has_resident ? rsz : "-");
		}
		put_bar(out, p->total.live_bytes, resident, max);
		/* the rate since the row above, so no burst falls between rows */
		buf_printf(out, "  %.0f", series_rate(v, last == UINT32_MAX ? 0 : last, i));
		if (v->cgroup && p->total.has_cgroup) { /* the limit beside the heap */
			char use[32], lim[32];

			format_size(use, sizeof(use), (int64_t)p->total.cgroup_usage_bytes, 0);
			if (p->total.cgroup_limit_bytes == MT_CGROUP_NO_LIMIT)
				buf_printf(out, "  cgroup %s, no limit", use);
			else {
				format_size(lim, sizeof(lim), (int64_t)p->total.cgroup_limit_bytes,
					    0);
				buf_printf(out, "  cgroup %s of %s", use, lim);
			}
		}
		if (v->ncgroups)
			text_cgroup_points(out, &v->cgroup_points[(size_t)i * v->ncgroups], v);
		buf_printf(out, "\n");
		last = i;
	}
}

void render_timeline(struct buf *out, const struct series *v, const struct render_opts *o)
{
	if (o->format == RENDER_JSON)
		json_timeline(out, v, o);
	else
		text_timeline(out, v, o->rows);
}
