// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * status and stats (see status.h). Counters go through one table
 * (memtrace/counters.h) so that text and JSON use the same names in the same
 * order. Strings from targets (command lines, paths) are untrusted: text
 * replaces control characters with '?'.
 */
#include "ctl/render/status.h"
#include "ctl/render/format.h"
#include "ctl/render/json.h"
#include "ctl/render/cgroup.h"
#include "ctl/render/resident.h"
#include "ctl/view/sites.h"
#include "memtrace/event.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

/* Longest metric name plus two spaces: the value column of text stats. */
#define STATS_NAME_WIDTH 23

/* ---- stats: sizes, allocator mix, top sites ------------------------------------ */

/* Smallest size of histogram bin i; the bin holds sizes up to bin_min(i+1)-1. */
static uint64_t bin_min(unsigned i)
{
	return i ? 1ull << (i - 1) : 0;
}

static uint64_t bin_max(unsigned i)
{
	return i ? (i == 64 ? UINT64_MAX : (1ull << i) - 1) : 0;
}

static void text_site(struct buf *b, const struct site *v)
{
	if (v->frame)
		format_site_name(b, v->frame);
	else
		buf_printf(b, "(no frames)");
}

/* The histogram, allocator mix and top sites (of stacks), after the counters of text stats. */
static void text_stats_extras(struct buf *b, const struct snapshot *s,
			      const struct snapshot *stacks)
{
	struct site *sites;
	size_t nsites = sites_collect(stacks, &sites);
	uint64_t most = 0, allocations = 0;
	char lo[32], hi[32], human[32];
	unsigned first = SNAP_HISTOGRAM_BINS, last = 0;

	for (unsigned i = 0; i < SNAP_HISTOGRAM_BINS; i++) {
		if (!s->size_histogram[i])
			continue;
		first = first < i ? first : i;
		last = i;
		most = most > s->size_histogram[i] ? most : s->size_histogram[i];
		allocations += s->size_histogram[i];
	}
	buf_printf(b, "\nsize_histogram (allocations by requested size, all targets)\n");
	for (unsigned i = first; i <= last && first < SNAP_HISTOGRAM_BINS; i++) {
		uint64_t n = s->size_histogram[i];
		unsigned bar = most ? (unsigned)((n * 40 + most - 1) / most) : 0;

		format_bytes(lo, sizeof(lo), bin_min(i));
		format_bytes(hi, sizeof(hi), bin_max(i));
		if (i == 0)
			buf_printf(b, "  %-23s %10" PRIu64 " ", "0 B", n);
		else
			buf_printf(b, "  %9s .. %-9s  %10" PRIu64 " ", lo, hi, n);
		for (unsigned k = 0; k < bar; k++)
			buf_printf(b, "#");
		buf_printf(b, "\n");
	}
	if (!allocations)
		buf_printf(b, "  (no allocations)\n");

	buf_printf(b, "\nallocator_mix (by the function the program called)\n");
	buf_printf(b, "  %-16s %12s  %s\n", "function", "allocations", "bytes_allocated");
	for (unsigned f = 0; f < MT_FN_COUNT; f++) {
		if (!s->allocations_by_func[f] || !mt_func_name(f))
			continue;
		format_bytes(human, sizeof(human), s->bytes_by_func[f]);
		buf_printf(b, "  %-16s %12" PRIu64 "  %" PRIu64 " (%s)\n", mt_func_name(f),
			   s->allocations_by_func[f], s->bytes_by_func[f], human);
	}

	for (int pass = 0; pass < 2; pass++) {
		sites_rank(sites, nsites, pass);
		buf_printf(b, "\n%s\n",
			   pass ? "top_sites_by_allocations" : "top_sites_by_bytes_allocated");
		for (size_t i = 0; i < nsites && i < STATS_TOP_SITES; i++) {
			format_bytes(human, sizeof(human), sites[i].t.bytes_allocated);
			buf_printf(b, "  %zu. %" PRIu64 " (%s) in %" PRIu64 " allocations: ", i + 1,
				   sites[i].t.bytes_allocated, human, sites[i].t.allocations);
			text_site(b, &sites[i]);
			buf_printf(b, "\n");
		}
		if (!nsites)
			buf_printf(b, "  (no stacks)\n");
	}
	free(sites);
}

/* A site's counters in JSON, in this order. */
static const enum mt_stack_counter json_site_keys[] = {MT_SC_allocations, MT_SC_bytes_allocated,
						       MT_SC_live_allocations, MT_SC_live_bytes};

