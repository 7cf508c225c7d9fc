// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The snapshot codec: struct snapshot <-> the versioned, zlib-compressed,
 * CRC-checked bytes that go over the socket and into snapshot files. The
 * layout is in docs/snapshot-format.md. The decoder trusts nothing: every
 * count is checked against the bytes left and SNAPSHOT_MAX_* before it
 * allocates, and every failure frees what was built and says why in one line.
 */
#include "memtrace/snapshot.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define HEADER_SIZE 36
/* deflate cannot compress better than about 1032:1; anything claiming more lies */
#define MAX_ZLIB_RATIO 1032
#define ZLIB_SLACK     4096

enum section {
	SEC_STRINGS = 1,
	SEC_META,
	SEC_TOTALS,
	SEC_EVENTS_LOST,
	SEC_TARGETS,
	SEC_FRAMES,
	SEC_STACKS,
	SEC_LAST = SEC_STACKS, /* the last section every snapshot has */
	SEC_TIMELINE = 8,
	SEC_BLOCKS = 9,
	SEC_TEMPORARY = 10,
	SEC_TRACE = 11,
	SEC_AGES = 12,
	SEC_STACK_INFO = 24,   /* why stacks end, inlined frames, truncating modules */
	SEC_TARGET_NOTES = 32, /* one line per target on what tracing misses */
	SEC_DAEMON = 40,       /* how the daemon kept up: drain gaps, freezes, symbol cache */
	SEC_GROUPS = 41,       /* the rows a grouped snapshot's stacks stand for */
	SEC_LEAKS = 42,	       /* leaking blocks per stack */
	SEC_KNOWN
};

/*
 * Sections 16-23: size histogram, allocator mix, module build-ids, and the
 * allocator kinds past the first 16 (funcs_ext: version 1 readers refuse more
 * than 16 entries in funcs, and skip a section they do not know).
 */
enum { SEC_HISTOGRAM = 16, SEC_FUNCS, SEC_BUILD_IDS, SEC_FUNCS_EXT, SEC_OWN_LAST = SEC_FUNCS_EXT };

static const char *const section_names[] = {
    [SEC_STRINGS] = "strings",	     [SEC_META] = "meta",
    [SEC_TOTALS] = "totals",	     [SEC_EVENTS_LOST] = "events_lost",
    [SEC_TARGETS] = "targets",	     [SEC_FRAMES] = "frames",
    [SEC_STACKS] = "stacks",	     [SEC_TIMELINE] = "timeline",
    [SEC_BLOCKS] = "blocks",	     [SEC_TEMPORARY] = "temporary",
    [SEC_TRACE] = "trace",	     [SEC_AGES] = "ages",
    [SEC_STACK_INFO] = "stack_info", [SEC_TARGET_NOTES] = "target_notes",
    [SEC_DAEMON] = "daemon",	     [SEC_GROUPS] = "groups",
    [SEC_LEAKS] = "leaks",
};

/* struct mt_counters in wire order; a counter block may carry more or fewer. */
static const size_t counter_offsets[] = {
    offsetof(struct mt_counters, allocations),
    offsetof(struct mt_counters, frees),
    offsetof(struct mt_counters, bytes_allocated),
    offsetof(struct mt_counters, bytes_freed),
    offsetof(struct mt_counters, live_allocations),
    offsetof(struct mt_counters, live_bytes),
    offsetof(struct mt_counters, peak_live_bytes),
    offsetof(struct mt_counters, peak_time_ns),
    offsetof(struct mt_counters, unknown_frees),
    offsetof(struct mt_counters, missed_frees),
    offsetof(struct mt_counters, missed_free_bytes),
    offsetof(struct mt_counters, untracked_allocations),
    offsetof(struct mt_counters, stackless_allocations),
    offsetof(struct mt_counters, temporary_allocations),
    offsetof(struct mt_counters, temporary_bytes),
};

_Static_assert(sizeof(struct mt_counters) == sizeof(uint64_t) * ARRAY_SIZE(counter_offsets),
	       "every counter must be on the wire");

/* struct snap_options in wire order (section 11). */
static const size_t option_offsets[] = {
    offsetof(struct snap_options, stack_depth),
    offsetof(struct snap_options, ring_buffer_bytes),
    offsetof(struct snap_options, max_live_blocks),
    offsetof(struct snap_options, max_stacks),
    offsetof(struct snap_options, sample_interval_ns),
    offsetof(struct snap_options, temporary_threshold),
};

_Static_assert(sizeof(struct snap_options) == sizeof(uint64_t) * ARRAY_SIZE(option_offsets),
	       "every option must be on the wire");

/* struct snap_daemon in wire order (section 40). */
static const size_t daemon_offsets[] = {
    offsetof(struct snap_daemon, drain_gap_max_ns), offsetof(struct snap_daemon, frozen_requests),
    offsetof(struct snap_daemon, freeze_max_ns),    offsetof(struct snap_daemon, deferred_events),
    offsetof(struct snap_daemon, symbol_lookups),   offsetof(struct snap_daemon, symbol_cache_hits),
    offsetof(struct snap_daemon, loop_busy_max_ns),
};

_Static_assert(sizeof(struct snap_daemon) == sizeof(uint64_t) * ARRAY_SIZE(daemon_offsets),
	       "every daemon figure must be on the wire");

/* The rows a grouped snapshot did not send (section 41), in wire order. */
static const size_t rest_offsets[] = {
    offsetof(struct snap_groups, rest_rows),
    offsetof(struct snap_groups, rest_rows_live),
    offsetof(struct snap_groups, rest_rows_allocated),
    offsetof(struct snap_groups, rest_rows_peak),
    offsetof(struct snap_groups, rest.live_bytes),
    offsetof(struct snap_groups, rest.live_allocations),
    offsetof(struct snap_groups, rest.allocations),
    offsetof(struct snap_groups, rest.bytes_allocated),
    offsetof(struct snap_groups, rest.frees),
    offsetof(struct snap_groups, rest.bytes_freed),
    offsetof(struct snap_groups, rest.peak_live_bytes),
    offsetof(struct snap_groups, rest.temporary_allocations),
    offsetof(struct snap_groups, rest.temporary_bytes),
};

_Static_assert(sizeof(struct snap_row_sums) == sizeof(uint64_t) * 9, "every sum on the wire");

static uint64_t option_get(const struct snap_options *o, size_t i)
{
	uint64_t v;

	memcpy(&v, (const char *)o + option_offsets[i], sizeof(v));
	return v;
}

#define STACK_COUNTERS 7

static const char *const target_state_names[] = {
    [SNAP_TARGET_ATTACHING] = "attaching", [SNAP_TARGET_ATTACHED] = "attached",
    [SNAP_TARGET_EXITED] = "exited",	   [SNAP_TARGET_DETACHED] = "detached",
    [SNAP_TARGET_EXECED] = "execed",
};

static const char *const sort_names[] = {
    [SNAP_SORT_LIVE] = "live", [SNAP_SORT_ALLOCATED] = "allocated", [SNAP_SORT_COUNT] = "count",
    [SNAP_SORT_PEAK] = "peak", [SNAP_SORT_TEMPORARY] = "temporary",
};

const char *snap_target_state_name(uint32_t state)
{
	if (state >= ARRAY_SIZE(target_state_names))
		return "unknown";
	return target_state_names[state];
}

const char *snap_sort_name(int sort)
{
	if (sort < 0 || (size_t)sort >= ARRAY_SIZE(sort_names))
		return NULL;
	return sort_names[sort];
}

int snap_sort_from_name(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(sort_names); i++)
		if (!strcmp(name, sort_names[i]))
			return (int)i;
	return -1;
}

uint64_t snapshot_events_lost(const struct snapshot *s)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < ARRAY_SIZE(s->events_lost); i++)
		sum += s->events_lost[i];
	return sum;
}

