// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The snapshot encoder: struct snapshot to the versioned, zlib-compressed,
 * CRC-checked bytes that go over the socket and into snapshot files
 * (docs/snapshot-format.md). Strings and frames are written once each and
 * referred to by index. Running out of memory is an error returned, never an
 * abort: a snapshot of a huge heap must not take the daemon down.
 */
#include "memtrace/snapshot.h"
#include "common/hashindex.h"
#include "common/snapshot_wire.h"
#include "common/varint.h"
#include "common/zsink.h"
#include "common/util.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/*
 * The encoder's growable buffers and tables remember the first allocation
 * failure instead of aborting: a snapshot of a huge heap must not take the
 * daemon down. snapshot_encode() reports it as -ENOMEM at the end.
 */
struct wbuf {
	uint8_t *data;
	size_t len, cap;
	int *nomem;
	struct zsink *sink; /* the payload: what is put here goes on to the sink */
};

static int grow(void **p, size_t *cap, size_t need, size_t elem, int *nomem)
{
	size_t ncap = *cap ? *cap : 64;
	void *np;

	if (*nomem)
		return -1;
	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	np = ncap <= SIZE_MAX / elem ? realloc(*p, ncap * elem) : NULL;
	if (!np) {
		*nomem = 1;
		return -1;
	}
	*p = np;
	*cap = ncap;
	return 0;
}

static void wbuf_put(struct wbuf *w, const void *p, size_t n)
{
	if (!n || grow((void **)&w->data, &w->cap, w->len + n, 1, w->nomem))
		return;
	memcpy(w->data + w->len, p, n);
	w->len += n;
}

static void put_varint(struct wbuf *w, uint64_t v)
{
	uint8_t tmp[VARINT_MAX_BYTES];

	wbuf_put(w, tmp, varint_encode(tmp, v));
}

struct enc_frame {
	uint64_t address, offset;
	uint32_t function, module, file; /* string references: index + 1, 0 = NULL */
	int64_t line;
};

/*
 * A frame of the snapshot being encoded, by address: stacks share frames
 * (struct snap_stack), so most frame references are found here with one
 * pointer hashed, no string read.
 */
struct ptr_frame {
	const struct snap_frame *ptr;
	uint32_t frame; /* its index in the frame table */
};

struct encoder {
	int nomem;
	int too_big;
	struct hash_index ptr_index;
	struct ptr_frame *ptrs;
	size_t ptrs_cap;
	struct hash_index str_index;
	const char **strs;
	size_t *str_lens;
	size_t strs_cap, lens_cap;
	struct hash_index frame_index;
	struct enc_frame *frames;
	size_t frames_cap;
	uint32_t *build_ids; /* pairs of string references: module, build-id */
	size_t nbuild_ids, build_ids_cap;
};

struct str_key {
	const struct encoder *e;
	const char *s;
	size_t len;
};

static int str_eq(const void *arg, size_t i)
{
	const struct str_key *k = arg;

	return k->e->str_lens[i] == k->len && !memcmp(k->e->strs[i], k->s, k->len);
}

/* Returns the string's reference: 0 for NULL, else table index + 1. */
static uint32_t intern_string(struct encoder *e, const char *s)
{
	struct hash_index *d = &e->str_index;
	struct str_key key = {e, s, 0};
	size_t i;
	int is_new;

	if (!s)
		return 0;
	key.len = strlen(s);
	if (key.len > SNAPSHOT_MAX_STRING) {
		e->too_big = 1;
		return 0;
	}
	/* room for a new one first: an entry added is stored at once */
	if (grow((void **)&e->strs, &e->strs_cap, d->count + 1, sizeof(*e->strs), &e->nomem) ||
	    grow((void **)&e->str_lens, &e->lens_cap, d->count + 1, sizeof(*e->str_lens),
		 &e->nomem))
		return 0;
	i = hash_index_try_find(d, hash_bytes(s, key.len, HASH_SEED), str_eq, &key, &is_new);
	if (i == SIZE_MAX) {
		e->nomem = 1;
		return 0;
	}
	if (is_new) {
		e->strs[i] = s;
		e->str_lens[i] = key.len;
		if (d->count > SNAPSHOT_MAX_STRINGS) {
			e->too_big = 1;
			return 0;
		}
	}
	return (uint32_t)i + 1;
}

static int frame_equal(const struct enc_frame *a, const struct enc_frame *b)
{
	return a->address == b->address && a->offset == b->offset && a->function == b->function &&
	       a->module == b->module && a->file == b->file && a->line == b->line;
}

struct frame_key {
	const struct encoder *e;
	const struct enc_frame *f;
};

