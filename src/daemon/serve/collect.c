// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Building a snapshot from the daemon's state for one request: counters,
 * targets and their resident memory always, then the stacks the request selects (one pid or all,
 * sorted by one key, the top N), symbolized only for what is sent: each distinct word once per
 * snapshot, each distinct address once for good (the symbolizer's cache). A report of the top 10 on
 * a heap of millions of blocks symbolizes ten stacks; a grouped view sends only its rows.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/serve/collect.h"
#include "daemon/serve/framebuild.h"
#include "daemon/serve/grouping.h"
#include "daemon/serve/leaks.h"
#include "daemon/attach/allocator.h"
#include "daemon/core/resident.h"
#include "daemon/core/timeline.h"
#include "daemon/core/tracker.h"
#include "daemon/core/check.h"
#include "daemon/proc/cgroup.h"
#include "daemon/proc/memmap.h"
#include "daemon/proc/rss.h"
#include "daemon/proc/smaps.h"
#include "daemon/symbols/symbolize.h"
#include "common/groupkey.h"
#include "common/invariant.h"
#include "common/proto.h"
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

		if (pid && tracker_gen_pid(t, e->tgid) != pid)
			continue;
		for (k = 0; k < n && strcmp(rows[k].module, module); k++)
			;
		if (k == n) {
			rows = xrealloc(rows, (n + 1) * sizeof(*rows));
			memset(&rows[n], 0, sizeof(rows[n]));
			rows[n++].module = snapshot_strdup(out, module);
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

/* How the daemon keeps up (section SEC_DAEMON): the view's figures, and the symbol cache's. */
static void fill_daemon(const struct daemon_view *v, struct snapshot *s)
{
	struct symbolizer_stats sym;

	if (v->sym_lock)
		pthread_mutex_lock(v->sym_lock);
	symbolizer_get_stats(v->sym, &sym);
	if (v->sym_lock)
		pthread_mutex_unlock(v->sym_lock);
	s->daemon = xmalloc(sizeof(*s->daemon));
	*s->daemon = v->daemon;
	s->daemon->symbol_lookups = sym.lookups;
	s->daemon->symbol_cache_hits = sym.hits;
	if (v->has_match) {
		s->match = xmalloc(sizeof(*s->match));
		*s->match = v->match;
		s->match->what = snapshot_strdup(s, v->match.what);
	}
	if (v->walker.name) {
		s->walker = xmalloc(sizeof(*s->walker));
		*s->walker = v->walker;
		s->walker->name = snapshot_strdup(s, v->walker.name);
		s->walker->reason = snapshot_strdup(s, v->walker.reason);
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

static void fill_target(const struct daemon_view *v, const struct view_target *vt,
			struct snapshot *s, struct snap_target *out)
{
	const struct tracker_target *tt = tracker_find_gen(v->tracker, vt->gen);
	uint64_t end = vt->end_ns ? vt->end_ns : time_monotonic_ns();

	out->pid = (uint32_t)vt->pid;
	out->state = (uint32_t)vt->state;
	out->exit_status = vt->exit_status;
	out->probes = (uint32_t)vt->probes;
	out->command = snapshot_strdup(s, vt->command);
	out->allocator = snapshot_strdup(s, vt->alloc_path);
	out->note = snapshot_strdup(s, vt->note);
	out->traced_ns = end > vt->attach_ns ? end - vt->attach_ns : 0;
	if (tt)
		out->counters = tt->c;
	if (tt && tt->parent)
		out->parent_pid = v->tracker->targets[tt->parent - 1].tgid;
	if (tt && tt->start_ns > v->tracker->start_ns)
		out->started_ns = tt->start_ns - v->tracker->start_ns;
	if (vt->alloc)
		allocator_probe_sites(vt->alloc, s, out); /* where each function is probed */
	if (vt->oom)
		out->oom = *vt->oom;
}

/*
 * The timeline as it is, but for its targets' figures: of the snapshot's
 * targets only (view_index: the daemon's index of each), by their index there.
 */
static void fill_timeline(const struct timeline *tl, int ntargets, const int *view_index,
			  struct snapshot *s)
{
	uint32_t *index_of = xmalloc((size_t)(ntargets ? ntargets : 1) * sizeof(*index_of));
	struct snap_timeline_targets *tt;

	memset(index_of, 0xff, (size_t)(ntargets ? ntargets : 1) * sizeof(*index_of));
	for (uint32_t i = 0; i < s->ntargets; i++)
		index_of[view_index[i]] = i;
	s->ntimeline = tl->npoints;
	s->timeline = xmalloc(tl->npoints * sizeof(*s->timeline));
	memcpy(s->timeline, tl->points, tl->npoints * sizeof(*s->timeline));
	s->timeline_interval_ns = tl->interval_ns;
	tt = s->timeline_targets = xcalloc(1, sizeof(*s->timeline_targets));
	tt->figures = xmalloc((size_t)(tl->ntargets ? tl->ntargets : 1) * sizeof(*tt->figures));
	for (uint32_t i = 0; i < s->ntimeline; i++) {
		struct snap_timeline_point *p = &s->timeline[i];
		const struct snap_timeline_target *from = &tl->targets[p->first];
		uint32_t n = p->ntargets;

		p->first = tt->nfigures;
		p->ntargets = 0;
		for (uint32_t k = 0; k < n; k++) {
			uint32_t to = from[k].target < (uint32_t)ntargets ? index_of[from[k].target]
									  : UINT32_MAX;

			if (to == UINT32_MAX)
				continue; /* another pid's, left out of this snapshot */
			tt->figures[tt->nfigures] = from[k];
			tt->figures[tt->nfigures++].target = to;
			p->ntargets++;
		}
	}
	free(index_of);
}

/*
 * Resident memory: each target's sampled figures, read anew when a request
 * lane builds the snapshot (v->off_loop: a lane may read /proc at length),
 * the timeline's, and for a memory request (stats --memory) and a whole
 * snapshot the breakdown of each traced target's mappings by kind with the
 * live heap in each: its smaps read then, and one walk of the live heap.
 */

/* Now, in the timeline's terms: since tracing began. */
static uint64_t since_start(const struct tracker *t)
{
	uint64_t now = time_monotonic_ns();

	return now > t->start_ns ? now - t->start_ns : 0;
}

static void fill_resident(const struct daemon_view *v, int k, struct snap_resident *out)
{
	const struct resident_target *rt = resident_get(v->resident, (uint32_t)k);
	const struct view_target vt = view_target(v, k);
	struct mt_resident now;
	char why[200];

	if (rt)
		*out = (struct snap_resident){.sampled = 1,
					      .time_ns = rt->time_ns,
					      .r = rt->last,
					      .peak_bytes = rt->peak_bytes,
					      .peak_time_ns = rt->peak_time_ns};
	/* a lane may wait for the walk: the snapshot's figures are of its moment */
	if (!v->off_loop || vt.state != SNAP_TARGET_ATTACHED ||
	    rss_read(vt.pid, &now, why, sizeof(why)))
		return;
	out->sampled = 1;
	out->time_ns = since_start(v->tracker);
	out->r = now;
	if (!rt || now.resident_bytes > out->peak_bytes) {
		out->peak_bytes = now.resident_bytes;
		out->peak_time_ns = out->time_ns;
	}
}

static char *label(struct snapshot *s, const char *v)
{
	return v && *v ? snapshot_strdup(s, v) : NULL;
}

/*
 * Target k's cgroup: its labels and memory cgroup's figures as last read,
 * read anew (like its resident memory) when a lane builds the snapshot.
 */
static void fill_cgroup(const struct daemon_view *v, int k, struct snapshot *s,
			struct snap_cgroup *out)
{
	const struct resident_target *rt = resident_get_cgroup(v->resident, (uint32_t)k);
	const struct view_target vt = view_target(v, k);
	const struct mt_cgroup_labels *l = rt ? rt->labels : NULL;
	struct mt_cgroup_labels *now = NULL;
	char why[512];

	if (v->off_loop && vt.state == SNAP_TARGET_ATTACHED) {
		now = xmalloc(sizeof(*now));
		if (!cgroup_read(vt.pid, now, &out->m, why, sizeof(why), why, sizeof(why))) {
			l = now;
			out->time_ns = since_start(v->tracker);
			out->why = label(s, why);
		} else {
			out->m = (struct mt_cgroup_memory){0};
			free(now);
			now = NULL;
		}
	}
	if (!now && rt && rt->cgroup_sampled) {
		out->time_ns = rt->cgroup_time_ns;
		out->m = rt->cg;
		out->why = label(s, rt->cgroup_why);
	}
	if (!l || !l->path[0]) {
		*out = (struct snap_cgroup){0};
		free(now);
		return;
	}
	out->known = 1;
	out->path = label(s, l->path);
	out->memory_path = label(s, l->memory_path);
	out->unit = label(s, l->unit);
	out->container = label(s, l->container);
	out->runtime = label(s, l->runtime);
	out->pod = label(s, l->pod);
	out->nspid = l->nspid > 0 ? (uint32_t)l->nspid : 0;
	free(now);
}

/* s->targets[i] is v->targets[view_index[i]]: their resident figures and cgroups. */
static void fill_residents(const struct daemon_view *v, const int *view_index, struct snapshot *s)
{
	for (uint32_t i = 0; i < s->ntargets; i++) {
		fill_resident(v, view_index[i], &s->targets[i].resident);
		fill_cgroup(v, view_index[i], s, &s->targets[i].cgroup);
		s->has_resident |= s->targets[i].resident.sampled;
	}
	/* the timeline's points came with theirs (fill_timeline) */
	for (uint32_t i = 0; i < s->ntimeline; i++)
		s->has_resident |= s->timeline[i].total.has_resident;
}

/* One breakdown being made: its target's generation (the key of its blocks) and mappings. */
struct making {
	uint32_t gen;
	struct smaps maps;
	struct memmap mm;
	int ok;
};

/* The breakdowns of the snapshot's targets that are traced now (section SEC_MEMORY). */
static void fill_breakdowns(const struct daemon_view *v, const int *view_index, struct snapshot *s)
{
	struct making *mk = xcalloc(s->ntargets ? s->ntargets : 1, sizeof(*mk));
	struct heap_block b;
	uint64_t pos = 0;
	uint32_t n = 0, last = 0, nok = 0;
	struct snap_breakdowns *bd = s->breakdowns = xcalloc(1, sizeof(*s->breakdowns));

	bd->memory = xcalloc(s->ntargets ? s->ntargets : 1, sizeof(*bd->memory));
	for (uint32_t i = 0; i < s->ntargets; i++) {
		const struct view_target vt = view_target(v, view_index[i]);
		struct snap_memory *m = &bd->memory[n];
		char why[256];

		if (vt.state != SNAP_TARGET_ATTACHED)
			continue; /* it has no memory now, or it is not this program's */
		m->target = i;
		m->time_ns = since_start(v->tracker);
		mk[n].gen = vt.gen;
		if (smaps_read(vt.pid, &mk[n].maps, why, sizeof(why))) {
			m->error = snapshot_strdup(s, why);
		} else {
			memmap_init(&mk[n].mm, &mk[n].maps);
			mk[n].ok = 1;
			nok++;
		}
		n++;
	}
	bd->nmemory = n;
	/* one walk of the live heap for them all: each block in the mapping holding it */
	while (nok && heap_next(&v->tracker->heap, &pos, &b)) {
		if (mk[last].gen != b.tgid || !mk[last].ok) {
			uint32_t k;

			for (k = 0; k < n && !(mk[k].ok && mk[k].gen == b.tgid); k++)
				;
			if (k == n)
				continue; /* another target's, or an older generation's */
			last = k;
		}
		memmap_add_block(&mk[last].mm, b.addr, b.size);
	}
	for (uint32_t k = 0; k < n; k++) {
		if (!mk[k].ok)
			continue;
		memmap_sum(&mk[k].mm, &bd->memory[k].m);
		memmap_free(&mk[k].mm);
		smaps_free(&mk[k].maps);
	}
	free(mk);
}

struct block_pick {
	struct snapshot *s; /* its block_list, if it has one, takes every block */
	const uint32_t *where;
	uint64_t now;
	size_t cap;
};

static int pick_block(void *arg, uint32_t id, const struct heap_block *b)
{
	struct block_pick *p = arg;
	uint64_t age = p->now > b->time_ns ? p->now - b->time_ns : 0;
	struct snap_block_list *l = p->s->block_list;
	struct snap_stack *st;

	if (p->where[id] == UINT32_MAX)
		return 0;
	st = &p->s->stacks[p->where[id]];
	if (age > st->oldest_live_age_ns)
		st->oldest_live_age_ns = age;
	if (!l || l->nblocks == SNAPSHOT_MAX_BLOCKS)
		return 0;
	if (l->nblocks == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 1024;
		l->blocks = xrealloc(l->blocks, p->cap * sizeof(*l->blocks));
	}
	l->blocks[l->nblocks++] = (struct snap_block){
	    .address = b->addr, .size = b->size, .age_ns = age, .stack = p->where[id]};
	return 0;
}

/*
 * One walk of the live heap for the rows the snapshot holds (sel[0..n) are
 * their ids, viewrows.h): each row's oldest live block (ages), and with
 * blocks every live block. A forked child's inherited blocks count in its
 * rows.
 */
static void collect_blocks(const struct daemon_view *v, int blocks, const uint32_t *sel, uint32_t n,
			   struct snapshot *s)
{
	uint32_t nrows = framebuild_nrows(v), *where;
	struct block_pick p = {.s = s, .now = time_monotonic_ns()};

	if (blocks)
		s->block_list = xcalloc(1, sizeof(*s->block_list));
	s->has_ages = 1;
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

/*
 * What every answer holds, for pid (0 = every target): the daemon's figures,
 * the counters, the targets, the timeline, resident memory and the modules
 * that cut stacks short; with memory, each target's mappings by kind.
 */
static int collect_common(const struct daemon_view *v, const struct stack_ends *ends, uint32_t pid,
			  int memory, struct snapshot *s, char *err, size_t errlen)
{
	const struct tracker *t = v->tracker;
	int have_pid = 0, k, *view_index;
	uint32_t i;

	if (pid) {
		for (i = 0; i < t->ntargets; i++)
			have_pid |= t->targets[i].tgid == pid;
		if (!have_pid) {
			snprintf(err, errlen, "pid %u is not traced", pid);
			return -1;
		}
	}
	s->version = SNAPSHOT_VERSION;
	s->tracer_version = snapshot_strdup(s, MEMTRACE_VERSION);
	s->created_unix_ns = time_realtime_ns();
	s->uptime_ns = time_monotonic_ns() - v->start_ns;
	s->events_received = t->events_received;
	memcpy(s->events_lost, v->events_lost, sizeof(s->events_lost));
	s->totals = t->totals;
	if (pid)
		pid_totals(t, pid, &s->totals);
	/* kept for all targets together */
	memcpy(s->size_histogram, t->size_histogram, sizeof(s->size_histogram));
	memcpy(s->allocations_by_func, t->allocations_by_func, sizeof(s->allocations_by_func));
	memcpy(s->bytes_by_func, t->bytes_by_func, sizeof(s->bytes_by_func));

	s->targets = xcalloc((size_t)v->ntargets, sizeof(*s->targets));
	view_index = xcalloc((size_t)(v->ntargets ? v->ntargets : 1), sizeof(*view_index));
	for (k = 0; k < v->ntargets; k++) {
		const struct view_target vt = view_target(v, k);

		if (pid && (uint32_t)vt.pid != pid)
			continue;
		view_index[s->ntargets] = k;
		fill_target(v, &vt, s, &s->targets[s->ntargets++]);
	}

	if (t->ntargets) {
		uint64_t traced = time_monotonic_ns() - t->start_ns;

		s->started_unix_ns = s->created_unix_ns > traced ? s->created_unix_ns - traced : 1;
		s->options = *v->options;
	}
	if (v->timeline->npoints)
		fill_timeline(v->timeline, v->ntargets, view_index, s);
	fill_residents(v, view_index, s);
	if (memory)
		fill_breakdowns(v, view_index, s);
	free(view_index);

	fill_daemon(v, s);
	fill_truncations(v, ends, pid, s);
	if (v->has_unwind) {
		s->unwind = xmalloc(sizeof(*s->unwind));
		*s->unwind = v->unwind;
	}
	return 0;
}

/*
 * The rows of pid with a nonzero value under sort, in the order of reports
 * (mt_rank_top): in order, the first top of them (0: all); *n says how many
 * there are in all (s->stacks_total). Returns their ids (malloc'd).
 */
/* The pids whose newest target with a known cgroup is in cgroup or below it, sorted. */
struct cgroup_pids {
	uint32_t *pids;
	size_t n;
};

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void cgroup_pids(const struct snapshot *s, const char *cgroup, struct cgroup_pids *out)
{
	out->pids = xmalloc((s->ntargets ? s->ntargets : 1) * sizeof(*out->pids));
	out->n = 0;
	for (uint32_t i = 0; i < s->ntargets; i++)
		out->pids[out->n++] = s->targets[i].pid;
	qsort(out->pids, out->n, sizeof(*out->pids), u32_cmp);
	{ /* each pid once, if it is in the cgroup */
		size_t kept = 0;

		for (size_t i = 0; i < out->n; i++) {
			if (i && out->pids[i] == out->pids[i - 1])
				continue;
			if (group_target_in_cgroup(s, out->pids[i], cgroup))
				out->pids[kept++] = out->pids[i];
		}
		out->n = kept;
	}
}

static int in_cgroup(const struct cgroup_pids *c, uint32_t pid)
{
	return bsearch(&pid, c->pids, c->n, sizeof(*c->pids), u32_cmp) != NULL;
}

static uint32_t *select_rows(const struct daemon_view *v, uint32_t pid, int sort, uint32_t top,
			     const struct cgroup_pids *cg, uint32_t *n)
{
	uint32_t nrows = framebuild_nrows(v), nrank = 0, *sel;
	struct mt_rank *rank = xmalloc((size_t)(nrows ? nrows : 1) * sizeof(*rank));

	for (uint32_t i = 0; i < nrows; i++) {
		struct mt_stack_counters c;

		if (pid && framebuild_row_pid(v, i) != pid)
			continue;
		if (cg && !in_cgroup(cg, framebuild_row_pid(v, i)))
			continue;
		c = framebuild_row_counters(v, i);
		rank[nrank++] = (struct mt_rank){
		    .value = mt_sort_value(&c, sort), .allocations = c.allocations, .index = i};
	}
	*n = (uint32_t)mt_rank_top(rank, nrank, top);
	sel = xmalloc(((size_t)*n + 1) * sizeof(*sel));
	for (uint32_t i = 0; i < *n; i++)
		sel[i] = rank[i].index;
	free(rank);
	return sel;
}

/* The first n of sel[] as the snapshot's stacks, with their frames. */
static void fill_stacks(const struct daemon_view *v, const struct stack_ends *ends,
			const uint32_t *sel, uint32_t n, struct snapshot *s)
{
	struct framebuild *fb = framebuild_new(v, ends);
	uint64_t *frames_at = xmalloc((n ? n : 1) * sizeof(*frames_at));

	s->stacks = xcalloc(n ? n : 1, sizeof(*s->stacks));
	for (uint32_t i = 0; i < n; i++)
		framebuild_fill(fb, sel[i], &s->stacks[i], &frames_at[i]);
	s->nstacks = n;
	framebuild_finish(fb, s, frames_at);
	free(frames_at);
}

/* The stacks of a report (sort, top, ages) or of a whole snapshot (every one, blocks). */
/* --cgroup: the totals' live, allocated and peak figures are the selected stacks' sums. */
static void cgroup_totals(const struct daemon_view *v, const uint32_t *sel, uint32_t nsel,
			  struct snapshot *s)
{
	struct mt_stack_counters sum = {0};

	for (uint32_t i = 0; i < nsel; i++) {
		struct mt_stack_counters c = framebuild_row_counters(v, sel[i]);

		mt_stack_counters_add(&sum, &c);
	}
	s->totals.live_bytes = sum.live_bytes;
	s->totals.live_allocations = sum.live_allocations;
	s->totals.allocations = sum.allocations;
	s->totals.bytes_allocated = sum.bytes_allocated;
	s->totals.peak_live_bytes = sum.peak_live_bytes; /* at the peak's moment */
}

static void collect_stacks(const struct daemon_view *v, const struct stack_ends *ends, uint32_t pid,
			   int sort, uint32_t top, int ages, int blocks,
			   const struct cgroup_pids *cg, struct snapshot *s)
{
	uint32_t nsel, n, *sel = select_rows(v, pid, sort, top, cg, &nsel);

	if (cg)
		cgroup_totals(v, sel, nsel, s);
	s->stacks_total = nsel;
	n = top && top < nsel ? top : nsel;
	fill_stacks(v, ends, sel, n, s);
	if (ages || blocks)
		collect_blocks(v, blocks, sel, n, s);
	free(sel);
}

static int collect_kind(const struct daemon_view *v, const struct stack_ends *ends,
			const struct proto_request *r, const char *cgroup, struct snapshot *s,
			char *err, size_t errlen)
{
	struct cgroup_pids cg = {0};
	uint32_t nsel, *sel;

	memset(s, 0, sizeof(*s));
	if (collect_common(v, ends, proto_request_pid(r),
			   r->kind == PROTO_MEMORY || r->kind == PROTO_SNAPSHOT, s, err, errlen))
		return -1;
	if (cgroup) /* by the labels of the answer's targets, as the client would */
		cgroup_pids(s, cgroup, &cg);
	switch (r->kind) {
	case PROTO_SNAPSHOT: /* every stack that allocated, every block, ages */
		collect_stacks(v, ends, r->snapshot.pid, MT_SORT_COUNT, 0, 1, 1, NULL, s);
		break;
	case PROTO_REPORT:
		collect_stacks(v, ends, r->report.pid, r->report.sort, r->report.top,
			       r->report.ages, 0, cgroup ? &cg : NULL, s);
		break;
	case PROTO_ROWS: /* only the rows (stacks) shown go */
		sel = select_rows(v, r->rows.pid, r->rows.select, 0, cgroup ? &cg : NULL, &nsel);
		if (cgroup)
			cgroup_totals(v, sel, nsel, s);
		s->stacks_total = nsel;
		grouping_rows(v, ends, &r->rows, sel, nsel, s);
		free(sel);
		break;
	case PROTO_LEAKS: /* the stacks holding live bytes, counted in one heap walk */
		sel = select_rows(v, r->leaks.pid, MT_SORT_LIVE, 0, NULL, &nsel);
		s->stacks_total = nsel;
		leaks_rows(v, ends, &r->leaks, sel, nsel, s);
		free(sel);
		break;
	default: /* status, memory; the answers of attach, detach and reset-peak (their
		  * process's); what a scan's answer has beside the scan (scan.c) */
		break;
	}
	free(cg.pids);
	return 0;
}

/* Does the answer to r name stacks (and so need the rows of viewrows.h)? */
static int has_stacks(const struct proto_request *r)
{
	return r->kind == PROTO_SNAPSHOT || r->kind == PROTO_REPORT || r->kind == PROTO_ROWS ||
	       r->kind == PROTO_LEAKS;
}

int collect_snapshot(const struct daemon_view *v, const struct stack_ends *ends,
		     const struct proto_request *r, const char *cgroup, size_t cgroup_len,
		     struct snapshot *s, char *err, size_t errlen)
{
	char path[PROTO_MAX_CGROUP_PATH + 1];
	struct daemon_view lv = *v;
	struct viewrows rows = {0};
	/* the rows' blocks, for a heap walk: the block list, ages or leaks */
	int walk = r->kind == PROTO_SNAPSHOT || r->kind == PROTO_LEAKS ||
		   (r->kind == PROTO_REPORT && r->report.ages);
	/* a forked child's inherited rows, for the pid asked about; until a
	 * first fork there are none, and every row is a stack (lv.rows NULL) */
	int with_rows = has_stacks(r) && v->tracker->forks;
	int rc;

	memset(s, 0, sizeof(*s));
	if (cgroup_len != proto_request_cgroup(r) || cgroup_len > PROTO_MAX_CGROUP_PATH ||
	    (cgroup_len && !cgroup)) {
		snprintf(err, errlen, "bad request: cgroup= says %u bytes, %zu came",
			 proto_request_cgroup(r), cgroup_len);
		return -1;
	}
	if (cgroup_len) {
		memcpy(path, cgroup, cgroup_len);
		path[cgroup_len] = '\0';
		if (strlen(path) != cgroup_len || path[0] != '/') {
			snprintf(err, errlen,
				 "bad request: the cgroup is not a path from the "
				 "hierarchy's root");
			return -1;
		}
	}
	if (MT_CHECKING) /* the sanitizer build: every invariant, per request */
		tracker_check_state(v->tracker);
	if (with_rows && viewrows_build(v->tracker, proto_request_pid(r), walk, &rows)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	lv.rows = with_rows ? &rows : NULL;
	rc = collect_kind(&lv, ends, r, cgroup_len ? path : NULL, s, err, errlen);
	if (with_rows)
		viewrows_free(&rows);
	for (uint32_t i = 0; !rc && i < s->nstacks; i++)
		if (s->stacks[i].t.inherited_allocations || s->stacks[i].t.inherited_bytes)
			s->has_inherited = 1;
	return rc;
}
