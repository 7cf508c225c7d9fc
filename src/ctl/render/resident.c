// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Resident memory in stats (see resident.h). The figures' names and order
 * are include/memtrace/resident.h's tables, the totals ctl/view/resident.c's.
 */
#include "ctl/render/resident.h"
#include "ctl/render/format.h"
#include "ctl/view/resident.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The value column of text stats (status.c's STATS_NAME_WIDTH). */
#define NAME_WIDTH 23

void format_bytes_signed(char *dst, size_t len, int64_t bytes)
{
	if (bytes >= 0) {
		format_bytes(dst, len, (uint64_t)bytes);
		return;
	}
	dst[0] = '-';
	format_bytes(dst + 1, len - 1, (uint64_t)0 - (uint64_t)bytes);
}

static void text_bytes_line(struct buf *b, const char *name, uint64_t v)
{
	char human[32];

	format_bytes(human, sizeof(human), v);
	buf_printf(b, "%-*s%" PRIu64 " (%s)", NAME_WIDTH, name, v, human);
}

void render_text_resident_totals(struct buf *b, const struct snapshot *s)
{
	struct resident_view v;

	resident_view_build(&v, s);
	if (!v.present)
		return;
	buf_printf(b, "resident memory, sampled: the %" PRIu32 " target%s traced now", v.targets,
		   v.targets == 1 ? "" : "s");
	if (v.unread) /* nothing is guessed for them */
		buf_printf(b, "; %" PRIu32 " more could not be read (see memtraced's log)",
			   v.unread);
	buf_printf(b, "\n");
	for (size_t i = 0; i < MT_NRESIDENT; i++) {
		text_bytes_line(b, mt_resident_descs[i].name, mt_resident_get(&v.total, i));
		buf_printf(b, "\n");
	}
	if (v.has_peak) {
		text_bytes_line(b, "peak_resident_bytes", v.peak_bytes);
		buf_printf(b, " at %.3f s\n", ns_to_seconds(v.peak_time_ns));
	}
}

void render_text_target_resident(struct buf *b, const struct snap_target *t)
{
	const struct snap_resident *r = &t->resident;
	char v[MT_NRESIDENT][32], peak[32];

	if (!r->sampled)
		return;
	for (size_t i = 0; i < MT_NRESIDENT; i++)
		format_bytes(v[i], sizeof(v[i]), mt_resident_get(&r->r, i));
	format_bytes(peak, sizeof(peak), r->peak_bytes);
	buf_printf(b,
		   "  %s %s at %.3f s: anon %s, file %s, shmem %s; swap %s; pss %s, lazyfree "
		   "%s; peak %s at %.3f s\n",
		   resident_target_current(t) ? "resident" : "last resident (no longer traced)",
		   v[0], ns_to_seconds(r->time_ns), v[1], v[2], v[3], v[4], v[5], v[6], peak,
		   ns_to_seconds(r->peak_time_ns));
}

static void text_memory(struct buf *b, const struct snapshot *s, const struct snap_memory *m)
{
	const struct snap_target *t = &s->targets[m->target];
	struct mt_heap_summary h;
	char cell[MT_NMEM_FIELDS][32], res[32], live[32], over[32];

	buf_printf(b, "\nmemory of pid %" PRIu32 " by kind of mapping (smaps at %.3f s)\n", t->pid,
		   ns_to_seconds(m->time_ns));
	if (m->error) {
		buf_printf(b, "  none: ");
		format_text(b, m->error);
		buf_printf(b, "\n");
		return;
	}
	buf_printf(b, "  %-16s", "kind");
	for (size_t f = 0; f < MT_NMEM_FIELDS; f++)
		buf_printf(b, " %16s", mt_mem_field_names[f]);
	buf_printf(b, "\n");
	for (size_t k = 0; k < MT_MEM_KIND_COUNT; k++) {
		struct mt_mem_figures fig = m->m.kinds[k];

		for (size_t f = 0; f < MT_NMEM_FIELDS; f++) {
			uint64_t x = *mt_mem_field(&fig, f);

			if (strstr(mt_mem_field_names[f], "bytes"))
				format_bytes(cell[f], sizeof(cell[f]), x);
			else
				snprintf(cell[f], sizeof(cell[f]), "%" PRIu64, x);
		}
		buf_printf(b, "  %-16s", mt_mem_kind_descs[k].name);
		for (size_t f = 0; f < MT_NMEM_FIELDS; f++)
			buf_printf(b, " %16s", cell[f]);
		buf_printf(b, "\n");
	}
	mt_memory_heap(&m->m, &h);
	format_bytes(res, sizeof(res), h.resident_bytes);
	format_bytes(live, sizeof(live), h.live_bytes);
	format_bytes_signed(over, sizeof(over), h.overhead_bytes);
	buf_printf(b, "  heap regions (%s): resident %s, live %s, heap_overhead %s\n",
		   "brk_heap, arena, allocator_mmap", res, live, over);
	if (m->m.unmapped_allocations) {
		format_bytes(live, sizeof(live), m->m.unmapped_bytes);
		buf_printf(
		    b, "  live blocks in no mapping (their free was missed): %" PRIu64 " (%s)\n",
		    m->m.unmapped_allocations, live);
	}
}

