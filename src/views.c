// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * diff, peak, leaks, timeline and watch (see views.h). Every row comes from
 * group.c, so a "function" or "file:line" means the same in every view. The
 * text form prints tracemalloc's statistic lines; the JSON form gives exact
 * integers under the names of docs/metrics.md.
 */
#include "views.h"
#include "json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LINE_MAX_LEN 8192
#define BAR_WIDTH    40

static double seconds(uint64_t ns)
{
	return (double)ns / 1e9;
}

static void kv_i64(struct json_writer *w, const char *key, int64_t v)
{
	json_key(w, key);
	json_i64(w, v);
}

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
	render_text(b, line);
	buf_put(b, "\n", 1);
}

static void text_frames(struct buf *b, const struct snap_stack *st)
{
	for (uint32_t j = 0; st && j < st->nframes; j++)
		render_text_frame(b, st->frames[j]);
	if (st && !st->nframes)
		buf_printf(b, "    (no stack)\n");
}

static void json_frames(struct json_writer *w, const struct snap_stack *st)
{
	json_key(w, "frames");
	json_begin_array(w);
	for (uint32_t j = 0; st && j < st->nframes; j++)
		render_json_frame(w, st->frames[j]);
	json_end_array(w);
}

/* One group row as JSON: its key and totals (all of them with full), and
 * its frames when grouped by stack. */
static void json_group_row(struct json_writer *w, const struct group_row *r, int by, int full)
{
	json_begin_object(w);
	json_kv_string(w, "key", r->key);
	json_kv_u64(w, "peak_live_bytes", r->t.peak_live_bytes);
	json_kv_u64(w, "live_bytes", r->t.live_bytes);
	json_kv_u64(w, "live_allocations", r->t.live_allocations);
	json_kv_u64(w, "allocations", r->t.allocations);
	json_kv_u64(w, "bytes_allocated", r->t.bytes_allocated);
	if (full) {
		json_kv_u64(w, "frees", r->t.frees);
		json_kv_u64(w, "bytes_freed", r->t.bytes_freed);
		json_kv_u64(w, "stacks", r->nstacks);
	}
	if (by == GROUP_STACK)
		json_frames(w, r->stack);
	json_end_object(w);
}

/* "entries": the first n rows of t. */
static void json_group_rows(struct json_writer *w, const struct group_table *t, size_t n, int by,
			    int full)
{
	json_key(w, "entries");
	json_begin_array(w);
	for (size_t k = 0; k < n; k++)
		json_group_row(w, &t->rows[k], by, full);
	json_end_array(w);
}

static void finish_json(struct buf *out)
{
	buf_put(out, "\n", 1);
}

/* ---- diff ---------------------------------------------------------------- */

struct diff_row {
	const struct group_row *now; /* NULL: vanished */
	const struct group_row *was; /* NULL: new */
	int64_t size_diff;
	int64_t count_diff;
};

static const struct group_totals zero_totals;

static const struct group_totals *totals_of(const struct group_row *r)
{
	return r ? &r->t : &zero_totals;
}

