// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Building a snapshot from the daemon's state for one request: counters and
 * targets always, then the stacks the request selects (one pid or all, sorted
 * by one key, the top N), symbolized only for what is sent: each distinct
 * word once per snapshot, each distinct address once for good (the
 * symbolizer's cache). A report of the top 10 on a heap of millions of
 * blocks symbolizes ten stacks; a grouped view sends only its rows.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/serve/collect.h"
#include "daemon/serve/framebuild.h"
#include "daemon/serve/grouping.h"
#include "daemon/serve/leaks.h"
#include "daemon/serve/memory.h"
#include "daemon/attach/allocator.h"
#include "daemon/core/timeline.h"
#include "daemon/core/tracker.h"
#include "daemon/core/check.h"
#include "daemon/symbols/symbolize.h"
#include "common/util.h"

/*
 * Which modules cut stacks short: every stack (of pid, or all) whose walk
 * broke (no call frame information and no frame-pointer chain) or stopped
 * (a rule the DWARF walker cannot follow), counted under the module of its
 * last frame.
 */
static void fill_truncations(const struct daemon_view *v, const struct stack_ends *ce, uint32_t pid,
			     struct snapshot *out)
{
	const struct tracker *t = v->tracker;
	struct snap_truncation *rows = NULL;
	uint32_t n = 0, i, k;

	for (i = 0; i < ce->nbroken; i++) {
		const struct stack_entry *e = stack_get(&t->stacks, ce->broken[i].stack);
		const char *module = ce->broken[i].module;

		if (pid && tracker_space_pid(t, e->tgid) != pid)
			continue;
		for (k = 0; k < n && strcmp(rows[k].module, module); k++)
			;
		if (k == n) {
			rows = xrealloc(rows, (n + 1) * sizeof(*rows));
			memset(&rows[n], 0, sizeof(rows[n]));
			rows[n++].module = xstrdup(module);
		}
		rows[k].stacks++;
		rows[k].allocations += e->t.allocations;
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

/* How the daemon keeps up (section 42): the view's figures, and the symbol cache's. */
static void fill_daemon(const struct daemon_view *v, struct snapshot *s)
{
	struct symbolizer_stats sym;

	if (v->sym_lock)
		pthread_mutex_lock(v->sym_lock);
	symbolizer_get_stats(v->sym, &sym);
	if (v->sym_lock)
		pthread_mutex_unlock(v->sym_lock);
	s->has_daemon = 1;
	s->daemon = v->daemon;
	s->daemon.symbol_lookups = sym.lookups;
	s->daemon.symbol_cache_hits = sym.hits;
	if (v->has_match) {
		s->has_match = 1;
		s->match = v->match;
		s->match.what = xstrdup(v->match.what);
	}
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

static void fill_target(const struct daemon_view *v, const struct view_target *tg,
			struct snap_target *out)
{
	const struct tracker_target *tt = tracker_find_space(v->tracker, tg->space);
	uint64_t end = tg->end_ns ? tg->end_ns : time_monotonic_ns();

	out->pid = (uint32_t)tg->pid;
	out->state = (uint32_t)tg->state;
	out->exit_status = tg->exit_status;
	out->probes = (uint32_t)tg->probes;
	out->command = xstrdup(tg->command);
	out->allocator = tg->alloc->obj[ALLOC_OBJ_MALLOC].path
			     ? xstrdup(tg->alloc->obj[ALLOC_OBJ_MALLOC].path)
			     : NULL;
	out->note = tg->note ? xstrdup(tg->note) : NULL;
	out->traced_ns = end > tg->attach_ns ? end - tg->attach_ns : 0;
	if (tt)
		out->counters = tt->c;
	if (tt && tt->parent)
		out->parent_pid = v->tracker->targets[tt->parent - 1].tgid;
	if (tt && tt->start_ns > v->tracker->start_ns)
		out->started_ns = tt->start_ns - v->tracker->start_ns;
	allocator_probe_sites(tg->alloc, out); /* where each function is probed */
}

/*
 * The timeline as it is, but for its targets' figures: of the snapshot's
 * targets only (view_index: the daemon's index of each), by their index there.
 */
static void fill_timeline(const struct timeline *tl, int ntargets, const int *view_index,
			  struct snapshot *s)
{
	uint32_t *index_of = xmalloc((size_t)(ntargets ? ntargets : 1) * sizeof(*index_of));

	memset(index_of, 0xff, (size_t)(ntargets ? ntargets : 1) * sizeof(*index_of));
	for (uint32_t i = 0; i < s->ntargets; i++)
		index_of[view_index[i]] = i;
	s->ntimeline = tl->npoints;
	s->timeline = xmalloc(tl->npoints * sizeof(*s->timeline));
	memcpy(s->timeline, tl->points, tl->npoints * sizeof(*s->timeline));
	s->timeline_interval_ns = tl->interval_ns;
	s->has_timeline_targets = 1;
	s->timeline_targets =
	    xmalloc((size_t)(tl->ntargets ? tl->ntargets : 1) * sizeof(*s->timeline_targets));
	for (uint32_t i = 0; i < s->ntimeline; i++) {
		struct snap_timeline_point *p = &s->timeline[i];
		const struct snap_timeline_target *from = &tl->targets[p->first];
		uint32_t n = p->ntargets;

		p->first = s->ntimeline_targets;
		p->ntargets = 0;
		for (uint32_t k = 0; k < n; k++) {
			uint32_t to = from[k].target < (uint32_t)ntargets ? index_of[from[k].target]
									  : UINT32_MAX;

			if (to == UINT32_MAX)
				continue; /* another pid's, left out of this snapshot */
			s->timeline_targets[s->ntimeline_targets] = from[k];
			s->timeline_targets[s->ntimeline_targets++].target = to;
			p->ntargets++;
		}
	}
	free(index_of);
}

struct block_pick {
	const struct proto_request *r;
	struct snapshot *s;
	const uint32_t *where;
	uint64_t now;
	size_t cap;
};

static int pick_block(void *arg, uint32_t id, const struct heap_block *b)
{
	struct block_pick *p = arg;
	uint64_t age = p->now > b->time_ns ? p->now - b->time_ns : 0;
	struct snapshot *s = p->s;
	struct snap_stack *st;

	if (p->where[id] == UINT32_MAX)
		return 0;
	st = &s->stacks[p->where[id]];
	if (age > st->oldest_live_age_ns)
		st->oldest_live_age_ns = age;
	if (!p->r->blocks || age < p->r->older_than_ns || s->nblocks == SNAPSHOT_MAX_BLOCKS)
		return 0;
	if (s->nblocks == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 1024;
		s->blocks = xrealloc(s->blocks, p->cap * sizeof(*s->blocks));
	}
	s->blocks[s->nblocks++] = (struct snap_block){
	    .address = b->addr, .size = b->size, .age_ns = age, .stack = p->where[id]};
	return 0;
}

/*
 * One walk of the live heap for the rows the snapshot holds (sel[0..n) are
 * their ids, viewrows.h): the blocks at least r->older_than_ns old
 * (blocks=1), and each row's oldest live block (ages=1). A forked child's
 * inherited blocks count in its rows.
 */
static void collect_blocks(const struct daemon_view *v, const struct proto_request *r,
			   const uint32_t *sel, uint32_t n, struct snapshot *s)
{
	uint32_t nrows = framebuild_nrows(v), *where;
	struct block_pick p = {.r = r, .s = s, .now = time_monotonic_ns()};

	s->has_blocks = r->blocks;
	s->has_ages = r->ages;
	s->blocks_older_than_ns = r->older_than_ns;
	if (!nrows)
		return;
	where = xmalloc((size_t)nrows * sizeof(*where));
	memset(where, 0xff, (size_t)nrows * sizeof(*where));
	for (uint32_t i = 0; i < n; i++)
		where[sel[i]] = i;
	p.where = where;
	viewrows_blocks(v->tracker, v->rows, pick_block, &p);
	free(where);
}

static int collect_rows(const struct daemon_view *v, const struct stack_ends *ends,
			const struct proto_request *r, struct snapshot *s, char *err, size_t errlen)
{
	const struct tracker *t = v->tracker;
	int have_pid = 0;
	struct mt_rank *rank;
	struct framebuild *fb;
	uint64_t *frames_at;
	uint32_t *sel = NULL, nrank = 0, nsel, i, n;
	int k, *view_index;

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
	view_index = xcalloc((size_t)(v->ntargets ? v->ntargets : 1), sizeof(*view_index));
	for (k = 0; k < v->ntargets; k++) {
		const struct view_target tg = view_target(v, k);

		if (r->pid && (uint32_t)tg.pid != r->pid)
			continue;
		view_index[s->ntargets] = k;
		fill_target(v, &tg, &s->targets[s->ntargets++]);
	}

	if (t->ntargets) {
		uint64_t traced = time_monotonic_ns() - t->start_ns;

		s->started_unix_ns = s->created_unix_ns > traced ? s->created_unix_ns - traced : 1;
		s->options = *v->options;
	}
	if (v->timeline->npoints)
		fill_timeline(v->timeline, v->ntargets, view_index, s);
	memory_fill_resident(v, view_index, s);
	if (r->memory)
		memory_fill_breakdowns(v, view_index, s);
	free(view_index);

	fill_daemon(v, s);
	fill_truncations(v, ends, r->pid, s);
	s->unwind = v->unwind;
	if (!r->stacks)
		return 0;
	n = framebuild_nrows(v);
	rank = xmalloc((size_t)(n ? n : 1) * sizeof(*rank));
	for (i = 0; i < n; i++) {
		struct mt_stack_counters c;

		if (r->pid && framebuild_row_pid(v, i) != r->pid)
			continue;
		c = framebuild_row_counters(v, i);
		rank[nrank++] = (struct mt_rank){
		    .value = mt_sort_value(&c, r->sort), .allocations = c.allocations, .index = i};
	}
	/* a top N alone needs only its N in order (the grouped views need all) */
	nsel = (uint32_t)mt_rank_top(rank, nrank, r->group || r->leaks ? 0 : r->top);
	s->stacks_total = nsel;
	sel = xmalloc(((size_t)nsel + 1) * sizeof(*sel));
	for (i = 0; i < nsel; i++)
		sel[i] = rank[i].index;
	free(rank);
	/* views that group or count leaks: only the rows (stacks) shown go */
	if (r->group || r->leaks) {
		if (r->group)
			grouping_rows(v, ends, r, sel, nsel, s);
		else
			leaks_rows(v, ends, r, sel, nsel, s);
		free(sel);
		return 0;
	}
	n = r->top && r->top < nsel ? r->top : nsel;
	s->stacks = xcalloc(n ? n : 1, sizeof(*s->stacks));
	frames_at = xmalloc((n ? n : 1) * sizeof(*frames_at));
	fb = framebuild_new(v, ends);
	for (i = 0; i < n; i++)
		framebuild_fill(fb, sel[i], &s->stacks[i], &frames_at[i]);
	s->nstacks = n;
	framebuild_finish(fb, s, frames_at);
	free(frames_at);
	if (r->blocks || r->ages)
		collect_blocks(v, r, sel, n, s);
	free(sel);
	return 0;
}

int collect_snapshot(const struct daemon_view *v, const struct stack_ends *ends,
		     const struct proto_request *r, struct snapshot *s, char *err, size_t errlen)
{
	struct daemon_view lv = *v;
	struct viewrows rows = {0};
	int rc;

	tracker_check_state(v->tracker); /* the sanitizer build: every invariant, per request */
	/* a forked child's inherited rows, for the pid asked about */
	if (r->stacks &&
	    viewrows_build(v->tracker, r->pid, r->blocks || r->ages || r->leaks, &rows)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	lv.rows = r->stacks ? &rows : NULL;
	rc = collect_rows(&lv, ends, r, s, err, errlen);
	viewrows_free(&rows);
	for (uint32_t i = 0; !rc && i < s->nstacks; i++)
		if (s->stacks[i].t.inherited_allocations || s->stacks[i].t.inherited_bytes)
			s->has_inherited = 1;
	return rc;
}
