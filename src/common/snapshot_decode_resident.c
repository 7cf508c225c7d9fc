// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The snapshot decoder's sections on resident memory: each target's last
 * sample, each timeline point's targets with their figures, and a target's
 * mappings by kind with the live heap in each; and on the memory cgroup
 * beside it: each target's cgroup (its labels and figures).
 * Each is optional: a snapshot without one reads as before it existed.
 */
#include "memtrace/snapshot.h"
#include "common/groupkey.h"
#include "common/snapshot_read.h"
#include "common/snapshot_wire.h"
#include "common/util.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many figures each record has: at most 64 (a later version's may be more than ours). */
static int rd_nfigures(struct reader *r, uint32_t *n)
{
	uint64_t v;

	if (rd_varint(r, &v))
		return -1;
	if (v > 64)
		return dec_fail(r->d, "%s section: %llu figures per entry exceed the limit of 64",
				r->section, (unsigned long long)v);
	*n = (uint32_t)v;
	return 0;
}

/* nfields figures of a record into v (the first known ones; the rest skipped). */
static int rd_figures(struct reader *r, uint64_t *v, size_t known, uint32_t nfields)
{
	for (uint32_t i = 0; i < nfields; i++) {
		uint64_t x;

		if (rd_varint(r, &x))
			return -1;
		if (i < known)
			v[i] = x;
	}
	return 0;
}

/* Section SEC_RESIDENT: each target's resident memory, then each timeline point's. */
int dec_resident(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint32_t nfields = 0, n;

	if (rd_nfigures(r, &nfields) || rd_count(r, 1, SNAPSHOT_MAX_TARGETS, &n))
		return -1;
	if (n != s->ntargets)
		return dec_fail(r->d, "resident section: %u targets, not %u", n, s->ntargets);
	for (uint32_t i = 0; i < n; i++) {
		struct snap_resident *t = &s->targets[i].resident;
		uint64_t sampled;

		if (rd_varint(r, &sampled))
			return -1;
		if (sampled > 1)
			return dec_fail(r->d, "resident section: bad sampled flag");
		if (!sampled)
			continue;
		t->sampled = 1;
		if (rd_varint(r, &t->time_ns) ||
		    rd_figures(r, (uint64_t *)&t->r, MT_NRESIDENT, nfields) ||
		    rd_varint(r, &t->peak_bytes) || rd_varint(r, &t->peak_time_ns))
			return -1;
	}
	if (rd_count(r, 1, SNAPSHOT_MAX_TIMELINE, &n))
		return -1;
	if (n && n != s->ntimeline)
		return dec_fail(r->d, "resident section: %u points, not %u", n, s->ntimeline);
	for (uint32_t i = 0; i < n; i++) {
		struct snap_figures *f = &s->timeline[i].total;
		uint64_t sampled;

		if (rd_varint(r, &sampled))
			return -1;
		if (sampled > 1)
			return dec_fail(r->d, "resident section: bad sampled flag");
		f->has_resident = (uint32_t)sampled;
		if (sampled && rd_figures(r, (uint64_t *)&f->resident, MT_NRESIDENT, nfields))
			return -1;
	}
	s->has_resident = 1;
	return 0;
}

/* One target's figures at a point (section SEC_TIMELINE_TARGETS): its index, live figures, resident
 * if read. */
static int rd_timeline_target(struct reader *r, struct snap_timeline_target *t, uint32_t nlive,
			      uint32_t nresident)
{
	uint64_t live[SNAP_NLIVE_FIGURES] = {0}, sampled;

	if (rd_u32(r, &t->target) || rd_figures(r, live, SNAP_NLIVE_FIGURES, nlive) ||
	    rd_varint(r, &sampled))
		return -1;
	t->f.live_bytes = live[0];
	t->f.live_allocations = live[1];
	t->f.allocations = live[2];
	t->f.bytes_allocated = live[3];
	if (sampled > 1)
		return dec_fail(r->d, "timeline_targets section: bad sampled flag");
	t->f.has_resident = (uint32_t)sampled;
	if (sampled && rd_figures(r, (uint64_t *)&t->f.resident, MT_NRESIDENT, nresident))
		return -1;
	return 0;
}

