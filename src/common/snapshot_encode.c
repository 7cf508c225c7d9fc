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
#include "common/snapshot_encode_parts.h"
#include "common/snapshot_wire.h"
#include "common/varint.h"
#include "common/util.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

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
	if (enc_grow((void **)&e->strs, &e->strs_cap, d->count + 1, sizeof(*e->strs), &e->nomem) ||
	    enc_grow((void **)&e->str_lens, &e->lens_cap, d->count + 1, sizeof(*e->str_lens),
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
	if (enc_grow((void **)&e->frames, &e->frames_cap, d->count + 1, sizeof(*e->frames),
		     &e->nomem))
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
	if (enc_grow((void **)&e->build_ids, &e->build_ids_cap, 2 * (e->nbuild_ids + 1),
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

	if (enc_grow((void **)&e->ptrs, &e->ptrs_cap, d->count + 1, sizeof(*e->ptrs), &e->nomem))
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

/*
 * Section SEC_TIMELINE_CGROUP, when a timeline target's figure has its
 * cgroup's: in the order section SEC_TIMELINE_TARGETS writes the figures
 * (point by point), whose decoder numbers them so.
 */
static void encode_timeline_cgroup(const struct snapshot *s, struct wbuf *body, struct wbuf *out)
{
	const struct snap_timeline_targets *tt = s->timeline_targets;
	uint64_t n = 0;
	int any = 0;

	if (!tt || !s->ntimeline)
		return; /* no section SEC_TIMELINE_TARGETS */
	for (uint32_t i = 0; i < s->ntimeline; i++) {
		const struct snap_timeline_point *p = &s->timeline[i];

		n += p->ntargets;
		for (uint32_t k = 0; k < p->ntargets && !any; k++)
			any = tt->figures[p->first + k].f.has_cgroup != 0;
	}
	if (!any)
		return;
	enc_varint(body, n);
	enc_varint(body, 2); /* usage, limit */
	for (uint32_t i = 0; i < s->ntimeline; i++) {
		const struct snap_timeline_point *p = &s->timeline[i];

		for (uint32_t k = 0; k < p->ntargets; k++) {
			const struct snap_figures *f = &tt->figures[p->first + k].f;

			enc_varint(body, f->has_cgroup != 0);
			if (!f->has_cgroup)
				continue;
			enc_varint(body, f->cgroup_usage_bytes);
			enc_varint(body, f->cgroup_limit_bytes);
		}
	}
	enc_section(out, body, SEC_TIMELINE_CGROUP);
}

static void encode_sections(struct encoder *e, const struct snapshot *s, struct wbuf *out)
{
	struct wbuf body = {.nomem = &e->nomem};
	uint32_t version_ref, match_ref, walker_refs[2] = {0, 0};
	uint32_t *target_refs, *trunc_refs = NULL, *note_refs = NULL;
	uint32_t *frame_refs = NULL, *site_refs = NULL, *row_refs = NULL, *error_refs = NULL;
	uint32_t *supp_refs = NULL, *cgroup_refs = NULL;
	size_t nsites = 0;
	int any_cgroup = 0;
	int any_note = 0;
	size_t nrefs = 0, refs_cap = 0;

	/* Intern first: the string and frame tables precede their users. */
	version_ref = intern_string(e, s->tracer_version);
	match_ref = s->match ? intern_string(e, s->match->what) : 0;
	if (s->walker) {
		walker_refs[0] = intern_string(e, s->walker->name);
		walker_refs[1] = intern_string(e, s->walker->reason);
	}
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
	for (uint32_t i = 0; i < s->ntargets; i++)
		any_cgroup |= s->targets[i].cgroup.known != 0;
	if (any_cgroup) {
		cgroup_refs =
		    calloc(SNAP_CGROUP_STRINGS * (size_t)s->ntargets, sizeof(*cgroup_refs));
		if (!cgroup_refs)
			e->nomem = 1;
		for (uint32_t i = 0; cgroup_refs && i < s->ntargets; i++) {
			const struct snap_cgroup *c = &s->targets[i].cgroup;
			const char *str[SNAP_CGROUP_STRINGS] = {
			    c->path,	c->memory_path, c->unit, c->container,
			    c->runtime, c->pod,		c->why};

			for (size_t k = 0; c->known && k < SNAP_CGROUP_STRINGS; k++)
				cgroup_refs[SNAP_CGROUP_STRINGS * i + k] = intern_string(e, str[k]);
		}
	}
	if (s->kind == SNAP_ROWS) {
		row_refs = calloc(s->nstacks ? s->nstacks : 1, sizeof(*row_refs));
		if (!row_refs)
			e->nomem = 1;
		for (uint32_t i = 0; row_refs && i < s->nstacks; i++)
			row_refs[i] = intern_string(e, s->groups.rows[i].key);
	}
	if (s->breakdowns) {
		const struct snap_breakdowns *bd = s->breakdowns;

		error_refs = calloc(bd->nmemory ? bd->nmemory : 1, sizeof(*error_refs));
		if (!error_refs)
			e->nomem = 1;
		for (uint32_t i = 0; error_refs && i < bd->nmemory; i++)
			error_refs[i] = intern_string(e, bd->memory[i].error);
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

		if (enc_grow((void **)&frame_refs, &refs_cap, nrefs + st->nframes,
			     sizeof(*frame_refs), &e->nomem))
			break;
		for (uint32_t j = 0; j < st->nframes; j++)
			frame_refs[nrefs++] = intern_frame_fast(e, st->frames[j]);
	}
	if (e->nomem || e->too_big)
		goto out;

	enc_varint(&body, e->str_index.count);
	for (size_t i = 0; i < e->str_index.count; i++) {
		enc_varint(&body, e->str_lens[i]);
		wbuf_put(&body, e->strs[i], e->str_lens[i]);
	}
	enc_section(out, &body, SEC_STRINGS);

	enc_varint(&body, version_ref);
	enc_varint(&body, s->created_unix_ns);
	enc_varint(&body, s->uptime_ns);
	enc_varint(&body, s->events_received);
	enc_varint(&body, s->stacks_total);
	enc_section(out, &body, SEC_META);

	enc_counters(&body, &s->totals);
	enc_section(out, &body, SEC_TOTALS);

	enc_varint(&body, ARRAY_SIZE(s->events_lost));
	for (size_t i = 0; i < ARRAY_SIZE(s->events_lost); i++)
		enc_varint(&body, s->events_lost[i]);
	enc_section(out, &body, SEC_EVENTS_LOST);

	enc_varint(&body, s->ntargets);
	for (uint32_t i = 0; i < s->ntargets; i++) {
		const struct snap_target *t = &s->targets[i];

		enc_varint(&body, t->pid);
		enc_varint(&body, t->state);
		enc_varint(&body, zigzag(t->exit_status));
		enc_varint(&body, t->probes);
		enc_varint(&body, target_refs[2 * i]);
		enc_varint(&body, target_refs[2 * i + 1]);
		enc_varint(&body, t->traced_ns);
		enc_counters(&body, &t->counters);
	}
	enc_section(out, &body, SEC_TARGETS);

	enc_varint(&body, e->frame_index.count);
	for (size_t i = 0; i < e->frame_index.count; i++) {
		const struct enc_frame *f = &e->frames[i];

		enc_varint(&body, f->address);
		enc_varint(&body, f->offset);
		enc_varint(&body, f->function);
		enc_varint(&body, f->module);
		enc_varint(&body, f->file);
		enc_varint(&body, zigzag(f->line));
	}
	enc_section(out, &body, SEC_FRAMES);

	nrefs = 0;
	enc_varint(&body, s->nstacks);
	for (uint32_t i = 0; i < s->nstacks; i++) {
		const struct snap_stack *st = &s->stacks[i];

		enc_varint(&body, st->pid);
		enc_varint(&body, st->nframes);
		for (uint32_t j = 0; j < st->nframes; j++)
			enc_varint(&body, frame_refs[nrefs++]);
#define PUT_STACK_COUNTER(field, name, section)                                                    \
	if (section == 0)                                                                          \
		enc_varint(&body, st->t.field);
		MT_STACK_COUNTERS(PUT_STACK_COUNTER)
#undef PUT_STACK_COUNTER
	}
	enc_section(out, &body, SEC_STACKS);

	if (s->ntimeline) {
		enc_varint(&body, s->timeline_interval_ns);
		enc_varint(&body, s->ntimeline);
		for (uint32_t i = 0; i < s->ntimeline; i++) {
			const struct snap_timeline_point *p = &s->timeline[i];

			enc_varint(&body, p->time_ns);
			enc_live_figures(&body, &p->total);
		}
		enc_section(out, &body, SEC_TIMELINE);
	}

	if (s->block_list)
		encode_blocks(s->block_list, &body, out);
	if (s->nstacks) {
		enc_varint(&body, s->nstacks);
		for (uint32_t i = 0; i < s->nstacks; i++) {
#define PUT_STACK_COUNTER(field, name, section)                                                    \
	if (section == 1)                                                                          \
		enc_varint(&body, s->stacks[i].t.field);
			MT_STACK_COUNTERS(PUT_STACK_COUNTER)
#undef PUT_STACK_COUNTER
		}
		enc_section(out, &body, SEC_TEMPORARY);
	}
	if (s->started_unix_ns) {
		enc_varint(&body, s->started_unix_ns);
		enc_varint(&body, SNAP_NOPTIONS);
		for (size_t i = 0; i < SNAP_NOPTIONS; i++)
			enc_varint(&body, *(const uint64_t *)((const char *)&s->options +
							      snap_option_offsets[i]));
		enc_section(out, &body, SEC_TRACE);
	}
	if (s->has_ages) {
		enc_varint(&body, s->nstacks);
		for (uint32_t i = 0; i < s->nstacks; i++)
			enc_varint(&body, s->stacks[i].oldest_live_age_ns);
		enc_section(out, &body, SEC_AGES);
	}

	enc_varint(&body, SNAP_HISTOGRAM_BINS);
	for (size_t i = 0; i < SNAP_HISTOGRAM_BINS; i++)
		enc_varint(&body, s->size_histogram[i]);
	enc_section(out, &body, (enum section)SEC_HISTOGRAM);

	enc_varint(&body, SNAP_FUNCS_SECTION1);
	for (size_t i = 0; i < SNAP_FUNCS_SECTION1; i++) {
		enc_varint(&body, s->allocations_by_func[i]);
		enc_varint(&body, s->bytes_by_func[i]);
	}
	enc_section(out, &body, (enum section)SEC_FUNCS);

	enc_varint(&body, e->nbuild_ids);
	for (size_t i = 0; i < 2 * e->nbuild_ids; i++)
		enc_varint(&body, e->build_ids[i]);
	enc_section(out, &body, (enum section)SEC_BUILD_IDS);

	enc_varint(&body, SNAP_MAX_FUNCS - SNAP_FUNCS_SECTION1);
	for (size_t i = SNAP_FUNCS_SECTION1; i < SNAP_MAX_FUNCS; i++) {
		enc_varint(&body, s->allocations_by_func[i]);
		enc_varint(&body, s->bytes_by_func[i]);
	}
	enc_section(out, &body, (enum section)SEC_FUNCS_EXT);

	enc_varint(&body, s->nstacks);
	for (uint32_t i = 0; i < s->nstacks; i++) {
		const struct snap_stack *st = &s->stacks[i];
		uint32_t k = 0;

		enc_varint(&body, st->stack_end);
		for (uint32_t j = 0; j < st->nframes; j++)
			k += st->frames[j]->inlined != 0;
		enc_varint(&body, k);
		for (uint32_t j = 0; j < st->nframes; j++) {
			if (st->frames[j]->inlined)
				enc_varint(&body, j);
		}
	}
	enc_varint(&body, s->ntruncations);
	for (uint32_t i = 0; i < s->ntruncations; i++) {
		enc_varint(&body, trunc_refs[i]);
		enc_varint(&body, s->truncations[i].stacks);
		enc_varint(&body, s->truncations[i].allocations);
	}
	enc_section(out, &body, SEC_STACK_INFO);

	if (any_note) {
		enc_varint(&body, s->ntargets);
		for (uint32_t i = 0; i < s->ntargets; i++)
			enc_varint(&body, note_refs[i]);
		enc_section(out, &body, SEC_TARGET_NOTES);
	}
	if (s->unwind) {
		const struct snap_unwind *u = s->unwind;

		/* a count of fields, then the fields: later ones can be added */
		enc_varint(&body, 6);
		enc_varint(&body, u->memory_limit);
		enc_varint(&body, u->memory_used);
		enc_varint(&body, u->table_bytes);
		enc_varint(&body, u->tables);
		enc_varint(&body, u->modules_without);
		enc_varint(&body, u->modules_refused);
		enc_section(out, &body, SEC_UNWIND);
	}
	if (nsites) {
		nsites = 0;
		enc_varint(&body, s->ntargets);
		for (uint32_t i = 0; i < s->ntargets; i++) {
			enc_varint(&body, s->targets[i].nsites);
			for (uint32_t j = 0; j < s->targets[i].nsites; j++) {
				const struct snap_probe_site *ps = &s->targets[i].sites[j];

				enc_varint(&body, site_refs[nsites]);
				enc_varint(&body, site_refs[nsites + 1]);
				enc_varint(&body, ps->offset);
				enc_varint(&body, ps->at);
				enc_varint(&body, site_refs[nsites + 2]);
				enc_varint(&body, site_refs[nsites + 3]);
				enc_varint(&body, site_refs[nsites + 4]);
				nsites += 5;
			}
		}
		enc_section(out, &body, SEC_PROBE_SITES);
	}
	encode_scale_sections(s, row_refs, &body, out);
	encode_memory_sections(s, error_refs, &body, out);
	encode_scan_sections(s, supp_refs, &body, out);
	encode_family_sections(s, &body, out);
	if (s->match) {
		enc_varint(&body, match_ref);
		enc_varint(&body, SNAP_NMATCH);
		for (size_t i = 0; i < SNAP_NMATCH; i++)
			enc_varint(&body, *(const uint64_t *)((const char *)s->match +
							      snap_match_offsets[i]));
		enc_section(out, &body, SEC_MATCH);
	}
	encode_timeline_targets(s, &body, out);
	if (s->walker) {
		enc_varint(&body, walker_refs[0]);
		enc_varint(&body, walker_refs[1]);
		enc_varint(&body, SNAP_NWALKER);
		for (size_t i = 0; i < SNAP_NWALKER; i++)
			enc_varint(&body, *(const uint64_t *)((const char *)s->walker +
							      snap_walker_offsets[i]));
		enc_section(out, &body, SEC_WALKER);
	}
	if (any_cgroup) {
		enc_varint(&body, s->ntargets);
		enc_varint(&body, MT_NCGROUP);
		for (uint32_t i = 0; i < s->ntargets; i++) {
			const struct snap_cgroup *c = &s->targets[i].cgroup;

			enc_varint(&body, c->known != 0);
			if (!c->known)
				continue;
			for (size_t k = 0; k < SNAP_CGROUP_STRINGS; k++)
				enc_varint(&body, cgroup_refs[SNAP_CGROUP_STRINGS * i + k]);
			enc_varint(&body, c->nspid);
			enc_varint(&body, c->time_ns);
			enc_varint(&body, c->m.version);
			enc_varint(&body, c->m.have);
			for (size_t k = 0; k < MT_NCGROUP; k++)
				enc_varint(&body, mt_cgroup_get(&c->m.f, k));
		}
		enc_section(out, &body, SEC_CGROUP);
	}
	encode_timeline_cgroup(s, &body, out);
	encode_oom_section(s, &body, out);
out:
	free(cgroup_refs);
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

/* Section SEC_TIMELINE_TARGETS as the decoder wants it: each point's targets, by increasing index.
 */
static int check_timeline_targets(const struct snapshot *s)
{
	const struct snap_timeline_target *f = s->timeline_targets->figures;
	uint64_t total = 0;

	for (uint32_t i = 0; i < s->ntimeline; i++) {
		const struct snap_timeline_point *p = &s->timeline[i];

		if ((uint64_t)p->first + p->ntargets > s->timeline_targets->nfigures)
			return -1;
		total += p->ntargets;
		for (uint32_t k = 0; k < p->ntargets; k++) {
			uint32_t t = f[p->first + k].target;

			if (t >= s->ntargets || (k && t <= f[p->first + k - 1].target))
				return -1;
		}
	}
	return total > SNAPSHOT_MAX_TIMELINE_TARGETS ? -1 : 0;
}

/* Limits the decoder enforces, checked here so that what we write reads back. */
static int check_limits(const struct snapshot *s)
{
	const struct snap_block_list *l = s->block_list;
	const struct snap_breakdowns *bd = s->breakdowns;
	uint64_t refs = 0;

	if (s->ntargets > SNAPSHOT_MAX_TARGETS || s->nstacks > SNAPSHOT_MAX_STACKS ||
	    s->ntimeline > SNAPSHOT_MAX_TIMELINE || (l && l->nblocks > SNAPSHOT_MAX_BLOCKS))
		return -1;
	for (uint32_t i = 0; l && i < l->nblocks; i++)
		if (l->blocks[i].stack >= s->nstacks)
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
	if (s->timeline_targets && check_timeline_targets(s))
		return -1;
	for (uint32_t i = 0; bd && i < bd->nmemory; i++)
		if (bd->memory[i].target >= s->ntargets ||
		    (i && bd->memory[i].target <= bd->memory[i - 1].target))
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
	enc_flush(&payload);
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