static void json_site(struct json_writer *w, const struct site *v)
{
	struct buf name = {0};

	json_begin_object(w);
	if (v->frame) {
		format_frame_name(&name, v->frame);
		json_key(w, "name");
		json_string_len(w, (const char *)name.data, name.len);
		buf_free(&name);
		json_kv_string(w, "function", v->frame->function);
		json_kv_string(w, "module", v->frame->module);
		json_kv_string(w, "file", v->frame->file);
		json_key(w, "line");
		json_i64(w, v->frame->line);
	} else {
		json_key(w, "name");
		json_null(w);
	}
	render_json_stack_counters(w, &v->t, json_site_keys, ARRAY_SIZE(json_site_keys), 0);
	json_end_object(w);
}

static void json_stats_extras(struct json_writer *w, const struct snapshot *s,
			      const struct snapshot *stacks)
{
	struct site *sites;
	size_t nsites = sites_collect(stacks, &sites);

	json_key(w, "size_histogram");
	json_begin_array(w);
	for (unsigned i = 0; i < SNAP_HISTOGRAM_BINS; i++) {
		if (!s->size_histogram[i])
			continue;
		json_begin_object(w);
		json_kv_u64(w, "min_size", bin_min(i));
		json_kv_u64(w, "max_size", bin_max(i));
		json_kv_u64(w, "allocations", s->size_histogram[i]);
		json_end_object(w);
	}
	json_end_array(w);

	json_key(w, "allocator_mix");
	json_begin_object(w);
	for (unsigned f = 0; f < MT_FN_COUNT; f++) {
		if (!s->allocations_by_func[f] || !mt_func_name(f))
			continue;
		json_key(w, mt_func_name(f));
		json_begin_object(w);
		json_kv_u64(w, "allocations", s->allocations_by_func[f]);
		json_kv_u64(w, "bytes_allocated", s->bytes_by_func[f]);
		json_end_object(w);
	}
	json_end_object(w);

	for (int pass = 0; pass < 2; pass++) {
		sites_rank(sites, nsites, pass);
		json_key(w, pass ? "top_sites_by_allocations" : "top_sites_by_bytes_allocated");
		json_begin_array(w);
		for (size_t i = 0; i < nsites && i < STATS_TOP_SITES; i++)
			json_site(w, &sites[i]);
		json_end_array(w);
	}
	free(sites);
}

/* ---- JSON ---------------------------------------------------------------------- */

/* Where each allocator function of t is probed (docs/design.md, "Cheaper traps"). */
static void json_probe_sites(struct json_writer *w, const struct snap_target *t)
{
	json_key(w, "probe_sites");
	json_begin_array(w);
	for (uint32_t i = 0; i < t->nsites; i++) {
		const struct snap_probe_site *ps = &t->sites[i];

		json_begin_object(w);
		json_kv_string(w, "function", ps->function);
		json_kv_string(w, "object", ps->object);
		json_kv_u64(w, "offset", ps->offset);
		json_kv_u64(w, "at", ps->at);
		json_kv_string(w, "instruction", ps->instruction);
		json_kv_string(w, "why", ps->why);
		json_kv_string(w, "via", ps->via);
		json_end_object(w);
	}
	json_end_array(w);
}

/* The OOM killer's mark (section SEC_OOM): when, and what the target held then. */
static void json_oom(struct json_writer *w, const struct snap_oom *o)
{
	json_key(w, "oom");
	json_begin_object(w);
	json_kv_double(w, "time", ns_to_seconds(o->time_ns));
	json_kv_u64(w, "live_bytes", o->live_bytes);
	json_kv_u64(w, "live_blocks", o->live_blocks);
	json_key(w, "resident_bytes");
	if (o->resident_bytes)
		json_u64(w, o->resident_bytes);
	else
		json_null(w);
	json_key(w, "cgroup_usage_bytes");
	if (o->cgroup_limit)
		json_u64(w, o->cgroup_usage);
	else
		json_null(w);
	json_key(w, "cgroup_limit_bytes"); /* null: not read, or no limit */
	if (o->cgroup_limit && o->cgroup_limit != UINT64_MAX)
		json_u64(w, o->cgroup_limit);
	else
		json_null(w);
	json_end_object(w);
}

