// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Formatting helpers (see format.h). Two byte formats on purpose: the
 * counters of stats and report print binary units with one decimal
 * (format_bytes), the tracemalloc-shaped views print tracemalloc's own
 * (format_size), so their lines read as tracemalloc's do. Then the pieces of
 * a snapshot several renderers print alike (frames, counters, lost events,
 * truncations). Strings from targets (symbol names, paths) are untrusted:
 * text goes through format_text().
 */
#include "ctl/render/format.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

double ns_to_seconds(uint64_t ns)
{
	return (double)ns / 1e9;
}

void format_bytes(char *dst, size_t len, uint64_t bytes)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)bytes;
	size_t u = 0;

	if (bytes < 1024) {
		snprintf(dst, len, "%" PRIu64 " B", bytes);
		return;
	}
	v /= 1024;
	/* Move up a unit when one decimal would round to 1024.0. */
	while (v >= 1023.95 && u + 1 < ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	snprintf(dst, len, "%.1f %s", v, units[u]);
}

void format_duration(char *dst, size_t len, uint64_t ns)
{
	uint64_t s = ns / 1000000000ull;

	if (s < 60)
		snprintf(dst, len, "%.1fs", ns_to_seconds(ns));
	else if (s < 3600)
		snprintf(dst, len, "%" PRIu64 "m %02" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(dst, len, "%" PRIu64 "h %02" PRIu64 "m %02" PRIu64 "s", s / 3600,
			 s / 60 % 60, s % 60);
	else
		snprintf(dst, len, "%" PRIu64 "d %02" PRIu64 "h %02" PRIu64 "m", s / 86400,
			 s / 3600 % 24, s / 60 % 60);
}

static void format_size_double(char *dst, size_t len, double size, int sign)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};

	for (size_t u = 0; u < ARRAY_SIZE(units); u++) {
		double mag = size < 0 ? -size : size;

		if (mag < 100 && u) {
			snprintf(dst, len, sign ? "%+.1f %s" : "%.1f %s", size, units[u]);
			return;
		}
		if (mag < 10 * 1024 || u + 1 == ARRAY_SIZE(units)) {
			snprintf(dst, len, sign ? "%+.0f %s" : "%.0f %s", size, units[u]);
			return;
		}
		size /= 1024;
	}
}

void format_size(char *dst, size_t len, int64_t bytes, int sign)
{
	format_size_double(dst, len, (double)bytes, sign);
}

static void format_average(char *dst, size_t len, uint64_t size, uint64_t count)
{
	char avg[32];

	if (!count) {
		dst[0] = '\0';
		return;
	}
	format_size_double(avg, sizeof(avg), (double)size / (double)count, 0);
	snprintf(dst, len, ", average=%s", avg);
}

void format_stat_line(char *dst, size_t len, const char *key, uint64_t size, uint64_t count)
{
	char sz[32], avg[48];

	format_size(sz, sizeof(sz), (int64_t)size, 0);
	format_average(avg, sizeof(avg), size, count);
	snprintf(dst, len, "%s: size=%s, count=%" PRIu64 "%s", key, sz, count, avg);
}

void format_stat_diff_line(char *dst, size_t len, const char *key, uint64_t size, uint64_t old_size,
			   uint64_t count, uint64_t old_count)
{
	char sz[32], dsz[32], avg[48];

	format_size(sz, sizeof(sz), (int64_t)size, 0);
	format_size(dsz, sizeof(dsz), (int64_t)(size - old_size), 1);
	format_average(avg, sizeof(avg), size, count);
	snprintf(dst, len, "%s: size=%s (%s), count=%" PRIu64 " (%+" PRId64 ")%s", key, sz, dsz,
		 count, (int64_t)(count - old_count), avg);
}

void format_text(struct buf *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t run = 0;

	for (size_t i = 0; p[i]; i++) {
		int c1 = p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f;

		if (p[i] >= 0x20 && p[i] != 0x7f && !c1) {
			run++;
			continue;
		}
		buf_put(out, p + i - run, run);
		buf_put(out, "?", 1);
		run = 0;
		i += c1;
	}
	buf_put(out, s + strlen(s) - run, run);
}

