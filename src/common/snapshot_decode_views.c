// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The snapshot decoder's sections that answer one request: a grouped
 * snapshot's rows, the leaks per stack, and a leak scan's figures and entries.
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

/*
 * What the stacks are, said by a section of its kind (SEC_GROUPS, SEC_LEAKS, SEC_SCAN): one kind
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
