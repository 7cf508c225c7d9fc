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

#include "daemon/serve/collect.h"
#include "daemon/targets.h"
#include "daemon/core/timeline.h"
#include "daemon/core/tracker.h"
#include "daemon/symbols/pystacks.h"
#include "daemon/symbols/symbolize.h"
#include "common/util.h"

/* A stack's numbers, its value at the peak resolved (tracker_stack_peak_bytes). */
static struct mt_stack_counters stack_counters(const struct tracker *t, const struct stack_entry *s)
{
	struct mt_stack_counters c = s->t;

	c.peak_live_bytes = tracker_stack_peak_bytes(t, s);
	return c;
}

static void push_frame(struct snap_stack *out, uint32_t *cap, const struct snap_frame *f)
{
	if (out->nframes == *cap) {
		*cap *= 2;
		out->frames = xrealloc(out->frames, *cap * sizeof(*out->frames));
	}
	out->frames[out->nframes++] = *f;
}

/* The interpreter loop: one native frame per run, which ran Python frames. */
static int is_eval_loop(const struct snap_frame *f)
{
	return f->function && (!strcmp(f->function, "_PyEval_EvalFrameDefault") ||
			       !strncmp(f->function, "_PyEval_EvalFrameDefault.", 25));
}

/*
 * A stack with Python frame words: native frames, each run of the
 * interpreter loop replaced by the Python frames it was running (up to the
 * word marked MT_PY_GROUP_END). Python frames left over (native frames cut
 * short: a module without frame pointers) follow the native ones.
 */
static void fill_merged(const struct daemon_view *v, const struct stack_entry *s,
			const uint64_t *frames, struct snap_stack *out, uint32_t *cap)
{
	struct snap_frame one[SYMBOLIZER_MAX_INLINE + 1], f;
	uint32_t nat = 0, py, i;
	size_t k, n;

	while (nat < s->nframes && !(frames[nat] & MT_PY_WORD))
		nat++;
	py = nat;
	for (i = 0; i < nat; i++) {
		n = symbolizer_frames(v->sym, (int)s->tgid, frames[i], one, ARRAY_SIZE(one));
		if (py < s->nframes && n && is_eval_loop(&one[n - 1])) {
			for (k = 0; k < n; k++) {
				free(one[k].function);
				free(one[k].module);
				free(one[k].file);
				free(one[k].build_id);
			}
			do {
				pystacks_frame(v->py, (int)s->tgid, frames[py], &f);
				push_frame(out, cap, &f);
			} while (!(frames[py++] & MT_PY_GROUP_END) && py < s->nframes);
			continue;
		}
		for (k = 0; k < n; k++)
			push_frame(out, cap, &one[k]);
	}
	for (; py < s->nframes; py++) {
		pystacks_frame(v->py, (int)s->tgid, frames[py], &f);
		push_frame(out, cap, &f);
	}
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

/* Is this frame where stacks begin: a root function, or inside libc or ld.so
 * (whose thread and program start functions may be nameless without debug
 * info)? */
static int is_root_frame(const struct snap_frame *f)
{
	const char *base;
	size_t i;

	for (i = 0; f->function && i < ARRAY_SIZE(root_functions); i++) {
		if (!strcmp(f->function, root_functions[i]))
			return 1;
	}
	if (!f->module)
		return 0;
	base = strrchr(f->module, '/');
	base = base ? base + 1 : f->module;
	/* ld.so runs the libraries' constructors from its own start */
	return !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5) ||
	       !strncmp(base, "ld-linux", 8);
}

/*
 * Whether a stack is whole is decided by where it ends, not only by how the
 * walk ended: a chain that reached a root is whole even if the root's own
 * frame pointer is junk (libc is built without frame pointers), and one that
 * ended with a zero frame pointer anywhere else was cut short (code built
 * without frame pointers often leaves %rbp at 0). Checked once per stack;
 * the verdicts are the serving side's own cache (the core keeps what the
 * walk said).
 */