static void json_target(struct json_writer *w, const struct snapshot *s, uint32_t i,
			int with_counters)
{
	const struct snap_target *t = &s->targets[i];
	int exited = t->state == SNAP_TARGET_EXITED && t->exit_status >= 0;

	json_begin_object(w);
	json_kv_u64(w, "pid", t->pid);
	json_kv_string(w, "command", t->command);
	json_kv_string(w, "state", t->oom.killed ? "oom-killed" : snap_target_state_name(t->state));
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
	if (t->parent_pid) /* forked from a traced process: its heap began as that one's */
		json_kv_u64(w, "parent_pid", t->parent_pid);
	if (!with_counters) /* status: where each function is probed */
		json_probe_sites(w, t);
	json_kv_double(w, "traced_seconds", ns_to_seconds(t->traced_ns));
	render_json_target_cgroup(w, t);
	if (t->oom.killed)
		json_oom(w, &t->oom);
	if (with_counters) {
		json_key(w, "counters");
		json_begin_object(w);
		render_json_counters(w, &t->counters, 0);
		json_end_object(w);
		render_json_target_resident(w, s, i);
	}
	json_end_object(w);
}

static void json_targets(struct json_writer *w, const struct snapshot *s, int with_counters)
{
	json_key(w, "targets");
	json_begin_array(w);
	for (uint32_t i = 0; i < s->ntargets; i++)
		json_target(w, s, i, with_counters);
	json_end_array(w);
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

/* "unwind": the DWARF walker's tables, or null under another walker. */
static void json_unwind(struct json_writer *w, const struct snapshot *s)
{
	const struct snap_unwind *u = s->unwind;

	json_key(w, "unwind");
	if (!u) {
		json_null(w);
		return;
	}
	json_begin_object(w);
	json_kv_u64(w, "tables", u->tables);
	json_kv_u64(w, "table_bytes", u->table_bytes);
	json_kv_u64(w, "memory_used", u->memory_used);
	json_kv_u64(w, "memory_limit", u->memory_limit);
	json_kv_u64(w, "modules_without", u->modules_without);
	json_kv_u64(w, "modules_refused", u->modules_refused);
	json_end_object(w);
}

static void text_unwind(struct buf *b, const struct snapshot *s)
{
	const struct snap_unwind *u = s->unwind;
	char used[32], limit[32], rows[32];

	if (!u)
		return;
	format_bytes(used, sizeof(used), u->memory_used);
	format_bytes(limit, sizeof(limit), u->memory_limit);
	format_bytes(rows, sizeof(rows), u->table_bytes);
	buf_printf(b,
		   "unwind tables: %" PRIu64 " loaded, %s of rows in %s of maps (limit %s); "
		   "%" PRIu64 " modules without call frame information",
		   u->tables, rows, used, limit, u->modules_without);
	if (u->modules_refused)
		buf_printf(b, ", %" PRIu64 " over the limit (--unwind-memory)", u->modules_refused);
	buf_printf(b, "\n");
}

/* How the daemon kept up (snapshots that carry it, section SEC_DAEMON). */
static void json_daemon(struct json_writer *w, const struct snapshot *s)
{
	const struct snap_daemon *dm = s->daemon;

	if (!dm)
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
	json_kv_u64(w, "stack_id_events", dm->stack_id_events);
	json_kv_u64(w, "stack_ids_unknown", dm->stack_ids_unknown);
	json_kv_u64(w, "bpf_runs_skipped", dm->bpf_runs_skipped);
	json_end_object(w);
}

/* Whole-host mode (section SEC_MATCH): what matches, and the matches not traced. */
static void json_match(struct json_writer *w, const struct snapshot *s)
{
	const struct snap_match *m = s->match;

	if (!m)
		return;
	json_key(w, "match");
	json_begin_object(w);
	json_kv_string(w, "what", m->what);
	json_kv_u64(w, "max_targets", m->max_targets);
	json_kv_u64(w, "traced", m->traced);
	json_kv_u64(w, "matches_over_limit", m->over_limit);
	json_end_object(w);
}

static void json_status(struct json_writer *w, const struct snapshot *s)
{
	json_begin_object(w);
	json_kv_string(w, "tracer_version", s->tracer_version);
	json_kv_double(w, "uptime", ns_to_seconds(s->uptime_ns));
	render_json_events(w, s);
	json_kv_u64(w, "stacks_total", s->stacks_total);
	render_json_truncations(w, s);
	json_unwind(w, s);
	if (s->started_unix_ns)
		json_trace(w, s);
	render_json_walker(w, s);
	json_daemon(w, s);
	json_match(w, s);
	json_targets(w, s, 0);
	json_end_object(w);
}

static void json_stats(struct json_writer *w, const struct snapshot *s,
		       const struct snapshot *stacks)
{
	json_begin_object(w);
	render_json_counters(w, &s->totals, 0);
	render_json_events(w, s);
	json_kv_u64(w, "stacks_total", stacks->stacks_total);
	render_json_walker(w, s);
	json_daemon(w, s);
	json_match(w, s);
	render_json_resident_totals(w, s, 0);
	json_targets(w, s, 1);
	json_stats_extras(w, s, stacks);
	json_end_object(w);
}

/* ---- text ---------------------------------------------------------------------- */

static void text_state(char *dst, size_t len, const struct snap_target *t)
{
	const char *name = t->oom.killed ? "oom-killed" : snap_target_state_name(t->state);

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
	format_duration(cells[COL_TRACED], 256, t->traced_ns);
	snprintf(cells[COL_ALLOCATOR], 256, "%s",
		 t->allocator ? format_basename(t->allocator) : "-");
}

static void text_match(struct buf *b, const struct snapshot *s)
{
	const struct snap_match *m = s->match;

	if (!m)
		return;
	buf_printf(b, "whole-host mode: ");
	format_text(b, m->what ? m->what : "-");
	buf_printf(b,
		   ", a match's forks included; %" PRIu64 " traced now, at most %" PRIu64
		   " at once (--max-targets)\n",
		   m->traced, m->max_targets);
	if (m->over_limit)
		buf_printf(b,
			   "warning: %" PRIu64 " matching processes were not traced: --max-targets "
			   "were traced already (matches_over_limit)\n",
			   m->over_limit);
}

/* "pid 123 oom-killed at 12.3s of tracing: live 61.2 MiB in 62 blocks, resident 63.0 MiB;
 * memory cgroup 64.0 MiB of 64.0 MiB limit (... bytes)": resident is the last sample, if any */
static void text_oom(struct buf *b, const struct snap_target *t)
{
	const struct snap_oom *o = &t->oom;
	char when[64], live[32], rss[32], use[32], lim[32];

	if (!o->killed)
		return;
	format_duration(when, sizeof(when), o->time_ns);
	format_bytes(live, sizeof(live), o->live_bytes);
	buf_printf(b, "pid %" PRIu32 " oom-killed at %s of tracing: live %s in %" PRIu64 " blocks",
		   t->pid, when, live, o->live_blocks);
	if (o->resident_bytes) {
		format_bytes(rss, sizeof(rss), o->resident_bytes);
		buf_printf(b, ", resident %s", rss);
	}
	if (!o->cgroup_limit) {
		buf_printf(b, "; memory cgroup not read\n");
		return;
	}
	format_bytes(use, sizeof(use), o->cgroup_usage);
	if (o->cgroup_limit == UINT64_MAX) {
		buf_printf(b, "; memory cgroup %s, no limit\n", use);
		return;
	}
	format_bytes(lim, sizeof(lim), o->cgroup_limit);
	buf_printf(b, "; memory cgroup %s of %s limit (%" PRIu64 " of %" PRIu64 " bytes)\n", use,
		   lim, o->cgroup_usage, o->cgroup_limit);
}

static void text_status(struct buf *b, const struct snapshot *s)
{
	char cells[NCOLS][256], uptime[64];
	size_t width[NCOLS];

	format_duration(uptime, sizeof(uptime), s->uptime_ns);
	buf_printf(b, "memtraced");
	if (s->tracer_version) {
		buf_printf(b, " ");
		format_text(b, s->tracer_version);
	}
	buf_printf(b, ", up %s: %" PRIu64 " events received, %" PRIu64 " lost\n", uptime,
		   s->events_received, snapshot_events_lost(s));
	render_text_lost_warning(b, s);
	render_text_truncations(b, s);
	text_unwind(b, s);
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
	render_text_walker(b, s);
	text_match(b, s);
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
		format_text(b, s->targets[i].command ? s->targets[i].command : "-");
		buf_printf(b, "\n");
	}
	for (uint32_t i = 0; i < s->ntargets; i++) {
		if (!s->targets[i].note)
			continue;
		buf_printf(b, "pid %" PRIu32 ": ", s->targets[i].pid);
		format_text(b, s->targets[i].note);
		buf_printf(b, "\n");
	}
	for (uint32_t i = 0; i < s->ntargets; i++)
		render_text_target_cgroup_line(b, &s->targets[i]);
	for (uint32_t i = 0; i < s->ntargets; i++)
		text_oom(b, &s->targets[i]);
}

