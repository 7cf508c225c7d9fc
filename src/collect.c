// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Building a snapshot from the daemon's state for one request: counters and
 * targets always, then the stacks the request selects (one pid or all, sorted
 * by one key, the top N), symbolized only for what is sent. A report of the
 * top 10 on a heap of millions of blocks symbolizes ten stacks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "framebuild.h"
#include "grouping.h"
#include "pystacks.h"
#include "symbolize.h"
#include "util.h"
#include "worker.h"

/* The value a request sorts stacks by, largest first. */
static uint64_t sort_value(const struct tracker *t, const struct stack_entry *s, int key)
{
	switch (key) {
	case SNAP_SORT_ALLOCATED:
		return s->t.bytes_allocated;
	case SNAP_SORT_COUNT:
		return s->t.allocations;
	case SNAP_SORT_PEAK:
		return tracker_stack_peak_bytes(t, s);
	case SNAP_SORT_TEMPORARY:
		return s->t.temporary_allocations;
	default:
		return s->t.live_bytes;
	}
}

/* A stack to sort: its key and tie-breaker copied out, so the sort reads one array. */
struct sort_item {
	uint64_t value;
	uint64_t allocations;
	uint32_t index;
};

static int cmp_items(const void *a, const void *b)
{
	const struct sort_item *x = a, *y = b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	if (x->allocations != y->allocations)
		return x->allocations > y->allocations ? -1 : 1;
	return x->index < y->index ? -1 : 1;
}

/* Functions that start a program or a thread: a stack that reaches one is whole. */
static const char *const root_functions[] = {
    "_start",
    "__libc_start_main",
    "__libc_start_call_main",
    "__libc_start_main_impl",
    "start_thread",
    "clone",
    "clone3",
    "__clone",
    "__clone3",
    "__clone_internal",
};

/* Is this frame where stacks begin: a root function, or inside libc (whose
 * thread and program start functions may be nameless without debug info)? */
static int is_root_frame(const char *function, const char *module)
{
	const char *base;
	size_t i;

	for (i = 0; function && i < ARRAY_SIZE(root_functions); i++) {
		if (!strcmp(function, root_functions[i]))
			return 1;
	}
	if (!module)
		return 0;
	base = strrchr(module, '/');
	base = base ? base + 1 : module;
	return !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5);
}

/*
 * Where each stack of the stack table really ends (struct collect_ends in
 * daemon.h). Whether a stack is whole is decided by where it ends, not only
 * by how the walk ended: a chain that reached a root is whole even if the
 * root's own frame pointer is junk (libc is built without frame pointers),
 * and one that ended with a zero frame pointer anywhere else was cut short
 * (code built without frame pointers often leaves %rbp at 0). A stack's
 * frames never change, so each stack is checked once, from its last native
 * frame's symbol alone (no DWARF), and the stack table is only read.
 */
void collect_check_ends(struct daemon *d)
{
	collect_check_ends_for(d, UINT64_MAX);
}

void collect_check_ends_for(struct daemon *d, uint64_t budget_ns)
{
	const struct tracker *t = &d->tracker;
	struct collect_ends *ce = &d->ends;
	uint64_t start = budget_ns == UINT64_MAX ? 0 : time_monotonic_ns();

	if (ce->cap < t->stacks.count) {
		ce->cap = t->stacks.count + t->stacks.count / 2 + 256;
		ce->end = xrealloc(ce->end, ce->cap * sizeof(*ce->end));
	}
	for (; ce->checked < t->stacks.count; ce->checked++) {
		uint32_t idx = ce->checked, k;

		if (start && !(idx & 255) && time_monotonic_ns() - start > budget_ns)
			break; /* the rest on the next tick */
		const struct stack_entry *e = stack_get(&t->stacks, idx);
		const char *function, *module;

		ce->end[idx] = (uint8_t)e->stack_end;
		if (!e->nframes ||
		    (e->stack_end != MT_STACK_COMPLETE && e->stack_end != MT_STACK_BROKEN))
			continue;
		/* the last native frame: Python frame words follow the native ones */
		for (k = e->nframes; k > 1 && (stack_word(&t->stacks, idx, k - 1) & MT_PY_WORD);
		     k--)
			;
		function = symbolizer_symbol(d->sym, (int)e->tgid,
					     stack_word(&t->stacks, idx, k - 1), &module);
		if (is_root_frame(function, module)) {
			ce->end[idx] = MT_STACK_COMPLETE;
			continue;
		}
		ce->end[idx] = MT_STACK_BROKEN;
		if (ce->nbroken == ce->broken_cap) {
			ce->broken_cap = ce->broken_cap ? 2 * ce->broken_cap : 64;
			ce->broken = xrealloc(ce->broken, ce->broken_cap * sizeof(*ce->broken));
		}
		ce->broken[ce->nbroken].stack = idx;
		ce->broken[ce->nbroken].module =
		    symbolizer_intern(d->sym, module ? module : "(no module)");
		ce->nbroken++;
	}
}

