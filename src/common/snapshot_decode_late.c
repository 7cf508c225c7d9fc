// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The snapshot decoder's later sections (32 and up): what tracing misses per
 * target, the unwind tables' figures, where each function is probed, the
 * daemon's own figures, a grouped snapshot's rows and the leaks per stack.
 * Each is optional: a snapshot without one reads as before it existed.
 */
#include "memtrace/snapshot.h"
#include "common/groupkey.h"
#include "common/snapshot_read.h"
#include "common/snapshot_wire.h"
#include "common/util.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

int dec_target_notes(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint32_t n;

	if (rd_count(r, 1, SNAPSHOT_MAX_TARGETS, &n))
		return -1;
	if (n != s->ntargets)
		return dec_fail(r->d, "target_notes section: %u targets, not %u", n, s->ntargets);
	for (uint32_t i = 0; i < n; i++) {
		if (rd_string(r, &s->targets[i].note))
			return -1;
	}
	return 0;
}

int dec_unwind(struct reader *r)
{
	static const size_t offsets[] = {offsetof(struct snap_unwind, memory_limit),
					 offsetof(struct snap_unwind, memory_used),
					 offsetof(struct snap_unwind, table_bytes),
					 offsetof(struct snap_unwind, tables),
					 offsetof(struct snap_unwind, modules_without),
					 offsetof(struct snap_unwind, modules_refused)};
	struct snap_unwind *u = r->d->s->unwind = dec_part(r->d, sizeof(*u));

	return u ? rd_fields(r, u, offsets, ARRAY_SIZE(offsets)) : -1;
}

int dec_probe_sites(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint32_t n;

	if (rd_count(r, 1, SNAPSHOT_MAX_TARGETS, &n))
		return -1;
	if (n != s->ntargets)
		return dec_fail(r->d, "probe_sites section: %u targets, not %u", n, s->ntargets);
	for (uint32_t i = 0; i < n; i++) {
		struct snap_target *t = &s->targets[i];
		uint32_t m;

		if (rd_count(r, 7, SNAPSHOT_MAX_SITES, &m))
			return -1;
		t->sites = calloc(m ? m : 1, sizeof(*t->sites));
		if (!t->sites)
			return dec_fail(r->d, "out of memory");
		t->nsites = m;
		for (uint32_t j = 0; j < m; j++) {
			struct snap_probe_site *ps = &t->sites[j];

			if (rd_string(r, &ps->function) || rd_string(r, &ps->object) ||
			    rd_varint(r, &ps->offset) || rd_varint(r, &ps->at) ||
			    rd_string(r, &ps->instruction) || rd_string(r, &ps->why) ||
			    rd_string(r, &ps->via))
				return -1;
		}
	}
	return 0;
}

/* Section SEC_DAEMON: a counted list of the daemon's figures (more may follow). */
int dec_daemon(struct reader *r)
{
	struct snap_daemon *dm = r->d->s->daemon = dec_part(r->d, sizeof(*dm));

	return dm ? rd_fields(r, dm, snap_daemon_offsets, SNAP_NDAEMON) : -1;
}

/*
 * What the stacks are, said by a section of its kind (43, 44, 47): one kind
 * per snapshot, set before anything is allocated for it (snapshot_free frees
 * by the kind).
 */
static int take_kind(struct reader *r, uint32_t kind)
{
	struct snapshot *s = r->d->s;

	if (s->kind != SNAP_STACKS)
		return dec_fail(r->d, "%s section in a snapshot of %s", r->section,
				snap_kind_name(s->kind));
	s->kind = kind;
	return 0;
}

