// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Status, stats and report views of a snapshot, as text and as JSON (see
 * render.h). Counters go through one table so that text and JSON use the same
 * names in the same order. Strings from targets (command lines, symbol names)
 * are untrusted: text output replaces control characters with '?'.
 */
#include "render.h"
#include "json.h"
#include "memtrace/event.h"
#include "outputs.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

enum metric_unit { UNIT_COUNT, UNIT_BYTES, UNIT_SECONDS };

static const struct metric {
	const char *name;
	size_t offset; /* in struct mt_counters */
	int unit;
} counter_metrics[] = {
    {"allocations", offsetof(struct mt_counters, allocations), UNIT_COUNT},
    {"frees", offsetof(struct mt_counters, frees), UNIT_COUNT},
    {"bytes_allocated", offsetof(struct mt_counters, bytes_allocated), UNIT_BYTES},
    {"bytes_freed", offsetof(struct mt_counters, bytes_freed), UNIT_BYTES},
    {"live_allocations", offsetof(struct mt_counters, live_allocations), UNIT_COUNT},
    {"live_bytes", offsetof(struct mt_counters, live_bytes), UNIT_BYTES},
    {"peak_live_bytes", offsetof(struct mt_counters, peak_live_bytes), UNIT_BYTES},
    {"peak_time", offsetof(struct mt_counters, peak_time_ns), UNIT_SECONDS},
    {"unknown_frees", offsetof(struct mt_counters, unknown_frees), UNIT_COUNT},
    {"missed_frees", offsetof(struct mt_counters, missed_frees), UNIT_COUNT},
    {"missed_free_bytes", offsetof(struct mt_counters, missed_free_bytes), UNIT_BYTES},
    {"untracked_allocations", offsetof(struct mt_counters, untracked_allocations), UNIT_COUNT},
    {"stackless_allocations", offsetof(struct mt_counters, stackless_allocations), UNIT_COUNT},
    {"temporary_allocations", offsetof(struct mt_counters, temporary_allocations), UNIT_COUNT},
    {"temporary_bytes", offsetof(struct mt_counters, temporary_bytes), UNIT_BYTES},
};

/* events_lost[] slots by enum mt_event_kind, as named in JSON and text. The
 * first LOST_KINDS_ALWAYS are always shown; later ones (exec) when not 0. */
#define LOST_KINDS_ALWAYS 5
static const char *const lost_kind_names[] = {NULL,	 "alloc", "free", "realloc_enter",
					      "realloc", "exec",  "fork", "match"};

/* Longest metric name plus two spaces: the value column of text stats. */
#define STATS_NAME_WIDTH 23

static uint64_t metric_value(const struct mt_counters *c, const struct metric *m)
{
	uint64_t v;

	memcpy(&v, (const char *)c + m->offset, sizeof(v));
	return v;
}

static double ns_to_seconds(uint64_t ns)
{
	return (double)ns / 1e9;
}

void render_bytes(char *dst, size_t len, uint64_t bytes)
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

void render_duration(char *dst, size_t len, uint64_t ns)
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

