// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory over time of every target or of one pid (series.h). A pid's point
 * sums the figures of its targets traced then (one, but for a pid that
 * executed another program at that very moment); its resident figures
 * count only when each of them was read, as the totals' do.
 */
#include "ctl/view/series.h"
#include "common/util.h"
#include "memtrace/counters.h"

#include <stdlib.h>
#include <string.h>

static void add_figures(struct snap_figures *out, const struct snap_figures *f, int first)
{
	out->live_bytes += f->live_bytes;
	out->live_allocations += f->live_allocations;
	out->allocations += f->allocations;
	out->bytes_allocated += f->bytes_allocated;
	out->has_resident = (first || out->has_resident) && f->has_resident;
	if (f->has_resident)
		mt_resident_add(&out->resident, &f->resident);
	if (f->has_cgroup) { /* a pid is in one cgroup: its newest target's reading */
		out->has_cgroup = 1;
		out->cgroup_usage_bytes = f->cgroup_usage_bytes;
		out->cgroup_limit_bytes = f->cgroup_limit_bytes;
	}
}

/*
 * The points of the snapshot at which pid was traced, with its figures. Its
 * allocations and bytes_allocated count, as the totals' do, every
 * generation so far: one no longer traced (it executed another program)
 * adds what it had when it ended, so that they never go back.
 */
static void of_pid(struct series *v, const struct snapshot *s, uint32_t pid)
{
	/* per target: the number of the last point it was in; the pid's targets there */
	uint32_t *seen = xcalloc(s->ntargets ? s->ntargets : 1, sizeof(*seen));
	uint32_t *was = xcalloc(s->ntargets ? s->ntargets : 1, sizeof(*was)), nwas = 0;
	uint64_t ended_allocations = 0, ended_bytes = 0; /* of its generations gone */
	const struct snap_target *peak = NULL;

	v->own = xcalloc(s->ntimeline ? s->ntimeline : 1, sizeof(*v->own));
	for (uint32_t i = 0; i < s->ntimeline; i++) {
		const struct snap_timeline_point *p = &s->timeline[i];
		struct snap_timeline_point *q = &v->own[v->npoints];
		uint32_t n = 0;

		memset(q, 0, sizeof(*q));
		q->time_ns = p->time_ns;
		for (uint32_t k = 0; k < p->ntargets; k++) {
			const struct snap_timeline_target *t =
			    &s->timeline_targets->figures[p->first + k];

			if (s->targets[t->target].pid != pid)
				continue;
			add_figures(&q->total, &t->f, !n++);
			v->resident |= (int)t->f.has_resident;
			v->cgroup |= (int)t->f.has_cgroup;
			seen[t->target] = i + 1;
		}
		if (!n)
			continue;
		/* those of the pid's last point that are not in this one have ended */
		for (uint32_t k = 0; k < nwas; k++) {
			if (seen[was[k]] == i + 1)
				continue;
			ended_allocations += s->targets[was[k]].counters.allocations;
			ended_bytes += s->targets[was[k]].counters.bytes_allocated;
		}
		q->total.allocations += ended_allocations;
		q->total.bytes_allocated += ended_bytes;
		nwas = 0;
		for (uint32_t k = 0; k < p->ntargets; k++) {
			uint32_t t = s->timeline_targets->figures[p->first + k].target;

			if (s->targets[t].pid == pid)
				was[nwas++] = t;
		}
		v->npoints++;
	}
	free(seen);
	free(was);
	v->points = v->own;
	for (uint32_t i = 0; i < s->ntargets; i++) {
		const struct snap_target *t = &s->targets[i];

		if (t->pid != pid)
			continue;
		/* the peak is the generation's that holds it, at its time in the timeline's terms
		 */
		if (!peak || t->counters.peak_live_bytes > peak->counters.peak_live_bytes)
			peak = t;
		mt_counters_merge(&v->live, &t->counters);
	}
	if (peak)
		v->live.peak_time_ns = peak->started_ns + peak->counters.peak_time_ns;
}

/* The path a target's cgroup figures are keyed by (as status shows it), or NULL. */
static const char *cgroup_key(const struct snap_target *t)
{
	const struct snap_cgroup *c = &t->cgroup;

	if (!c->known)
		return NULL;
	return c->memory_path && *c->memory_path ? c->memory_path
	       : c->path && *c->path		 ? c->path
						 : NULL;
}

