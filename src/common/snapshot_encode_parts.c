// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The snapshot encoder's sections that a snapshot carries only when it has
 * them: the live block list, resident memory and its breakdowns, a leak
 * scan, the daemon's figures, grouped rows, leaks, the timeline's targets
 * and the families of forked processes; and the deflate sink every section
 * streams into (zlib does the work; the sink only grows the output and keeps
 * avail_in/avail_out within their 32 bits). The frame and string tables, the
 * order of the sections and the checks are snapshot_encode.c's; the buffer
 * both write into is snapshot_encode_parts.h's.
 */
#include "memtrace/snapshot.h"
#include "common/snapshot_encode_parts.h"
#include "common/varint.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static void put_block(struct wbuf *body, const struct snap_block *b)
{
	enc_varint(body, b->stack);
	enc_varint(body, b->address);
	enc_varint(body, b->size);
	enc_varint(body, b->age_ns);
}

/*
 * Section SEC_BLOCKS: the live block list. Into a sink, its length is counted first
 * and the body goes in pieces of BLOCK_PIECE bytes.
 */
#define BLOCK_PIECE (256 * 1024)

void encode_blocks(const struct snap_block_list *l, struct wbuf *body, struct wbuf *out)
{
	uint64_t len = varint_len(l->older_than_ns) + varint_len(l->nblocks), sent = 0;

	if (!out->sink) {
		enc_varint(body, l->older_than_ns);
		enc_varint(body, l->nblocks);
		for (uint32_t i = 0; i < l->nblocks; i++)
			put_block(body, &l->blocks[i]);
		enc_section(out, body, SEC_BLOCKS);
		return;
	}
	for (uint32_t i = 0; i < l->nblocks; i++) {
		const struct snap_block *b = &l->blocks[i];

		len += varint_len(b->stack) + varint_len(b->address) + varint_len(b->size) +
		       varint_len(b->age_ns);
	}
	enc_varint(out, SEC_BLOCKS);
	enc_varint(out, len);
	enc_flush(out);
	enc_varint(body, l->older_than_ns);
	enc_varint(body, l->nblocks);
	for (uint32_t i = 0; i < l->nblocks && !*body->nomem; i++) {
		put_block(body, &l->blocks[i]);
		if (body->len >= BLOCK_PIECE) {
			sent += body->len;
			zsink_put(out->sink, body->data, body->len, Z_NO_FLUSH);
			body->len = 0;
		}
	}
	sent += body->len;
	if (!*body->nomem)
		zsink_put(out->sink, body->data, body->len, Z_NO_FLUSH);
	body->len = 0;
	if (sent != len && !*body->nomem && !out->sink->err)
		out->sink->err = -EIO; /* the count and the bytes disagree: never sent */
}

/*
 * Sections SEC_RESIDENT and SEC_MEMORY: the targets' resident memory and the timeline's, and
 * the breakdowns by kind of mapping (error_refs: their errors' strings).
 */
void encode_memory_sections(const struct snapshot *s, const uint32_t *error_refs, struct wbuf *body,
			    struct wbuf *out)
{
	if (s->has_resident) {
		enc_varint(body, MT_NRESIDENT);
		enc_varint(body, s->ntargets);
		for (uint32_t i = 0; i < s->ntargets; i++) {
			const struct snap_resident *r = &s->targets[i].resident;

			enc_varint(body, r->sampled != 0);
			if (!r->sampled)
				continue;
			enc_varint(body, r->time_ns);
			enc_figures(body, (const uint64_t *)&r->r, MT_NRESIDENT);
			enc_varint(body, r->peak_bytes);
			enc_varint(body, r->peak_time_ns);
		}
		enc_varint(body, s->ntimeline);
		for (uint32_t i = 0; i < s->ntimeline; i++) {
			const struct snap_figures *f = &s->timeline[i].total;

			enc_varint(body, f->has_resident != 0);
			if (f->has_resident)
				enc_figures(body, (const uint64_t *)&f->resident, MT_NRESIDENT);
		}
		enc_section(out, body, SEC_RESIDENT);
	}
	if (s->breakdowns) {
		enc_varint(body, s->breakdowns->nmemory);
		for (uint32_t i = 0; i < s->breakdowns->nmemory; i++) {
			const struct snap_memory *m = &s->breakdowns->memory[i];

			enc_varint(body, m->target);
			enc_varint(body, error_refs[i]);
			enc_varint(body, m->time_ns);
			enc_varint(body, MT_MEM_KIND_COUNT);
			enc_varint(body, MT_NMEM_FIELDS);
			for (size_t k = 0; k < MT_MEM_KIND_COUNT; k++)
				enc_figures(body, (const uint64_t *)&m->m.kinds[k], MT_NMEM_FIELDS);
			enc_varint(body, m->m.unmapped_allocations);
			enc_varint(body, m->m.unmapped_bytes);
		}
		enc_section(out, body, SEC_MEMORY);
	}
}

