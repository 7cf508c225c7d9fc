// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `report --format html`: one self-contained page. The snapshot goes in as
 * JSON; the flame graph is drawn by d3-flame-graph (with d3-selection), both
 * from the npm registry, embedded at build time (src/ctl/render/html/embed.py writes
 * them into $(O)/html_assets.c); src/ctl/render/html/report.js builds the page: totals,
 * a flame graph of live, peak or allocated bytes (click to zoom, search),
 * memory over time from the snapshot's timeline, and the top stacks; with
 * resident memory in the snapshot, memory.js draws the chart again with the
 * resident line beside the live heap (a page of an older snapshot is then
 * byte for byte what it was: tests/golden). With --pid, the totals and the
 * chart are that pid's own (ctl/view/series.h), and pid.js says so. A
 * Content-Security-Policy forbids every network request, so the page works
 * offline and leaks nothing.
 */
#include "ctl/render/html.h"
#include "ctl/render/format.h"
#include "ctl/render/json.h"
#include "ctl/view/resident.h"
#include "ctl/view/series.h"
#include "common/strtab.h"

#include <inttypes.h>
#include <stdlib.h>

extern const unsigned char html_d3_selection_js[], html_flamegraph_js[], html_flamegraph_css[],
    html_report_js[], html_report_css[], html_memory_js[], html_memory_css[], html_pid_js[],
    html_cgroup_js[], html_cgroup_css[];
extern const size_t html_d3_selection_js_len, html_flamegraph_js_len, html_flamegraph_css_len,
    html_report_js_len, html_report_css_len, html_memory_js_len, html_memory_css_len,
    html_pid_js_len, html_cgroup_js_len, html_cgroup_css_len;

/* Copy JSON into a <script> element: '<' only occurs in strings, where \u003c
 * means the same and cannot close the element. */
static void put_script_json(struct buf *out, const struct buf *json)
{
	size_t run = 0;

	for (size_t i = 0; i < json->len; i++) {
		if (json->data[i] != '<') {
			run++;
			continue;
		}
		buf_put(out, json->data + i - run, run);
		buf_printf(out, "\\u003c");
		run = 0;
	}
	buf_put(out, json->data + json->len - run, run);
}

static void put_html_text(struct buf *out, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '<')
			buf_printf(out, "&lt;");
		else if (*s == '>')
			buf_printf(out, "&gt;");
		else if (*s == '&')
			buf_printf(out, "&amp;");
		else if ((unsigned char)*s >= 0x20)
			buf_put(out, s, 1);
	}
}

/*
 * Names and sites of frames, each made once: a big heap repeats the same few
 * thousand frames in every stack, and a decoded or built snapshot shares them
 * (frame_table), so a frame of the table is looked up by its index.
 */
struct frame_memo {
	const struct snapshot *s;
	struct strtab names, sites;
	uint32_t *name_of, *site_of; /* per frame of the table: index + 1, or 0 */
};

static int table_index(const struct frame_memo *m, const struct snap_frame *f, size_t *i)
{
	const struct snap_frame *t = m->s->frame_table;

	if (!t || f < t || f >= t + m->s->nframe_table)
		return 0;
	*i = (size_t)(f - t);
	return 1;
}

static size_t frame_name(struct frame_memo *m, struct buf *tmp, const struct snap_frame *f)
{
	size_t i, k;
	int in_table = table_index(m, f, &i);

	if (in_table && m->name_of[i])
		return m->name_of[i] - 1;
	tmp->len = 0;
	format_frame_name(tmp, f);
	k = strtab_intern(&m->names, (const char *)tmp->data, tmp->len);
	if (in_table)
		m->name_of[i] = (uint32_t)k + 1;
	return k;
}

static size_t frame_site(struct frame_memo *m, struct buf *tmp, const struct snap_frame *f)
{
	size_t i, k;
	int in_table = table_index(m, f, &i);

	if (in_table && m->site_of[i])
		return m->site_of[i] - 1;
	tmp->len = 0;
	buf_printf(tmp, "%s:%" PRId64, f->file, f->line);
	k = strtab_intern(&m->sites, (const char *)tmp->data, tmp->len);
	if (in_table)
		m->site_of[i] = (uint32_t)k + 1;
	return k;
}

/*
 * "resident": the resident series ([seconds, resident_bytes] of the points
 * that have it), its peak, and the totals over the targets traced then (of
 * the series' pid, or all).
 */