/* Append s for a folded line: control characters and ';' become '?'. */
static void format_folded_text(struct buf *out, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char c = (char)*p;

		if (*p < 0x20 || *p == 0x7f || c == ';')
			c = '?';
		buf_put(out, &c, 1);
	}
}

void format_frame_name(struct buf *out, const struct snap_frame *f)
{
	if (f->function) {
		format_folded_text(out, f->function);
	} else if (f->module) {
		format_folded_text(out, format_basename(f->module));
		buf_printf(out, "+0x%" PRIx64, f->offset);
	} else {
		buf_printf(out, "0x%" PRIx64, f->address);
	}
}

void format_site_name(struct buf *out, const struct snap_frame *f)
{
	format_frame_name(out, f);
	if (!f->file)
		return;
	buf_printf(out, " at ");
	format_folded_text(out, format_basename(f->file));
	if (f->line)
		buf_printf(out, ":%" PRId64, f->line);
}

const char *format_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

/* ---- pieces several renderers share ---- */

void render_text_frame(struct buf *out, const struct snap_frame *f)
{
	buf_printf(out, "    ");
	if (f->function && !f->module && !f->address && f->file) {
		/* a Python frame: function at file:line, no native location */
		format_text(out, f->function);
		buf_printf(out, " at ");
		format_text(out, f->file);
		buf_printf(out, ":%" PRId64 "\n", f->line);
		return;
	}
	if (f->function) {
		format_text(out, f->function);
		buf_printf(out, f->inlined ? " [inlined] (" : " (");
	}
	if (f->module) {
		format_text(out, format_basename(f->module));
		buf_printf(out, "+0x%" PRIx64, f->offset);
	} else {
		buf_printf(out, "0x%" PRIx64, f->address);
	}
	if (f->function)
		buf_printf(out, ")");
	if (f->file) {
		buf_printf(out, " at ");
		format_text(out, f->file);
		if (f->line)
			buf_printf(out, ":%" PRId64, f->line);
	}
	buf_printf(out, "\n");
}

void render_text_frames(struct buf *out, const struct snap_stack *st)
{
	for (uint32_t j = 0; st && j < st->nframes; j++)
		render_text_frame(out, st->frames[j]);
	if (st && !st->nframes)
		buf_printf(out, "    (no stack)\n");
}

static void json_frame(struct json_writer *w, const struct snap_frame *f)
{
	json_begin_object(w);
	json_kv_u64(w, "address", f->address);
	json_key(w, "offset");
	if (f->module)
		json_u64(w, f->offset);
	else
		json_null(w);
	json_kv_string(w, "function", f->function);
	json_kv_string(w, "module", f->module);
	json_kv_string(w, "file", f->file);
	json_key(w, "line");
	if (f->line)
		json_i64(w, f->line);
	else
		json_null(w);
	json_kv_bool(w, "inlined", f->inlined != 0);
	json_end_object(w);
}

void render_json_frames(struct json_writer *w, const struct snap_stack *st)
{
	json_key(w, "frames");
	json_begin_array(w);
	for (uint32_t j = 0; st && j < st->nframes; j++)
		json_frame(w, st->frames[j]);
	json_end_array(w);
}

void render_json_counters(struct json_writer *w, const struct mt_counters *c, int summary_only)
{
	for (size_t i = 0; i < MT_NCOUNTERS; i++) {
		const struct mt_counter_desc *m = &mt_counter_descs[i];

		if (summary_only && m->summary != 1)
			continue;
		if (m->unit == MT_UNIT_NS)
			json_kv_double(w, m->name, ns_to_seconds(mt_counter_get(c, i)));
		else
			json_kv_u64(w, m->name, mt_counter_get(c, i));
	}
}

void render_json_stack_counters(struct json_writer *w, const struct mt_stack_counters *t,
				const enum mt_stack_counter *ids, size_t n, int inherited)
{
	for (size_t i = 0; i < n; i++) {
		const struct mt_stack_counter_desc *m = &mt_stack_counter_descs[ids[i]];

		if (m->section != 2 || inherited)
			json_kv_u64(w, m->name, mt_stack_counter_get(t, ids[i]));
	}
}