/* Sections SEC_SCAN and SEC_SCAN_ENTRIES: a leak scan's figures and suppressions, its entries. */
void encode_scan_sections(const struct snapshot *s, const uint32_t *supp_refs, struct wbuf *body,
			  struct wbuf *out)
{
	const struct snap_scan *sc = &s->scan;

	if (s->kind != SNAP_SCAN)
		return;
	/* a count of figures, then the figures: later ones can be added */
	enc_varint(body, SNAP_NSCAN);
	for (size_t i = 0; i < SNAP_NSCAN; i++)
		enc_varint(body, *(const uint64_t *)((const char *)&sc->f + snap_scan_offsets[i]));
	enc_varint(body, sc->nsuppressions);
	for (uint32_t i = 0; i < sc->nsuppressions; i++) {
		enc_varint(body, supp_refs[i]);
		enc_varint(body, sc->suppressions[i].blocks);
		enc_varint(body, sc->suppressions[i].bytes);
	}
	enc_varint(body, sc->npids);
	for (uint32_t i = 0; i < sc->npids; i++)
		enc_varint(body, sc->pids[i]);
	enc_section(out, body, SEC_SCAN);
	enc_varint(body, sc->nentries);
	for (uint32_t i = 0; i < sc->nentries; i++) {
		enc_varint(body, sc->entries[i].stack);
		enc_varint(body, sc->entries[i].kind);
		enc_varint(body, sc->entries[i].blocks);
		enc_varint(body, sc->entries[i].bytes);
	}
	enc_section(out, body, SEC_SCAN_ENTRIES);
}

/* Sections SEC_DAEMON-44: the daemon's own figures, a grouped snapshot's rows, leaks. */
void encode_scale_sections(const struct snapshot *s, const uint32_t *row_refs, struct wbuf *body,
			   struct wbuf *out)
{
	if (s->daemon) {
		enc_varint(body, SNAP_NDAEMON);
		for (size_t i = 0; i < SNAP_NDAEMON; i++)
			enc_varint(body, *(const uint64_t *)((const char *)s->daemon +
							     snap_daemon_offsets[i]));
		enc_section(out, body, SEC_DAEMON);
	}
	if (s->kind == SNAP_ROWS) {
		const struct snap_groups *g = &s->groups;

		enc_varint(body, g->by);
		enc_varint(body, g->cumulative);
		enc_varint(body, g->order);
		enc_varint(body, s->nstacks);
		for (uint32_t i = 0; i < s->nstacks; i++) {
			enc_varint(body, row_refs[i]);
			enc_varint(body, g->rows[i].stacks);
		}
		/* a count of figures, then the figures: later ones can be added */
		enc_varint(body, 4 + SNAP_STACK_COUNTERS_ALL);
		enc_varint(body, g->rest_rows);
		enc_varint(body, g->rest_rows_live);
		enc_varint(body, g->rest_rows_allocated);
		enc_varint(body, g->rest_rows_peak);
#define PUT_REST(field, name, section) enc_varint(body, g->rest.field);
		MT_STACK_COUNTERS(PUT_REST)
#undef PUT_REST
		enc_section(out, body, SEC_GROUPS);
	}
	if (s->kind == SNAP_LEAKS) {
		const struct snap_leaks *l = &s->leaks;

		enc_varint(body, l->older_than_ns);
		enc_varint(body, l->blocks);
		enc_varint(body, l->bytes);
		enc_varint(body, l->stacks_total);
		enc_varint(body, s->nstacks);
		for (uint32_t i = 0; i < s->nstacks; i++) {
			enc_varint(body, l->stacks[i].blocks);
			enc_varint(body, l->stacks[i].bytes);
			enc_varint(body, l->stacks[i].oldest_ns);
			enc_varint(body, l->stacks[i].youngest_ns);
		}
		enc_section(out, body, SEC_LEAKS);
	}
}

/* Section SEC_TIMELINE_TARGETS: each timeline point's targets, with the figures of each. */
void encode_timeline_targets(const struct snapshot *s, struct wbuf *body, struct wbuf *out)
{
	if (!s->timeline_targets || !s->ntimeline)
		return;
	enc_varint(body, SNAP_NLIVE_FIGURES);
	enc_varint(body, MT_NRESIDENT);
	enc_varint(body, s->ntargets);
	for (uint32_t i = 0; i < s->ntargets; i++)
		enc_varint(body, s->targets[i].started_ns);
	enc_varint(body, s->ntimeline);
	for (uint32_t i = 0; i < s->ntimeline; i++) {
		const struct snap_timeline_point *p = &s->timeline[i];

		enc_varint(body, p->ntargets);
		for (uint32_t k = 0; k < p->ntargets; k++) {
			const struct snap_timeline_target *t =
			    &s->timeline_targets->figures[p->first + k];

			enc_varint(body, t->target);
			enc_live_figures(body, &t->f);
			enc_varint(body, t->f.has_resident != 0);
			if (t->f.has_resident)
				enc_figures(body, (const uint64_t *)&t->f.resident, MT_NRESIDENT);
		}
	}
	enc_section(out, body, SEC_TIMELINE_TARGETS);
}

