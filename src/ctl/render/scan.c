// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A leak scan's answer, as text or JSON (see scan.h). Every number has its
 * name in docs/metrics.md ("Leaks from a scan"); the kinds are LSan's and
 * valgrind's words: direct, indirect, possible.
 */
#include "ctl/render/scan.h"
#include "ctl/render/format.h"
#include "ctl/render/json.h"

#include <inttypes.h>
#include <stdio.h>

/* "1 block" or "N blocks", and the bytes in tracemalloc's units. */
static void count_bytes(struct buf *out, uint64_t blocks, uint64_t bytes)
{
	char sz[32];

	format_size(sz, sizeof(sz), (int64_t)bytes, 0);
	buf_printf(out, "%" PRIu64 " block%s (%s)", blocks, blocks == 1 ? "" : "s", sz);
}

static void text_header(struct buf *out, const struct snapshot *s)
{
	const struct snap_scan_figures *f = &s->scan.f;
	char pause[32], scanned[32];

	format_bytes(scanned, sizeof(scanned), f->bytes_scanned);
	if (f->pause_ns < 1000000000ull)
		snprintf(pause, sizeof(pause), "%.1f ms", (double)f->pause_ns / 1e6);
	else
		snprintf(pause, sizeof(pause), "%.2f s", ns_to_seconds(f->pause_ns));
	buf_printf(out, "scan of pid%s", s->scan.npids == 1 ? "" : "s");
	for (uint32_t i = 0; i < s->scan.npids; i++)
		buf_printf(out, "%s %" PRIu32, i ? "," : "", s->scan.pids[i]);
	buf_printf(
	    out, ": stood still %s, %s scanned in %" PRIu64 " thread%s; %" PRIu64 " live blocks: ",
	    pause, scanned, f->threads, f->threads == 1 ? "" : "s", f->live_blocks);
	for (int k = 0; k < SNAP_LEAK_KINDS; k++) {
		buf_printf(out, "%s%s ", k ? ", " : "", snap_leak_kind_name((uint32_t)k));
		count_bytes(out, f->blocks[k], f->bytes[k]);
	}
	buf_printf(out, "; %" PRIu32 " of %" PRIu64 " entries, direct first, most bytes first\n",
		   s->scan.nentries, f->entries_total);
}

static void text_notes(struct buf *out, const struct snapshot *s)
{
	const struct snap_scan *sc = &s->scan;
	const struct snap_scan_figures *f = &sc->f;

	if (sc->nsuppressions) {
		buf_printf(out, "suppressed ");
		count_bytes(out, f->suppressed_blocks, f->suppressed_bytes);
		for (uint32_t i = 0; i < sc->nsuppressions; i++) {
			buf_printf(out, "%s leak:", i ? "," : ":");
			format_text(out, sc->suppressions[i].pattern);
			buf_printf(out, " ");
			count_bytes(out, sc->suppressions[i].blocks, sc->suppressions[i].bytes);
		}
		buf_printf(out, "\n");
	}
	if (f->blocks_unread)
		buf_printf(out,
			   "warning: %" PRIu64 " live blocks lie in memory that is not mapped "
			   "or cannot be read (their free was not seen?): never reported\n",
			   f->blocks_unread);
	if (f->blocks_overlapping)
		buf_printf(out,
			   "warning: %" PRIu64 " live blocks overlap one another (a free was not "
			   "seen): never reported\n",
			   f->blocks_overlapping);
	if (f->bytes_unreadable) {
		char b[32];

		format_bytes(b, sizeof(b), f->bytes_unreadable);
		buf_printf(out,
			   "warning: %s of writable memory could not be read (device memory, "
			   "userfaultfd ranges): blocks only it points to would show as leaks\n",
			   b);
	}
	if (snapshot_events_lost(s))
		buf_printf(out,
			   "warning: %" PRIu64 " events were lost (ring buffer full): a block "
			   "whose free was lost shows as a leak\n",
			   snapshot_events_lost(s));
}

