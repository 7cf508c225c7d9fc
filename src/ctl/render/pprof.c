// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A snapshot as a pprof profile: the profile.proto message of
 * github.com/google/pprof (proto/profile.proto), gzip-compressed, as
 * `go tool pprof` reads it. Written with a small hand encoder rather than
 * protobuf-c; docs/outputs.md says why.
 *
 * Default profile: four sample types in the order of Go's heap profiles,
 * alloc_objects/count, alloc_space/bytes, inuse_objects/count,
 * inuse_space/bytes (default_sample_type inuse_space). --peak profile: one
 * sample type, inuse_space/bytes, holding each stack's peak_live_bytes.
 * One sample per stack with a "pid" label, and the string labels its
 * target's cgroup gives it (cgroup, unit, container, runtime, pod) when the
 * snapshot has them (section SEC_CGROUP); locations leaf first, one per
 * distinct (pid, address); functions by (name, file); one mapping per
 * module, with its build-id.
 */
#include "ctl/render/pprof.h"
#include "ctl/render/format.h"
#include "common/strtab.h"
#include "common/varint.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* profile.proto field numbers */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
};

/* ---- protobuf wire format: varints and length-delimited fields ---------- */

static void pb_varint(struct buf *b, uint64_t v)
{
	uint8_t tmp[VARINT_MAX_BYTES];

	buf_put(b, tmp, varint_encode(tmp, v));
}

static void pb_uint(struct buf *b, unsigned field, uint64_t v)
{
	if (!v) /* proto3: zero is the default and is not written */
		return;
	pb_varint(b, (uint64_t)field << 3);
	pb_varint(b, v);
}

static void pb_bytes(struct buf *b, unsigned field, const void *p, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, n);
	buf_put(b, p, n);
}

/* A nested message, built in tmp (then emptied). */
static void pb_message(struct buf *b, unsigned field, struct buf *tmp)
{
	pb_bytes(b, field, tmp->data, tmp->len);
	tmp->len = 0;
}

/* ---- tables: strings, functions, locations, mappings --------------------- */

struct function {
	uint64_t name, file; /* string table indices */
};

struct location {
	uint32_t pid;
	uint64_t address;
	const struct snap_frame *frame;
	uint64_t mapping; /* id, 0 = none */
	uint64_t function;
};

struct mapping {
	const char *module;
	const char *build_id;
	uint64_t start, limit, offset;
};

struct pprof {
	struct strtab strings; /* the string_table field, in this order */
	struct function *functions;
	struct hash_index func_index;
	struct location *locations;
	struct hash_index loc_index;
	struct mapping *mappings;
	size_t nmappings;
	/* the key being looked up */
	struct function key_func;
	uint32_t key_pid;
	uint64_t key_address;
};

static uint64_t intern(struct pprof *p, const char *s)
{
	if (!s)
		s = "";
	return strtab_intern(&p->strings, s, strlen(s));
}

static int func_eq(const void *arg, size_t i)
{
	const struct pprof *p = arg;

	return p->functions[i].name == p->key_func.name && p->functions[i].file == p->key_func.file;
}

static uint64_t function_id(struct pprof *p, const struct snap_frame *f, struct buf *tmp)
{
	int is_new;
	size_t i;

	tmp->len = 0;
	format_frame_name(tmp, f);
	buf_put(tmp, "", 1);
	p->key_func.name = intern(p, (const char *)tmp->data);
	p->key_func.file = intern(p, f->file ? f->file : f->module);
	i = hash_index_find(&p->func_index, hash_mix(p->key_func.name, p->key_func.file), func_eq,
			    p, &is_new);
	if (is_new) {
		p->functions = xrealloc(p->functions, (i + 1) * sizeof(*p->functions));
		p->functions[i] = p->key_func;
	}
	tmp->len = 0;
	return i + 1;
}

static uint64_t mapping_id(struct pprof *p, const struct snap_frame *f)
{
	struct mapping *m;
	size_t i;

	if (!f->module)
		return 0;
	for (i = 0; i < p->nmappings; i++)
		if (!strcmp(p->mappings[i].module, f->module))
			break;
	if (i == p->nmappings) {
		p->mappings = xrealloc(p->mappings, (i + 1) * sizeof(*p->mappings));
		m = &p->mappings[p->nmappings++];
		m->module = f->module;
		m->build_id = f->build_id;
		m->start = f->address;
		m->limit = f->address + 1;
		m->offset = f->offset;
		return i + 1;
	}
	m = &p->mappings[i];
	if (f->address < m->start) {
		m->start = f->address;
		m->offset = f->offset;
	}
	if (f->address >= m->limit)
		m->limit = f->address + 1;
	if (!m->build_id)
		m->build_id = f->build_id;
	return i + 1;
}