/* Append s for a terminal: C0 and C1 control characters become '?'. */
static void put_text(struct buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t run = 0;

	for (size_t i = 0; p[i]; i++) {
		int c1 = p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f;

		if (p[i] >= 0x20 && p[i] != 0x7f && !c1) {
			run++;
			continue;
		}
		buf_put(b, p + i - run, run);
		buf_put(b, "?", 1);
		run = 0;
		i += c1;
	}
	buf_put(b, s + strlen(s) - run, run);
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

static const struct mt_counters *report_counters(const struct snapshot *s, uint32_t pid)
{
	for (uint32_t i = 0; pid && i < s->ntargets; i++)
		if (s->targets[i].pid == pid)
			return &s->targets[i].counters;
	return &s->totals;
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_counters(struct json_writer *w, const struct mt_counters *c)
{
	for (size_t i = 0; i < ARRAY_SIZE(counter_metrics); i++) {
		const struct metric *m = &counter_metrics[i];

		if (m->unit == UNIT_SECONDS)
			json_kv_double(w, m->name, ns_to_seconds(metric_value(c, m)));
		else
			json_kv_u64(w, m->name, metric_value(c, m));
	}
}

static void json_events(struct json_writer *w, const struct snapshot *s)
{
	json_kv_u64(w, "events_received", s->events_received);
	json_kv_u64(w, "events_lost", snapshot_events_lost(s));
	json_key(w, "events_lost_by_kind");
	json_begin_object(w);
	for (size_t k = 1; k < ARRAY_SIZE(lost_kind_names); k++)
		if (k < LOST_KINDS_ALWAYS || s->events_lost[k])
			json_kv_u64(w, lost_kind_names[k], s->events_lost[k]);
	json_end_object(w);
}

static void json_target(struct json_writer *w, const struct snap_target *t, int with_counters)
{
	int exited = t->state == SNAP_TARGET_EXITED && t->exit_status >= 0;

	json_begin_object(w);
	json_kv_u64(w, "pid", t->pid);
	json_kv_string(w, "command", t->command);
	json_kv_string(w, "state", snap_target_state_name(t->state));
	json_key(w, "exit_code");
	if (exited && WIFEXITED(t->exit_status))
		json_u64(w, (uint64_t)WEXITSTATUS(t->exit_status));
	else
		json_null(w);
	json_key(w, "exit_signal");
	if (exited && WIFSIGNALED(t->exit_status))
		json_u64(w, (uint64_t)WTERMSIG(t->exit_status));
	else
		json_null(w);
	json_kv_string(w, "allocator", t->allocator);
	json_kv_string(w, "note", t->note);
	json_kv_u64(w, "probes", t->probes);
	json_kv_double(w, "traced_seconds", ns_to_seconds(t->traced_ns));
	if (with_counters) {
		json_key(w, "counters");
		json_begin_object(w);
		json_counters(w, &t->counters);
		json_end_object(w);
	}
	json_end_object(w);
}

static void json_targets(struct json_writer *w, const struct snapshot *s, int with_counters)
{
	json_key(w, "targets");
	json_begin_array(w);
	for (uint32_t i = 0; i < s->ntargets; i++)
		json_target(w, &s->targets[i], with_counters);
	json_end_array(w);
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
	json_key(w, "inlined");
	json_bool(w, f->inlined != 0);
	json_end_object(w);
}

static const char *const stack_end_names[] = {
    [MT_STACK_COMPLETE] = "complete", [MT_STACK_DEPTH] = "depth",    [MT_STACK_BROKEN] = "broken",
    [MT_STACK_NONE] = "none",	      [MT_STACK_KERNEL] = "unknown",
};

static const char *stack_end_name(uint32_t end)
{
	return end < ARRAY_SIZE(stack_end_names) && stack_end_names[end] ? stack_end_names[end]
									 : "unknown";
}

/* "truncated_stacks": the modules whose missing frame pointers cut stacks short. */
static void json_truncations(struct json_writer *w, const struct snapshot *s)
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

static void json_stack(struct json_writer *w, const struct snap_stack *st, int oldest)
{
	json_begin_object(w);
	json_kv_u64(w, "pid", st->pid);
	json_kv_u64(w, "live_bytes", st->live_bytes);
	json_kv_u64(w, "live_allocations", st->live_allocations);
	json_kv_u64(w, "allocations", st->allocations);
	json_kv_u64(w, "bytes_allocated", st->bytes_allocated);
	json_kv_u64(w, "frees", st->frees);
	json_kv_u64(w, "bytes_freed", st->bytes_freed);
	json_kv_u64(w, "peak_live_bytes", st->peak_live_bytes);
	json_kv_u64(w, "temporary_allocations", st->temporary_allocations);
	json_kv_u64(w, "temporary_bytes", st->temporary_bytes);
	if (oldest) {
		json_key(w, "oldest_live_age");
		if (st->live_allocations)
			json_double(w, ns_to_seconds(st->oldest_live_age_ns));
		else
			json_null(w);
	}
	json_key(w, "frames");
	json_begin_array(w);
	for (uint32_t i = 0; i < st->nframes; i++)
		json_frame(w, st->frames[i]);
	json_end_array(w);
	json_kv_string(w, "stack_end", stack_end_name(st->stack_end));
	json_end_object(w);
}

/* When tracing began and how memtraced was started (snapshots that carry it). */
static void json_trace(struct json_writer *w, const struct snapshot *s)
{
	const struct snap_options *o = &s->options;

	json_kv_double(w, "started_unix", ns_to_seconds(s->started_unix_ns));
	json_key(w, "options");
	json_begin_object(w);
	json_kv_u64(w, "stack_depth", o->stack_depth);
	json_kv_u64(w, "ring_buffer_size", o->ring_buffer_bytes);
	json_kv_u64(w, "max_live_blocks", o->max_live_blocks);
	json_kv_u64(w, "max_stacks", o->max_stacks);
	json_kv_double(w, "sample_interval", ns_to_seconds(o->sample_interval_ns));
	json_kv_u64(w, "temporary_threshold", o->temporary_threshold);
	json_end_object(w);
}

/* How the daemon kept up (snapshots that carry it). */
static void json_daemon(struct json_writer *w, const struct snapshot *s)
{
	const struct snap_daemon *dm = &s->daemon;

	if (!s->has_daemon)
		return;
	json_key(w, "daemon");
	json_begin_object(w);
	json_kv_double(w, "drain_gap_max", ns_to_seconds(dm->drain_gap_max_ns));
	json_kv_double(w, "loop_busy_max", ns_to_seconds(dm->loop_busy_max_ns));
	json_kv_u64(w, "frozen_requests", dm->frozen_requests);
	json_kv_double(w, "freeze_max", ns_to_seconds(dm->freeze_max_ns));
	json_kv_u64(w, "deferred_events", dm->deferred_events);
	json_kv_u64(w, "symbol_lookups", dm->symbol_lookups);
	json_kv_u64(w, "symbol_cache_hits", dm->symbol_cache_hits);
	json_end_object(w);
}

static void json_status(struct json_writer *w, const struct snapshot *s,
			const struct render_opts *o)
{
	(void)o;
	json_begin_object(w);
	json_kv_string(w, "tracer_version", s->tracer_version);
	json_kv_double(w, "uptime", ns_to_seconds(s->uptime_ns));
	json_events(w, s);
	json_kv_u64(w, "stacks_total", s->stacks_total);
	json_truncations(w, s);
	if (s->started_unix_ns)
		json_trace(w, s);
	json_daemon(w, s);
	json_targets(w, s, 0);
	json_end_object(w);
}

static void json_stats(struct json_writer *w, const struct snapshot *s, const struct render_opts *o)
{
	(void)o;
	json_begin_object(w);
	json_counters(w, &s->totals);
	json_events(w, s);
	json_kv_u64(w, "stacks_total", s->stacks_total);
	json_daemon(w, s);
	json_targets(w, s, 1);
	view_stats_json(w, s);
	json_end_object(w);
}

static void json_report(struct json_writer *w, const struct snapshot *s,
			const struct render_opts *o)
{
	json_begin_object(w);
	json_key(w, "pid");
	if (o->pid)
		json_u64(w, o->pid);
	else
		json_null(w);
	json_key(w, "totals");
	json_begin_object(w);
	json_counters(w, report_counters(s, o->pid));
	json_end_object(w);
	json_events(w, s);
	json_kv_u64(w, "stacks_total", s->stacks_total);
	json_truncations(w, s);
	json_key(w, "entries");
	json_begin_array(w);
	for (uint32_t i = 0; i < s->nstacks; i++)
		json_stack(w, &s->stacks[i], o->oldest && s->has_ages);
	json_end_array(w);
	json_end_object(w);
}

/* ---- text ---------------------------------------------------------------- */

/* Say which modules cut stacks short, and what would make them whole. */
static void text_truncations(struct buf *b, const struct snapshot *s)
{
	for (uint32_t i = 0; i < s->ntruncations; i++) {
		const struct snap_truncation *t = &s->truncations[i];

		buf_printf(b, "note: %" PRIu64 " stacks (%" PRIu64 " allocations) stop in ",
			   t->stacks, t->allocations);
		put_text(b, basename_of(t->module));
		buf_printf(b, ", where the frame-pointer chain breaks: build it (or its caller) "
			      "with -fno-omit-frame-pointer for whole stacks\n");
	}
}

static void text_lost_warning(struct buf *b, const struct snapshot *s)
{
	uint64_t lost = snapshot_events_lost(s);

	if (lost)
		buf_printf(b,
			   "warning: %" PRIu64 " events were lost (ring buffer full); frees, "
			   "live and peak numbers may be distorted\n",
			   lost);
}

static void text_state(char *dst, size_t len, const struct snap_target *t)
{
	const char *name = snap_target_state_name(t->state);

	if (t->state != SNAP_TARGET_EXITED || t->exit_status < 0)
		snprintf(dst, len, "%s", name);
	else if (WIFEXITED(t->exit_status))
		snprintf(dst, len, "%s(%d)", name, WEXITSTATUS(t->exit_status));
	else if (WIFSIGNALED(t->exit_status))
		snprintf(dst, len, "%s(signal %d)", name, WTERMSIG(t->exit_status));
	else
		snprintf(dst, len, "%s", name);
}

/* The status table: fixed columns padded to their widest cell, then COMMAND. */
enum { COL_PID, COL_STATE, COL_PROBES, COL_TRACED, COL_ALLOCATOR, NCOLS };

static const char *const status_headers[NCOLS] = {"PID", "STATE", "PROBES", "TRACED", "ALLOCATOR"};

static void status_cells(const struct snap_target *t, char cells[NCOLS][256])
{
	snprintf(cells[COL_PID], 256, "%" PRIu32, t->pid);
	text_state(cells[COL_STATE], 256, t);
	snprintf(cells[COL_PROBES], 256, "%" PRIu32, t->probes);
	render_duration(cells[COL_TRACED], 256, t->traced_ns);
	snprintf(cells[COL_ALLOCATOR], 256, "%s", t->allocator ? basename_of(t->allocator) : "-");
}

static void text_status(struct buf *b, const struct snapshot *s, const struct render_opts *o)
{
	char cells[NCOLS][256], uptime[64];
	size_t width[NCOLS];

	(void)o;
	render_duration(uptime, sizeof(uptime), s->uptime_ns);
	buf_printf(b, "memtraced");
	if (s->tracer_version) {
		buf_printf(b, " ");
		put_text(b, s->tracer_version);
	}
	buf_printf(b, ", up %s: %" PRIu64 " events received, %" PRIu64 " lost\n", uptime,
		   s->events_received, snapshot_events_lost(s));
	text_lost_warning(b, s);
	text_truncations(b, s);
	if (s->totals.untracked_allocations)
		buf_printf(b,
			   "warning: %" PRIu64 " allocations were not tracked (--max-live-blocks "
			   "reached); their frees count as unknown_frees\n",
			   s->totals.untracked_allocations);
	if (s->totals.stackless_allocations)
		buf_printf(b,
			   "warning: %" PRIu64 " allocations have no stack (--max-stacks "
			   "reached); they are reported under an empty stack\n",
			   s->totals.stackless_allocations);
	if (s->started_unix_ns) {
		const struct snap_options *op = &s->options;
		time_t started = (time_t)(s->started_unix_ns / 1000000000ull);
		char when[64];
		struct tm tm;

		gmtime_r(&started, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
		buf_printf(b,
			   "tracing since %s; stack depth %" PRIu64 ", sampling every %.3f s, "
			   "temporary threshold %" PRIu64 "\n",
			   when, op->stack_depth, ns_to_seconds(op->sample_interval_ns),
			   op->temporary_threshold);
	}
	if (!s->ntargets) {
		buf_printf(b, "no targets\n");
		return;
	}
	for (int c = 0; c < NCOLS; c++)
		width[c] = strlen(status_headers[c]);
	for (uint32_t i = 0; i < s->ntargets; i++) {
		status_cells(&s->targets[i], cells);
		for (int c = 0; c < NCOLS; c++)
			if (strlen(cells[c]) > width[c])
				width[c] = strlen(cells[c]);
	}
	for (int c = 0; c < NCOLS; c++)
		buf_printf(b, "%-*s  ", (int)width[c], status_headers[c]);
	buf_printf(b, "COMMAND\n");
	for (uint32_t i = 0; i < s->ntargets; i++) {
		status_cells(&s->targets[i], cells);
		for (int c = 0; c < NCOLS; c++)
			buf_printf(b, "%-*s  ", (int)width[c], cells[c]);
		put_text(b, s->targets[i].command ? s->targets[i].command : "-");
		buf_printf(b, "\n");
	}
	for (uint32_t i = 0; i < s->ntargets; i++) {
		if (!s->targets[i].note)
			continue;
		buf_printf(b, "pid %" PRIu32 ": ", s->targets[i].pid);
		put_text(b, s->targets[i].note);
		buf_printf(b, "\n");
	}
}

static void text_stats(struct buf *b, const struct snapshot *s, const struct render_opts *o)
{
	const struct mt_counters *c = &s->totals;
	char human[32];
	uint64_t lost = snapshot_events_lost(s);

	(void)o;
	for (size_t i = 0; i < ARRAY_SIZE(counter_metrics); i++) {
		const struct metric *m = &counter_metrics[i];
		uint64_t v = metric_value(c, m);

		buf_printf(b, "%-*s", STATS_NAME_WIDTH, m->name);
		if (m->unit == UNIT_SECONDS) {
			buf_printf(b, "%.3f s\n", ns_to_seconds(v));
		} else if (m->unit == UNIT_BYTES) {
			render_bytes(human, sizeof(human), v);
			buf_printf(b, "%" PRIu64 " (%s)\n", v, human);
		} else {
			buf_printf(b, "%" PRIu64 "\n", v);
		}
	}
	buf_printf(b, "%-*s%" PRIu64 "\n", STATS_NAME_WIDTH, "events_received", s->events_received);
	buf_printf(b, "%-*s%" PRIu64, STATS_NAME_WIDTH, "events_lost", lost);
	for (size_t k = 1; lost && k < ARRAY_SIZE(lost_kind_names); k++)
		if (k < LOST_KINDS_ALWAYS || s->events_lost[k])
			buf_printf(b, "%s%s %" PRIu64, k == 1 ? " (" : ", ", lost_kind_names[k],
				   s->events_lost[k]);
	buf_printf(b, "%s\n", lost ? ")" : "");
	text_lost_warning(b, s);
	for (uint32_t i = 0; i < s->ntargets; i++) {
		const struct snap_target *t = &s->targets[i];
		char state[64];

		text_state(state, sizeof(state), t);
		render_bytes(human, sizeof(human), t->counters.live_bytes);
		buf_printf(b, "target %" PRIu32 " %s, live %s in %" PRIu64 " blocks: ", t->pid,
			   state, human, t->counters.live_allocations);
		put_text(b, t->command ? t->command : "-");
		buf_printf(b, "\n");
	}
	view_stats_text(b, s);
}

static void text_frame(struct buf *b, const struct snap_frame *f)
{
	buf_printf(b, "    ");
	if (f->function && !f->module && !f->address && f->file) {
		/* a Python frame: function at file:line, no native location */
		put_text(b, f->function);
		buf_printf(b, " at ");
		put_text(b, f->file);
		buf_printf(b, ":%" PRId64 "\n", f->line);
		return;
	}
	if (f->function) {
		put_text(b, f->function);
		buf_printf(b, f->inlined ? " [inlined] (" : " (");
	}
	if (f->module) {
		put_text(b, basename_of(f->module));
		buf_printf(b, "+0x%" PRIx64, f->offset);
	} else {
		buf_printf(b, "0x%" PRIx64, f->address);
	}
	if (f->function)
		buf_printf(b, ")");
	if (f->file) {
		buf_printf(b, " at ");
		put_text(b, f->file);
		if (f->line)
			buf_printf(b, ":%" PRId64, f->line);
	}
	buf_printf(b, "\n");
}

static void text_report(struct buf *b, const struct snapshot *s, const struct render_opts *o)
{
	const struct mt_counters *c = report_counters(s, o->pid);
	char live[32], peak[32], allocated[32], freed[32];

	render_bytes(live, sizeof(live), c->live_bytes);
	render_bytes(peak, sizeof(peak), c->peak_live_bytes);
	render_bytes(allocated, sizeof(allocated), c->bytes_allocated);
	render_bytes(freed, sizeof(freed), c->bytes_freed);
	if (o->pid)
		buf_printf(b, "pid %" PRIu32 ": ", o->pid);
	else
		buf_printf(b, "total: ");
	buf_printf(b,
		   "live %s in %" PRIu64 " blocks, peak %s, allocated %s in %" PRIu64
		   " calls, freed %s in %" PRIu64 "; ",
		   live, c->live_allocations, peak, allocated, c->allocations, freed, c->frees);
	if (o->pid)
		buf_printf(b, "%" PRIu32 " stacks shown\n", s->nstacks);
	else
		buf_printf(b, "%" PRIu32 " of %" PRIu64 " stacks shown\n", s->nstacks,
			   s->stacks_total);
	text_lost_warning(b, s);
	text_truncations(b, s);

	for (uint32_t i = 0; i < s->nstacks; i++) {
		const struct snap_stack *st = &s->stacks[i];

		render_bytes(live, sizeof(live), st->live_bytes);
		render_bytes(allocated, sizeof(allocated), st->bytes_allocated);
		render_bytes(freed, sizeof(freed), st->bytes_freed);
		buf_printf(b,
			   "\n#%" PRIu32 "  live %s in %" PRIu64
			   " blocks  (allocated %s in %" PRIu64 " calls, freed %s in %" PRIu64 ")",
			   i + 1, live, st->live_allocations, allocated, st->allocations, freed,
			   st->frees);
		if (o->sort == SNAP_SORT_PEAK) {
			render_bytes(peak, sizeof(peak), st->peak_live_bytes);
			buf_printf(b, "  peak %s", peak);
		}
		if (o->sort == SNAP_SORT_TEMPORARY) {
			render_bytes(peak, sizeof(peak), st->temporary_bytes);
			buf_printf(b, "  temporary %" PRIu64 " (%s)", st->temporary_allocations,
				   peak);
		}
		if (o->oldest && s->has_ages && st->live_allocations) {
			render_duration(peak, sizeof(peak), st->oldest_live_age_ns);
			buf_printf(b, "  oldest %s", peak);
		}
		if (!o->pid && s->ntargets > 1)
			buf_printf(b, "  pid %" PRIu32, st->pid);
		buf_printf(b, "\n");
		for (uint32_t j = 0; j < st->nframes; j++)
			text_frame(b, st->frames[j]);
		if (!st->nframes)
			buf_printf(b, "    (no stack)\n");
		else if (st->stack_end == MT_STACK_BROKEN)
			buf_printf(b, "    ... (the frame-pointer chain breaks here)\n");
		else if (st->stack_end == MT_STACK_DEPTH)
			buf_printf(b, "    ... (--stack-depth reached)\n");
	}
}

/* ---- entry points -------------------------------------------------------- */

typedef void text_fn(struct buf *b, const struct snapshot *s, const struct render_opts *o);
typedef void json_fn(struct json_writer *w, const struct snapshot *s, const struct render_opts *o);

static void render(struct buf *out, const struct snapshot *s, const struct render_opts *o,
		   text_fn *text, json_fn *json)
{
	struct json_writer w;

	if (o->format != RENDER_JSON) {
		text(out, s, o);
		return;
	}
	json_init(&w, out, o->pretty);
	json(&w, s, o);
	buf_put(out, "\n", 1);
}

void render_status(struct buf *out, const struct snapshot *s, const struct render_opts *o)
{
	render(out, s, o, text_status, json_status);
}

void render_stats(struct buf *out, const struct snapshot *s, const struct render_opts *o)
{
	render(out, s, o, text_stats, json_stats);
}

void render_report(struct buf *out, const struct snapshot *s, const struct render_opts *o)
{
	render(out, s, o, text_report, json_report);
}

void render_text(struct buf *out, const char *s)
{
	put_text(out, s);
}

void render_text_frame(struct buf *out, const struct snap_frame *f)
{
	text_frame(out, f);
}

void render_json_frame(struct json_writer *w, const struct snap_frame *f)
{
	json_frame(w, f);
}