static uint64_t *counter_field(struct mt_counters *c, size_t i)
{
	return (uint64_t *)((char *)c + counter_offsets[i]);
}

static uint64_t counter_get(const struct mt_counters *c, size_t i)
{
	uint64_t v;

	memcpy(&v, (const char *)c + counter_offsets[i], sizeof(v));
	return v;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t zigzag(int64_t v)
{
	return v < 0 ? ~((uint64_t)v << 1) : (uint64_t)v << 1;
}

static int64_t unzigzag(uint64_t u)
{
	return (u & 1) ? -(int64_t)(u >> 1) - 1 : (int64_t)(u >> 1);
}

static uint64_t hash_bytes(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull; /* FNV-1a */
	return h;
}

static uint64_t hash_u64(uint64_t h, uint64_t v)
{
	return hash_bytes(&v, sizeof(v), h);
}

#define HASH_SEED 0xcbf29ce484222325ull

/* ---- encoder ------------------------------------------------------------ */

/*
 * The encoder's growable buffers and tables remember the first allocation
 * failure instead of aborting: a snapshot of a huge heap must not take the
 * daemon down. snapshot_encode() reports it as -ENOMEM at the end.
 */
/*
 * The compressed payload, made as the sections are: each section goes to
 * deflate as soon as it is complete, and the biggest (the block list) in
 * pieces, so that a snapshot of a million blocks is never also held whole
 * uncompressed.
 */
struct zsink {
	z_stream z;
	int started;
	uint8_t *data;	   /* room + HEADER_SIZE bytes, then the compressed ones */
	size_t cap, start; /* start: room + HEADER_SIZE */
	uint64_t total_in;
	int err; /* 0, -ENOMEM, -E2BIG or -EIO */
};

struct wbuf {
	uint8_t *data;
	size_t len, cap;
	int *nomem;
	struct zsink *sink; /* the payload: what is put here goes on to the sink */
};

static void sink_deflate(struct zsink *k, const uint8_t *p, size_t n, int flush)
{
	if (k->err)
		return;
	if (n > SNAPSHOT_MAX_BYTES - k->total_in) {
		k->err = -E2BIG;
		return;
	}
	k->total_in += n;
	do {
		/* avail_in is 32 bits: a gigabyte at a time */
		size_t piece = n < (1u << 30) ? n : (1u << 30);
		int rc;

		n -= piece;
		k->z.next_in = (Bytef *)p;
		k->z.avail_in = (uInt)piece;
		if (piece)
			p += piece;
		for (;;) {
			if (!k->z.avail_out) {
				size_t cap = 2 * k->cap;
				uint8_t *np = realloc(k->data, cap);

				if (!np) {
					k->err = -ENOMEM;
					return;
				}
				k->data = np;
				k->cap = cap;
				k->z.next_out = np + k->start + k->z.total_out;
				k->z.avail_out = (uInt)(cap - k->start - k->z.total_out < (1u << 30)
							    ? cap - k->start - k->z.total_out
							    : (1u << 30));
			}
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
	uint8_t tmp[10];
	size_t n = 0;

	do {
		tmp[n] = v & 0x7f;
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	wbuf_put(w, tmp, n);
}

/* Open addressing over entry indices; entries live in the caller's arrays. */
struct dedup {
	uint32_t *slots; /* entry index + 1; 0 = empty */
	size_t nslots;	 /* power of two */
	uint64_t *hashes;
	size_t count, cap;
};

static uint32_t *dedup_slot(struct dedup *d, uint64_t hash, size_t *pos)
{
	*pos = hash & (d->nslots - 1);
	return &d->slots[*pos];
}

static uint32_t *dedup_next(struct dedup *d, size_t *pos)
{
	*pos = (*pos + 1) & (d->nslots - 1);
	return &d->slots[*pos];
}

/* Make room for one more entry; rehashes when half full. */
static int dedup_reserve(struct dedup *d, int *nomem)
{
	uint32_t *slots;
	size_t nslots, pos;

	if (grow((void **)&d->hashes, &d->cap, d->count + 1, sizeof(*d->hashes), nomem))
		return -1;
	if (d->nslots && (d->count + 1) * 2 <= d->nslots)
		return 0;
	nslots = d->nslots ? d->nslots * 2 : 256;
	slots = calloc(nslots, sizeof(*slots));
	if (!slots) {
		*nomem = 1;
		return -1;
	}
	free(d->slots);
	d->slots = slots;
	d->nslots = nslots;
	for (size_t i = 0; i < d->count; i++) {
		uint32_t *slot = dedup_slot(d, d->hashes[i], &pos);

		while (*slot)
			slot = dedup_next(d, &pos);
		*slot = (uint32_t)i + 1;
	}
	return 0;
}

static void dedup_free(struct dedup *d)
{
	free(d->slots);
	free(d->hashes);
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
	struct dedup ptr_index;
	struct ptr_frame *ptrs;
	size_t ptrs_cap;
	struct dedup str_index;
	const char **strs;
	size_t *str_lens;
	size_t strs_cap, lens_cap;
	struct dedup frame_index;
	struct enc_frame *frames;
	size_t frames_cap;
	uint32_t *build_ids; /* pairs of string references: module, build-id */
	size_t nbuild_ids, build_ids_cap;
};

/* Returns the string's reference: 0 for NULL, else table index + 1. */
static uint32_t intern_string(struct encoder *e, const char *s)
{
	struct dedup *d = &e->str_index;
	uint64_t hash;
	uint32_t *slot;
	size_t len, pos, i;

	if (!s)
		return 0;
	len = strlen(s);
	if (len > SNAPSHOT_MAX_STRING) {
		e->too_big = 1;
		return 0;
	}
	hash = hash_bytes(s, len, HASH_SEED);
	if (dedup_reserve(d, &e->nomem))
		return 0;
	for (slot = dedup_slot(d, hash, &pos); *slot; slot = dedup_next(d, &pos)) {
		i = *slot - 1;
		if (d->hashes[i] == hash && e->str_lens[i] == len && !memcmp(e->strs[i], s, len))
			return (uint32_t)i + 1;
	}
	if (d->count >= SNAPSHOT_MAX_STRINGS) {
		e->too_big = 1;
		return 0;
	}
	if (grow((void **)&e->strs, &e->strs_cap, d->count + 1, sizeof(*e->strs), &e->nomem) ||
	    grow((void **)&e->str_lens, &e->lens_cap, d->count + 1, sizeof(*e->str_lens),
		 &e->nomem))
		return 0;
	i = d->count++;
	e->strs[i] = s;
	e->str_lens[i] = len;
	d->hashes[i] = hash;
	*slot = (uint32_t)i + 1;
	return (uint32_t)i + 1;
}

static int frame_equal(const struct enc_frame *a, const struct enc_frame *b)
{
	return a->address == b->address && a->offset == b->offset && a->function == b->function &&
	       a->module == b->module && a->file == b->file && a->line == b->line;
}

/* Returns the frame's index in the frame table. */
static uint32_t intern_frame(struct encoder *e, const struct snap_frame *f)
{
	struct dedup *d = &e->frame_index;
	struct enc_frame ef = {
	    .address = f->address,
	    .offset = f->offset,
	    .function = intern_string(e, f->function),
	    .module = intern_string(e, f->module),
	    .file = intern_string(e, f->file),
	    .line = f->line,
	};
	uint64_t hash = HASH_SEED;
	uint32_t *slot;
	size_t pos, i;

	hash = hash_u64(hash, ef.address);
	hash = hash_u64(hash, ef.offset);
	hash = hash_u64(hash, ((uint64_t)ef.function << 32) | ef.module);
	hash = hash_u64(hash, ((uint64_t)ef.file << 32) | (uint64_t)ef.line);
	if (dedup_reserve(d, &e->nomem))
		return 0;
	for (slot = dedup_slot(d, hash, &pos); *slot; slot = dedup_next(d, &pos)) {
		i = *slot - 1;
		if (frame_equal(&e->frames[i], &ef))
			return (uint32_t)i;
	}
	if (d->count >= SNAPSHOT_MAX_FRAMES) {
		e->too_big = 1;
		return 0;
	}
	if (grow((void **)&e->frames, &e->frames_cap, d->count + 1, sizeof(*e->frames), &e->nomem))
		return 0;
	i = d->count++;
	e->frames[i] = ef;
	d->hashes[i] = hash;
	*slot = (uint32_t)i + 1;
	return (uint32_t)i;
}

static void intern_build_id(struct encoder *e, const struct snap_frame *f);

/* intern_frame() and intern_build_id(), by the frame's address first. */
static uint32_t intern_frame_fast(struct encoder *e, const struct snap_frame *f)
{
	struct dedup *d = &e->ptr_index;
	uint64_t hash = ((uint64_t)(uintptr_t)f * 0x9e3779b97f4a7c15ull);
	uint32_t *slot, frame;
	size_t pos, i;

	hash ^= hash >> 29;
	if (dedup_reserve(d, &e->nomem))
		return 0;
	for (slot = dedup_slot(d, hash, &pos); *slot; slot = dedup_next(d, &pos)) {
		const struct ptr_frame *p = &e->ptrs[*slot - 1];

		if (p->ptr == f)
			return p->frame;
	}
	frame = intern_frame(e, f);
	intern_build_id(e, f);
	if (grow((void **)&e->ptrs, &e->ptrs_cap, d->count + 1, sizeof(*e->ptrs), &e->nomem))
		return frame;
	i = d->count++;
	e->ptrs[i] = (struct ptr_frame){f, frame};
	d->hashes[i] = hash;
	*slot = (uint32_t)i + 1;
	return frame;
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

static void put_counters(struct wbuf *w, const struct mt_counters *c)
{
	put_varint(w, ARRAY_SIZE(counter_offsets));
	for (size_t i = 0; i < ARRAY_SIZE(counter_offsets); i++)
		put_varint(w, counter_get(c, i));
}

/* Section bodies are built in body, then framed as tag, length, body. */
/* What out holds goes on to its sink, if it has one. */
static void sink_flush(struct wbuf *out)
{
	if (!out->sink || !out->len || *out->nomem)
		return;
	sink_deflate(out->sink, out->data, out->len, Z_NO_FLUSH);
	out->len = 0;
}

static void put_section(struct wbuf *out, struct wbuf *body, enum section tag)
{
	put_varint(out, tag);
	put_varint(out, body->len);
	if (out->sink && !*body->nomem) {
		sink_flush(out);
		sink_deflate(out->sink, body->data, body->len, Z_NO_FLUSH);
	} else {
		wbuf_put(out, body->data, body->len);
	}
	body->len = 0;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >>= 7)
		n++;
	return n;
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
		for (uint32_t i = 0; i < s->nblocks; i++) {
			const struct snap_block *b = &s->blocks[i];

			put_varint(body, b->stack);
			put_varint(body, b->address);
			put_varint(body, b->size);
			put_varint(body, b->age_ns);
		}
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
		const struct snap_block *b = &s->blocks[i];

		put_varint(body, b->stack);
		put_varint(body, b->address);
		put_varint(body, b->size);
		put_varint(body, b->age_ns);
		if (body->len >= BLOCK_PIECE) {
			sent += body->len;
			sink_deflate(out->sink, body->data, body->len, Z_NO_FLUSH);
			body->len = 0;
		}
	}
	sent += body->len;
	if (!*body->nomem)
		sink_deflate(out->sink, body->data, body->len, Z_NO_FLUSH);
	body->len = 0;
	if (sent != len && !*body->nomem && !out->sink->err)
		out->sink->err = -EIO; /* the count and the bytes disagree: never sent */
}

static void encode_sections(struct encoder *e, const struct snapshot *s, struct wbuf *out)
{
	struct wbuf body = {.nomem = &e->nomem};
	uint32_t version_ref;
	uint32_t *target_refs, *trunc_refs = NULL, *note_refs = NULL;
	uint32_t *frame_refs = NULL, *row_refs = NULL;
	int any_note = 0;
	size_t nrefs = 0, refs_cap = 0;

	/* Intern first: the string and frame tables precede their users. */
	version_ref = intern_string(e, s->tracer_version);
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
	}
	if (s->has_groups) {
		row_refs = calloc(s->nstacks ? s->nstacks : 1, sizeof(*row_refs));
		if (!row_refs)
			e->nomem = 1;
		for (uint32_t i = 0; row_refs && i < s->nstacks; i++)
			row_refs[i] = intern_string(e, s->groups.rows[i].key);
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
		put_varint(&body, st->allocations);
		put_varint(&body, st->bytes_allocated);
		put_varint(&body, st->frees);
		put_varint(&body, st->bytes_freed);
		put_varint(&body, st->live_allocations);
		put_varint(&body, st->live_bytes);
		put_varint(&body, st->peak_live_bytes);
	}
	put_section(out, &body, SEC_STACKS);

	if (s->ntimeline) {
		put_varint(&body, s->timeline_interval_ns);
		put_varint(&body, s->ntimeline);
		for (uint32_t i = 0; i < s->ntimeline; i++) {
			const struct snap_timeline_point *p = &s->timeline[i];

			put_varint(&body, p->time_ns);
			put_varint(&body, p->live_bytes);
			put_varint(&body, p->live_allocations);
			put_varint(&body, p->allocations);
			put_varint(&body, p->bytes_allocated);
		}
		put_section(out, &body, SEC_TIMELINE);
	}

	if (s->has_blocks)
		encode_blocks(s, &body, out);
	if (s->nstacks) {
		put_varint(&body, s->nstacks);
		for (uint32_t i = 0; i < s->nstacks; i++) {
			put_varint(&body, s->stacks[i].temporary_allocations);
			put_varint(&body, s->stacks[i].temporary_bytes);
		}
		put_section(out, &body, SEC_TEMPORARY);
	}
	if (s->started_unix_ns) {
		put_varint(&body, s->started_unix_ns);
		put_varint(&body, ARRAY_SIZE(option_offsets));
		for (size_t i = 0; i < ARRAY_SIZE(option_offsets); i++)
			put_varint(&body, option_get(&s->options, i));
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
	if (s->has_daemon) {
		put_varint(&body, ARRAY_SIZE(daemon_offsets));
		for (size_t i = 0; i < ARRAY_SIZE(daemon_offsets); i++) {
			uint64_t v;

			memcpy(&v, (const char *)&s->daemon + daemon_offsets[i], sizeof(v));
			put_varint(&body, v);
		}
		put_section(out, &body, SEC_DAEMON);
	}
	if (s->has_groups) {
		const struct snap_groups *g = &s->groups;

		put_varint(&body, g->by);
		put_varint(&body, g->cumulative);
		put_varint(&body, g->order);
		put_varint(&body, s->nstacks);
		for (uint32_t i = 0; i < s->nstacks; i++) {
			put_varint(&body, row_refs[i]);
			put_varint(&body, g->rows[i].stacks);
		}
		put_varint(&body, ARRAY_SIZE(rest_offsets));
		for (size_t i = 0; i < ARRAY_SIZE(rest_offsets); i++) {
			uint64_t v;

			memcpy(&v, (const char *)g + rest_offsets[i], sizeof(v));
			put_varint(&body, v);
		}
		put_section(out, &body, SEC_GROUPS);
	}
	if (s->has_leaks) {
		const struct snap_leaks *l = &s->leaks;

		put_varint(&body, l->older_than_ns);
		put_varint(&body, l->blocks);
		put_varint(&body, l->bytes);
		put_varint(&body, l->stacks_total);
		put_varint(&body, s->nstacks);
		for (uint32_t i = 0; i < s->nstacks; i++) {
			put_varint(&body, l->stacks[i].blocks);
			put_varint(&body, l->stacks[i].bytes);
			put_varint(&body, l->stacks[i].oldest_ns);
			put_varint(&body, l->stacks[i].youngest_ns);
		}
		put_section(out, &body, SEC_LEAKS);
	}
out:
	free(row_refs);
	free(note_refs);
	free(body.data);
	free(frame_refs);
	free(target_refs);
	free(trunc_refs);
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
	struct zsink sink = {.start = room + HEADER_SIZE};
	struct wbuf payload = {.nomem = &e.nomem, .sink = &sink};
	uint8_t *bytes = NULL;
	uint64_t clen;
	int err = 0;

	*out = NULL;
	*out_len = 0;
	if (check_limits(s))
		return -E2BIG;
	sink.cap = sink.start + 64 * 1024;
	sink.data = malloc(sink.cap);
	if (!sink.data || deflateInit(&sink.z, Z_BEST_SPEED) != Z_OK) {
		err = -ENOMEM;
		goto out;
	}
	sink.started = 1;
	sink.z.next_out = sink.data + sink.start;
	sink.z.avail_out = (uInt)(sink.cap - sink.start);
	encode_sections(&e, s, &payload);
	sink_flush(&payload);
	if (!e.nomem && !e.too_big)
		sink_deflate(&sink, NULL, 0, Z_FINISH);
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
	clen = sink.z.total_out;
	memcpy(bytes + room, SNAPSHOT_MAGIC, 8);
	put_le32(bytes + room + 8, SNAPSHOT_VERSION);
	put_le32(bytes + room + 12, 0);
	put_le64(bytes + room + 16, sink.total_in);
	put_le64(bytes + room + 24, clen);
	put_le32(bytes + room + 32, (uint32_t)crc32_z(0, bytes + room + HEADER_SIZE, clen));
	*out = bytes;
	*out_len = HEADER_SIZE + clen;
out:
	if (sink.started)
		deflateEnd(&sink.z);
	free(sink.data);
	free(payload.data);
	dedup_free(&e.str_index);
	dedup_free(&e.frame_index);
	dedup_free(&e.ptr_index);
	free(e.ptrs);
	free(e.strs);
	free(e.str_lens);
	free(e.frames);
	free(e.build_ids);
	return err;
}

/* ---- decoder ------------------------------------------------------------ */

struct decoder {
	char *err;
	size_t errlen;
	struct snapshot *s;
	char **strings; /* the string table, pointing into s->string_pool */
	uint32_t nstrings;
	uint8_t *inl_state; /* stack_info: per frame, 0 unseen, 1 not inlined, 2 inlined */
	uint32_t *twin_of;  /* per frame: its twin in s->frame_twins + 1, or 0 */
	size_t ntwins;
};

/* A bounded view of one section. */
struct reader {
	struct decoder *d;
	const uint8_t *p, *end;
	const char *section;
};

static int fail(struct decoder *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct decoder *d, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!d->errlen)
		return -1;
	n = snprintf(d->err, d->errlen, "snapshot: ");
	if (n >= 0 && (size_t)n < d->errlen) {
		va_start(ap, fmt);
		vsnprintf(d->err + n, d->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static size_t left(const struct reader *r)
{
	return (size_t)(r->end - r->p);
}

static int rd_varint(struct reader *r, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t byte;

		if (r->p == r->end)
			return fail(r->d, "%s section: truncated", r->section);
		byte = *r->p++;
		if (shift == 63 && byte > 1)
			break;
		x |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return fail(r->d, "%s section: bad varint", r->section);
}

static int rd_u32(struct reader *r, uint32_t *v)
{
	uint64_t x;

	if (rd_varint(r, &x))
		return -1;
	if (x > UINT32_MAX)
		return fail(r->d, "%s section: value out of range", r->section);
	*v = (uint32_t)x;
	return 0;
}

static int rd_i64(struct reader *r, int64_t *v)
{
	uint64_t x;

	if (rd_varint(r, &x))
		return -1;
	*v = unzigzag(x);
	return 0;
}

static int rd_string(struct reader *r, char **s)
{
	uint64_t ref;

	if (rd_varint(r, &ref))
		return -1;
	if (ref > r->d->nstrings)
		return fail(r->d, "%s section: string index out of range", r->section);
	*s = ref ? r->d->strings[ref - 1] : NULL;
	return 0;
}

/* A count of entries each at least min_bytes long, at most max of them. */
static int rd_count(struct reader *r, size_t min_bytes, uint32_t max, uint32_t *count)
{
	uint64_t n;

	if (rd_varint(r, &n))
		return -1;
	if (n > max)
		return fail(r->d, "%s section: %llu entries exceed the limit of %u", r->section,
			    (unsigned long long)n, max);
	if (n > left(r) / min_bytes)
		return fail(r->d, "%s section: truncated", r->section);
	*count = (uint32_t)n;
	return 0;
}

static int rd_counters(struct reader *r, struct mt_counters *c)
{
	uint64_t n, v;

	if (rd_varint(r, &n))
		return -1;
	/* Each field is at least one byte, so the loop ends with the section. */
	for (uint64_t i = 0; i < n; i++) {
		if (rd_varint(r, &v))
			return -1;
		if (i < ARRAY_SIZE(counter_offsets))
			*counter_field(c, i) = v;
	}
	return 0;
}

static int dec_strings(struct reader *r)
{
	struct decoder *d = r->d;
	char *pool;
	uint32_t n;

	if (rd_count(r, 1, SNAPSHOT_MAX_STRINGS, &n))
		return -1;
	/* Each string gives its length byte to its NUL: the pool fits in the section. */
	pool = d->s->string_pool = malloc(left(r) + 1);
	d->strings = calloc(n ? n : 1, sizeof(*d->strings));
	if (!pool || !d->strings)
		return fail(d, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		uint64_t len;

		if (rd_varint(r, &len))
			return -1;
		if (len > SNAPSHOT_MAX_STRING)
			return fail(d, "strings section: string longer than %u bytes",
				    SNAPSHOT_MAX_STRING);
		if (len > left(r))
			return fail(d, "strings section: truncated");
		if (memchr(r->p, '\0', len))
			return fail(d, "strings section: string contains a NUL byte");
		memcpy(pool, r->p, len);
		pool[len] = '\0';
		d->strings[i] = pool;
		pool += len + 1;
		r->p += len;
		d->nstrings = i + 1;
	}
	return 0;
}

static int dec_meta(struct reader *r)
{
	struct snapshot *s = r->d->s;

	if (rd_string(r, &s->tracer_version) || rd_varint(r, &s->created_unix_ns) ||
	    rd_varint(r, &s->uptime_ns) || rd_varint(r, &s->events_received) ||
	    rd_varint(r, &s->stacks_total))
		return -1;
	return 0;
}

static int dec_totals(struct reader *r)
{
	return rd_counters(r, &r->d->s->totals);
}

static int dec_events_lost(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint32_t n;

	if (rd_count(r, 1, ARRAY_SIZE(s->events_lost), &n))
		return -1;
	for (uint32_t i = 0; i < n; i++)
		if (rd_varint(r, &s->events_lost[i]))
			return -1;
	return 0;
}

static int dec_targets(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint32_t n;

	if (rd_count(r, 8, SNAPSHOT_MAX_TARGETS, &n))
		return -1;
	s->targets = calloc(n ? n : 1, sizeof(*s->targets));
	if (!s->targets)
		return fail(r->d, "out of memory");
	s->ntargets = n;
	for (uint32_t i = 0; i < n; i++) {
		struct snap_target *t = &s->targets[i];
		int64_t exit_status;

		if (rd_u32(r, &t->pid) || rd_u32(r, &t->state) || rd_i64(r, &exit_status) ||
		    rd_u32(r, &t->probes) || rd_string(r, &t->command) ||
		    rd_string(r, &t->allocator) || rd_varint(r, &t->traced_ns) ||
		    rd_counters(r, &t->counters))
			return -1;
		if (exit_status < INT32_MIN || exit_status > INT32_MAX)
			return fail(r->d, "targets section: value out of range");
		t->exit_status = (int32_t)exit_status;
	}
	return 0;
}

static int dec_frames(struct reader *r)
{
	struct decoder *d = r->d;
	struct snapshot *s = d->s;
	uint32_t n;

	if (rd_count(r, 6, SNAPSHOT_MAX_FRAMES, &n))
		return -1;
	s->frame_table = calloc(n ? n : 1, sizeof(*s->frame_table));
	if (!s->frame_table)
		return fail(d, "out of memory");
	s->nframe_table = n;
	for (uint32_t i = 0; i < n; i++) {
		struct snap_frame *f = &s->frame_table[i];

		if (rd_varint(r, &f->address) || rd_varint(r, &f->offset) ||
		    rd_string(r, &f->function) || rd_string(r, &f->module) ||
		    rd_string(r, &f->file) || rd_i64(r, &f->line))
			return -1;
	}
	return 0;
}

static int dec_stacks(struct reader *r)
{
	struct decoder *d = r->d;
	struct snapshot *s = d->s;
	uint64_t refs = 0;
	uint32_t n;

	if (rd_count(r, 2 + STACK_COUNTERS, SNAPSHOT_MAX_STACKS, &n))
		return -1;
	s->stacks = calloc(n ? n : 1, sizeof(*s->stacks));
	if (!s->stacks)
		return fail(d, "out of memory");
	s->nstacks = n;
	/* every reference takes a byte at least: the section's size bounds them
	 * (pages of the block beyond what is used are never touched) */
	s->frame_refs = malloc((left(r) ? left(r) : 1) * sizeof(*s->frame_refs));
	if (!s->frame_refs)
		return fail(d, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		struct snap_stack *st = &s->stacks[i];
		uint32_t nframes;

		if (rd_u32(r, &st->pid) || rd_count(r, 1, SNAPSHOT_MAX_DEPTH, &nframes))
			return -1;
		if (refs + nframes > SNAPSHOT_MAX_FRAME_REFS)
			return fail(d, "stacks section: more than %u frames",
				    SNAPSHOT_MAX_FRAME_REFS);
		st->frames = s->frame_refs + refs;
		st->nframes = nframes;
		refs += nframes;
		for (uint32_t j = 0; j < nframes; j++) {
			uint64_t idx;

			if (rd_varint(r, &idx))
				return -1;
			if (idx >= s->nframe_table)
				return fail(d, "stacks section: frame index out of range");
			st->frames[j] = &s->frame_table[idx];
		}
		if (rd_varint(r, &st->allocations) || rd_varint(r, &st->bytes_allocated) ||
		    rd_varint(r, &st->frees) || rd_varint(r, &st->bytes_freed) ||
		    rd_varint(r, &st->live_allocations) || rd_varint(r, &st->live_bytes) ||
		    rd_varint(r, &st->peak_live_bytes))
			return -1;
	}
	return 0;
}

static int dec_timeline(struct reader *r)
{
	struct decoder *d = r->d;
	struct snapshot *s = d->s;
	uint32_t n;

	if (rd_varint(r, &s->timeline_interval_ns) || rd_count(r, 5, SNAPSHOT_MAX_TIMELINE, &n))
		return -1;
	s->timeline = calloc(n ? n : 1, sizeof(*s->timeline));
	if (!s->timeline)
		return fail(d, "out of memory");
	s->ntimeline = n;
	for (uint32_t i = 0; i < n; i++) {
		struct snap_timeline_point *p = &s->timeline[i];

		if (rd_varint(r, &p->time_ns) || rd_varint(r, &p->live_bytes) ||
		    rd_varint(r, &p->live_allocations) || rd_varint(r, &p->allocations) ||
		    rd_varint(r, &p->bytes_allocated))
			return -1;
	}
	return 0;
}

static int dec_blocks(struct reader *r)
{
	struct decoder *d = r->d;
	struct snapshot *s = d->s;
	uint32_t n;

	if (rd_varint(r, &s->blocks_older_than_ns) || rd_count(r, 4, SNAPSHOT_MAX_BLOCKS, &n))
		return -1;
	s->blocks = calloc(n ? n : 1, sizeof(*s->blocks));
	if (!s->blocks)
		return fail(d, "out of memory");
	s->has_blocks = 1;
	s->nblocks = n;
	for (uint32_t i = 0; i < n; i++) {
		struct snap_block *b = &s->blocks[i];

		if (rd_u32(r, &b->stack) || rd_varint(r, &b->address) || rd_varint(r, &b->size) ||
		    rd_varint(r, &b->age_ns))
			return -1;
		if (b->stack >= s->nstacks)
			return fail(d, "blocks section: stack index out of range");
	}
	return 0;
}

/*
 * Per stack: its stack_end and the indexes of its inlined frames; then the
 * modules that cut stacks short. Must follow the stacks section.
 */
/*
 * Whether a frame is inlined is said per reference (stack_info), and frames
 * are shared: a frame first seen with one value keeps it, and a reference
 * that says otherwise gets the frame's twin, a copy with the other value
 * (one at most per frame: s->frame_twins). Valid files never need one.
 */
static int mark_inlined_start(struct decoder *d)
{
	struct snapshot *s = d->s;

	d->inl_state = calloc(s->nframe_table ? s->nframe_table : 1, 1);
	d->twin_of = calloc(s->nframe_table ? s->nframe_table : 1, sizeof(*d->twin_of));
	s->frame_twins = calloc(s->nframe_table ? s->nframe_table : 1, sizeof(*s->frame_twins));
	if (!d->inl_state || !d->twin_of || !s->frame_twins)
		return fail(d, "out of memory");
	return 0;
}

static void mark_inlined(struct decoder *d, struct snap_stack *st, uint32_t j, int inlined)
{
	struct snapshot *s = d->s;
	struct snap_frame *f = st->frames[j];
	size_t k;

	if (f < s->frame_table || f >= s->frame_table + s->nframe_table)
		return; /* a twin already */
	k = (size_t)(f - s->frame_table);
	if (!d->inl_state[k]) {
		d->inl_state[k] = (uint8_t)(1 + inlined);
		f->inlined = (uint8_t)inlined;
		return;
	}
	if (d->inl_state[k] == 1 + inlined)
		return;
	if (!d->twin_of[k]) {
		d->twin_of[k] = (uint32_t)d->ntwins + 1;
		s->frame_twins[d->ntwins] = *f;
		s->frame_twins[d->ntwins].inlined = (uint8_t)inlined;
		d->ntwins++;
	}
	st->frames[j] = &s->frame_twins[d->twin_of[k] - 1];
}

static void mark_inlined_end(struct decoder *d)
{
	free(d->inl_state);
	free(d->twin_of);
	d->inl_state = NULL;
	d->twin_of = NULL;
}

static int dec_stack_info(struct reader *r)
{
	struct decoder *d = r->d;
	struct snapshot *s = d->s;
	uint32_t n, k, idx = 0;

	if (rd_count(r, 2, SNAPSHOT_MAX_STACKS, &n))
		return -1;
	if (n != s->nstacks)
		return fail(d, "stack_info section: %u stacks, not %u", n, s->nstacks);
	if (mark_inlined_start(d))
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		struct snap_stack *st = &s->stacks[i];
		uint8_t listed[SNAPSHOT_MAX_DEPTH / 8] = {0};

		if (rd_u32(r, &st->stack_end) || rd_count(r, 1, SNAPSHOT_MAX_DEPTH, &k))
			return -1;
		for (uint32_t j = 0; j < k; j++) {
			if (rd_u32(r, &idx))
				return -1;
			if (idx >= st->nframes)
				return fail(d, "stack_info section: frame index out of range");
			listed[idx / 8] |= (uint8_t)(1u << (idx % 8));
		}
		for (uint32_t j = 0; j < st->nframes; j++)
			mark_inlined(d, st, j, (listed[j / 8] >> (j % 8)) & 1);
	}
	mark_inlined_end(d);
	if (rd_count(r, 3, SNAPSHOT_MAX_STRINGS, &n))
		return -1;
	s->truncations = calloc(n ? n : 1, sizeof(*s->truncations));
	if (!s->truncations)
		return fail(d, "out of memory");
	s->ntruncations = n;
	for (uint32_t i = 0; i < n; i++) {
		struct snap_truncation *t = &s->truncations[i];

		if (rd_string(r, &t->module) || rd_varint(r, &t->stacks) ||
		    rd_varint(r, &t->allocations))
			return -1;
	}
	return 0;
}

static int dec_temporary(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint64_t n;

	if (rd_varint(r, &n))
		return -1;
	if (n != s->nstacks)
		return fail(r->d, "temporary section: %llu entries for %u stacks",
			    (unsigned long long)n, s->nstacks);
	for (uint32_t i = 0; i < s->nstacks; i++)
		if (rd_varint(r, &s->stacks[i].temporary_allocations) ||
		    rd_varint(r, &s->stacks[i].temporary_bytes))
			return -1;
	return 0;
}

/* Section 11: when tracing began, then a counted list of options (more may follow). */
static int dec_trace(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint64_t n, v;

	if (rd_varint(r, &s->started_unix_ns) || rd_varint(r, &n))
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		if (rd_varint(r, &v))
			return -1;
		if (i < ARRAY_SIZE(option_offsets))
			memcpy((char *)&s->options + option_offsets[i], &v, sizeof(v));
	}
	return 0;
}

/* Section 40: a counted list of the daemon's figures (more may follow). */
static int dec_daemon(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint64_t n, v;

	if (rd_varint(r, &n))
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		if (rd_varint(r, &v))
			return -1;
		if (i < ARRAY_SIZE(daemon_offsets))
			memcpy((char *)&s->daemon + daemon_offsets[i], &v, sizeof(v));
	}
	s->has_daemon = 1;
	return 0;
}

/* Section 41: the row each stack stands for, then the rows not sent. */
static int dec_groups(struct reader *r)
{
	struct snapshot *s = r->d->s;
	struct snap_groups *g = &s->groups;
	uint32_t n;
	uint64_t k, v;

	if (rd_u32(r, &g->by) || rd_u32(r, &g->cumulative) || rd_u32(r, &g->order) ||
	    rd_count(r, 2, SNAPSHOT_MAX_STACKS, &n))
		return -1;
	if (n != s->nstacks)
		return fail(r->d, "groups section: %u rows for %u stacks", n, s->nstacks);
	if (!g->by || g->by > 6 || g->cumulative > 1 || g->order >= SNAP_SORT_KEY_COUNT)
		return fail(r->d, "groups section: bad grouping");
	g->rows = calloc(n ? n : 1, sizeof(*g->rows));
	if (!g->rows)
		return fail(r->d, "out of memory");
	for (uint32_t i = 0; i < n; i++)
		if (rd_string(r, &g->rows[i].key) || rd_varint(r, &g->rows[i].stacks))
			return -1;
	if (rd_varint(r, &k))
		return -1;
	for (uint64_t i = 0; i < k; i++) {
		if (rd_varint(r, &v))
			return -1;
		if (i < ARRAY_SIZE(rest_offsets))
			memcpy((char *)g + rest_offsets[i], &v, sizeof(v));
	}
	s->has_groups = 1;
	return 0;
}

/* Section 42: leaking blocks, in total and per stack. */
static int dec_leaks(struct reader *r)
{
	struct snapshot *s = r->d->s;
	struct snap_leaks *l = &s->leaks;
	uint32_t n;

	if (rd_varint(r, &l->older_than_ns) || rd_varint(r, &l->blocks) ||
	    rd_varint(r, &l->bytes) || rd_varint(r, &l->stacks_total) ||
	    rd_count(r, 4, SNAPSHOT_MAX_STACKS, &n))
		return -1;
	if (n != s->nstacks)
		return fail(r->d, "leaks section: %u entries for %u stacks", n, s->nstacks);
	l->stacks = calloc(n ? n : 1, sizeof(*l->stacks));
	if (!l->stacks)
		return fail(r->d, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		struct snap_leak *e = &l->stacks[i];

		if (rd_varint(r, &e->blocks) || rd_varint(r, &e->bytes) ||
		    rd_varint(r, &e->oldest_ns) || rd_varint(r, &e->youngest_ns))
			return -1;
	}
	s->has_leaks = 1;
	return 0;
}

static int dec_ages(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint64_t n;

	if (rd_varint(r, &n))
		return -1;
	if (n != s->nstacks)
		return fail(r->d, "ages section: %llu entries for %u stacks", (unsigned long long)n,
			    s->nstacks);
	for (uint32_t i = 0; i < s->nstacks; i++)
		if (rd_varint(r, &s->stacks[i].oldest_live_age_ns))
			return -1;
	s->has_ages = 1;
	return 0;
}

static int dec_histogram(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint32_t n;

	if (rd_count(r, 1, SNAP_HISTOGRAM_BINS, &n))
		return -1;
	for (uint32_t i = 0; i < n; i++)
		if (rd_varint(r, &s->size_histogram[i]))
			return -1;
	return 0;
}

static int dec_funcs(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint32_t n;

	if (rd_count(r, 2, SNAP_FUNCS_SECTION1, &n))
		return -1;
	for (uint32_t i = 0; i < n; i++)
		if (rd_varint(r, &s->allocations_by_func[i]) || rd_varint(r, &s->bytes_by_func[i]))
			return -1;
	return 0;
}

/* Allocator kinds 16 and up (enum mt_func). */
static int dec_funcs_ext(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint32_t n;

	if (rd_count(r, 2, SNAP_MAX_FUNCS - SNAP_FUNCS_SECTION1, &n))
		return -1;
	for (uint32_t i = SNAP_FUNCS_SECTION1; i < SNAP_FUNCS_SECTION1 + n; i++)
		if (rd_varint(r, &s->allocations_by_func[i]) || rd_varint(r, &s->bytes_by_func[i]))
			return -1;
	return 0;
}

/* Index of a decoded string (they lie in the pool in table order), or -1. */
static long string_index(const struct decoder *d, const char *p)
{
	size_t lo = 0, hi = d->nstrings;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->strings[mid] == p)
			return (long)mid;
		if (d->strings[mid] < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* Modules' build-ids, given to every frame in that module: O(frames log strings). */
static int dec_build_ids(struct reader *r)
{
	struct decoder *d = r->d;
	struct snapshot *s = d->s;
	char **id_of;
	uint32_t n;

	if (rd_count(r, 2, SNAPSHOT_MAX_STRINGS, &n))
		return -1;
	id_of = calloc(d->nstrings ? d->nstrings : 1, sizeof(*id_of));
	if (!id_of)
		return fail(d, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		uint64_t module;
		char *id;

		if (rd_varint(r, &module) || rd_string(r, &id)) {
			free(id_of);
			return -1;
		}
		if (!module || module > d->nstrings) {
			free(id_of);
			return fail(d, "build_ids section: string index out of range");
		}
		id_of[module - 1] = id;
	}
	/* frames are shared: each gets its module's once */
	for (uint32_t k = 0; k < s->nframe_table; k++) {
		struct snap_frame *f = &s->frame_table[k];
		long idx = f->module ? string_index(d, f->module) : -1;

		if (idx >= 0)
			f->build_id = id_of[idx];
	}
	free(id_of);
	return 0;
}

static int (*const own_section_decoders[])(struct reader *) = {
    [SEC_HISTOGRAM - SEC_HISTOGRAM] = dec_histogram,
    [SEC_FUNCS - SEC_HISTOGRAM] = dec_funcs,
    [SEC_BUILD_IDS - SEC_HISTOGRAM] = dec_build_ids,
    [SEC_FUNCS_EXT - SEC_HISTOGRAM] = dec_funcs_ext,
};

static const char *const own_section_names[] = {
    [SEC_HISTOGRAM - SEC_HISTOGRAM] = "histogram",
    [SEC_FUNCS - SEC_HISTOGRAM] = "funcs",
    [SEC_BUILD_IDS - SEC_HISTOGRAM] = "build_ids",
    [SEC_FUNCS_EXT - SEC_HISTOGRAM] = "funcs_ext",
};

static int dec_target_notes(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint32_t n;

	if (rd_count(r, 1, SNAPSHOT_MAX_TARGETS, &n))
		return -1;
	if (n != s->ntargets)
		return fail(r->d, "target_notes section: %u targets, not %u", n, s->ntargets);
	for (uint32_t i = 0; i < n; i++) {
		if (rd_string(r, &s->targets[i].note))
			return -1;
	}
	return 0;
}

static int (*const section_decoders[])(struct reader *) = {
    [SEC_STRINGS] = dec_strings,     [SEC_META] = dec_meta,
    [SEC_TOTALS] = dec_totals,	     [SEC_EVENTS_LOST] = dec_events_lost,
    [SEC_TARGETS] = dec_targets,     [SEC_FRAMES] = dec_frames,
    [SEC_STACKS] = dec_stacks,	     [SEC_TIMELINE] = dec_timeline,
    [SEC_BLOCKS] = dec_blocks,	     [SEC_STACK_INFO] = dec_stack_info,
    [SEC_TEMPORARY] = dec_temporary, [SEC_TRACE] = dec_trace,
    [SEC_AGES] = dec_ages,	     [SEC_TARGET_NOTES] = dec_target_notes,
    [SEC_DAEMON] = dec_daemon,	     [SEC_GROUPS] = dec_groups,
    [SEC_LEAKS] = dec_leaks,
};

/*
 * Sections come in increasing tag order, each known one exactly once; tags
 * this version does not know are skipped, so later versions can add
 * sections without breaking older readers.
 */
static int decode_payload(struct decoder *d, const uint8_t *p, size_t len)
{
	struct reader top = {.d = d, .p = p, .end = p + len, .section = "payload"};
	uint64_t tag, last = 0, size;

	while (top.p < top.end) {
		struct reader r;

		if (rd_varint(&top, &tag) || rd_varint(&top, &size))
			return -1;
		if (tag <= last)
			return fail(d, "section %llu out of order", (unsigned long long)tag);
		if (size > left(&top))
			return fail(d, "payload truncated");
		r = (struct reader){.d = d, .p = top.p, .end = top.p + size};
		top.p += size;
		if (last < SEC_LAST && tag > last + 1)
			return fail(d, "missing %s section", section_names[last + 1]);
		last = tag;
		if (tag >= SEC_HISTOGRAM && tag <= SEC_OWN_LAST) {
			r.section = own_section_names[tag - SEC_HISTOGRAM];
			if (own_section_decoders[tag - SEC_HISTOGRAM](&r))
				return -1;
			if (r.p != r.end)
				return fail(d, "%s section: %zu unexpected bytes at its end",
					    r.section, left(&r));
			continue;
		}
		if (tag >= SEC_KNOWN || !section_decoders[tag])
			continue;
		r.section = section_names[tag];
		if (section_decoders[tag](&r))
			return -1;
		if (r.p != r.end)
			return fail(d, "%s section: %zu unexpected bytes at its end", r.section,
				    left(&r));
	}
	if (last < SEC_LAST)
		return fail(d, "missing %s section", section_names[last + 1]);
	return 0;
}

/* Checks the header; returns the payload's compressed and full lengths. */
static int check_header(struct decoder *d, const uint8_t *buf, size_t len, uint64_t *ulen,
			uint64_t *clen)
{
	uint32_t version, flags;

	if (len < 8) {
		if (!len || !memcmp(buf, SNAPSHOT_MAGIC, len))
			return fail(d, "truncated");
		return fail(d, "not a memtrace snapshot");
	}
	if (memcmp(buf, SNAPSHOT_MAGIC, 8))
		return fail(d, "not a memtrace snapshot");
	if (len < HEADER_SIZE)
		return fail(d, "truncated");
	version = get_le32(buf + 8);
	flags = get_le32(buf + 12);
	*ulen = get_le64(buf + 16);
	*clen = get_le64(buf + 24);
	if (version > SNAPSHOT_VERSION)
		return fail(d, "version %u is newer than this program supports", version);
	if (version == 0)
		return fail(d, "bad version 0");
	if (flags)
		return fail(d, "unknown flags 0x%x", flags);
	if (*clen > len - HEADER_SIZE)
		return fail(d, "truncated");
	if (*clen < len - HEADER_SIZE)
		return fail(d, "%llu bytes of garbage after the payload",
			    (unsigned long long)(len - HEADER_SIZE - *clen));
	if (*ulen > SNAPSHOT_MAX_BYTES || *ulen > (uint64_t)*clen * MAX_ZLIB_RATIO + ZLIB_SLACK ||
	    *ulen != (uLong)*ulen)
		return fail(d, "payload length %llu is not believable", (unsigned long long)*ulen);
	if (get_le32(buf + 32) != (uint32_t)crc32_z(0, buf + HEADER_SIZE, (z_size_t)*clen))
		return fail(d, "bad checksum");
	d->s->version = version;
	return 0;
}

int snapshot_decode(const uint8_t *buf, size_t len, struct snapshot *s, char *err, size_t errlen)
{
	struct decoder d = {.err = err, .errlen = errlen, .s = s};
	uint64_t ulen = 0, clen = 0;
	uint8_t *payload = NULL;
	uLongf out_len;
	uLong in_len;
	int rc = -1;

	memset(s, 0, sizeof(*s));
	if (errlen)
		err[0] = '\0';
	if (check_header(&d, buf, len, &ulen, &clen))
		goto out;
	payload = malloc(ulen ? ulen : 1);
	if (!payload) {
		fail(&d, "out of memory");
		goto out;
	}
	out_len = ulen;
	in_len = clen;
	if (uncompress2(payload, &out_len, buf + HEADER_SIZE, &in_len) != Z_OK || out_len != ulen ||
	    in_len != clen) {
		fail(&d, "corrupt compressed payload");
		goto out;
	}
	rc = decode_payload(&d, payload, ulen);
out:
	free(payload);
	free(d.strings);
	mark_inlined_end(&d);
	if (rc)
		snapshot_free(s);
	return rc;
}

/* ---- scanning without decoding --------------------------------------------- */

/* The payload inflated a window at a time. */
struct scan {
	z_stream z;
	uint8_t win[1 << 16];
	size_t pos, len;
	uint64_t total; /* bytes taken from the payload */
	int end;	/* zlib said the stream ended */
	int bad;
};

static int scan_fill(struct scan *sc)
{
	int rc;

	if (sc->end)
		return -1;
	sc->z.next_out = sc->win;
	sc->z.avail_out = sizeof(sc->win);
	rc = inflate(&sc->z, Z_NO_FLUSH);
	if (rc != Z_OK && rc != Z_STREAM_END) {
		sc->bad = 1;
		return -1;
	}
	sc->end = rc == Z_STREAM_END;
	sc->pos = 0;
	sc->len = sizeof(sc->win) - sc->z.avail_out;
	return sc->len ? 0 : -1;
}

static int scan_byte(struct scan *sc, uint8_t *b)
{
	if (sc->pos == sc->len && scan_fill(sc))
		return -1;
	*b = sc->win[sc->pos++];
	sc->total++;
	return 0;
}

static int scan_varint(struct scan *sc, uint64_t *v)
{
	uint8_t b;

	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (scan_byte(sc, &b))
			return -1;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

static int scan_skip(struct scan *sc, uint64_t n)
{
	while (n) {
		size_t k;

		if (sc->pos == sc->len && scan_fill(sc))
			return -1;
		k = sc->len - sc->pos < n ? sc->len - sc->pos : (size_t)n;
		sc->pos += k;
		sc->total += k;
		n -= k;
	}
	return 0;
}

int snapshot_scan(const uint8_t *buf, size_t len, struct snapshot_counts *out, char *err,
		  size_t errlen)
{
	struct snapshot dummy;
	struct decoder d = {.err = err, .errlen = errlen, .s = &dummy};
	struct scan *sc;
	uint64_t ulen, clen, tag, size, last = 0, v;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	memset(&dummy, 0, sizeof(dummy));
	if (errlen)
		err[0] = '\0';
	if (check_header(&d, buf, len, &ulen, &clen))
		return -1;
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return fail(&d, "out of memory");
	if (inflateInit(&sc->z) != Z_OK) {
		free(sc);
		return fail(&d, "out of memory");
	}
	sc->z.next_in = (Bytef *)(buf + HEADER_SIZE);
	sc->z.avail_in = (uInt)clen;
	/* the sections' framing, and the counts of stacks, timeline and blocks */
	while (sc->total < ulen) {
		uint64_t body_start;

		if (scan_varint(sc, &tag) || scan_varint(sc, &size))
			goto truncated;
		if (tag <= last) {
			fail(&d, "section %llu out of order", (unsigned long long)tag);
			goto out;
		}
		if (last < SEC_LAST && tag > last + 1) {
			fail(&d, "missing %s section", section_names[last + 1]);
			goto out;
		}
		last = tag;
		if (size > ulen - sc->total)
			goto truncated;
		body_start = sc->total;
		if (tag == SEC_STACKS || tag == SEC_TIMELINE || tag == SEC_BLOCKS) {
			if (tag != SEC_STACKS && scan_varint(sc, &v)) /* interval, older_than */
				goto truncated;
			if (scan_varint(sc, &v))
				goto truncated;
			if (tag == SEC_STACKS)
				out->stacks = v;
			else if (tag == SEC_TIMELINE)
				out->timeline_points = v;
			else
				out->blocks = v;
		}
		if (sc->total - body_start > size || scan_skip(sc, size - (sc->total - body_start)))
			goto truncated;
	}
	if (last < SEC_LAST) {
		fail(&d, "missing %s section", section_names[last + 1]);
		goto out;
	}
	/* exactly the payload, and zlib agrees it ends there */
	if (sc->total != ulen || (sc->pos == sc->len && !sc->end && scan_fill(sc) == 0) ||
	    sc->pos != sc->len || !sc->end || sc->z.avail_in) {
		fail(&d, "corrupt compressed payload");
		goto out;
	}
	rc = 0;
	goto out;
truncated:
	fail(&d, sc->bad ? "corrupt compressed payload" : "payload truncated");
out:
	inflateEnd(&sc->z);
	free(sc);
	return rc;
}

static void stack_free_frames(const struct snapshot *s, struct snap_stack *st)
{
	if (!s->frame_refs)
		free(st->frames);
	st->frames = NULL;
	st->nframes = 0;
}

static void frame_free_strings(struct snap_frame *f)
{
	free(f->function);
	free(f->module);
	free(f->file);
	free(f->build_id);
}

void snapshot_free(struct snapshot *s)
{
	if (!s->string_pool) {
		free(s->tracer_version);
		for (uint32_t i = 0; s->targets && i < s->ntargets; i++) {
			free(s->targets[i].command);
			free(s->targets[i].allocator);
			free(s->targets[i].note);
		}
		for (uint32_t i = 0; s->truncations && i < s->ntruncations; i++)
			free(s->truncations[i].module);
	}
	free(s->truncations);
	for (uint32_t i = 0; s->stacks && i < s->nstacks; i++)
		stack_free_frames(s, &s->stacks[i]);
	for (uint32_t i = 0; s->frame_table && i < s->nframe_table; i++)
		if (!s->string_pool && !s->frames_borrowed)
			frame_free_strings(&s->frame_table[i]);
	free(s->frame_table);
	free(s->frame_refs);
	free(s->frame_twins);
	for (uint32_t i = 0; s->groups.rows && i < s->nstacks; i++)
		if (!s->string_pool)
			free(s->groups.rows[i].key);
	free(s->groups.rows);
	free(s->leaks.stacks);
	free(s->targets);
	free(s->stacks);
	free(s->timeline);
	free(s->blocks);
	free(s->string_pool);
	memset(s, 0, sizeof(*s));
}

static uint64_t stack_sort_key(const struct snap_stack *st, int sort)
{
	switch (sort) {
	case SNAP_SORT_ALLOCATED:
		return st->bytes_allocated;
	case SNAP_SORT_COUNT:
		return st->allocations;
	case SNAP_SORT_PEAK:
		return st->peak_live_bytes;
	case SNAP_SORT_TEMPORARY:
		return st->temporary_allocations;
	default:
		return st->live_bytes;
	}
}

struct sort_entry {
	uint64_t key;
	uint32_t index;
};

static int sort_entry_cmp(const void *a, const void *b)
{
	const struct sort_entry *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? 1 : -1;
	return x->index < y->index ? -1 : x->index > y->index;
}

void snapshot_select(struct snapshot *s, int sort, uint32_t top, uint32_t pid)
{
	struct sort_entry *order;
	struct snap_stack *sorted;
	uint32_t n = 0, nblocks = 0, *remap;

	if (!s->nstacks)
		return;
	/* rows and leaks describe the stacks as they were chosen: not these */
	if (!s->string_pool)
		for (uint32_t i = 0; s->groups.rows && i < s->nstacks; i++)
			free(s->groups.rows[i].key);
	free(s->groups.rows);
	free(s->leaks.stacks);
	memset(&s->groups, 0, sizeof(s->groups));
	memset(&s->leaks, 0, sizeof(s->leaks));
	s->has_groups = s->has_leaks = 0;
	order = xcalloc(s->nstacks, sizeof(*order));
	sorted = xcalloc(s->nstacks, sizeof(*sorted));
	for (uint32_t i = 0; i < s->nstacks; i++) {
		uint64_t key = stack_sort_key(&s->stacks[i], sort);

		if ((pid && s->stacks[i].pid != pid) || !key) {
			stack_free_frames(s, &s->stacks[i]);
			continue;
		}
		order[n].key = key;
		order[n].index = i;
		n++;
	}
	qsort(order, n, sizeof(*order), sort_entry_cmp);
	/* where each kept stack goes, for the block list; UINT32_MAX = dropped */
	remap = xmalloc(s->nstacks * sizeof(*remap));
	memset(remap, 0xff, s->nstacks * sizeof(*remap));
	for (uint32_t i = 0; i < n; i++) {
		if (top && i >= top) {
			stack_free_frames(s, &s->stacks[order[i].index]);
		} else {
			sorted[i] = s->stacks[order[i].index];
			remap[order[i].index] = i;
		}
	}
	for (uint32_t i = 0; i < s->nblocks; i++) {
		uint32_t to = remap[s->blocks[i].stack];

		if (to != UINT32_MAX) {
			s->blocks[nblocks] = s->blocks[i];
			s->blocks[nblocks++].stack = to;
		}
	}
	s->nblocks = nblocks;
	free(remap);
	/* as the daemon counts them for a request, when the file held them all */
	if (s->stacks_total == s->nstacks)
		s->stacks_total = n;
	free(s->stacks);
	free(order);
	s->stacks = sorted;
	s->nstacks = top && n > top ? top : n;
}