/* Sections SEC_INHERITED-50: what a forked child's rows inherited, and whom each target was forked
 * from. */
void encode_family_sections(const struct snapshot *s, struct wbuf *body, struct wbuf *out)
{
	if (s->has_inherited) {
		enc_varint(body, s->nstacks);
#define INHERITED_ONE(field, name, section) +(section == 2)
		enc_varint(body, 0 MT_STACK_COUNTERS(INHERITED_ONE));
#undef INHERITED_ONE
		for (uint32_t i = 0; i < s->nstacks; i++) {
#define PUT_INHERITED(field, name, section)                                                        \
	if (section == 2)                                                                          \
		enc_varint(body, s->stacks[i].t.field);
			MT_STACK_COUNTERS(PUT_INHERITED)
#undef PUT_INHERITED
		}
		enc_section(out, body, SEC_INHERITED);
	}
	for (uint32_t i = 0; i < s->ntargets; i++) {
		if (!s->targets[i].parent_pid)
			continue;
		enc_varint(body, s->ntargets);
		for (uint32_t k = 0; k < s->ntargets; k++)
			enc_varint(body, s->targets[k].parent_pid);
		enc_section(out, body, SEC_FAMILY);
		break;
	}
}

/* Section SEC_OOM: per target, its struct snap_oom as a counted list of figures (none when the
 * OOM killer did not choose it); only in a snapshot where it chose one. */
void encode_oom_section(const struct snapshot *s, struct wbuf *body, struct wbuf *out)
{
	uint32_t i;

	for (i = 0; i < s->ntargets && !s->targets[i].oom.killed; i++)
		;
	if (i == s->ntargets)
		return;
	enc_varint(body, s->ntargets);
	for (i = 0; i < s->ntargets; i++) {
		const struct snap_oom *o = &s->targets[i].oom;

		enc_varint(body, o->killed ? SNAP_NOOM : 0);
		for (size_t k = 0; o->killed && k < SNAP_NOOM; k++)
			enc_varint(body,
				   *(const uint64_t *)((const char *)o + snap_oom_offsets[k]));
	}
	enc_section(out, body, SEC_OOM);
}

/* ---- the deflate sink ---- */

/* zlib's counts are 32 bits: at most a gigabyte at a time */
#define ZSINK_PIECE (1u << 30)

int zsink_init(struct zsink *k, size_t start, uint64_t max_in, int level)
{
	*k = (struct zsink){.start = start, .max_in = max_in};
	k->cap = start + 64 * 1024;
	k->data = malloc(k->cap);
	if (!k->data || deflateInit(&k->z, level) != Z_OK) {
		free(k->data);
		k->data = NULL;
		return k->err = -ENOMEM;
	}
	k->started = 1;
	k->z.next_out = k->data + start;
	k->z.avail_out = (uInt)(k->cap - start);
	return 0;
}

static int grow_out(struct zsink *k)
{
	size_t cap = 2 * k->cap, room;
	uint8_t *np = realloc(k->data, cap);

	if (!np)
		return k->err = -ENOMEM;
	k->data = np;
	k->cap = cap;
	room = cap - k->start - k->z.total_out;
	k->z.next_out = np + k->start + k->z.total_out;
	k->z.avail_out = (uInt)(room < ZSINK_PIECE ? room : ZSINK_PIECE);
	return 0;
}

void zsink_put(struct zsink *k, const uint8_t *p, size_t n, int flush)
{
	if (k->err)
		return;
	if (n > k->max_in - k->total_in) {
		k->err = -E2BIG;
		return;
	}
	k->total_in += n;
	do {
		size_t piece = n < ZSINK_PIECE ? n : ZSINK_PIECE;

		n -= piece;
		k->z.next_in = (Bytef *)p;
		k->z.avail_in = (uInt)piece;
		if (piece)
			p += piece;
		for (;;) {
			int rc;

			if (!k->z.avail_out && grow_out(k))
				return;
			rc = deflate(&k->z, n ? Z_NO_FLUSH : flush);
			if (rc == Z_STREAM_END)
				return;
			if ((rc != Z_OK && rc != Z_BUF_ERROR) ||
			    (rc == Z_BUF_ERROR && k->z.avail_out && flush == Z_FINISH && !n)) {
				k->err = -EIO; /* no progress with room to make it: never loop */
				return;
			}
			if (!k->z.avail_in && k->z.avail_out && (n || flush == Z_NO_FLUSH))
				break;
		}
	} while (n);
}

void zsink_free(struct zsink *k)
{
	if (k->started)
		deflateEnd(&k->z);
	free(k->data);
	k->data = NULL;
	k->started = 0;
}