static uint32_t stack_end(const struct daemon_view *v, struct stack_ends *c, uint32_t idx)
{
	const struct stack_entry *e = stack_get(&v->tracker->stacks, idx);
	const uint64_t *frames = stack_frames(&v->tracker->stacks, idx);
	struct snap_frame f;
	uint32_t k;

	if (e->stack_end == MT_STACK_OUTERMOST) /* the call frame information says so */
		return MT_STACK_COMPLETE;
	if (!e->nframes || (e->stack_end != MT_STACK_COMPLETE && e->stack_end != MT_STACK_BROKEN))
		return e->stack_end;
	if (idx >= c->cap) {
		uint32_t ncap = c->cap ? c->cap : 1024;

		while (ncap <= idx)
			ncap *= 2;
		c->verdicts = xrealloc(c->verdicts, ncap);
		memset(c->verdicts + c->cap, 0, ncap - c->cap);
		c->cap = ncap;
	}
	if (c->verdicts[idx])
		return c->verdicts[idx] - 1u;
	/* the last native frame: Python frame words follow the native ones */
	for (k = e->nframes; k > 1 && (frames[k - 1] & MT_PY_WORD); k--)
		;
	symbolizer_frame(v->sym, (int)e->tgid, frames[k - 1], &f);
	c->verdicts[idx] = 1 + (is_root_frame(&f) ? MT_STACK_COMPLETE : MT_STACK_BROKEN);
	free(f.function);
	free(f.module);
	free(f.file);
	free(f.build_id);
	return c->verdicts[idx] - 1u;
}

static void fill_stack(const struct daemon_view *v, struct stack_ends *ends, uint32_t idx,
		       struct snap_stack *out)
{
	const struct tracker *t = v->tracker;
	const struct stack_entry *s = stack_get(&t->stacks, idx);
	const uint64_t *frames = stack_frames(&t->stacks, idx);
	struct snap_frame one[SYMBOLIZER_MAX_INLINE + 1];
	uint32_t i, cap = s->nframes ? s->nframes : 1;
	size_t k, n;

	out->pid = tracker_space_pid(v->tracker, s->tgid);
	out->nframes = 0;
	out->frames = xcalloc(cap, sizeof(*out->frames));
	for (i = 0; i < s->nframes && !(frames[i] & MT_PY_WORD); i++)
		;
	if (i < s->nframes) {
		fill_merged(v, s, frames, out, &cap);
		i = s->nframes;
	} else {
		i = 0;
	}
	for (; i < s->nframes; i++) {
		/* inlined functions add frames at the same address */
		n = symbolizer_frames(v->sym, (int)s->tgid, frames[i], one, ARRAY_SIZE(one));
		if (out->nframes + n > cap) {
			cap = (out->nframes + (uint32_t)n) * 2;
			out->frames = xrealloc(out->frames, cap * sizeof(*out->frames));
		}
		for (k = 0; k < n; k++)
			out->frames[out->nframes++] = one[k];
	}
	out->t = stack_counters(t, s);
	out->stack_end = stack_end(v, ends, idx);
}

/*
 * Which modules cut stacks short: every stack (of pid, or all) whose walk
 * broke (no call frame information and no frame-pointer chain) or stopped
 * (a rule the DWARF walker cannot follow), counted under the module of its
 * last frame.
 */
static void fill_truncations(const struct daemon_view *v, struct stack_ends *ends, uint32_t pid,
			     struct snapshot *out)
{
	const struct tracker *t = v->tracker;
	struct snap_truncation *rows = NULL;
	uint32_t n = 0, i, k;