static uint64_t abs64(int64_t v)
{
	return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

static int diff_cmp(const void *a, const void *b)
{
	const struct diff_row *x = a, *y = b;
	const struct group_row *kx = x->now ? x->now : x->was, *ky = y->now ? y->now : y->was;

	/* tracemalloc's order: growth, then size, then count growth, then count */
	if (abs64(x->size_diff) != abs64(y->size_diff))
		return abs64(x->size_diff) > abs64(y->size_diff) ? -1 : 1;
	if (totals_of(x->now)->live_bytes != totals_of(y->now)->live_bytes)
		return totals_of(x->now)->live_bytes > totals_of(y->now)->live_bytes ? -1 : 1;
	if (abs64(x->count_diff) != abs64(y->count_diff))
		return abs64(x->count_diff) > abs64(y->count_diff) ? -1 : 1;
	return strcmp(kx->key, ky->key);
}

/* "new": nothing was live in the group before; "vanished": nothing is now. */
static const char *diff_status(const struct diff_row *d)
{
	if (!totals_of(d->was)->live_allocations)
		return "new";
	if (!totals_of(d->now)->live_allocations)
		return "vanished";
	return d->size_diff || d->count_diff ? "changed" : "unchanged";
}

void render_diff(struct buf *out, const struct snapshot *old, const struct snapshot *new,
		 const struct view_opts *o)
{
	struct group_table a, b;
	struct diff_row *rows;
	size_t n = 0, i = 0, j = 0, shown;
	char line[LINE_MAX_LEN], label[4096], sz[32], dsz[32];
	/* NEW may be the older one: the interval is signed */
	double interval = ((double)new->created_unix_ns - (double)old->created_unix_ns) / 1e9;

	group_snapshot(old, o->by, o->cumulative, &a);
	group_snapshot(new, o->by, o->cumulative, &b);
	rows = xcalloc(a.nrows + b.nrows + 1, sizeof(*rows));
	while (i < a.nrows || j < b.nrows) {
		int c = i == a.nrows ? 1 : j == b.nrows ? -1 : strcmp(a.rows[i].key, b.rows[j].key);
		struct diff_row *d = &rows[n++];

		d->was = c <= 0 ? &a.rows[i++] : NULL;
		d->now = c >= 0 ? &b.rows[j++] : NULL;
		/* as tracemalloc, only live memory is compared: nothing live, no row */
		if (!totals_of(d->was)->live_allocations && !totals_of(d->now)->live_allocations) {
			n--;
			continue;
		}
		d->size_diff =
		    (int64_t)(totals_of(d->now)->live_bytes - totals_of(d->was)->live_bytes);
		d->count_diff = (int64_t)(totals_of(d->now)->live_allocations -
					  totals_of(d->was)->live_allocations);
	}
	if (n)
		qsort(rows, n, sizeof(*rows), diff_cmp);
	shown = o->top && o->top < n ? o->top : n;

	if (o->format == RENDER_JSON) {
		struct json_writer w;

		json_init(&w, out, o->pretty);
		json_begin_object(&w);
		json_kv_string(&w, "by", group_by_name(o->by));
		json_key(&w, "cumulative");
		json_bool(&w, a.cumulative);
		json_kv_u64(&w, "live_bytes", new->totals.live_bytes);
		kv_i64(&w, "live_bytes_diff",
		       (int64_t)(new->totals.live_bytes - old->totals.live_bytes));
		json_kv_u64(&w, "live_allocations", new->totals.live_allocations);
		kv_i64(&w, "live_allocations_diff",
		       (int64_t)(new->totals.live_allocations - old->totals.live_allocations));
		json_kv_double(&w, "interval", interval);
		json_kv_u64(&w, "groups_total", n);
		json_key(&w, "entries");
		json_begin_array(&w);
		for (size_t k = 0; k < shown; k++) {
			const struct diff_row *d = &rows[k];
			const struct group_totals *now = totals_of(d->now),
						  *was = totals_of(d->was);

			json_begin_object(&w);
			json_kv_string(&w, "key", (d->now ? d->now : d->was)->key);
			json_kv_string(&w, "status", diff_status(d));
			json_kv_u64(&w, "live_bytes", now->live_bytes);
			kv_i64(&w, "live_bytes_diff", d->size_diff);
			json_kv_u64(&w, "live_allocations", now->live_allocations);
			kv_i64(&w, "live_allocations_diff", d->count_diff);
			json_kv_u64(&w, "allocations", now->allocations);
			kv_i64(&w, "allocations_diff",
			       (int64_t)(now->allocations - was->allocations));
			json_kv_u64(&w, "bytes_allocated", now->bytes_allocated);
			kv_i64(&w, "bytes_allocated_diff",
			       (int64_t)(now->bytes_allocated - was->bytes_allocated));
			if (o->by == GROUP_STACK)
				json_frames(&w, (d->now ? d->now : d->was)->stack);
			json_end_object(&w);
		}
		json_end_array(&w);
		json_end_object(&w);
		finish_json(out);
		goto out;
	}

	group_format_size(sz, sizeof(sz), (int64_t) new->totals.live_bytes, 0);
	group_format_size(dsz, sizeof(dsz),
			  (int64_t)(new->totals.live_bytes - old->totals.live_bytes), 1);
	buf_printf(out,
		   "live %s (%s) in %" PRIu64 " blocks (%+" PRId64 ") over %.1f s; by %s%s, "
		   "%zu of %zu groups, largest growth first\n",
		   sz, dsz, new->totals.live_allocations,
		   (int64_t)(new->totals.live_allocations - old->totals.live_allocations), interval,
		   group_by_name(o->by), a.cumulative ? " (cumulative)" : "", shown, n);
	for (size_t k = 0; k < shown; k++) {
		const struct diff_row *d = &rows[k];
		const struct group_row *r = d->now ? d->now : d->was;

		row_label(r, o->by, label, sizeof(label));
		group_format_diff_line(line, sizeof(line), label, totals_of(d->now)->live_bytes,
				       totals_of(d->was)->live_bytes,
				       totals_of(d->now)->live_allocations,
				       totals_of(d->was)->live_allocations);
		render_text(out, line);
		if (!totals_of(d->was)->live_allocations || !totals_of(d->now)->live_allocations)
			buf_printf(out, " [%s]", diff_status(d));
		buf_put(out, "\n", 1);
		if (o->by == GROUP_STACK)
			text_frames(out, r->stack);
	}
out:
	free(rows);
	group_free(&a);
	group_free(&b);
}

/* ---- peak ---------------------------------------------------------------- */

void render_peak(struct buf *out, const struct snapshot *s, const struct view_opts *o)
{
	struct group_table t;
	uint64_t sum = 0, shown_sum = 0;
	size_t n = 0, shown;
	char line[LINE_MAX_LEN], label[4096], sz[32], now[32];

	group_snapshot(s, o->by, o->cumulative, &t);
	group_sort(&t, SNAP_SORT_PEAK);
	while (n < t.nrows && t.rows[n].t.peak_live_bytes)
		n++;
	shown = o->top && o->top < n ? o->top : n;
	for (size_t k = 0; k < n; k++) {
		sum += t.rows[k].t.peak_live_bytes;
		if (k < shown)
			shown_sum += t.rows[k].t.peak_live_bytes;
	}
	/* the rows the daemon kept (it sends the top ones) */
	n += t.rest_rows_peak;
	sum += t.rest.peak_live_bytes;

	if (o->format == RENDER_JSON) {
		struct json_writer w;

		json_init(&w, out, o->pretty);
		json_begin_object(&w);
		json_kv_u64(&w, "peak_live_bytes", s->totals.peak_live_bytes);
		json_kv_double(&w, "peak_time", seconds(s->totals.peak_time_ns));
		json_kv_u64(&w, "live_bytes", s->totals.live_bytes);
		json_kv_string(&w, "by", group_by_name(o->by));
		json_key(&w, "cumulative");
		json_bool(&w, t.cumulative);
		json_kv_u64(&w, "groups_total", n);
		json_kv_u64(&w, "groups_peak_live_bytes", sum);
		json_group_rows(&w, &t, shown, o->by, 0);
		json_end_object(&w);
		finish_json(out);
		group_free(&t);
		return;
	}

	group_format_size(sz, sizeof(sz), (int64_t)s->totals.peak_live_bytes, 0);
	buf_printf(out,
		   "peak_live_bytes %" PRIu64 " (%s) at %.3f s; live at that moment, by %s%s "
		   "(%zu of %zu groups):\n",
		   s->totals.peak_live_bytes, sz, seconds(s->totals.peak_time_ns),
		   group_by_name(o->by), t.cumulative ? " (cumulative)" : "", shown, n);
	for (size_t k = 0; k < shown; k++) {
		const struct group_row *r = &t.rows[k];

		row_label(r, o->by, label, sizeof(label));
		group_format_size(sz, sizeof(sz), (int64_t)r->t.peak_live_bytes, 0);
		group_format_size(now, sizeof(now), (int64_t)r->t.live_bytes, 0);
		if (r->t.peak_live_bytes >= 10 * 1024) /* the exact count, where sz rounds */
			snprintf(line, sizeof(line), "%s: at peak=%s (%" PRIu64 " B), live now=%s",
				 label, sz, r->t.peak_live_bytes, now);
		else
			snprintf(line, sizeof(line), "%s: at peak=%s, live now=%s", label, sz, now);
		text_label_line(out, line);
		if (o->by == GROUP_STACK)
			text_frames(out, r->stack);
	}
	if (shown < n)
		buf_printf(out, "... %zu more groups hold %" PRIu64 " B at the peak\n", n - shown,
			   sum - shown_sum);
	if (!t.cumulative && sum != s->totals.peak_live_bytes)
		buf_printf(out,
			   "warning: the groups sum to %" PRIu64 " B, not peak_live_bytes; the "
			   "snapshot does not hold every stack\n",
			   sum);
	group_free(&t);
}

/* ---- leaks --------------------------------------------------------------- */

struct leak_row {
	uint32_t stack;
	uint64_t blocks;
	uint64_t bytes;
	uint64_t oldest_ns;
	uint64_t youngest_ns;
};

static int leak_cmp(const void *a, const void *b)
{
	const struct leak_row *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->blocks != y->blocks)
		return x->blocks > y->blocks ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

void render_leaks(struct buf *out, const struct snapshot *s, const struct view_opts *o)
{
	struct leak_row *rows = xcalloc(s->nstacks + 1, sizeof(*rows));
	uint64_t blocks = 0, bytes = 0;
	size_t n = 0, shown;
	char sz[32], total[32], oldest[32], youngest[32], limit[32];

	for (uint32_t i = 0; i < s->nstacks; i++)
		rows[i].stack = i;
	/* the daemon counted them (leaks section): its top stacks, and the totals */
	for (uint32_t i = 0; s->has_leaks && i < s->nstacks; i++) {
		rows[i].blocks = s->leaks.stacks[i].blocks;
		rows[i].bytes = s->leaks.stacks[i].bytes;
		rows[i].oldest_ns = s->leaks.stacks[i].oldest_ns;
		rows[i].youngest_ns = s->leaks.stacks[i].youngest_ns;
	}
	if (s->has_leaks) {
		blocks = s->leaks.blocks;
		bytes = s->leaks.bytes;
	}
	for (uint32_t i = 0; !s->has_leaks && i < s->nblocks; i++) {
		const struct snap_block *b = &s->blocks[i];
		struct leak_row *r = &rows[b->stack];

		if (b->age_ns < o->older_than)
			continue;
		if (!r->blocks || b->age_ns > r->oldest_ns)
			r->oldest_ns = b->age_ns;
		if (!r->blocks || b->age_ns < r->youngest_ns)
			r->youngest_ns = b->age_ns;
		r->blocks++;
		r->bytes += b->size;
		blocks++;
		bytes += b->size;
	}
	if (s->nstacks)
		qsort(rows, s->nstacks, sizeof(*rows), leak_cmp);
	while (n < s->nstacks && rows[n].blocks)
		n++;
	shown = o->top && o->top < n ? o->top : n;
	if (s->has_leaks)
		n = (size_t)s->leaks.stacks_total;

	if (o->format == RENDER_JSON) {
		struct json_writer w;

		json_init(&w, out, o->pretty);
		json_begin_object(&w);
		json_kv_double(&w, "older_than", seconds(o->older_than));
		json_kv_u64(&w, "blocks", blocks);
		json_kv_u64(&w, "bytes", bytes);
		json_kv_u64(&w, "live_allocations", s->totals.live_allocations);
		json_kv_u64(&w, "live_bytes", s->totals.live_bytes);
		json_kv_u64(&w, "stacks_total", n);
		json_key(&w, "entries");
		json_begin_array(&w);
		for (size_t k = 0; k < shown; k++) {
			const struct leak_row *r = &rows[k];

			json_begin_object(&w);
			json_kv_u64(&w, "pid", s->stacks[r->stack].pid);
			json_kv_u64(&w, "blocks", r->blocks);
			json_kv_u64(&w, "bytes", r->bytes);
			json_kv_double(&w, "oldest_age", seconds(r->oldest_ns));
			json_kv_double(&w, "youngest_age", seconds(r->youngest_ns));
			json_frames(&w, &s->stacks[r->stack]);
			json_end_object(&w);
		}
		json_end_array(&w);
		json_end_object(&w);
		finish_json(out);
		free(rows);
		return;
	}

	render_duration(limit, sizeof(limit), o->older_than);
	group_format_size(total, sizeof(total), (int64_t)bytes, 0);
	group_format_size(sz, sizeof(sz), (int64_t)s->totals.live_bytes, 0);
	buf_printf(out,
		   "%" PRIu64 " live blocks (%s) older than %s, of %" PRIu64 " live (%s); "
		   "%zu of %zu stacks, most bytes first\n",
		   blocks, total, limit, s->totals.live_allocations, sz, shown, n);
	for (size_t k = 0; k < shown; k++) {
		const struct leak_row *r = &rows[k];

		group_format_size(sz, sizeof(sz), (int64_t)r->bytes, 0);
		render_duration(oldest, sizeof(oldest), r->oldest_ns);
		render_duration(youngest, sizeof(youngest), r->youngest_ns);
		buf_printf(out, "\n#%zu  %" PRIu64 " blocks, %" PRIu64 " B", k + 1, r->blocks,
			   r->bytes);
		if (r->bytes >= 10 * 1024)
			buf_printf(out, " (%s)", sz);
		buf_printf(out, ", age %s to %s\n", youngest, oldest);
		text_frames(out, &s->stacks[r->stack]);
	}
	free(rows);
}

/* ---- timeline ------------------------------------------------------------ */

/* Allocations per second between points from and i; 0 for the first. */
static double point_rate(const struct snapshot *s, uint32_t from, uint32_t i)
{
	const struct snap_timeline_point *a, *b;

	if (!i || from >= i)
		return 0;
	a = &s->timeline[from];
	b = &s->timeline[i];
	if (b->time_ns <= a->time_ns)
		return 0;
	return (double)(b->allocations - a->allocations) / seconds(b->time_ns - a->time_ns);
}

void render_timeline(struct buf *out, const struct snapshot *s, const struct view_opts *o)
{
	uint64_t max = 0;
	uint32_t rows, last = UINT32_MAX;
	char sz[32], peak[32];

	if (o->format == RENDER_JSON) {
		struct json_writer w;

		json_init(&w, out, o->pretty);
		json_begin_object(&w);
		json_kv_double(&w, "interval", seconds(s->timeline_interval_ns));
		json_kv_u64(&w, "peak_live_bytes", s->totals.peak_live_bytes);
		json_kv_double(&w, "peak_time", seconds(s->totals.peak_time_ns));
		json_key(&w, "points");
		json_begin_array(&w);
		for (uint32_t i = 0; i < s->ntimeline; i++) {
			const struct snap_timeline_point *p = &s->timeline[i];

			json_begin_object(&w);
			json_kv_double(&w, "time", seconds(p->time_ns));
			json_kv_u64(&w, "live_bytes", p->live_bytes);
			json_kv_u64(&w, "live_allocations", p->live_allocations);
			json_kv_u64(&w, "allocations", p->allocations);
			json_kv_u64(&w, "bytes_allocated", p->bytes_allocated);
			json_key(&w, "allocation_rate");
			if (i)
				json_double(&w, point_rate(s, i - 1, i));
			else
				json_null(&w);
			json_end_object(&w);
		}
		json_end_array(&w);
		json_end_object(&w);
		finish_json(out);
		return;
	}

	group_format_size(peak, sizeof(peak), (int64_t)s->totals.peak_live_bytes, 0);
	buf_printf(
	    out, "memory over time: %" PRIu32 " points, one every %.3f s; peak %s at %.3f s\n",
	    s->ntimeline, seconds(s->timeline_interval_ns), peak, seconds(s->totals.peak_time_ns));
	if (!s->ntimeline) {
		buf_printf(out, "no samples yet\n");
		return;
	}
	for (uint32_t i = 0; i < s->ntimeline; i++)
		if (s->timeline[i].live_bytes > max)
			max = s->timeline[i].live_bytes;
	rows = o->rows && o->rows < s->ntimeline ? o->rows : s->ntimeline;
	buf_printf(out, "%10s  %10s  %-*s  %s\n", "time", "live", BAR_WIDTH + 2, "", "allocs/s");
	for (uint32_t r = 0; r < rows; r++) {
		/* evenly spaced, the last row always the newest point */
		uint32_t i = rows == 1 ? s->ntimeline - 1
				       : (uint32_t)((uint64_t)r * (s->ntimeline - 1) / (rows - 1));
		const struct snap_timeline_point *p = &s->timeline[i];
		int bar = max ? (int)((p->live_bytes * (double)BAR_WIDTH) / (double)max + 0.5) : 0;

		if (i == last)
			continue;
		group_format_size(sz, sizeof(sz), (int64_t)p->live_bytes, 0);
		buf_printf(out, "%9.3fs  %10s  |", seconds(p->time_ns), sz);
		for (int c = 0; c < BAR_WIDTH; c++)
			buf_put(out, c < bar ? "#" : " ", 1);
		/* the rate since the row above, so no burst falls between rows */
		buf_printf(out, "|  %.0f\n", point_rate(s, last == UINT32_MAX ? 0 : last, i));
		last = i;
	}
}

/* ---- watch --------------------------------------------------------------- */

struct growth {
	const struct group_row *row;
	int64_t grew;
};

static int growth_cmp(const void *a, const void *b)
{
	const struct growth *x = a, *y = b;

	if (x->grew != y->grew)
		return x->grew > y->grew ? -1 : 1;
	return strcmp(x->row->key, y->row->key);
}

void render_watch(struct buf *out, struct watch_state *w, const struct snapshot *s,
		  const struct view_opts *o, int tty)
{
	struct group_table t;
	struct growth *g;
	size_t n = 0, shown;
	double dt = 0, rate = 0, byte_rate = 0;
	char live[32], peak[32], brate[32], clock[16], label[4096], line[LINE_MAX_LEN];
	time_t now = (time_t)(s->created_unix_ns / 1000000000ull);
	struct tm tm;

	group_snapshot(s, o->by, o->cumulative, &t);
	if (w->have_prev && s->uptime_ns > w->prev_uptime_ns) {
		dt = seconds(s->uptime_ns - w->prev_uptime_ns);
		rate = (double)(s->totals.allocations - w->prev_allocations) / dt;
		byte_rate = (double)(s->totals.bytes_allocated - w->prev_bytes_allocated) / dt;
	}
	g = xcalloc(t.nrows + 1, sizeof(*g));
	for (size_t i = 0; i < t.nrows; i++) {
		const struct group_row *was =
		    w->have_prev ? group_find(&w->prev, t.rows[i].key) : NULL;
		/* the first refresh: growth since tracing began */
		int64_t grew = (int64_t)(t.rows[i].t.live_bytes - (was ? was->t.live_bytes : 0));

		if (grew > 0)
			g[n++] = (struct growth){&t.rows[i], grew};
	}
	if (n)
		qsort(g, n, sizeof(*g), growth_cmp);
	shown = o->top && o->top < n ? o->top : n;

	localtime_r(&now, &tm);
	strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
	group_format_size(live, sizeof(live), (int64_t)s->totals.live_bytes, 0);
	group_format_size(peak, sizeof(peak), (int64_t)s->totals.peak_live_bytes, 0);
	group_format_size(brate, sizeof(brate), (int64_t)byte_rate, 0);
	if (tty)
		buf_printf(out, "\033[H\033[2J");
	buf_printf(out,
		   "%s live %s in %" PRIu64 " blocks, %.0f allocs/s (%s/s), peak %s, "
		   "lost %" PRIu64 "\n",
		   clock, live, s->totals.live_allocations, rate, brate, peak,
		   snapshot_events_lost(s));
	for (size_t k = 0; k < shown; k++) {
		const struct group_row *r = g[k].row;
		char grew[32];

		row_label(r, o->by, label, sizeof(label));
		group_format_size(grew, sizeof(grew), g[k].grew, 1);
		group_format_line(line, sizeof(line), label, r->t.live_bytes,
				  r->t.live_allocations);
		buf_printf(out, "  %10s  ", grew);
		text_label_line(out, line);
	}
	if (tty)
		buf_printf(out, "\n(q or Ctrl-C quits; growth since the last refresh, by %s)\n",
			   group_by_name(o->by));

	/* keep keys and totals for the next refresh */
	watch_state_free(w);
	w->prev = t;
	for (size_t i = 0; i < w->prev.nrows; i++)
		w->prev.rows[i].stack = NULL;
	w->have_prev = 1;
	w->prev_uptime_ns = s->uptime_ns;
	w->prev_allocations = s->totals.allocations;
	w->prev_bytes_allocated = s->totals.bytes_allocated;
	free(g);
}

void watch_state_free(struct watch_state *w)
{
	group_free(&w->prev);
	w->have_prev = 0;
}

/* ---- report --by --------------------------------------------------------- */

/*
 * tracemalloc's Snapshot.statistics(key_type, cumulative): the stacks
 * grouped by function, file, line, module or whole stack, largest first by
 * the report's sort key; each row "key: size=..., count=..., average=...",
 * where size and count are live bytes and live blocks (or, with
 * --sort allocated/count, bytes and calls allocated).
 */
void render_report_grouped(struct buf *out, const struct snapshot *s, const struct view_opts *o,
			   int sort)
{
	struct group_table t;
	size_t n = 0, shown;
	char line[LINE_MAX_LEN], label[4096], sz[32];
	int allocated = sort == SNAP_SORT_ALLOCATED || sort == SNAP_SORT_COUNT;

	group_snapshot(s, o->by, o->cumulative, &t);
	group_sort(&t, sort);
	for (n = 0; n < t.nrows; n++) {
		const struct group_totals *g = &t.rows[n].t;

		if (!(allocated ? g->allocations : g->live_allocations))
			break;
	}
	shown = o->top && o->top < n ? o->top : n;
	/* the rows the daemon kept (it sends the top ones) */
	n += allocated ? t.rest_rows_allocated : t.rest_rows_live;

	if (o->format == RENDER_JSON) {
		struct json_writer w;

		json_init(&w, out, o->pretty);
		json_begin_object(&w);
		json_kv_string(&w, "by", group_by_name(o->by));
		json_key(&w, "cumulative");
		json_bool(&w, t.cumulative);
		json_kv_string(&w, "sort", snap_sort_name(sort));
		json_kv_u64(&w, "live_bytes", s->totals.live_bytes);
		json_kv_u64(&w, "live_allocations", s->totals.live_allocations);
		json_kv_u64(&w, "groups_total", n);
		json_group_rows(&w, &t, shown, o->by, 1);
		json_end_object(&w);
		finish_json(out);
		group_free(&t);
		return;
	}

	group_format_size(sz, sizeof(sz), (int64_t)s->totals.live_bytes, 0);
	buf_printf(out,
		   "live %s in %" PRIu64 " blocks; %s by %s%s, largest first (%zu of %zu "
		   "groups)\n",
		   sz, s->totals.live_allocations, allocated ? "allocated" : "live",
		   group_by_name(o->by), t.cumulative ? " (cumulative)" : "", shown, n);
	for (size_t k = 0; k < shown; k++) {
		const struct group_row *r = &t.rows[k];

		row_label(r, o->by, label, sizeof(label));
		if (allocated)
			group_format_line(line, sizeof(line), label, r->t.bytes_allocated,
					  r->t.allocations);
		else
			group_format_line(line, sizeof(line), label, r->t.live_bytes,
					  r->t.live_allocations);
		text_label_line(out, line);
		if (o->by == GROUP_STACK)
			text_frames(out, r->stack);
	}
	group_free(&t);
}