/* Stack idx as the snapshot shows it; its frames come from fb (offset in *frames_at). */
void collect_fill_stack(struct daemon *d, struct framebuild *fb, uint32_t idx,
			struct snap_stack *out, uint64_t *frames_at)
{
	const struct tracker *t = &d->tracker;
	const struct stack_entry *s = stack_get(&t->stacks, idx);

	out->pid = tracker_space_pid(&d->tracker, s->tgid);
	*frames_at = framebuild_stack(fb, idx, &out->nframes);
	out->allocations = s->t.allocations;
	out->bytes_allocated = s->t.bytes_allocated;
	out->frees = s->t.frees;
	out->bytes_freed = s->t.bytes_freed;
	out->live_allocations = s->t.live_allocations;
	out->live_bytes = s->t.live_bytes;
	out->peak_live_bytes = tracker_stack_peak_bytes(t, s);
	out->temporary_allocations = s->t.temporary_allocations;
	out->temporary_bytes = s->t.temporary_bytes;
	out->stack_end = idx < d->ends.checked ? d->ends.end[idx] : s->stack_end;
}

/*
 * Which modules cut stacks short: every stack (of pid, or all) whose
 * frame-pointer chain broke, counted under the module of its last frame.
 */
static void fill_truncations(struct daemon *d, uint32_t pid, struct snapshot *out)
{
	const struct tracker *t = &d->tracker;
	const struct collect_ends *ce = &d->ends;
	struct snap_truncation *v = NULL;
	uint32_t n = 0, i, k;

	for (i = 0; i < ce->nbroken; i++) {
		const struct stack_entry *e = stack_get(&t->stacks, ce->broken[i].stack);
		const char *module = ce->broken[i].module;

		if (pid && tracker_space_pid(t, e->tgid) != pid)
			continue;
		for (k = 0; k < n && strcmp(v[k].module, module); k++)
			;
		if (k == n) {
			v = xrealloc(v, (n + 1) * sizeof(*v));
			memset(&v[n], 0, sizeof(v[n]));
			v[n++].module = xstrdup(module);
		}
		v[k].stacks++;
		v[k].allocations += e->t.allocations;
	}
	/* most allocations first: a handful of modules, insertion sort */
	for (i = 1; i < n; i++) {
		for (k = i; k > 0 && v[k].allocations > v[k - 1].allocations; k--) {
			struct snap_truncation tmp = v[k];

			v[k] = v[k - 1];
			v[k - 1] = tmp;
		}
	}
	out->truncations = v;
	out->ntruncations = n;
}

/* How the daemon keeps up (section 40). */
static void fill_daemon(struct daemon *d, struct snapshot *s)
{
	struct symbolizer_stats sym;
	struct worker_stats w;

	worker_symbols_lock(d);
	symbolizer_get_stats(d->sym, &sym);
	worker_symbols_unlock(d);
	worker_get_stats(d, &w);
	s->has_daemon = 1;
	s->daemon.drain_gap_max_ns = d->drain_gap_max_ns;
	s->daemon.loop_busy_max_ns = d->loop_busy_max_ns;
	s->daemon.frozen_requests = w.freezes;
	s->daemon.freeze_max_ns = w.freeze_max_ns;
	s->daemon.deferred_events = w.deferred_events;
	s->daemon.symbol_lookups = sym.lookups;
	s->daemon.symbol_cache_hits = sym.hits;
}

/*
 * The counters of every generation of pid (before and after an exec, or
 * attached again): sums, and the highest of their peaks.
 */