static int frame_eq(const void *arg, size_t i)
{
	const struct frame_key *k = arg;

	return frame_equal(&k->e->frames[i], k->f);
}

/* Returns the frame's index in the frame table. */
static uint32_t intern_frame(struct encoder *e, const struct snap_frame *f)
{
	struct hash_index *d = &e->frame_index;
	struct enc_frame ef = {
	    .address = f->address,
	    .offset = f->offset,
	    .function = intern_string(e, f->function),
	    .module = intern_string(e, f->module),
	    .file = intern_string(e, f->file),
	    .line = f->line,
	};
	struct frame_key key = {e, &ef};
	uint64_t hash = HASH_SEED;
	size_t i;
	int is_new;

	hash = hash_mix(hash, ef.address);
	hash = hash_mix(hash, ef.offset);
	hash = hash_mix(hash, ((uint64_t)ef.function << 32) | ef.module);
	hash = hash_mix(hash, ((uint64_t)ef.file << 32) | (uint64_t)ef.line);
	if (grow((void **)&e->frames, &e->frames_cap, d->count + 1, sizeof(*e->frames), &e->nomem))
		return 0;
	i = hash_index_try_find(d, hash, frame_eq, &key, &is_new);
	if (i == SIZE_MAX) {
		e->nomem = 1;
		return 0;
	}
	if (is_new) {
		e->frames[i] = ef;
		if (d->count > SNAPSHOT_MAX_FRAMES) {
			e->too_big = 1;
			return 0;
		}
	}
	return (uint32_t)i;
}

/* Remember a frame's module and build-id, once per module. */
static void intern_build_id(struct encoder *e, const struct snap_frame *f)
{
	uint32_t module, id;

	if (!f->module || !f->build_id)
		return;
	module = intern_string(e, f->module);
	for (size_t i = 0; i < e->nbuild_ids; i++)
		if (e->build_ids[2 * i] == module)
			return;
	id = intern_string(e, f->build_id);
	if (grow((void **)&e->build_ids, &e->build_ids_cap, 2 * (e->nbuild_ids + 1),
		 sizeof(*e->build_ids), &e->nomem))
		return;
	e->build_ids[2 * e->nbuild_ids] = module;
	e->build_ids[2 * e->nbuild_ids + 1] = id;
	e->nbuild_ids++;
}

struct ptr_key {
	const struct encoder *e;
	const struct snap_frame *f;
};

static int ptr_eq(const void *arg, size_t i)
{
	const struct ptr_key *k = arg;

	return k->e->ptrs[i].ptr == k->f;
}

/* intern_frame() and intern_build_id(), by the frame's address first. */
static uint32_t intern_frame_fast(struct encoder *e, const struct snap_frame *f)
{
	struct hash_index *d = &e->ptr_index;
	struct ptr_key key = {e, f};
	size_t i;
	int is_new;

	if (grow((void **)&e->ptrs, &e->ptrs_cap, d->count + 1, sizeof(*e->ptrs), &e->nomem))
		return 0;
	i = hash_index_try_find(d, hash_mix(0, (uint64_t)(uintptr_t)f), ptr_eq, &key, &is_new);
	if (i == SIZE_MAX) {
		e->nomem = 1;
		return 0;
	}
	if (!is_new)
		return e->ptrs[i].frame;
	/* stored before anything else looks it up */
	e->ptrs[i] = (struct ptr_frame){f, 0};
	e->ptrs[i].frame = intern_frame(e, f);
	intern_build_id(e, f);
	return e->ptrs[i].frame;
}

static void put_counters(struct wbuf *w, const struct mt_counters *c)
{
	put_varint(w, MT_NCOUNTERS);
	for (size_t i = 0; i < MT_NCOUNTERS; i++)
		put_varint(w, mt_counter_get(c, i));
}

/* What out holds goes on to its sink, if it has one. */
static void sink_flush(struct wbuf *out)
{
	if (!out->sink || !out->len || *out->nomem)
		return;
	zsink_put(out->sink, out->data, out->len, Z_NO_FLUSH);
	out->len = 0;
}

/* Section bodies are built in body, then framed as tag, length, body. */
static void put_section(struct wbuf *out, struct wbuf *body, enum section tag)
{
	put_varint(out, tag);
	put_varint(out, body->len);
	if (out->sink && !*body->nomem) {
		sink_flush(out);
		zsink_put(out->sink, body->data, body->len, Z_NO_FLUSH);
	} else {
		wbuf_put(out, body->data, body->len);
	}
	body->len = 0;
}

static void put_block(struct wbuf *body, const struct snap_block *b)
{
	put_varint(body, b->stack);
	put_varint(body, b->address);
	put_varint(body, b->size);
	put_varint(body, b->age_ns);
}

