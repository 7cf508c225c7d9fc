// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The targets' sampled resident memory (resident.h): a table grown as
 * targets are, never shrunk. Invariant: peak_bytes >= last.resident_bytes
 * of the same window for every sampled entry.
 */
#include "daemon/core/resident.h"
#include "common/util.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static struct resident_target *entry(struct resident_table *t, uint32_t index)
{
	if (index >= t->n) {
		uint32_t n = index + 16;

		t->v = xrealloc(t->v, (size_t)n * sizeof(*t->v));
		memset(t->v + t->n, 0, (size_t)(n - t->n) * sizeof(*t->v));
		t->n = n;
	}
	return &t->v[index];
}

void resident_record(struct resident_table *t, uint32_t index, uint64_t time_ns,
		     const struct mt_resident *r)
{
	struct resident_target *e = entry(t, index);
	int first = !e->sampled;

	e->sampled = 1;
	e->failed = 0;
	e->time_ns = time_ns;
	e->last = *r;
	/* a peak's time is when it was first reached */
	if (first || r->resident_bytes > e->peak_bytes) {
		e->peak_bytes = r->resident_bytes;
		e->peak_time_ns = time_ns;
	}
	assert(e->peak_bytes >= e->last.resident_bytes);
}

int resident_failed(struct resident_table *t, uint32_t index)
{
	struct resident_target *e = entry(t, index);
	int first = !e->failed;

	e->failed = 1;
	return first;
}

void resident_set_labels(struct resident_table *t, uint32_t index, const struct mt_cgroup_labels *l)
{
	struct resident_target *e = entry(t, index);

	if (!e->labels)
		e->labels = xmalloc(sizeof(*e->labels));
	*e->labels = *l;
}

int resident_inherit_labels(struct resident_table *t, uint32_t child_index, uint32_t parent_index,
			    int parent_pid, int child_pid)
{
	struct resident_target *c;
	const struct mt_cgroup_labels *pl;

	if (parent_index >= t->n || !t->v[parent_index].labels || child_index == parent_index)
		return 0;
	c = entry(t, child_index); /* may move t->v: the parent's entry is found after */
	pl = t->v[parent_index].labels;
	if (!c->labels)
		c->labels = xmalloc(sizeof(*c->labels));
	*c->labels = *pl;
	if (parent_pid != child_pid) /* else the same process (an exec): the same NSpid */
		c->labels->nspid = pl->nspid && pl->nspid == parent_pid ? child_pid : 0;
	return 1;
}

void resident_record_cgroup(struct resident_table *t, uint32_t index, uint64_t time_ns,
			    const struct mt_cgroup_memory *m, const char *why)
{
	struct resident_target *e = entry(t, index);

	e->cgroup_sampled = 1;
	e->cgroup_failed = 0;
	e->cgroup_time_ns = time_ns;
	e->cg = *m;
	if (!e->cgroup_why || strcmp(e->cgroup_why, why ? why : "")) {
		free(e->cgroup_why);
		e->cgroup_why = why && *why ? xstrdup(why) : NULL;
	}
}

int resident_cgroup_failed(struct resident_table *t, uint32_t index)
{
	struct resident_target *e = entry(t, index);
	int first = !e->cgroup_failed;

	e->cgroup_failed = 1;
	return first;
}

const struct resident_target *resident_get_cgroup(const struct resident_table *t, uint32_t index)
{
	return t && index < t->n && (t->v[index].labels || t->v[index].cgroup_sampled)
		   ? &t->v[index]
		   : NULL;
}

const struct resident_target *resident_get(const struct resident_table *t, uint32_t index)
{
	return t && index < t->n && t->v[index].sampled ? &t->v[index] : NULL;
}

void resident_reset_peak(struct resident_table *t, uint64_t time_ns)
{
	for (uint32_t i = 0; i < t->n; i++) {
		if (!t->v[i].sampled)
			continue;
		t->v[i].peak_bytes = t->v[i].last.resident_bytes;
		t->v[i].peak_time_ns = time_ns;
	}
}

void resident_free(struct resident_table *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		free(t->v[i].labels);
		free(t->v[i].cgroup_why);
	}
	free(t->v);
	t->v = NULL;
	t->n = 0;
}
