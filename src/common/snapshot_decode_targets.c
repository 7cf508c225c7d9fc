// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The snapshot decoder's sections on the targets and on how the tracing of them
 * went: what tracing misses per target, the unwind tables' figures, where each
 * function is probed, the daemon's own figures, whole-host mode's matches, the
 * stack walker in use, and the families of forked processes (the process each
 * target was forked from, what each stack's row inherited).
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

/* Section SEC_OOM: per target a counted list of struct snap_oom's figures (0: not chosen). */
int dec_oom(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint64_t count;

	if (rd_varint(r, &count))
		return -1;
	if (count != s->ntargets)
		return dec_fail(r->d, "oom section: %llu entries for %u targets",
				(unsigned long long)count, s->ntargets);
	for (uint32_t i = 0; i < s->ntargets; i++)
		if (rd_fields(r, &s->targets[i].oom, snap_oom_offsets, SNAP_NOOM))
			return -1;
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