static void pid_totals(const struct tracker *t, uint32_t pid, struct mt_counters *out)
{
	memset(out, 0, sizeof(*out));
	for (uint32_t i = 0; i < t->ntargets; i++) {
		const struct mt_counters *c = &t->targets[i].c;

		if (t->targets[i].tgid != pid)
			continue;
		out->allocations += c->allocations;
		out->frees += c->frees;
		out->bytes_allocated += c->bytes_allocated;
		out->bytes_freed += c->bytes_freed;
		out->live_allocations += c->live_allocations;
		out->live_bytes += c->live_bytes;
		if (c->peak_live_bytes > out->peak_live_bytes) {
			out->peak_live_bytes = c->peak_live_bytes;
			out->peak_time_ns = c->peak_time_ns;
		}
		out->unknown_frees += c->unknown_frees;
		out->missed_frees += c->missed_frees;
		out->missed_free_bytes += c->missed_free_bytes;
		out->untracked_allocations += c->untracked_allocations;
		out->stackless_allocations += c->stackless_allocations;
		out->temporary_allocations += c->temporary_allocations;
		out->temporary_bytes += c->temporary_bytes;
	}
}

static void fill_target(struct daemon *d, const struct target *tg, struct snap_target *out)
{
	const struct tracker_target *tt = tracker_find_space(&d->tracker, tg->space);
	uint64_t end = tg->end_ns ? tg->end_ns : time_monotonic_ns();

	out->pid = (uint32_t)tg->pid;
	out->state = (uint32_t)tg->state;
	out->exit_status = tg->exit_status;
	out->probes = (uint32_t)tg->probes.nlinks;
	out->command = xstrdup(tg->command);
	out->allocator = tg->alloc.path ? xstrdup(tg->alloc.path) : NULL;
	out->note = tg->note ? xstrdup(tg->note) : NULL;
	out->traced_ns = end > tg->attach_ns ? end - tg->attach_ns : 0;
	if (tt)
		out->counters = tt->c;
}

/*
 * One walk of the live heap for the stacks the snapshot holds (sel[0..n) are
 * their indices in the daemon's stack table): the blocks at least
 * r->older_than_ns old (blocks=1), and each stack's oldest live block
 * (ages=1).
 */
static void collect_blocks(struct daemon *d, const struct proto_request *r, const uint32_t *sel,
			   uint32_t n, struct snapshot *s)
{
	const struct tracker *t = &d->tracker;
	uint64_t now = time_monotonic_ns(), pos = 0;
	struct heap_block hb, *b = &hb;
	uint32_t *where;
	size_t cap = 0;

	s->has_blocks = r->blocks;
	s->has_ages = r->ages;
	s->blocks_older_than_ns = r->older_than_ns;
	if (!t->stacks.count)
		return;
	where = xmalloc((size_t)t->stacks.count * sizeof(*where));
	memset(where, 0xff, (size_t)t->stacks.count * sizeof(*where));
	for (uint32_t i = 0; i < n; i++)
		where[sel[i]] = i;
	while (heap_next(&t->heap, &pos, b)) {
		uint64_t age = now > b->time_ns ? now - b->time_ns : 0;
		struct snap_stack *st;

		if (b->stack >= t->stacks.count || where[b->stack] == UINT32_MAX)
			continue;
		st = &s->stacks[where[b->stack]];
		if (age > st->oldest_live_age_ns)
			st->oldest_live_age_ns = age;
		if (!r->blocks || age < r->older_than_ns || s->nblocks == SNAPSHOT_MAX_BLOCKS)
			continue;
		if (s->nblocks == cap) {
			cap = cap ? cap * 2 : 1024;
			s->blocks = xrealloc(s->blocks, cap * sizeof(*s->blocks));
		}
		s->blocks[s->nblocks++] = (struct snap_block){
		    .address = b->addr, .size = b->size, .age_ns = age, .stack = where[b->stack]};
	}
	free(where);
}

int collect_snapshot(struct daemon *d, const struct proto_request *r, const struct collect_ctx *ctx,
		     struct snapshot *s, char *err, size_t errlen)
{
	const struct tracker *t = &d->tracker;
	int have_pid = 0;
	struct sort_item *items;
	struct framebuild *fb;
	uint64_t *frames_at;
	uint32_t *sel = NULL, nsel = 0, i, n;
	int k;