static int str_ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Every target's series: each memory cgroup's usage and limit at each
 * point, from the figures of the targets in it (the timeline keeps them
 * per target; a cgroup has one reading at a time, its newest target's).
 */
static void of_cgroups(struct series *v, const struct snapshot *s)
{
	const struct snap_timeline_targets *tt = s->timeline_targets;
	const char **names;
	uint32_t n = 0;

	if (!tt || !tt->nfigures || !s->ntimeline)
		return;
	names = xmalloc(tt->nfigures * sizeof(*names));
	for (uint32_t i = 0; i < tt->nfigures; i++) {
		const char *k = tt->figures[i].target < s->ntargets
				    ? cgroup_key(&s->targets[tt->figures[i].target])
				    : NULL;

		if (tt->figures[i].f.has_cgroup && k)
			names[n++] = k;
	}
	if (!n) {
		free(names);
		return;
	}
	qsort(names, n, sizeof(*names), str_ptr_cmp);
	v->ncgroups = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (!v->ncgroups || strcmp(names[v->ncgroups - 1], names[i]))
			names[v->ncgroups++] = names[i];
	}
	v->cgroups = names;
	v->cgroup_points = xcalloc((size_t)s->ntimeline * v->ncgroups, sizeof(*v->cgroup_points));
	for (uint32_t i = 0; i < s->ntimeline; i++) {
		const struct snap_timeline_point *p = &s->timeline[i];

		for (uint32_t k = 0; k < p->ntargets && p->first + k < tt->nfigures; k++) {
			const struct snap_timeline_target *t = &tt->figures[p->first + k];
			const char *key =
			    t->target < s->ntargets ? cgroup_key(&s->targets[t->target]) : NULL;
			const char **at;
			struct series_cgroup_point *c;

			if (!t->f.has_cgroup || !key)
				continue;
			at = bsearch(&key, v->cgroups, v->ncgroups, sizeof(*v->cgroups),
				     str_ptr_cmp);
			c = &v->cgroup_points[(size_t)i * v->ncgroups + (size_t)(at - v->cgroups)];
			c->has = 1; /* targets by increasing index: the newest last */
			c->usage_bytes = t->f.cgroup_usage_bytes;
			c->limit_bytes = t->f.cgroup_limit_bytes;
		}
	}
}

int series_build(struct series *v, const struct snapshot *s, uint32_t pid, const char **why)
{
	int found = 0;

	memset(v, 0, sizeof(*v));
	v->pid = pid;
	v->interval_ns = s->timeline_interval_ns;
	v->resident = (int)s->has_resident;
	if (!pid) {
		v->points = s->timeline;
		v->npoints = s->ntimeline;
		v->live = s->totals;
		of_cgroups(v, s);
	} else {
		for (uint32_t i = 0; i < s->ntargets && !found; i++)
			found = s->targets[i].pid == pid;
		if (!found) {
			*why = "is not traced";
			return -1;
		}
		if (s->ntimeline && !s->timeline_targets) {
			*why = "has no memory over time of its own in this snapshot (memtraced "
			       "older than timeline --pid)";
			return -1;
		}
		of_pid(v, s, pid);
	}
	for (uint32_t i = 0; i < v->npoints; i++) {
		const struct snap_timeline_point *p = &v->points[i];

		if (!p->total.has_resident ||
		    (v->has_peak && p->total.resident.resident_bytes <= v->peak_bytes))
			continue;
		v->has_peak = 1;
		v->peak_bytes = p->total.resident.resident_bytes;
		v->peak_time_ns = p->time_ns;
	}
	return 0;
}

void series_free(struct series *v)
{
	free(v->own);
	free(v->cgroups);
	free(v->cgroup_points);
	memset(v, 0, sizeof(*v));
}

double series_rate(const struct series *v, uint32_t from, uint32_t i)
{
	const struct snap_timeline_point *a, *b;

	if (!i || from >= i)
		return 0;
	a = &v->points[from];
	b = &v->points[i];
	if (b->time_ns <= a->time_ns)
		return 0;
	return (double)(b->total.allocations - a->total.allocations) /
	       ((double)(b->time_ns - a->time_ns) / 1e9);
}