	for (i = 0; i < t->stacks.count; i++) {
		const struct stack_entry *e = stack_get(&t->stacks, i);
		struct snap_frame f;
		const char *module;
		uint32_t end;

		if (!e->nframes || (pid && tracker_space_pid(t, e->tgid) != pid))
			continue;
		end = stack_end(v, ends, i);
		if (end != MT_STACK_BROKEN && end != MT_STACK_TRUNCATED)
			continue;
		/* the last native frame: Python frame words follow the native ones */
		for (k = e->nframes; k > 1 && (stack_frames(&t->stacks, i)[k - 1] & MT_PY_WORD);
		     k--)
			;
		symbolizer_frame(v->sym, (int)e->tgid, stack_frames(&t->stacks, i)[k - 1], &f);
		module = f.module ? f.module : "(no module)";
		for (k = 0; k < n && strcmp(rows[k].module, module); k++)
			;
		if (k == n) {
			rows = xrealloc(rows, (n + 1) * sizeof(*rows));
			memset(&rows[n], 0, sizeof(rows[n]));
			rows[n++].module = xstrdup(module);
		}
		rows[k].stacks++;
		rows[k].allocations += e->t.allocations;
		free(f.function);
		free(f.module);
		free(f.file);
		free(f.build_id);
	}
	/* most allocations first: a handful of modules, insertion sort */
	for (i = 1; i < n; i++) {
		for (k = i; k > 0 && rows[k].allocations > rows[k - 1].allocations; k--) {
			struct snap_truncation tmp = rows[k];

			rows[k] = rows[k - 1];
			rows[k - 1] = tmp;
		}
	}
	out->truncations = rows;
	out->ntruncations = n;
}

/*
 * The counters of every generation of pid (before and after an exec, or
 * attached again): sums, and the highest of their peaks.
 */
static void pid_totals(const struct tracker *t, uint32_t pid, struct mt_counters *out)
{
	memset(out, 0, sizeof(*out));
	for (uint32_t i = 0; i < t->ntargets; i++) {
		if (t->targets[i].tgid == pid)
			mt_counters_merge(out, &t->targets[i].c);
	}
}

/* Where each allocator function of the target is probed (docs/design.md). */
static void fill_probe_sites(const struct allocator *a, struct snap_target *out)
{
	int n = a->nprobes < SNAPSHOT_MAX_SITES ? a->nprobes : SNAPSHOT_MAX_SITES;

	out->sites = n ? xcalloc((size_t)n, sizeof(*out->sites)) : NULL;
	for (int i = 0; i < n; i++) {
		const struct alloc_probe *p = &a->probes[i];
		struct snap_probe_site *ps = &out->sites[out->nsites++];
		const char *obj = allocator_probe_path(a, p);

		ps->function = xstrdup(p->dispatched ? p->via_target
				       : p->symbol   ? p->symbol
						     : allocator_func_name(p->func));
		ps->via = p->dispatched && p->symbol ? xstrdup(p->symbol) : NULL;
		ps->object = obj ? xstrdup(obj) : NULL;
		ps->offset = p->offset;
		ps->at = p->place.offset;
		ps->instruction = p->place.insn[0] ? xstrdup(p->place.insn) : NULL;
		ps->why = p->place.why[0] ? xstrdup(p->place.why) : NULL;
	}
}

static void fill_target(const struct daemon_view *v, const struct target *tg,
			struct snap_target *out)
{
	const struct tracker_target *tt = tracker_find_space(v->tracker, tg->space);
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
	fill_probe_sites(&tg->alloc, out);
}

/*
 * One walk of the live heap for the stacks the snapshot holds (sel[0..n) are
 * their indices in the daemon's stack table): the blocks at least
 * r->older_than_ns old (blocks=1), and each stack's oldest live block
 * (ages=1).
 */