void render_json_stack_diffs(struct json_writer *w, const struct mt_stack_counters *t,
			     const struct mt_stack_counters *was, const enum mt_stack_counter *ids,
			     size_t n)
{
	char key[64];

	for (size_t i = 0; i < n; i++) {
		uint64_t now = mt_stack_counter_get(t, ids[i]);

		json_kv_u64(w, mt_stack_counter_descs[ids[i]].name, now);
		snprintf(key, sizeof(key), "%s_diff", mt_stack_counter_descs[ids[i]].name);
		json_kv_i64(w, key, (int64_t)(now - mt_stack_counter_get(was, ids[i])));
	}
}

void render_json_events(struct json_writer *w, const struct snapshot *s)
{
	json_kv_u64(w, "events_received", s->events_received);
	json_kv_u64(w, "events_lost", snapshot_events_lost(s));
	json_key(w, "events_lost_by_kind");
	json_begin_object(w);
	for (unsigned k = 0; k < MT_LOST_KIND_COUNT; k++)
		if (mt_lost_kind_always(k) || s->events_lost[k])
			json_kv_u64(w, mt_lost_kind_name(k), s->events_lost[k]);
	json_end_object(w);
}

void render_text_lost_warning(struct buf *out, const struct snapshot *s)
{
	uint64_t lost = snapshot_events_lost(s);

	if (lost)
		buf_printf(out,
			   "warning: %" PRIu64 " events were lost (ring buffer full); frees, "
			   "live and peak numbers may be distorted\n",
			   lost);
	if (s->daemon && s->daemon->bpf_runs_skipped)
		buf_printf(out,
			   "warning: the kernel skipped %" PRIu64
			   " runs of memtrace's BPF programs "
			   "(preempted on their CPU): forks, execs or mappings may be missing "
			   "(memtraced's log names the programs)\n",
			   s->daemon->bpf_runs_skipped);
}

void format_walker(char *dst, size_t len, const struct snapshot *s)
{
	const struct snap_walker *w = s->walker;

	if (!w || !w->name)
		snprintf(dst, len, "%s", "");
	else
		snprintf(dst, len, "%s (%s)", w->name, w->reason ? w->reason : "?");
}

void render_text_walker(struct buf *out, const struct snapshot *s)
{
	char walker[1024];

	format_walker(walker, sizeof(walker), s);
	if (!walker[0])
		return;
	buf_printf(out, "stack walker: ");
	format_text(out, walker);
	buf_printf(out, "\n");
}

void render_json_walker(struct json_writer *w, const struct snapshot *s)
{
	if (!s->walker || !s->walker->name)
		return;
	json_key(w, "stack_walker");
	json_begin_object(w);
	json_kv_string(w, "name", s->walker->name);
	json_kv_string(w, "reason", s->walker->reason);
	json_kv_u64(w, "refused", s->walker->refused);
	json_end_object(w);
}

void render_text_truncations(struct buf *out, const struct snapshot *s)
{
	for (uint32_t i = 0; i < s->ntruncations; i++) {
		const struct snap_truncation *t = &s->truncations[i];

		buf_printf(out, "note: %" PRIu64 " stacks (%" PRIu64 " allocations) stop in ",
			   t->stacks, t->allocations);
		format_text(out, format_basename(t->module));
		buf_printf(out, ", where the stack walk cannot go on (no call frame information "
				"and no frame-pointer chain, or a rule it cannot follow): built "
				"with -fno-omit-frame-pointer, a module gives whole stacks\n");
	}
}

void render_json_truncations(struct json_writer *w, const struct snapshot *s)
{
	json_key(w, "truncated_stacks");
	json_begin_array(w);
	for (uint32_t i = 0; i < s->ntruncations; i++) {
		json_begin_object(w);
		json_kv_string(w, "module", s->truncations[i].module);
		json_kv_u64(w, "stacks", s->truncations[i].stacks);
		json_kv_u64(w, "allocations", s->truncations[i].allocations);
		json_end_object(w);
	}
	json_end_array(w);
}