/* Section SEC_TIMELINE_TARGETS: each timeline point's targets (by increasing index), with their
 * figures. */
int dec_timeline_targets(struct reader *r)
{
	struct snapshot *s = r->d->s;
	struct snap_timeline_targets *tt;
	uint32_t nlive = 0, nresident = 0, n, cap = 0;

	if (!(tt = s->timeline_targets = dec_part(r->d, sizeof(*tt))))
		return -1;
	if (rd_nfigures(r, &nlive) || rd_nfigures(r, &nresident) ||
	    rd_count(r, 1, SNAPSHOT_MAX_TARGETS, &n))
		return -1;
	if (n != s->ntargets)
		return dec_fail(r->d, "timeline_targets section: %u targets, not %u", n,
				s->ntargets);
	for (uint32_t i = 0; i < n; i++)
		if (rd_varint(r, &s->targets[i].started_ns))
			return -1;
	if (rd_count(r, 1, SNAPSHOT_MAX_TIMELINE, &n))
		return -1;
	if (n != s->ntimeline)
		return dec_fail(r->d, "timeline_targets section: %u points, not %u", n,
				s->ntimeline);
	for (uint32_t i = 0; i < n; i++) {
		struct snap_timeline_point *p = &s->timeline[i];
		uint32_t k;

		/* each at least its index, its figures and its sampled flag */
		if (rd_count(r, 2 + nlive, SNAPSHOT_MAX_TARGETS, &k))
			return -1;
		if ((uint64_t)tt->nfigures + k > SNAPSHOT_MAX_TIMELINE_TARGETS)
			return dec_fail(r->d, "timeline_targets section: more than %u figures",
					SNAPSHOT_MAX_TIMELINE_TARGETS);
		if (tt->nfigures + k > cap) {
			struct snap_timeline_target *v;

			cap = (tt->nfigures + k) * 2;
			v = realloc(tt->figures, (size_t)cap * sizeof(*v));
			if (!v)
				return dec_fail(r->d, "out of memory");
			tt->figures = v;
		}
		p->first = tt->nfigures;
		p->ntargets = k;
		for (uint32_t j = 0; j < k; j++) {
			struct snap_timeline_target *t = &tt->figures[p->first + j];

			memset(t, 0, sizeof(*t));
			if (rd_timeline_target(r, t, nlive, nresident))
				return -1;
			tt->nfigures++;
			if (t->target >= s->ntargets)
				return dec_fail(r->d, "timeline_targets section: target %u of %u",
						t->target, s->ntargets);
			if (j && t->target <= t[-1].target)
				return dec_fail(r->d,
						"timeline_targets section: targets out of order");
		}
	}
	return 0;
}

/* Section SEC_MEMORY: breakdowns by kind of mapping, by target index. */
int dec_memory(struct reader *r)
{
	struct snapshot *s = r->d->s;
	struct snap_breakdowns *bd;
	uint32_t n;

	if (!(bd = s->breakdowns = dec_part(r->d, sizeof(*bd))))
		return -1;
	if (rd_count(r, 8, SNAPSHOT_MAX_TARGETS, &n))
		return -1;
	if (n > s->ntargets)
		return dec_fail(r->d, "memory section: %u breakdowns for %u targets", n,
				s->ntargets);
	bd->memory = calloc(n ? n : 1, sizeof(*bd->memory));
	if (!bd->memory)
		return dec_fail(r->d, "out of memory");
	bd->nmemory = n;
	for (uint32_t i = 0; i < n; i++) {
		struct snap_memory *m = &bd->memory[i];
		uint32_t nkinds = 0, nfields = 0;

		if (rd_u32(r, &m->target) || rd_string(r, &m->error) || rd_varint(r, &m->time_ns) ||
		    rd_nfigures(r, &nkinds) || rd_nfigures(r, &nfields))
			return -1;
		if (m->target >= s->ntargets || (i && m->target <= bd->memory[i - 1].target))
			return dec_fail(r->d, "memory section: target index out of order or range");
		if ((uint64_t)nkinds * nfields > rd_left(r))
			return dec_fail(r->d, "memory section: truncated");
		for (uint32_t k = 0; k < nkinds; k++) {
			/* kinds of a later version are skipped */
			int known = k < MT_MEM_KIND_COUNT;

			if (rd_figures(r, known ? (uint64_t *)&m->m.kinds[k] : NULL,
				       known ? MT_NMEM_FIELDS : 0, nfields))
				return -1;
		}
		if (rd_varint(r, &m->m.unmapped_allocations) || rd_varint(r, &m->m.unmapped_bytes))
			return -1;
	}
	return 0;
}