/*
 * Section 9: the live block list. Into a sink, its length is counted first
 * and the body goes in pieces of BLOCK_PIECE bytes.
 */
#define BLOCK_PIECE (256 * 1024)

static void encode_blocks(const struct snapshot *s, struct wbuf *body, struct wbuf *out)
{
	uint64_t len = varint_len(s->blocks_older_than_ns) + varint_len(s->nblocks), sent = 0;

	if (!out->sink) {
		put_varint(body, s->blocks_older_than_ns);
		put_varint(body, s->nblocks);
		for (uint32_t i = 0; i < s->nblocks; i++)
			put_block(body, &s->blocks[i]);
		put_section(out, body, SEC_BLOCKS);
		return;
	}
	for (uint32_t i = 0; i < s->nblocks; i++) {
		const struct snap_block *b = &s->blocks[i];

		len += varint_len(b->stack) + varint_len(b->address) + varint_len(b->size) +
		       varint_len(b->age_ns);
	}
	put_varint(out, SEC_BLOCKS);
	put_varint(out, len);
	sink_flush(out);
	put_varint(body, s->blocks_older_than_ns);
	put_varint(body, s->nblocks);
	for (uint32_t i = 0; i < s->nblocks && !*body->nomem; i++) {
		put_block(body, &s->blocks[i]);
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

/* A list of figures: their count, then each. */
static void put_figures(struct wbuf *body, const uint64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put_varint(body, v[i]);
}

/* A timeline point's live heap and counters (sections 8 and 52), in wire order. */
static void put_live_figures(struct wbuf *body, const struct snap_figures *f)
{
	put_varint(body, f->live_bytes);
	put_varint(body, f->live_allocations);
	put_varint(body, f->allocations);
	put_varint(body, f->bytes_allocated);
}

/*
 * Sections 45 and 46: the targets' resident memory and the timeline's, and
 * the breakdowns by kind of mapping (error_refs: their errors' strings).
 */
static void encode_memory_sections(const struct snapshot *s, const uint32_t *error_refs,
				   struct wbuf *body, struct wbuf *out)
{
	if (s->has_resident) {
		put_varint(body, MT_NRESIDENT);
		put_varint(body, s->ntargets);
		for (uint32_t i = 0; i < s->ntargets; i++) {
			const struct snap_resident *r = &s->targets[i].resident;

			put_varint(body, r->sampled != 0);
			if (!r->sampled)
				continue;
			put_varint(body, r->time_ns);
			put_figures(body, (const uint64_t *)&r->r, MT_NRESIDENT);
			put_varint(body, r->peak_bytes);
			put_varint(body, r->peak_time_ns);
		}
		put_varint(body, s->ntimeline);
		for (uint32_t i = 0; i < s->ntimeline; i++) {
			const struct snap_figures *f = &s->timeline[i].total;

			put_varint(body, f->has_resident != 0);
			if (f->has_resident)
				put_figures(body, (const uint64_t *)&f->resident, MT_NRESIDENT);
		}
		put_section(out, body, SEC_RESIDENT);
	}
	if (s->has_memory) {
		put_varint(body, s->nmemory);
		for (uint32_t i = 0; i < s->nmemory; i++) {
			const struct snap_memory *m = &s->memory[i];

			put_varint(body, m->target);
			put_varint(body, error_refs[i]);
			put_varint(body, m->time_ns);
			put_varint(body, MT_MEM_KIND_COUNT);
			put_varint(body, MT_NMEM_FIELDS);
			for (size_t k = 0; k < MT_MEM_KIND_COUNT; k++)
				put_figures(body, (const uint64_t *)&m->m.kinds[k], MT_NMEM_FIELDS);
			put_varint(body, m->m.unmapped_allocations);
			put_varint(body, m->m.unmapped_bytes);
		}
		put_section(out, body, SEC_MEMORY);
	}
}

/* Sections 47 and 48: a leak scan's figures and suppressions, its entries. */
static void encode_scan_sections(const struct snapshot *s, const uint32_t *supp_refs,
				 struct wbuf *body, struct wbuf *out)
{
	const struct snap_scan *sc = &s->scan;

	if (s->kind != SNAP_SCAN)
		return;
	/* a count of figures, then the figures: later ones can be added */
	put_varint(body, SNAP_NSCAN);
	for (size_t i = 0; i < SNAP_NSCAN; i++)
		put_varint(body, *(const uint64_t *)((const char *)&sc->f + snap_scan_offsets[i]));
	put_varint(body, sc->nsuppressions);
	for (uint32_t i = 0; i < sc->nsuppressions; i++) {
		put_varint(body, supp_refs[i]);
		put_varint(body, sc->suppressions[i].blocks);
		put_varint(body, sc->suppressions[i].bytes);
	}
	put_varint(body, sc->npids);
	for (uint32_t i = 0; i < sc->npids; i++)
		put_varint(body, sc->pids[i]);
	put_section(out, body, SEC_SCAN);
	put_varint(body, sc->nentries);
	for (uint32_t i = 0; i < sc->nentries; i++) {
		put_varint(body, sc->entries[i].stack);
		put_varint(body, sc->entries[i].kind);
		put_varint(body, sc->entries[i].blocks);
		put_varint(body, sc->entries[i].bytes);
	}
	put_section(out, body, SEC_SCAN_ENTRIES);
}

/* Sections 42-44: the daemon's own figures, a grouped snapshot's rows, leaks. */
static void encode_scale_sections(const struct snapshot *s, const uint32_t *row_refs,
				  struct wbuf *body, struct wbuf *out)
{
	if (s->has_daemon) {
		put_varint(body, SNAP_NDAEMON);
		for (size_t i = 0; i < SNAP_NDAEMON; i++)
			put_varint(body, *(const uint64_t *)((const char *)&s->daemon +
							     snap_daemon_offsets[i]));
		put_section(out, body, SEC_DAEMON);
	}
	if (s->kind == SNAP_ROWS) {
		const struct snap_groups *g = &s->groups;

		put_varint(body, g->by);
		put_varint(body, g->cumulative);
		put_varint(body, g->order);
		put_varint(body, s->nstacks);
		for (uint32_t i = 0; i < s->nstacks; i++) {
			put_varint(body, row_refs[i]);
			put_varint(body, g->rows[i].stacks);
		}
		/* a count of figures, then the figures: later ones can be added */
		put_varint(body, 4 + SNAP_STACK_COUNTERS_ALL);
		put_varint(body, g->rest_rows);
		put_varint(body, g->rest_rows_live);
		put_varint(body, g->rest_rows_allocated);
		put_varint(body, g->rest_rows_peak);
#define PUT_REST(field, name, section) put_varint(body, g->rest.field);
		MT_STACK_COUNTERS(PUT_REST)
#undef PUT_REST
		put_section(out, body, SEC_GROUPS);
	}
	if (s->kind == SNAP_LEAKS) {
		const struct snap_leaks *l = &s->leaks;

		put_varint(body, l->older_than_ns);
		put_varint(body, l->blocks);
		put_varint(body, l->bytes);
		put_varint(body, l->stacks_total);
		put_varint(body, s->nstacks);
		for (uint32_t i = 0; i < s->nstacks; i++) {
			put_varint(body, l->stacks[i].blocks);
			put_varint(body, l->stacks[i].bytes);
			put_varint(body, l->stacks[i].oldest_ns);
			put_varint(body, l->stacks[i].youngest_ns);
		}
		put_section(out, body, SEC_LEAKS);
	}
}

/* Section 52: each timeline point's targets, with the figures of each. */
static void encode_timeline_targets(const struct snapshot *s, struct wbuf *body, struct wbuf *out)
{
	if (!s->has_timeline_targets || !s->ntimeline)
		return;
	put_varint(body, SNAP_NLIVE_FIGURES);
	put_varint(body, MT_NRESIDENT);
	put_varint(body, s->ntargets);
	for (uint32_t i = 0; i < s->ntargets; i++)
		put_varint(body, s->targets[i].started_ns);
	put_varint(body, s->ntimeline);
	for (uint32_t i = 0; i < s->ntimeline; i++) {
		const struct snap_timeline_point *p = &s->timeline[i];

		put_varint(body, p->ntargets);
		for (uint32_t k = 0; k < p->ntargets; k++) {
			const struct snap_timeline_target *t = &s->timeline_targets[p->first + k];

			put_varint(body, t->target);
			put_live_figures(body, &t->f);
			put_varint(body, t->f.has_resident != 0);
			if (t->f.has_resident)
				put_figures(body, (const uint64_t *)&t->f.resident, MT_NRESIDENT);
		}
	}
	put_section(out, body, SEC_TIMELINE_TARGETS);
}

/* Sections 49-50: what a forked child's rows inherited, and whom each target was forked from. */
static void encode_family_sections(const struct snapshot *s, struct wbuf *body, struct wbuf *out)
{
	if (s->has_inherited) {
		put_varint(body, s->nstacks);
#define INHERITED_ONE(field, name, section) +(section == 2)
		put_varint(body, 0 MT_STACK_COUNTERS(INHERITED_ONE));
#undef INHERITED_ONE
		for (uint32_t i = 0; i < s->nstacks; i++) {
#define PUT_INHERITED(field, name, section)                                                        \
	if (section == 2)                                                                          \
		put_varint(body, s->stacks[i].t.field);
			MT_STACK_COUNTERS(PUT_INHERITED)
#undef PUT_INHERITED
		}
		put_section(out, body, SEC_INHERITED);
	}
	for (uint32_t i = 0; i < s->ntargets; i++) {
		if (!s->targets[i].parent_pid)
			continue;
		put_varint(body, s->ntargets);
		for (uint32_t k = 0; k < s->ntargets; k++)
			put_varint(body, s->targets[k].parent_pid);
		put_section(out, body, SEC_FAMILY);
		break;
	}
}

static void encode_sections(struct encoder *e, const struct snapshot *s, struct wbuf *out)
{
	struct wbuf body = {.nomem = &e->nomem};
	uint32_t version_ref, match_ref;
	uint32_t *target_refs, *trunc_refs = NULL, *note_refs = NULL;
	uint32_t *frame_refs = NULL, *site_refs = NULL, *row_refs = NULL, *error_refs = NULL;
	uint32_t *supp_refs = NULL;
	size_t nsites = 0;
	int any_note = 0;
	size_t nrefs = 0, refs_cap = 0;

	/* Intern first: the string and frame tables precede their users. */
	version_ref = intern_string(e, s->tracer_version);
	match_ref = s->has_match ? intern_string(e, s->match.what) : 0;
	target_refs = calloc(s->ntargets ? 2 * (size_t)s->ntargets : 1, sizeof(*target_refs));
	if (!target_refs) {
		e->nomem = 1;
		return;
	}
	for (uint32_t i = 0; i < s->ntargets; i++) {
		target_refs[2 * i] = intern_string(e, s->targets[i].command);
		target_refs[2 * i + 1] = intern_string(e, s->targets[i].allocator);
	}
	trunc_refs = calloc(s->ntruncations ? s->ntruncations : 1, sizeof(*trunc_refs));
	if (!trunc_refs) {
		e->nomem = 1;
		free(target_refs);
		return;
	}
	for (uint32_t i = 0; i < s->ntruncations; i++)
		trunc_refs[i] = intern_string(e, s->truncations[i].module);
	note_refs = calloc(s->ntargets ? s->ntargets : 1, sizeof(*note_refs));
	if (!note_refs) {
		e->nomem = 1;
		free(target_refs);
		free(trunc_refs);
		return;
	}
	for (uint32_t i = 0; i < s->ntargets; i++) {
		note_refs[i] = intern_string(e, s->targets[i].note);
		any_note |= s->targets[i].note != NULL;
		nsites += s->targets[i].nsites;
	}
	site_refs = calloc(nsites ? 5 * nsites : 1, sizeof(*site_refs));
	if (!site_refs) {
		e->nomem = 1;
		goto out;
	}
	nsites = 0;
	for (uint32_t i = 0; i < s->ntargets; i++) {
		for (uint32_t j = 0; j < s->targets[i].nsites; j++) {
			const struct snap_probe_site *ps = &s->targets[i].sites[j];

			site_refs[nsites++] = intern_string(e, ps->function);
			site_refs[nsites++] = intern_string(e, ps->object);
			site_refs[nsites++] = intern_string(e, ps->instruction);
			site_refs[nsites++] = intern_string(e, ps->why);
			site_refs[nsites++] = intern_string(e, ps->via);
		}
	}
	if (s->kind == SNAP_ROWS) {
		row_refs = calloc(s->nstacks ? s->nstacks : 1, sizeof(*row_refs));
		if (!row_refs)
			e->nomem = 1;
		for (uint32_t i = 0; row_refs && i < s->nstacks; i++)
			row_refs[i] = intern_string(e, s->groups.rows[i].key);
	}
	if (s->has_memory) {
		error_refs = calloc(s->nmemory ? s->nmemory : 1, sizeof(*error_refs));
		if (!error_refs)
			e->nomem = 1;
		for (uint32_t i = 0; error_refs && i < s->nmemory; i++)
			error_refs[i] = intern_string(e, s->memory[i].error);
	}
	if (s->kind == SNAP_SCAN) {
		supp_refs =
		    calloc(s->scan.nsuppressions ? s->scan.nsuppressions : 1, sizeof(*supp_refs));
		if (!supp_refs)
			e->nomem = 1;
		for (uint32_t i = 0; supp_refs && i < s->scan.nsuppressions; i++)
			supp_refs[i] = intern_string(e, s->scan.suppressions[i].pattern);
	}
	for (uint32_t i = 0; i < s->nstacks && !e->nomem; i++) {
		const struct snap_stack *st = &s->stacks[i];

		if (grow((void **)&frame_refs, &refs_cap, nrefs + st->nframes, sizeof(*frame_refs),
			 &e->nomem))
			break;
		for (uint32_t j = 0; j < st->nframes; j++)
			frame_refs[nrefs++] = intern_frame_fast(e, st->frames[j]);
	}
	if (e->nomem || e->too_big)
		goto out;

	put_varint(&body, e->str_index.count);
	for (size_t i = 0; i < e->str_index.count; i++) {
		put_varint(&body, e->str_lens[i]);
		wbuf_put(&body, e->strs[i], e->str_lens[i]);
	}
	put_section(out, &body, SEC_STRINGS);

	put_varint(&body, version_ref);
	put_varint(&body, s->created_unix_ns);
	put_varint(&body, s->uptime_ns);
	put_varint(&body, s->events_received);
	put_varint(&body, s->stacks_total);
	put_section(out, &body, SEC_META);

	put_counters(&body, &s->totals);
	put_section(out, &body, SEC_TOTALS);

	put_varint(&body, ARRAY_SIZE(s->events_lost));
	for (size_t i = 0; i < ARRAY_SIZE(s->events_lost); i++)
		put_varint(&body, s->events_lost[i]);
	put_section(out, &body, SEC_EVENTS_LOST);

	put_varint(&body, s->ntargets);
	for (uint32_t i = 0; i < s->ntargets; i++) {
		const struct snap_target *t = &s->targets[i];

		put_varint(&body, t->pid);
		put_varint(&body, t->state);
		put_varint(&body, zigzag(t->exit_status));
		put_varint(&body, t->probes);
		put_varint(&body, target_refs[2 * i]);
		put_varint(&body, target_refs[2 * i + 1]);
		put_varint(&body, t->traced_ns);
		put_counters(&body, &t->counters);
	}
	put_section(out, &body, SEC_TARGETS);

	put_varint(&body, e->frame_index.count);
	for (size_t i = 0; i < e->frame_index.count; i++) {
		const struct enc_frame *f = &e->frames[i];

		put_varint(&body, f->address);
		put_varint(&body, f->offset);
		put_varint(&body, f->function);
		put_varint(&body, f->module);
		put_varint(&body, f->file);
		put_varint(&body, zigzag(f->line));
	}
	put_section(out, &body, SEC_FRAMES);

	nrefs = 0;
	put_varint(&body, s->nstacks);
	for (uint32_t i = 0; i < s->nstacks; i++) {
		const struct snap_stack *st = &s->stacks[i];

		put_varint(&body, st->pid);
		put_varint(&body, st->nframes);
		for (uint32_t j = 0; j < st->nframes; j++)
			put_varint(&body, frame_refs[nrefs++]);
#define PUT_STACK_COUNTER(field, name, section)                                                    \
	if (section == 0)                                                                          \
		put_varint(&body, st->t.field);
		MT_STACK_COUNTERS(PUT_STACK_COUNTER)
#undef PUT_STACK_COUNTER
	}
	put_section(out, &body, SEC_STACKS);

	if (s->ntimeline) {
		put_varint(&body, s->timeline_interval_ns);
		put_varint(&body, s->ntimeline);
		for (uint32_t i = 0; i < s->ntimeline; i++) {
			const struct snap_timeline_point *p = &s->timeline[i];

			put_varint(&body, p->time_ns);
			put_live_figures(&body, &p->total);
		}
		put_section(out, &body, SEC_TIMELINE);
	}

	if (s->has_blocks)
		encode_blocks(s, &body, out);
	if (s->nstacks) {
		put_varint(&body, s->nstacks);
		for (uint32_t i = 0; i < s->nstacks; i++) {
#define PUT_STACK_COUNTER(field, name, section)                                                    \
	if (section == 1)                                                                          \
		put_varint(&body, s->stacks[i].t.field);
			MT_STACK_COUNTERS(PUT_STACK_COUNTER)
#undef PUT_STACK_COUNTER
		}
		put_section(out, &body, SEC_TEMPORARY);
	}
	if (s->started_unix_ns) {
		put_varint(&body, s->started_unix_ns);
		put_varint(&body, SNAP_NOPTIONS);
		for (size_t i = 0; i < SNAP_NOPTIONS; i++)
			put_varint(&body, *(const uint64_t *)((const char *)&s->options +
							      snap_option_offsets[i]));
		put_section(out, &body, SEC_TRACE);
	}
	if (s->has_ages) {
		put_varint(&body, s->nstacks);
		for (uint32_t i = 0; i < s->nstacks; i++)
			put_varint(&body, s->stacks[i].oldest_live_age_ns);
		put_section(out, &body, SEC_AGES);
	}

	put_varint(&body, SNAP_HISTOGRAM_BINS);
	for (size_t i = 0; i < SNAP_HISTOGRAM_BINS; i++)
		put_varint(&body, s->size_histogram[i]);
	put_section(out, &body, (enum section)SEC_HISTOGRAM);

	put_varint(&body, SNAP_FUNCS_SECTION1);
	for (size_t i = 0; i < SNAP_FUNCS_SECTION1; i++) {
		put_varint(&body, s->allocations_by_func[i]);
		put_varint(&body, s->bytes_by_func[i]);
	}
	put_section(out, &body, (enum section)SEC_FUNCS);

	put_varint(&body, e->nbuild_ids);
	for (size_t i = 0; i < 2 * e->nbuild_ids; i++)
		put_varint(&body, e->build_ids[i]);
	put_section(out, &body, (enum section)SEC_BUILD_IDS);

	put_varint(&body, SNAP_MAX_FUNCS - SNAP_FUNCS_SECTION1);
	for (size_t i = SNAP_FUNCS_SECTION1; i < SNAP_MAX_FUNCS; i++) {
		put_varint(&body, s->allocations_by_func[i]);
		put_varint(&body, s->bytes_by_func[i]);
	}
	put_section(out, &body, (enum section)SEC_FUNCS_EXT);

	put_varint(&body, s->nstacks);
	for (uint32_t i = 0; i < s->nstacks; i++) {
		const struct snap_stack *st = &s->stacks[i];
		uint32_t k = 0;

		put_varint(&body, st->stack_end);
		for (uint32_t j = 0; j < st->nframes; j++)
			k += st->frames[j]->inlined != 0;
		put_varint(&body, k);
		for (uint32_t j = 0; j < st->nframes; j++) {
			if (st->frames[j]->inlined)
				put_varint(&body, j);
		}
	}
	put_varint(&body, s->ntruncations);
	for (uint32_t i = 0; i < s->ntruncations; i++) {
		put_varint(&body, trunc_refs[i]);
		put_varint(&body, s->truncations[i].stacks);
		put_varint(&body, s->truncations[i].allocations);
	}
	put_section(out, &body, SEC_STACK_INFO);

	if (any_note) {
		put_varint(&body, s->ntargets);
		for (uint32_t i = 0; i < s->ntargets; i++)
			put_varint(&body, note_refs[i]);
		put_section(out, &body, SEC_TARGET_NOTES);
	}
	if (s->unwind.present) {
		/* a count of fields, then the fields: later ones can be added */
		put_varint(&body, 6);
		put_varint(&body, s->unwind.memory_limit);
		put_varint(&body, s->unwind.memory_used);
		put_varint(&body, s->unwind.table_bytes);
		put_varint(&body, s->unwind.tables);
		put_varint(&body, s->unwind.modules_without);
		put_varint(&body, s->unwind.modules_refused);
		put_section(out, &body, SEC_UNWIND);
	}
	if (nsites) {
		nsites = 0;
		put_varint(&body, s->ntargets);
		for (uint32_t i = 0; i < s->ntargets; i++) {
			put_varint(&body, s->targets[i].nsites);
			for (uint32_t j = 0; j < s->targets[i].nsites; j++) {
				const struct snap_probe_site *ps = &s->targets[i].sites[j];

				put_varint(&body, site_refs[nsites]);
				put_varint(&body, site_refs[nsites + 1]);
				put_varint(&body, ps->offset);
				put_varint(&body, ps->at);
				put_varint(&body, site_refs[nsites + 2]);
				put_varint(&body, site_refs[nsites + 3]);
				put_varint(&body, site_refs[nsites + 4]);
				nsites += 5;
			}
		}
		put_section(out, &body, SEC_PROBE_SITES);
	}
	encode_scale_sections(s, row_refs, &body, out);
	encode_memory_sections(s, error_refs, &body, out);
	encode_scan_sections(s, supp_refs, &body, out);
	encode_family_sections(s, &body, out);
	if (s->has_match) {
		put_varint(&body, match_ref);
		put_varint(&body, SNAP_NMATCH);
		for (size_t i = 0; i < SNAP_NMATCH; i++)
			put_varint(&body, *(const uint64_t *)((const char *)&s->match +
							      snap_match_offsets[i]));
		put_section(out, &body, SEC_MATCH);
	}
	encode_timeline_targets(s, &body, out);
out:
	free(error_refs);
	free(supp_refs);
	free(row_refs);
	free(site_refs);
	free(note_refs);
	free(body.data);
	free(frame_refs);
	free(target_refs);
	free(trunc_refs);
}

/* Section 52 as the decoder wants it: each point's targets, by increasing index. */
static int check_timeline_targets(const struct snapshot *s)
{
	uint64_t total = 0;

	for (uint32_t i = 0; i < s->ntimeline; i++) {
		const struct snap_timeline_point *p = &s->timeline[i];

		if ((uint64_t)p->first + p->ntargets > s->ntimeline_targets)
			return -1;
		total += p->ntargets;
		for (uint32_t k = 0; k < p->ntargets; k++) {
			uint32_t t = s->timeline_targets[p->first + k].target;

			if (t >= s->ntargets ||
			    (k && t <= s->timeline_targets[p->first + k - 1].target))
				return -1;
		}
	}
	return total > SNAPSHOT_MAX_TIMELINE_TARGETS ? -1 : 0;
}

/* Limits the decoder enforces, checked here so that what we write reads back. */
static int check_limits(const struct snapshot *s)
{
	uint64_t refs = 0;

	if (s->ntargets > SNAPSHOT_MAX_TARGETS || s->nstacks > SNAPSHOT_MAX_STACKS ||
	    s->ntimeline > SNAPSHOT_MAX_TIMELINE || s->nblocks > SNAPSHOT_MAX_BLOCKS)
		return -1;
	for (uint32_t i = 0; i < s->nblocks; i++)
		if (s->blocks[i].stack >= s->nstacks)
			return -1;
	if (s->kind >= SNAP_KIND_COUNT)
		return -1;
	if (s->kind == SNAP_SCAN &&
	    (s->scan.nentries > SNAPSHOT_MAX_STACKS * (uint64_t)SNAP_LEAK_KINDS ||
	     s->scan.nsuppressions > SNAPSHOT_MAX_SUPPRESSIONS ||
	     s->scan.npids > SNAPSHOT_MAX_TARGETS))
		return -1;
	for (uint32_t i = 0; s->kind == SNAP_SCAN && i < s->scan.nentries; i++)
		if (s->scan.entries[i].stack >= s->nstacks ||
		    s->scan.entries[i].kind >= SNAP_LEAK_KINDS)
			return -1;
	if (s->has_timeline_targets && check_timeline_targets(s))
		return -1;
	for (uint32_t i = 0; i < s->nmemory; i++)
		if (s->memory[i].target >= s->ntargets ||
		    (i && s->memory[i].target <= s->memory[i - 1].target))
			return -1;
	for (uint32_t i = 0; i < s->nstacks; i++) {
		if (s->stacks[i].nframes > SNAPSHOT_MAX_DEPTH)
			return -1;
		refs += s->stacks[i].nframes;
	}
	return refs > SNAPSHOT_MAX_FRAME_REFS ? -1 : 0;
}

int snapshot_encode(const struct snapshot *s, uint8_t **out, size_t *out_len)
{
	return snapshot_encode_after(s, 0, out, out_len);
}

int snapshot_encode_after(const struct snapshot *s, size_t room, uint8_t **out, size_t *out_len)
{
	struct encoder e = {0};
	struct zsink sink;
	struct wbuf payload = {.nomem = &e.nomem, .sink = &sink};
	uint8_t *bytes;
	uint64_t clen;
	int err = 0;

	*out = NULL;
	*out_len = 0;
	if (check_limits(s))
		return -E2BIG;
	if (zsink_init(&sink, room + HEADER_SIZE, SNAPSHOT_MAX_BYTES, Z_BEST_SPEED)) {
		err = -ENOMEM;
		goto out;
	}
	encode_sections(&e, s, &payload);
	sink_flush(&payload);
	if (!e.nomem && !e.too_big)
		zsink_put(&sink, NULL, 0, Z_FINISH);
	if (e.nomem || sink.err == -ENOMEM) {
		err = -ENOMEM;
		goto out;
	}
	if (e.too_big || sink.err == -E2BIG) {
		err = -E2BIG;
		goto out;
	}
	if (sink.err) {
		err = sink.err;
		goto out;
	}
	bytes = sink.data;
	sink.data = NULL;
	clen = zsink_out(&sink);
	memcpy(bytes + room, SNAPSHOT_MAGIC, 8);
	put_le32(bytes + room + 8, SNAPSHOT_VERSION);
	put_le32(bytes + room + 12, 0);
	put_le64(bytes + room + 16, sink.total_in);
	put_le64(bytes + room + 24, clen);
	put_le32(bytes + room + 32, (uint32_t)crc32_z(0, bytes + room + HEADER_SIZE, clen));
	*out = bytes;
	*out_len = HEADER_SIZE + clen;
out:
	zsink_free(&sink);
	free(payload.data);
	hash_index_free(&e.str_index);
	hash_index_free(&e.frame_index);
	hash_index_free(&e.ptr_index);
	free(e.ptrs);
	free(e.strs);
	free(e.str_lens);
	free(e.frames);
	free(e.build_ids);
	return err;
}