static void text_stats(struct buf *b, const struct snapshot *s, const struct snapshot *stacks)
{
	const struct mt_counters *c = &s->totals;
	char human[32];
	uint64_t lost = snapshot_events_lost(s);

	for (size_t i = 0; i < MT_NCOUNTERS; i++) {
		const struct mt_counter_desc *m = &mt_counter_descs[i];
		uint64_t v = mt_counter_get(c, i);

		if (m->summary == 2 && !v)
			continue; /* not a number of this trace */
		/* a name as long as the column (inherited_released_bytes) still
		 * gets a space before its number */
		buf_printf(b, "%-*s%s", STATS_NAME_WIDTH, m->name,
			   strlen(m->name) < STATS_NAME_WIDTH ? "" : " ");
		if (m->unit == MT_UNIT_NS) {
			buf_printf(b, "%.3f s\n", ns_to_seconds(v));
		} else if (m->unit == MT_UNIT_BYTES) {
			format_bytes(human, sizeof(human), v);
			buf_printf(b, "%" PRIu64 " (%s)\n", v, human);
		} else {
			buf_printf(b, "%" PRIu64 "\n", v);
		}
	}
	buf_printf(b, "%-*s%" PRIu64 "\n", STATS_NAME_WIDTH, "events_received", s->events_received);
	buf_printf(b, "%-*s%" PRIu64, STATS_NAME_WIDTH, "events_lost", lost);
	for (unsigned k = 0, first = 1; lost && k < MT_LOST_KIND_COUNT; k++) {
		if (!mt_lost_kind_always(k) && !s->events_lost[k])
			continue;
		buf_printf(b, "%s%s %" PRIu64, first ? " (" : ", ", mt_lost_kind_name(k),
			   s->events_lost[k]);
		first = 0;
	}
	buf_printf(b, "%s\n", lost ? ")" : "");
	if (s->match)
		buf_printf(b, "%-*s%" PRIu64 "\n", STATS_NAME_WIDTH, "matches_over_limit",
			   s->match->over_limit);
	if (s->walker) {
		char walker[1024];

		format_walker(walker, sizeof(walker), s);
		buf_printf(b, "%-*s", STATS_NAME_WIDTH, "stack_walker");
		format_text(b, walker);
		buf_printf(b, "\n");
	}
	render_text_lost_warning(b, s);
	render_text_resident_totals(b, s);
	for (uint32_t i = 0; i < s->ntargets; i++) {
		const struct snap_target *t = &s->targets[i];
		char state[64];

		text_state(state, sizeof(state), t);
		format_bytes(human, sizeof(human), t->counters.live_bytes);
		buf_printf(b, "target %" PRIu32 " %s, live %s in %" PRIu64 " blocks: ", t->pid,
			   state, human, t->counters.live_allocations);
		format_text(b, t->command ? t->command : "-");
		buf_printf(b, "\n");
		render_text_target_resident(b, t);
		render_text_target_cgroup(b, t);
	}
	render_text_memory(b, s);
	text_stats_extras(b, s, stacks);
}

/* ---- entry points ------------------------------------------------------------ */

typedef void text_fn(struct buf *b, const struct snapshot *s);
typedef void json_fn(struct json_writer *w, const struct snapshot *s);

static void render(struct buf *out, const struct snapshot *s, const struct render_opts *o,
		   text_fn *text, json_fn *json)
{
	struct json_writer w;

	if (o->format != RENDER_JSON) {
		text(out, s);
		return;
	}
	json_init(&w, out, o->pretty);
	json(&w, s);
	buf_put(out, "\n", 1);
}

void render_status(struct buf *out, const struct snapshot *s, const struct render_opts *o)
{
	render(out, s, o, text_status, json_status);
}

void render_stats(struct buf *out, const struct snapshot *s, const struct snapshot *stacks,
		  const struct render_opts *o)
{
	struct json_writer w;

	if (o->format != RENDER_JSON) {
		text_stats(out, s, stacks);
		return;
	}
	json_init(&w, out, o->pretty);
	json_stats(&w, s, stacks);
	buf_put(out, "\n", 1);
}
