// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The pieces several renderers share (see parts.h). Strings from targets
 * (symbol names, paths) are untrusted: text goes through format_text().
 */
#include "ctl/render/parts.h"
#include "ctl/render/format.h"

#include <inttypes.h>
#include <stdio.h>

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