	memset(s, 0, sizeof(*s));
	if (r->pid) {
		for (i = 0; i < t->ntargets; i++)
			have_pid |= t->targets[i].tgid == r->pid;
		if (!have_pid) {
			snprintf(err, errlen, "pid %u is not traced", r->pid);
			return -1;
		}
	}
	s->version = SNAPSHOT_VERSION;
	s->tracer_version = xstrdup(MEMTRACE_VERSION);
	s->created_unix_ns = time_realtime_ns();
	s->uptime_ns = time_monotonic_ns() - d->start_ns;
	s->events_received = t->events_received;
	for (k = 0; k < MT_LOST_SLOTS && k < (int)ARRAY_SIZE(s->events_lost); k++)
		s->events_lost[k] = ctx->lost[k];
	s->totals = t->totals;
	if (r->pid)
		pid_totals(t, r->pid, &s->totals);
	/* kept for all targets together */
	memcpy(s->size_histogram, t->size_histogram, sizeof(s->size_histogram));
	memcpy(s->allocations_by_func, t->allocations_by_func, sizeof(s->allocations_by_func));
	memcpy(s->bytes_by_func, t->bytes_by_func, sizeof(s->bytes_by_func));

	s->targets = xcalloc((size_t)d->ntargets, sizeof(*s->targets));
	for (k = 0; k < d->ntargets; k++) {
		if (!r->pid || (uint32_t)d->targets[k].pid == r->pid)
			fill_target(d, &d->targets[k], &s->targets[s->ntargets++]);
	}

	if (t->ntargets) {
		uint64_t traced = time_monotonic_ns() - t->start_ns;

		s->started_unix_ns = s->created_unix_ns > traced ? s->created_unix_ns - traced : 1;
		s->options = d->options;
	}
	if (d->timeline.npoints) {
		s->ntimeline = d->timeline.npoints;
		s->timeline = xcalloc(s->ntimeline, sizeof(*s->timeline));
		memcpy(s->timeline, d->timeline.points, s->ntimeline * sizeof(*s->timeline));
		s->timeline_interval_ns = d->timeline.interval_ns;
	}

	fill_daemon(d, s);
	if (ctx->check_ends) /* a status must be quick: a new burst of stacks is learned over ticks
			      */
		collect_check_ends_for(d, 5 * 1000 * 1000);
	fill_truncations(d, r->pid, s);
	if (!r->stacks)
		return 0;
	items = xmalloc(((size_t)t->stacks.count + 1) * sizeof(*items));
	for (i = 0; i < t->stacks.count; i++) {
		const struct stack_entry *e = stack_get(&t->stacks, i);
		uint64_t value;

		if (r->pid && tracker_space_pid(t, e->tgid) != r->pid)
			continue;
		value = sort_value(t, e, r->sort);
		if (!value)
			continue;
		items[nsel++] = (struct sort_item){value, e->t.allocations, i};
	}
	s->stacks_total = nsel;
	qsort(items, nsel, sizeof(*items), cmp_items);
	sel = xmalloc(((size_t)nsel + 1) * sizeof(*sel));
	for (i = 0; i < nsel; i++)
		sel[i] = items[i].index;
	free(items);
	/* views that group or count leaks: only the rows (stacks) shown go */
	if (r->group || r->leaks) {
		if (r->group)
			grouping_rows(d, r, sel, nsel, s);
		else
			grouping_leaks(d, r, sel, nsel, s);
		free(sel);
		return 0;
	}
	n = r->top && r->top < nsel ? r->top : nsel;
	s->stacks = xcalloc(n ? n : 1, sizeof(*s->stacks));
	frames_at = xmalloc((n ? n : 1) * sizeof(*frames_at));
	fb = framebuild_new(d);
	for (i = 0; i < n; i++)
		collect_fill_stack(d, fb, sel[i], &s->stacks[i], &frames_at[i]);
	s->nstacks = n;
	framebuild_finish(fb, s, frames_at);
	free(frames_at);
	if (r->blocks || r->ages)
		collect_blocks(d, r, sel, n, s);
	free(sel);
	return 0;
}

void collect_free(struct daemon *d)
{
	free(d->ends.end);
	free(d->ends.broken);
	memset(&d->ends, 0, sizeof(d->ends));
}