/* Section SEC_GROUPS: the row each stack stands for, then the rows not sent. */
int dec_groups(struct reader *r)
{
	struct snapshot *s = r->d->s;
	struct snap_groups *g = &s->groups;
	static const size_t rest[] = {offsetof(struct snap_groups, rest_rows),
				      offsetof(struct snap_groups, rest_rows_live),
				      offsetof(struct snap_groups, rest_rows_allocated),
				      offsetof(struct snap_groups, rest_rows_peak),
#define REST_FIELD(field, name, section) offsetof(struct snap_groups, rest.field),
				      MT_STACK_COUNTERS(REST_FIELD)
#undef REST_FIELD
	};
	uint32_t n;

	if (take_kind(r, SNAP_ROWS))
		return -1;
	if (rd_u32(r, &g->by) || rd_u32(r, &g->cumulative) || rd_u32(r, &g->order) ||
	    rd_count(r, 2, SNAPSHOT_MAX_STACKS, &n))
		return -1;
	if (n != s->nstacks)
		return dec_fail(r->d, "groups section: %u rows for %u stacks", n, s->nstacks);
	if (!g->by || g->by >= GROUP_BY_COUNT || g->cumulative > 1 || g->order >= MT_SORT_KEY_COUNT)
		return dec_fail(r->d, "groups section: bad grouping");
	g->rows = calloc(n ? n : 1, sizeof(*g->rows));
	if (!g->rows)
		return dec_fail(r->d, "out of memory");
	for (uint32_t i = 0; i < n; i++)
		if (rd_string(r, &g->rows[i].key) || rd_varint(r, &g->rows[i].stacks))
			return -1;
	return rd_fields(r, g, rest, ARRAY_SIZE(rest));
}

/* Section SEC_INHERITED: what each stack's row inherited at a fork (a counted list of fields each).
 */
int dec_inherited(struct reader *r)
{
	struct snapshot *s = r->d->s;
	size_t offsets[SNAP_STACK_COUNTERS_ALL], n = 0;
	uint64_t count, nfields, v;

	/* only the section-2 counters, in wire order */
#define INHERITED_OFFSET(field, name, section)                                                     \
	if (section == 2)                                                                          \
		offsets[n++] = offsetof(struct mt_stack_counters, field);
	MT_STACK_COUNTERS(INHERITED_OFFSET)
#undef INHERITED_OFFSET
	if (rd_varint(r, &count) || rd_varint(r, &nfields))
		return -1;
	if (count != s->nstacks)
		return dec_fail(r->d, "inherited section: %llu entries for %u stacks",
				(unsigned long long)count, s->nstacks);
	if (nfields > rd_left(r))
		return dec_fail(r->d, "inherited section: %llu fields per stack",
				(unsigned long long)nfields);
	for (uint32_t i = 0; i < s->nstacks; i++) {
		for (uint64_t k = 0; k < nfields; k++) {
			if (rd_varint(r, &v))
				return -1;
			if (k < n)
				*(uint64_t *)((char *)&s->stacks[i].t + offsets[k]) = v;
		}
	}
	s->has_inherited = 1;
	return 0;
}

/* Section SEC_FAMILY: the pid each target was forked from (0: none). */
int dec_family(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint64_t count;

	if (rd_varint(r, &count))
		return -1;
	if (count != s->ntargets)
		return dec_fail(r->d, "family section: %llu entries for %u targets",
				(unsigned long long)count, s->ntargets);
	for (uint32_t i = 0; i < s->ntargets; i++)
		if (rd_u32(r, &s->targets[i].parent_pid))
			return -1;
	return 0;
}

/* Section SEC_MATCH: whole-host mode, what matches, then a counted list of figures. */
int dec_match(struct reader *r)
{
	struct snap_match *m = r->d->s->match = dec_part(r->d, sizeof(*m));

	if (!m || rd_string(r, &m->what) || rd_fields(r, m, snap_match_offsets, SNAP_NMATCH))
		return -1;
	return 0;
}

/* Section SEC_WALKER: the stack walker's name and why it runs, then a counted list of figures. */
int dec_walker(struct reader *r)
{
	struct snap_walker *w = r->d->s->walker = dec_part(r->d, sizeof(*w));

	if (!w || rd_string(r, &w->name) || rd_string(r, &w->reason) ||
	    rd_fields(r, w, snap_walker_offsets, SNAP_NWALKER))
		return -1;
	return 0;
}