static int loc_eq(const void *arg, size_t i)
{
	const struct pprof *p = arg;

	return p->locations[i].pid == p->key_pid && p->locations[i].address == p->key_address;
}

static uint64_t location_id(struct pprof *p, uint32_t pid, const struct snap_frame *f,
			    struct buf *tmp)
{
	int is_new;
	size_t i;

	p->key_pid = pid;
	p->key_address = f->address;
	i = hash_index_find(&p->loc_index, hash_mix(pid, f->address), loc_eq, p, &is_new);
	if (is_new) {
		p->locations = xrealloc(p->locations, (i + 1) * sizeof(*p->locations));
		p->locations[i] = (struct location){
		    .pid = pid,
		    .address = f->address,
		    .frame = f,
		    .mapping = mapping_id(p, f),
		    .function = function_id(p, f, tmp),
		};
	}
	return i + 1;
}

static void value_type(struct pprof *p, struct buf *b, unsigned field, const char *type,
		       const char *unit)
{
	struct buf vt = {0};

	pb_uint(&vt, 1, intern(p, type));
	pb_uint(&vt, 2, intern(p, unit));
	pb_bytes(b, field, vt.data, vt.len);
	buf_free(&vt);
}

static int gzip(const struct buf *in, struct buf *out)
{
	z_stream z = {0};
	int rc;

	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -1;
	buf_reserve(out, deflateBound(&z, in->len));
	z.next_in = in->data;
	z.avail_in = (uInt)in->len;
	z.next_out = out->data + out->len;
	z.avail_out = (uInt)(out->cap - out->len);
	rc = deflate(&z, Z_FINISH);
	out->len += (size_t)(z.next_out - (out->data + out->len));
	deflateEnd(&z);
	return rc == Z_STREAM_END ? 0 : -1;
}

/* The cgroup of pid's newest target that has one, or NULL (a snapshot without section SEC_CGROUP).
 */
static const struct snap_cgroup *stack_cgroup(const struct snapshot *s, uint32_t pid)
{
	for (uint32_t i = s->ntargets; i-- > 0;) {
		if (s->targets[i].pid == pid && s->targets[i].cgroup.known)
			return &s->targets[i].cgroup;
	}
	return NULL;
}