static void collect_blocks(const struct daemon_view *v, const struct proto_request *r,
			   const uint32_t *sel, uint32_t n, struct snapshot *s)
{
	const struct tracker *t = v->tracker;
	uint64_t now = time_monotonic_ns();
	const struct heap_block *b;
	uint32_t *where;
	size_t pos = 0, cap = 0;

	s->has_blocks = r->blocks;
	s->has_ages = r->ages;
	s->blocks_older_than_ns = r->older_than_ns;
	if (!t->stacks.count)
		return;
	where = xmalloc((size_t)t->stacks.count * sizeof(*where));
	memset(where, 0xff, (size_t)t->stacks.count * sizeof(*where));
	for (uint32_t i = 0; i < n; i++)
		where[sel[i]] = i;
	while ((b = heap_next(&t->heap, &pos))) {
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

int collect_snapshot(const struct daemon_view *v, struct stack_ends *ends,
		     const struct proto_request *r, struct snapshot *s, char *err, size_t errlen)
{
	const struct tracker *t = v->tracker;
	int have_pid = 0;
	struct mt_rank *rank;
	uint32_t *sel = NULL, nrank = 0, i, n;
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
	s->uptime_ns = time_monotonic_ns() - v->start_ns;
	s->events_received = t->events_received;
	memcpy(s->events_lost, v->events_lost, sizeof(s->events_lost));
	s->totals = t->totals;
	if (r->pid)
		pid_totals(t, r->pid, &s->totals);
	/* kept for all targets together */
	memcpy(s->size_histogram, t->size_histogram, sizeof(s->size_histogram));
	memcpy(s->allocations_by_func, t->allocations_by_func, sizeof(s->allocations_by_func));
	memcpy(s->bytes_by_func, t->bytes_by_func, sizeof(s->bytes_by_func));

	s->targets = xcalloc((size_t)v->ntargets, sizeof(*s->targets));
	for (k = 0; k < v->ntargets; k++) {
		if (!r->pid || (uint32_t)v->targets[k].pid == r->pid)
			fill_target(v, &v->targets[k], &s->targets[s->ntargets++]);
	}

	if (t->ntargets) {
		uint64_t traced = time_monotonic_ns() - t->start_ns;

		s->started_unix_ns = s->created_unix_ns > traced ? s->created_unix_ns - traced : 1;
		s->options = *v->options;
	}
	if (v->timeline->npoints) {
		s->ntimeline = v->timeline->npoints;
		s->timeline = xcalloc(s->ntimeline, sizeof(*s->timeline));
		for (i = 0; i < s->ntimeline; i++) {
			const struct timeline_point *p = &v->timeline->points[i];

			s->timeline[i] = (struct snap_timeline_point){
			    .time_ns = p->time_ns,
			    .live_bytes = p->live_bytes,
			    .live_allocations = p->live_allocations,
			    .allocations = p->allocations,
			    .bytes_allocated = p->bytes_allocated,
			};
		}
		s->timeline_interval_ns = v->timeline->interval_ns;
	}

	fill_truncations(v, ends, r->pid, s);
	s->unwind = v->unwind;
	if (!r->stacks)
		return 0;
	rank = xmalloc((size_t)(t->stacks.count ? t->stacks.count : 1) * sizeof(*rank));
	for (i = 0; i < t->stacks.count; i++) {
		const struct stack_entry *e = stack_get(&t->stacks, i);
		struct mt_stack_counters c;

		if (r->pid && tracker_space_pid(t, e->tgid) != r->pid)
			continue;
		c = stack_counters(t, e);
		rank[nrank++] = (struct mt_rank){
		    .value = mt_sort_value(&c, r->sort), .allocations = c.allocations, .index = i};
	}
	s->stacks_total = (uint32_t)mt_rank_sort(rank, nrank);
	n = r->top && r->top < s->stacks_total ? r->top : (uint32_t)s->stacks_total;
	sel = xmalloc((size_t)(n ? n : 1) * sizeof(*sel));
	for (i = 0; i < n; i++)
		sel[i] = rank[i].index;
	free(rank);
	s->stacks = xcalloc(n ? n : 1, sizeof(*s->stacks));
	for (i = 0; i < n; i++)
		fill_stack(v, ends, sel[i], &s->stacks[i]);
	s->nstacks = n;
	if (r->blocks || r->ages)
		collect_blocks(v, r, sel, n, s);
	free(sel);
	return 0;
}

void stack_ends_free(struct stack_ends *e)
{
	free(e->verdicts);
	e->verdicts = NULL;
	e->cap = 0;
}