/*
 * Section SEC_CGROUP: each target's cgroup: a flag, then its strings, NSpid, when
 * its figures were read, their version, which were read and a counted list.
 */
int dec_cgroup(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint32_t n, nfields = 0;

	if (rd_count(r, 1, SNAPSHOT_MAX_TARGETS, &n) || rd_nfigures(r, &nfields))
		return -1;
	if (n != s->ntargets)
		return dec_fail(r->d, "cgroup section: %u targets, not %u", n, s->ntargets);
	for (uint32_t i = 0; i < n; i++) {
		struct snap_cgroup *c = &s->targets[i].cgroup;
		char **str[SNAP_CGROUP_STRINGS] = {&c->path,	  &c->memory_path, &c->unit,
						   &c->container, &c->runtime,	   &c->pod,
						   &c->why};
		uint64_t known, version, have;

		if (rd_varint(r, &known))
			return -1;
		if (known > 1)
			return dec_fail(r->d, "cgroup section: bad known flag");
		if (!known)
			continue;
		c->known = 1;
		for (size_t k = 0; k < SNAP_CGROUP_STRINGS; k++) {
			if (rd_string(r, str[k]))
				return -1;
		}
		if (rd_u32(r, &c->nspid) || rd_varint(r, &c->time_ns) || rd_varint(r, &version) ||
		    rd_varint(r, &have))
			return -1;
		if (version > MT_CGROUP_V2)
			return dec_fail(r->d, "cgroup section: unknown cgroup version %llu",
					(unsigned long long)version);
		c->m.version = (uint32_t)version;
		/* the figures this version knows; a later one's bits are dropped */
		c->m.have = (uint32_t)(have & ((1ull << MT_NCGROUP) - 1));
		if (rd_figures(r, (uint64_t *)&c->m.f, MT_NCGROUP, nfields))
			return -1;
	}
	return 0;
}

/*
 * Section SEC_TIMELINE_CGROUP: for each figure of section SEC_TIMELINE_TARGETS
 * (in its order), a flag, then a counted list: the memory cgroup's usage
 * and limit read for that point.
 */
int dec_timeline_cgroup(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint32_t n, nfields = 0;

	if (rd_count(r, 1, SNAPSHOT_MAX_TIMELINE_TARGETS, &n) || rd_nfigures(r, &nfields))
		return -1;
	if (!s->timeline_targets || n != s->timeline_targets->nfigures)
		return dec_fail(r->d, "timeline_cgroup section: %u figures, not %u", n,
				s->timeline_targets ? s->timeline_targets->nfigures : 0);
	for (uint32_t i = 0; i < n; i++) {
		struct snap_figures *f = &s->timeline_targets->figures[i].f;
		uint64_t has, v[2] = {0, 0};

		if (rd_varint(r, &has))
			return -1;
		if (has > 1)
			return dec_fail(r->d, "timeline_cgroup section: bad flag");
		if (!has)
			continue;
		if (rd_figures(r, v, 2, nfields))
			return -1;
		f->has_cgroup = 1;
		f->cgroup_usage_bytes = v[0];
		f->cgroup_limit_bytes = v[1];
	}
	return 0;
}