static void json_resident(struct json_writer *w, const struct snapshot *s, const struct series *v)
{
	struct resident_view rv;

	resident_view_of_pid(&rv, s, v->pid);
	json_key(w, "resident");
	json_begin_object(w);
	json_kv_u64(w, "targets", rv.targets);
	json_key(w, "total");
	json_begin_object(w);
	for (size_t i = 0; i < MT_NRESIDENT; i++)
		json_kv_u64(w, mt_resident_descs[i].name, mt_resident_get(&rv.total, i));
	json_end_object(w);
	json_key(w, "peak_bytes");
	if (v->has_peak)
		json_u64(w, v->peak_bytes);
	else
		json_null(w);
	json_kv_double(w, "peak_time", ns_to_seconds(v->peak_time_ns));
	json_key(w, "timeline");
	json_begin_array(w);
	for (uint32_t i = 0; i < v->npoints; i++) {
		if (!v->points[i].total.has_resident)
			continue;
		json_begin_array(w);
		json_double(w, ns_to_seconds(v->points[i].time_ns));
		json_u64(w, v->points[i].total.resident.resident_bytes);
		json_end_array(w);
	}
	json_end_array(w);
	json_end_object(w);
}

/* Some target's cgroup was read: the page gets cgroup.js (older snapshots' pages stay as
 * they were). */
static int has_cgroups(const struct snapshot *s)
{
	for (uint32_t i = 0; i < s->ntargets; i++)
		if (s->targets[i].cgroup.known)
			return 1;
	return 0;
}

/* A target's labels, "cgroup": {path, unit, container, runtime, pod}, when read. */
static void json_target_cgroup(struct json_writer *w, const struct snap_cgroup *c)
{
	if (!c->known || !c->path)
		return;
	json_key(w, "cgroup");
	json_begin_object(w);
	json_kv_string(w, "path", c->path);
	json_kv_string(w, "unit", c->unit);
	json_kv_string(w, "container", c->container);
	json_kv_string(w, "runtime", c->runtime);
	json_kv_string(w, "pod", c->pod);
	json_end_object(w);
}

/*
 * "cgroup": the memory cgroup of the series' pid over time, {path, points:
 * [seconds, usage, limit or null]} of the points that read it (a pid's
 * series only: the targets of every pid may be in several cgroups).
 */
static void json_series_cgroup(struct json_writer *w, const struct snapshot *s,
			       const struct series *v)
{
	const char *path = NULL;

	for (uint32_t i = 0; i < s->ntargets; i++)
		if (s->targets[i].pid == v->pid && s->targets[i].cgroup.known)
			path = s->targets[i].cgroup.memory_path ? s->targets[i].cgroup.memory_path
								: s->targets[i].cgroup.path;
	json_key(w, "cgroup");
	json_begin_object(w);
	json_kv_string(w, "path", path ? path : "?");
	json_key(w, "points");
	json_begin_array(w);
	for (uint32_t i = 0; i < v->npoints; i++) {
		const struct snap_figures *f = &v->points[i].total;

		if (!f->has_cgroup)
			continue;
		json_begin_array(w);
		json_double(w, ns_to_seconds(v->points[i].time_ns));
		json_u64(w, f->cgroup_usage_bytes);
		if (f->cgroup_limit_bytes == MT_CGROUP_NO_LIMIT)
			json_null(w);
		else
			json_u64(w, f->cgroup_limit_bytes);
		json_end_array(w);
	}
	json_end_array(w);
	json_end_object(w);
}