int render_pprof(struct buf *out, const struct snapshot *s, const struct render_opts *o)
{
	struct pprof p = {0};
	struct buf body = {0}, msg = {0}, sub = {0}, tmp = {0}, packed = {0};
	char comment[1100];
	const struct snap_cgroup *cg = NULL;
	uint32_t cg_pid = 0;
	int rc;

	intern(&p, ""); /* string 0 is the empty string */
	if (o->peak) {
		value_type(&p, &body, PROFILE_SAMPLE_TYPE, "inuse_space", "bytes");
	} else {
		value_type(&p, &body, PROFILE_SAMPLE_TYPE, "alloc_objects", "count");
		value_type(&p, &body, PROFILE_SAMPLE_TYPE, "alloc_space", "bytes");
		value_type(&p, &body, PROFILE_SAMPLE_TYPE, "inuse_objects", "count");
		value_type(&p, &body, PROFILE_SAMPLE_TYPE, "inuse_space", "bytes");
	}

	for (uint32_t i = 0; i < s->nstacks; i++) {
		const struct snap_stack *st = &s->stacks[i];
		uint64_t values[4] = {st->t.allocations, st->t.bytes_allocated,
				      st->t.live_allocations, st->t.live_bytes};
		struct buf label = {0};

		if (o->peak && !st->t.peak_live_bytes)
			continue;
		if (st->pid != cg_pid) { /* stacks of one pid mostly come together */
			cg_pid = st->pid;
			cg = stack_cgroup(s, st->pid);
		}
		for (uint32_t j = 0; j < st->nframes; j++)
			pb_varint(&packed, location_id(&p, st->pid, st->frames[j], &tmp));
		if (packed.len)
			pb_bytes(&msg, 1, packed.data, packed.len);
		packed.len = 0;
		if (o->peak) {
			pb_varint(&packed, st->t.peak_live_bytes);
		} else {
			for (int k = 0; k < 4; k++)
				pb_varint(&packed, values[k]);
		}
		pb_bytes(&msg, 2, packed.data, packed.len);
		packed.len = 0;
		/* Label{key "pid", num pid} */
		pb_uint(&label, 1, intern(&p, "pid"));
		pb_uint(&label, 3, st->pid);
		pb_bytes(&msg, 3, label.data, label.len);
		label.len = 0;
		if (cg) { /* Label{key, str}: where the process runs */
			const char *kv[][2] = {
			    {"cgroup", cg->memory_path ? cg->memory_path : cg->path},
			    {"unit", cg->unit},
			    {"container", cg->container},
			    {"runtime", cg->runtime},
			    {"pod", cg->pod},
			};

			for (size_t k = 0; k < sizeof(kv) / sizeof(kv[0]); k++) {
				if (!kv[k][1])
					continue;
				pb_uint(&label, 1, intern(&p, kv[k][0]));
				pb_uint(&label, 2, intern(&p, kv[k][1]));
				pb_bytes(&msg, 3, label.data, label.len);
				label.len = 0;
			}
		}
		buf_free(&label);
		pb_message(&body, PROFILE_SAMPLE, &msg);
	}

	for (size_t i = 0; i < p.nmappings; i++) {
		const struct mapping *m = &p.mappings[i];

		pb_uint(&msg, 1, i + 1);
		pb_uint(&msg, 2, m->start);
		pb_uint(&msg, 3, m->limit);
		pb_uint(&msg, 4, m->offset);
		pb_uint(&msg, 5, intern(&p, m->module));
		pb_uint(&msg, 6, m->build_id ? intern(&p, m->build_id) : 0);
		pb_uint(&msg, 7, 1); /* has_functions: names come from memtraced */
		pb_uint(&msg, 8, 1); /* has_filenames */
		pb_uint(&msg, 9, 1); /* has_line_numbers */
		pb_message(&body, PROFILE_MAPPING, &msg);
	}
	for (size_t i = 0; i < p.loc_index.count; i++) {
		const struct location *l = &p.locations[i];

		pb_uint(&msg, 1, i + 1);
		pb_uint(&msg, 2, l->mapping);
		pb_uint(&msg, 3, l->address);
		pb_uint(&sub, 1, l->function);
		pb_uint(&sub, 2, l->frame->line > 0 ? (uint64_t)l->frame->line : 0);
		pb_message(&msg, 4, &sub);
		pb_message(&body, PROFILE_LOCATION, &msg);
	}
	for (size_t i = 0; i < p.func_index.count; i++) {
		pb_uint(&msg, 1, i + 1);
		pb_uint(&msg, 2, p.functions[i].name);
		pb_uint(&msg, 3, p.functions[i].name);
		pb_uint(&msg, 4, p.functions[i].file);
		pb_message(&body, PROFILE_FUNCTION, &msg);
	}

	pb_uint(&body, PROFILE_TIME_NANOS, s->created_unix_ns);
	pb_uint(&body, PROFILE_DURATION_NANOS, s->uptime_ns);
	value_type(&p, &body, PROFILE_PERIOD_TYPE, "space", "bytes");
	pb_uint(&body, PROFILE_PERIOD, 1);
	snprintf(comment, sizeof(comment), "memtrace %s: %s", s->tracer_version ?: "?",
		 o->peak ? "inuse_space is each stack's live bytes at the peak (peak_live_bytes)"
			 : "every allocation, exact (not sampled)");
	pb_uint(&body, PROFILE_COMMENT, intern(&p, comment));
	format_walker(comment, sizeof(comment) - 32, s);
	if (comment[0]) { /* a second comment: the stack walker, when the snapshot says */
		char walker[sizeof(comment)];

		snprintf(walker, sizeof(walker), "stack walker: %s", comment);
		pb_uint(&body, PROFILE_COMMENT, intern(&p, walker));
	}
	pb_uint(&body, PROFILE_DEFAULT_SAMPLE_TYPE, intern(&p, "inuse_space"));
	/* the string table last: every string is interned by now */
	for (size_t i = 0; i < strtab_count(&p.strings); i++)
		pb_bytes(&body, PROFILE_STRING_TABLE, p.strings.strs[i], p.strings.lens[i]);

	rc = gzip(&body, out);
	if (rc)
		log_msg("pprof: cannot compress the profile");

	buf_free(&body);
	buf_free(&msg);
	buf_free(&sub);
	buf_free(&tmp);
	buf_free(&packed);
	strtab_free(&p.strings);
	free(p.functions);
	hash_index_free(&p.func_index);
	free(p.locations);
	hash_index_free(&p.loc_index);
	free(p.mappings);
	return rc;
}