/* Section SEC_LEAKS: leaking blocks, in total and per stack. */
int dec_leaks(struct reader *r)
{
	struct snapshot *s = r->d->s;
	struct snap_leaks *l = &s->leaks;
	uint32_t n;

	if (take_kind(r, SNAP_LEAKS))
		return -1;
	if (rd_varint(r, &l->older_than_ns) || rd_varint(r, &l->blocks) ||
	    rd_varint(r, &l->bytes) || rd_varint(r, &l->stacks_total) ||
	    rd_count(r, 4, SNAPSHOT_MAX_STACKS, &n))
		return -1;
	if (n != s->nstacks)
		return dec_fail(r->d, "leaks section: %u entries for %u stacks", n, s->nstacks);
	l->stacks = calloc(n ? n : 1, sizeof(*l->stacks));
	if (!l->stacks)
		return dec_fail(r->d, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		struct snap_leak *e = &l->stacks[i];

		if (rd_varint(r, &e->blocks) || rd_varint(r, &e->bytes) ||
		    rd_varint(r, &e->oldest_ns) || rd_varint(r, &e->youngest_ns))
			return -1;
	}
	return 0;
}

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
/* Section SEC_SCAN: a leak scan's figures (a counted list), then its suppressions. */
int dec_scan(struct reader *r)
{
	struct snapshot *s = r->d->s;
	struct snap_scan *sc = &s->scan;
	uint32_t n;

	if (take_kind(r, SNAP_SCAN))
		return -1;
	if (rd_fields(r, &sc->f, snap_scan_offsets, SNAP_NSCAN) ||
	    rd_count(r, 3, SNAPSHOT_MAX_SUPPRESSIONS, &n))
		return -1;
	sc->suppressions = calloc(n ? n : 1, sizeof(*sc->suppressions));
	if (!sc->suppressions)
		return dec_fail(r->d, "out of memory");
	sc->nsuppressions = n;
	for (uint32_t i = 0; i < n; i++) {
		struct snap_scan_suppression *p = &sc->suppressions[i];

		if (rd_string(r, &p->pattern) || rd_varint(r, &p->blocks) ||
		    rd_varint(r, &p->bytes))
			return -1;
		if (!p->pattern)
			return dec_fail(r->d, "scan section: a suppression without a pattern");
	}
	if (rd_count(r, 1, SNAPSHOT_MAX_TARGETS, &n))
		return -1;
	sc->pids = calloc(n ? n : 1, sizeof(*sc->pids));
	if (!sc->pids)
		return dec_fail(r->d, "out of memory");
	sc->npids = n;
	for (uint32_t i = 0; i < n; i++)
		if (rd_u32(r, &sc->pids[i]))
			return -1;
	return 0;
}

/* Section SEC_SCAN_ENTRIES: the scan's leaks by stack and kind (after section SEC_SCAN). */
int dec_scan_entries(struct reader *r)
{
	struct snapshot *s = r->d->s;
	struct snap_scan *sc = &s->scan;
	uint32_t n;

	if (s->kind != SNAP_SCAN)
		return dec_fail(r->d, "scan_entries section without a scan section");
	if (rd_count(r, 4, SNAPSHOT_MAX_STACKS * SNAP_LEAK_KINDS, &n))
		return -1;
	sc->entries = calloc(n ? n : 1, sizeof(*sc->entries));
	if (!sc->entries)
		return dec_fail(r->d, "out of memory");
	sc->nentries = n;
	for (uint32_t i = 0; i < n; i++) {
		struct snap_scan_entry *e = &sc->entries[i];

		if (rd_u32(r, &e->stack) || rd_u32(r, &e->kind) || rd_varint(r, &e->blocks) ||
		    rd_varint(r, &e->bytes))
			return -1;
		if (e->stack >= s->nstacks)
			return dec_fail(r->d, "scan_entries section: stack %u out of range",
					e->stack);
		if (e->kind >= SNAP_LEAK_KINDS)
			return dec_fail(r->d, "scan_entries section: unknown kind %u", e->kind);
	}
	return 0;
}