void render_text_memory(struct buf *b, const struct snapshot *s)
{
	const struct snap_breakdowns *bd = s->breakdowns;

	if (!bd)
		return;
	if (!bd->nmemory)
		buf_printf(b, "\nmemory by kind of mapping: no target is traced now\n");
	for (uint32_t i = 0; i < bd->nmemory; i++)
		text_memory(b, s, &bd->memory[i]);
}

static void json_figures(struct json_writer *w, const struct mt_resident *r)
{
	for (size_t i = 0; i < MT_NRESIDENT; i++)
		json_kv_u64(w, mt_resident_descs[i].name, mt_resident_get(r, i));
}

void render_json_resident_totals(struct json_writer *w, const struct snapshot *s, uint32_t pid)
{
	struct resident_view v;

	resident_view_of_pid(&v, s, pid);
	if (!v.present)
		return;
	json_key(w, "resident");
	json_begin_object(w);
	json_kv_u64(w, "targets", v.targets);
	json_kv_u64(w, "targets_unread", v.unread);
	json_figures(w, &v.total);
	json_key(w, "peak_resident_bytes");
	if (v.has_peak)
		json_u64(w, v.peak_bytes);
	else
		json_null(w);
	json_key(w, "peak_resident_time");
	if (v.has_peak)
		json_double(w, ns_to_seconds(v.peak_time_ns));
	else
		json_null(w);
	json_end_object(w);
}

static void json_memory(struct json_writer *w, const struct snap_memory *m)
{
	struct mt_heap_summary h;

	json_begin_object(w);
	json_kv_double(w, "time", ns_to_seconds(m->time_ns));
	json_kv_string(w, "error", m->error);
	if (!m->error) {
		json_key(w, "kinds");
		json_begin_object(w);
		for (size_t k = 0; k < MT_MEM_KIND_COUNT; k++) {
			struct mt_mem_figures fig = m->m.kinds[k];

			json_key(w, mt_mem_kind_descs[k].name);
			json_begin_object(w);
			json_kv_bool(w, "heap", mt_mem_kind_descs[k].heap);
			for (size_t f = 0; f < MT_NMEM_FIELDS; f++)
				json_kv_u64(w, mt_mem_field_names[f], *mt_mem_field(&fig, f));
			json_end_object(w);
		}
		json_end_object(w);
		mt_memory_heap(&m->m, &h);
		json_kv_u64(w, "heap_resident_bytes", h.resident_bytes);
		json_kv_u64(w, "heap_live_bytes", h.live_bytes);
		json_kv_i64(w, "heap_overhead_bytes", h.overhead_bytes);
		json_kv_u64(w, "unmapped_allocations", m->m.unmapped_allocations);
		json_kv_u64(w, "unmapped_bytes", m->m.unmapped_bytes);
	}
	json_end_object(w);
}

void render_json_target_resident(struct json_writer *w, const struct snapshot *s, uint32_t i)
{
	const struct snap_target *t = &s->targets[i];
	const struct snap_resident *r = &t->resident;

	if (s->has_resident) {
		json_key(w, "resident");
		if (!r->sampled) {
			json_null(w);
		} else {
			json_begin_object(w);
			json_kv_bool(w, "current", resident_target_current(t));
			json_kv_double(w, "resident_time", ns_to_seconds(r->time_ns));
			json_figures(w, &r->r);
			json_kv_u64(w, "peak_resident_bytes", r->peak_bytes);
			json_kv_double(w, "peak_resident_time", ns_to_seconds(r->peak_time_ns));
			json_end_object(w);
		}
	}
	if (!s->breakdowns)
		return;
	json_key(w, "memory");
	for (uint32_t k = 0; k < s->breakdowns->nmemory; k++) {
		if (s->breakdowns->memory[k].target == i) {
			json_memory(w, &s->breakdowns->memory[k]);
			return;
		}
	}
	json_null(w);
}