static void text_scan(struct buf *out, const struct snapshot *s)
{
	text_header(out, s);
	text_notes(out, s);
	for (uint32_t i = 0; i < s->scan.nentries; i++) {
		const struct snap_scan_entry *e = &s->scan.entries[i];

		buf_printf(out, "\n#%" PRIu32 "  %s: %" PRIu64 " block%s, %" PRIu64 " B", i + 1,
			   snap_leak_kind_name(e->kind), e->blocks, e->blocks == 1 ? "" : "s",
			   e->bytes);
		if (e->bytes >= 10 * 1024) {
			char sz[32];

			format_size(sz, sizeof(sz), (int64_t)e->bytes, 0);
			buf_printf(out, " (%s)", sz);
		}
		buf_printf(out, "\n");
		render_text_frames(out, &s->stacks[e->stack]);
	}
}

static void json_blocks_bytes(struct json_writer *w, const char *key, uint64_t blocks,
			      uint64_t bytes)
{
	json_key(w, key);
	json_begin_object(w);
	json_kv_u64(w, "blocks", blocks);
	json_kv_u64(w, "bytes", bytes);
	json_end_object(w);
}

static void json_scan(struct buf *out, const struct snapshot *s, const struct render_opts *o)
{
	const struct snap_scan *sc = &s->scan;
	const struct snap_scan_figures *f = &sc->f;
	struct json_writer w;

	json_init(&w, out, o->pretty);
	json_begin_object(&w);
	json_key(&w, "scan");
	json_begin_object(&w);
	json_key(&w, "pids");
	json_begin_array(&w);
	for (uint32_t i = 0; i < sc->npids; i++)
		json_u64(&w, sc->pids[i]);
	json_end_array(&w);
	json_kv_u64(&w, "targets", f->targets);
	json_kv_u64(&w, "threads", f->threads);
	json_kv_double(&w, "pause_seconds", ns_to_seconds(f->pause_ns));
	json_kv_double(&w, "scan_seconds", ns_to_seconds(f->scan_ns));
	json_kv_double(&w, "max_pause_seconds", ns_to_seconds(f->max_pause_ns));
	json_kv_u64(&w, "bytes_scanned", f->bytes_scanned);
	json_kv_u64(&w, "bytes_unreadable", f->bytes_unreadable);
	json_kv_u64(&w, "mappings", f->mappings);
	json_kv_u64(&w, "live_blocks", f->live_blocks);
	json_kv_u64(&w, "live_bytes", f->live_bytes);
	for (int k = 0; k < SNAP_LEAK_KINDS; k++)
		json_blocks_bytes(&w, snap_leak_kind_name((uint32_t)k), f->blocks[k], f->bytes[k]);
	json_key(&w, "suppressed");
	json_begin_object(&w);
	json_kv_u64(&w, "blocks", f->suppressed_blocks);
	json_kv_u64(&w, "bytes", f->suppressed_bytes);
	json_key(&w, "suppressions");
	json_begin_array(&w);
	for (uint32_t i = 0; i < sc->nsuppressions; i++) {
		json_begin_object(&w);
		json_kv_string(&w, "pattern", sc->suppressions[i].pattern);
		json_kv_u64(&w, "blocks", sc->suppressions[i].blocks);
		json_kv_u64(&w, "bytes", sc->suppressions[i].bytes);
		json_end_object(&w);
	}
	json_end_array(&w);
	json_end_object(&w);
	json_kv_u64(&w, "blocks_unread", f->blocks_unread);
	json_kv_u64(&w, "blocks_overlapping", f->blocks_overlapping);
	json_kv_u64(&w, "events_lost", snapshot_events_lost(s));
	json_kv_u64(&w, "entries_total", f->entries_total);
	json_end_object(&w);
	json_key(&w, "entries");
	json_begin_array(&w);
	for (uint32_t i = 0; i < sc->nentries; i++) {
		const struct snap_scan_entry *e = &sc->entries[i];

		json_begin_object(&w);
		json_kv_u64(&w, "pid", s->stacks[e->stack].pid);
		json_kv_string(&w, "kind", snap_leak_kind_name(e->kind));
		json_kv_u64(&w, "blocks", e->blocks);
		json_kv_u64(&w, "bytes", e->bytes);
		render_json_frames(&w, &s->stacks[e->stack]);
		json_end_object(&w);
	}
	json_end_array(&w);
	json_end_object(&w);
	buf_put(out, "\n", 1);
}

void render_scan(struct buf *out, const struct snapshot *s, const struct render_opts *o)
{
	if (o->format == RENDER_JSON)
		json_scan(out, s, o);
	else
		text_scan(out, s);
}
