// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report (see report.h). The JSON entries carry every counter of a stack and
 * why its frames stop (stack_end); the text names the cause only where a
 * stack is cut short.
 */
#include "ctl/render/report.h"
#include "ctl/render/resident.h"
#include "ctl/render/format.h"
#include "ctl/render/json.h"
#include "ctl/view/resident.h"
#include "memtrace/event.h"

#include <inttypes.h>

static const struct mt_counters *report_counters(const struct snapshot *s, uint32_t pid)
{
	for (uint32_t i = 0; pid && i < s->ntargets; i++)
		if (s->targets[i].pid == pid)
			return &s->targets[i].counters;
	return &s->totals;
}

static const char *const stack_end_names[] = {
    [MT_STACK_COMPLETE] = "complete", [MT_STACK_DEPTH] = "depth",
    [MT_STACK_BROKEN] = "broken",     [MT_STACK_NONE] = "none",
    [MT_STACK_KERNEL] = "unknown",    [MT_STACK_TRUNCATED] = "truncated",
};

static const char *stack_end_name(uint32_t end)
{
	return end < ARRAY_SIZE(stack_end_names) && stack_end_names[end] ? stack_end_names[end]
									 : "unknown";
}

/* A stack's counters in JSON, in this order (the inherited ones when a stack has them). */
static const enum mt_stack_counter json_stack_keys[] = {
    MT_SC_live_bytes,	   MT_SC_live_allocations,
    MT_SC_allocations,	   MT_SC_bytes_allocated,
    MT_SC_frees,	   MT_SC_bytes_freed,
    MT_SC_peak_live_bytes, MT_SC_temporary_allocations,
    MT_SC_temporary_bytes, MT_SC_inherited_allocations,
    MT_SC_inherited_bytes,
};

static void json_stack(struct json_writer *w, const struct snap_stack *st, int oldest,
		       int inherited)
{
	json_begin_object(w);
	json_kv_u64(w, "pid", st->pid);
	render_json_stack_counters(w, &st->t, json_stack_keys, ARRAY_SIZE(json_stack_keys),
				   inherited);
	if (oldest) {
		json_key(w, "oldest_live_age");
		if (st->t.live_allocations)
			json_double(w, ns_to_seconds(st->oldest_live_age_ns));
		else
			json_null(w);
	}
	render_json_frames(w, st);
	json_kv_string(w, "stack_end", stack_end_name(st->stack_end));
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
	render_json_counters(w, report_counters(s, o->pid), 0);
	json_end_object(w);
	render_json_resident_totals(w, s, o->pid);
	render_json_events(w, s);
	json_kv_u64(w, "stacks_total", s->stacks_total);
	render_json_walker(w, s);
	render_json_truncations(w, s);
	json_key(w, "entries");
	json_begin_array(w);
	for (uint32_t i = 0; i < s->nstacks; i++)
		json_stack(w, &s->stacks[i], o->oldest && s->has_ages, s->has_inherited);
	json_end_array(w);
	json_end_object(w);
}

/* ", resident 104 MiB" beside the totals (pid 0: all targets); nothing without. */
static void text_resident(struct buf *b, const struct snapshot *s, uint32_t pid)
{
	struct resident_view v;
	char human[32];

	resident_view_totals(&v, s, pid);
	if (!v.present || !v.targets)
		return;
	format_bytes(human, sizeof(human), v.total.resident_bytes);
	buf_printf(b, ", resident %s", human);
}

static void text_report(struct buf *b, const struct snapshot *s, const struct render_opts *o)
{
	const struct mt_counters *c = report_counters(s, o->pid);
	char live[32], peak[32], allocated[32], freed[32];

	format_bytes(live, sizeof(live), c->live_bytes);
	format_bytes(peak, sizeof(peak), c->peak_live_bytes);
	format_bytes(allocated, sizeof(allocated), c->bytes_allocated);
	format_bytes(freed, sizeof(freed), c->bytes_freed);
	if (o->pid)
		buf_printf(b, "pid %" PRIu32 ": ", o->pid);
	else
		buf_printf(b, "total: ");
	buf_printf(b, "live %s in %" PRIu64 " blocks", live, c->live_allocations);
	text_resident(b, s, o->pid); /* beside it, when the snapshot has it */
	buf_printf(b, ", peak %s, allocated %s in %" PRIu64 " calls, freed %s in %" PRIu64 "; ",
		   peak, allocated, c->allocations, freed, c->frees);
	if (o->pid)
		buf_printf(b, "%" PRIu32 " stacks shown\n", s->nstacks);
	else
		buf_printf(b, "%" PRIu32 " of %" PRIu64 " stacks shown\n", s->nstacks,
			   s->stacks_total);
	render_text_walker(b, s);
	render_text_lost_warning(b, s);
	render_text_truncations(b, s);

	for (uint32_t i = 0; i < s->nstacks; i++) {
		const struct snap_stack *st = &s->stacks[i];

		format_bytes(live, sizeof(live), st->t.live_bytes);
		format_bytes(allocated, sizeof(allocated), st->t.bytes_allocated);
		format_bytes(freed, sizeof(freed), st->t.bytes_freed);
		buf_printf(b,
			   "\n#%" PRIu32 "  live %s in %" PRIu64
			   " blocks  (allocated %s in %" PRIu64 " calls, freed %s in %" PRIu64 ")",
			   i + 1, live, st->t.live_allocations, allocated, st->t.allocations, freed,
			   st->t.frees);
		if (o->sort == MT_SORT_PEAK) {
			format_bytes(peak, sizeof(peak), st->t.peak_live_bytes);
			buf_printf(b, "  peak %s", peak);
		}
		if (o->sort == MT_SORT_TEMPORARY) {
			format_bytes(peak, sizeof(peak), st->t.temporary_bytes);
			buf_printf(b, "  temporary %" PRIu64 " (%s)", st->t.temporary_allocations,
				   peak);
		}
		if (st->t.inherited_allocations) {
			format_bytes(peak, sizeof(peak), st->t.inherited_bytes);
			buf_printf(b, "  inherited %s in %" PRIu64 " blocks at the fork", peak,
				   st->t.inherited_allocations);
		}
		if (o->oldest && s->has_ages && st->t.live_allocations) {
			format_duration(peak, sizeof(peak), st->oldest_live_age_ns);
			buf_printf(b, "  oldest %s", peak);
		}
		if (!o->pid && s->ntargets > 1)
			buf_printf(b, "  pid %" PRIu32, st->pid);
		buf_printf(b, "\n");
		render_text_frames(b, st);
		if (st->nframes && st->stack_end == MT_STACK_BROKEN)
			buf_printf(b, "    ... (the frame-pointer chain breaks here)\n");
		else if (st->nframes && st->stack_end == MT_STACK_TRUNCATED)
			buf_printf(b, "    ... (unwinding stops here: a rule the walker cannot "
				      "follow, or an unreadable frame)\n");
		else if (st->nframes && st->stack_end == MT_STACK_DEPTH)
			buf_printf(b, "    ... (--stack-depth reached)\n");
	}
}

void render_report(struct buf *out, const struct snapshot *s, const struct render_opts *o)
{
	struct json_writer w;

	if (o->format != RENDER_JSON) {
		text_report(out, s, o);
		return;
	}
	json_init(&w, out, o->pretty);
	json_report(&w, s, o);
	buf_put(out, "\n", 1);
}