static void json_data(struct json_writer *w, const struct snapshot *s, const struct series *v,
		      const struct render_opts *o)
{
	struct buf name = {0};
	/* frame names, each once: stacks refer to them by index */
	struct frame_memo m = {.s = s};
	const struct strtab *names = &m.names;
	size_t nt = s->frame_table ? s->nframe_table : 0;

	m.name_of = xcalloc(nt ? nt : 1, sizeof(*m.name_of));
	m.site_of = xcalloc(nt ? nt : 1, sizeof(*m.site_of));

	json_begin_object(w);
	json_kv_string(w, "tracer_version", s->tracer_version);
	json_kv_u64(w, "created_unix_ns", s->created_unix_ns);
	json_kv_string(w, "sample", mt_sort_name(o->sample));
	json_kv_u64(w, "events_lost", snapshot_events_lost(s));
	render_json_walker(w, s);
	if (v->pid) /* the totals and memory over time are of that pid */
		json_kv_u64(w, "pid", v->pid);
	json_key(w, "totals");
	json_begin_object(w);
	render_json_counters(w, &v->live, 1);
	json_end_object(w);
	json_key(w, "targets");
	json_begin_array(w);
	for (uint32_t i = 0; i < s->ntargets; i++) {
		json_begin_object(w);
		json_kv_u64(w, "pid", s->targets[i].pid);
		json_kv_string(w, "command", s->targets[i].command);
		json_kv_string(w, "state", snap_target_state_name(s->targets[i].state));
		json_target_cgroup(w, &s->targets[i].cgroup);
		json_end_object(w);
	}
	json_end_array(w);
	json_key(w, "stacks");
	json_begin_array(w);
	for (uint32_t i = 0; i < s->nstacks; i++) {
		const struct snap_stack *st = &s->stacks[i];

		json_begin_object(w);
		json_kv_u64(w, "pid", st->pid);
		json_key(w, "frames"); /* indices into names, root first */
		json_begin_array(w);
		for (uint32_t j = st->nframes; j-- > 0;)
			json_u64(w, frame_name(&m, &name, st->frames[j]));
		json_end_array(w);
		json_key(w, "site");
		if (st->nframes && st->frames[0]->file) {
			size_t k = frame_site(&m, &name, st->frames[0]);

			json_string_len(w, m.sites.strs[k], m.sites.lens[k]);
		} else {
			json_null(w);
		}
		json_kv_u64(w, "live", st->t.live_bytes);
		json_kv_u64(w, "peak", st->t.peak_live_bytes);
		json_kv_u64(w, "allocated", st->t.bytes_allocated);
		json_kv_u64(w, "count", st->t.allocations);
		json_kv_u64(w, "live_allocations", st->t.live_allocations);
		json_end_object(w);
	}
	json_end_array(w);
	json_key(w, "timeline"); /* [seconds, live_bytes, live_allocations] */
	json_begin_array(w);
	for (uint32_t i = 0; i < v->npoints; i++) {
		json_begin_array(w);
		json_double(w, ns_to_seconds(v->points[i].time_ns));
		json_u64(w, v->points[i].total.live_bytes);
		json_u64(w, v->points[i].total.live_allocations);
		json_end_array(w);
	}
	json_end_array(w);
	json_key(w, "names");
	json_begin_array(w);
	for (size_t i = 0; i < strtab_count(names); i++)
		json_string(w, names->strs[i]);
	json_end_array(w);
	if (v->resident)
		json_resident(w, s, v);
	if (v->pid && v->cgroup)
		json_series_cgroup(w, s, v);
	json_end_object(w);
	strtab_free(&m.names);
	strtab_free(&m.sites);
	free(m.name_of);
	free(m.site_of);
	buf_free(&name);
}

void render_html(struct buf *out, const struct snapshot *s, const struct render_opts *o)
{
	struct json_writer w;
	struct buf json = {0};
	struct series v;
	const char *why;
	int cgroups = has_cgroups(s);

	/* memory over time of the pid asked for; of every target when the snapshot cannot say */
	if (!o->pid || series_build(&v, s, o->pid, &why))
		series_build(&v, s, 0, &why);

	buf_printf(out,
		   "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		   "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		   "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
		   "<meta name=\"generator\" content=\"memtrace ");
	put_html_text(out, s->tracer_version);
	buf_printf(out, "\">\n<title>memtrace report");
	if (s->ntargets && s->targets[0].command) {
		buf_printf(out, ": ");
		put_html_text(out, s->targets[0].command);
	}
	buf_printf(out, "</title>\n<style>\n");
	buf_put(out, html_flamegraph_css, html_flamegraph_css_len);
	buf_put(out, html_report_css, html_report_css_len);
	if (v.resident)
		buf_put(out, html_memory_css, html_memory_css_len);
	if (cgroups)
		buf_put(out, html_cgroup_css, html_cgroup_css_len);
	buf_printf(out, "</style>\n</head>\n<body>\n<main id=\"report\">"
			"<noscript>This report needs JavaScript.</noscript></main>\n"
			"<script type=\"application/json\" id=\"memtrace-data\">");
	json_init(&w, &json, 0);
	json_data(&w, s, &v, o);
	put_script_json(out, &json);
	buf_free(&json);
	buf_printf(out, "</script>\n<script>\n");
	buf_put(out, html_d3_selection_js, html_d3_selection_js_len);
	buf_printf(out, "\n</script>\n<script>\n");
	buf_put(out, html_flamegraph_js, html_flamegraph_js_len);
	buf_printf(out, "\n</script>\n<script>\n");
	buf_put(out, html_report_js, html_report_js_len);
	if (v.resident) {
		buf_printf(out, "\n</script>\n<script>\n");
		buf_put(out, html_memory_js, html_memory_js_len);
	}
	if (v.pid) {
		buf_printf(out, "\n</script>\n<script>\n");
		buf_put(out, html_pid_js, html_pid_js_len);
	}
	if (cgroups) {
		buf_printf(out, "\n</script>\n<script>\n");
		buf_put(out, html_cgroup_js, html_cgroup_js_len);
	}
	buf_printf(out, "\n</script>\n</body>\n</html>\n");
	series_free(&v);
}
