// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The snapshot decoder: untrusted bytes (a socket, a file) to struct
 * snapshot. It trusts nothing: every count is checked against the bytes left
 * and SNAPSHOT_MAX_* before it allocates, and every failure frees what was
 * built and says why in one line. Fuzzed (tests/fuzz/fuzz_snapshot.c).
 */
#include "memtrace/snapshot.h"
#include "common/snapshot_read.h"
#include "common/snapshot_wire.h"
#include "common/util.h"
#include "common/search.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static int dec_strings(struct reader *r)
{
	struct decoder *d = r->d;
	char *pool;
	uint32_t n;

	if (rd_count(r, 1, SNAPSHOT_MAX_STRINGS, &n))
		return -1;
	/* Each string gives its length byte to its NUL: the pool fits in the section. */
	pool = snapshot_strings_alloc(d->s, rd_left(r) + 1);
	d->strings = calloc(n ? n : 1, sizeof(*d->strings));
	if (!pool || !d->strings)
		return dec_fail(d, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		uint64_t len;

		if (rd_varint(r, &len))
			return -1;
		if (len > SNAPSHOT_MAX_STRING)
			return dec_fail(d, "strings section: string longer than %u bytes",
					SNAPSHOT_MAX_STRING);
		if (len > rd_left(r))
			return dec_fail(d, "strings section: truncated");
		if (memchr(r->p, '\0', len))
			return dec_fail(d, "strings section: string contains a NUL byte");
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
		return dec_fail(r->d, "out of memory");
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
			return dec_fail(r->d, "targets section: value out of range");
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
		return dec_fail(d, "out of memory");
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

	if (rd_count(r, 2 + SNAP_STACK_COUNTERS, SNAPSHOT_MAX_STACKS, &n))
		return -1;
	s->stacks = calloc(n ? n : 1, sizeof(*s->stacks));
	if (!s->stacks)
		return dec_fail(d, "out of memory");
	s->nstacks = n;
	/* every reference takes a byte at least: the section's size bounds them
	 * (pages of the block beyond what is used are never touched) */
	s->frame_refs = malloc((rd_left(r) ? rd_left(r) : 1) * sizeof(*s->frame_refs));
	if (!s->frame_refs)
		return dec_fail(d, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		struct snap_stack *st = &s->stacks[i];
		uint32_t nframes;

		if (rd_u32(r, &st->pid) || rd_count(r, 1, SNAPSHOT_MAX_DEPTH, &nframes))
			return -1;
		if (refs + nframes > SNAPSHOT_MAX_FRAME_REFS)
			return dec_fail(d, "stacks section: more than %u frames",
					SNAPSHOT_MAX_FRAME_REFS);
		st->frames = s->frame_refs + refs;
		st->nframes = nframes;
		refs += nframes;
		for (uint32_t j = 0; j < nframes; j++) {
			uint64_t idx;

			if (rd_varint(r, &idx))
				return -1;
			if (idx >= s->nframe_table)
				return dec_fail(d, "stacks section: frame index out of range");
			st->frames[j] = &s->frame_table[idx];
		}
#define RD_STACK_COUNTER(field, name, section)                                                     \
	if (section == 0 && rd_varint(r, &st->t.field))                                            \
		return -1;
		MT_STACK_COUNTERS(RD_STACK_COUNTER)
#undef RD_STACK_COUNTER
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
		return dec_fail(d, "out of memory");
	s->ntimeline = n;
	for (uint32_t i = 0; i < n; i++) {
		struct snap_timeline_point *p = &s->timeline[i];

		if (rd_varint(r, &p->time_ns) || rd_varint(r, &p->total.live_bytes) ||
		    rd_varint(r, &p->total.live_allocations) ||
		    rd_varint(r, &p->total.allocations) || rd_varint(r, &p->total.bytes_allocated))
			return -1;
	}
	return 0;
}

static int dec_blocks(struct reader *r)
{
	struct decoder *d = r->d;
	struct snapshot *s = d->s;
	struct snap_block_list *l;
	uint32_t n;

	if (!(l = s->block_list = dec_part(d, sizeof(*l))))
		return -1;
	if (rd_varint(r, &l->older_than_ns) || rd_count(r, 4, SNAPSHOT_MAX_BLOCKS, &n))
		return -1;
	l->blocks = calloc(n ? n : 1, sizeof(*l->blocks));
	if (!l->blocks)
		return dec_fail(d, "out of memory");
	l->nblocks = n;
	for (uint32_t i = 0; i < n; i++) {
		struct snap_block *b = &l->blocks[i];

		if (rd_u32(r, &b->stack) || rd_varint(r, &b->address) || rd_varint(r, &b->size) ||
		    rd_varint(r, &b->age_ns))
			return -1;
		if (b->stack >= s->nstacks)
			return dec_fail(d, "blocks section: stack index out of range");
	}
	return 0;
}

/*
 * Whether a frame is inlined is said per reference (stack_info), and frames
 * are shared: a frame first seen with one value keeps it, and a reference
 * that says otherwise gets the frame's twin, a copy with the other value,
 * added to the frame table (one at most per frame). Valid files never need
 * one, and then the table is never moved.
 */
static int mark_inlined_start(struct decoder *d)
{
	size_t n = d->s->nframe_table ? d->s->nframe_table : 1;

	d->nframes = d->s->nframe_table;
	d->inl_state = calloc(n, 1);
	d->twin_of = calloc(n, sizeof(*d->twin_of));
	if (!d->inl_state || !d->twin_of)
		return dec_fail(d, "out of memory");
	return 0;
}

/* The frame table with room for cap frames; the stacks' references follow it. */
static int resize_frame_table(struct decoder *d, size_t cap)
{
	struct snapshot *s = d->s;
	uintptr_t old = (uintptr_t)s->frame_table, now;
	struct snap_frame *t = realloc(s->frame_table, (cap ? cap : 1) * sizeof(*t));

	if (!t)
		return dec_fail(d, "out of memory");
	s->frame_table = t;
	now = (uintptr_t)t;
	if (now == old)
		return 0;
	/* as numbers: the old block is gone */
	for (uint32_t i = 0; i < s->nstacks; i++)
		for (uint32_t j = 0; j < s->stacks[i].nframes; j++)
			s->stacks[i].frames[j] =
			    (struct snap_frame *)((uintptr_t)s->stacks[i].frames[j] - old + now);
	return 0;
}

static int mark_inlined(struct decoder *d, struct snap_stack *st, uint32_t j, int inlined)
{
	struct snapshot *s = d->s;
	struct snap_frame *f = st->frames[j];
	size_t k = (size_t)(f - s->frame_table);

	if (k >= d->nframes)
		return 0; /* a twin already */
	if (!d->inl_state[k]) {
		d->inl_state[k] = (uint8_t)(1 + inlined);
		f->inlined = (uint8_t)inlined;
		return 0;
	}
	if (d->inl_state[k] == 1 + inlined)
		return 0;
	if (!d->twin_of[k]) {
		/* the first twin makes room for one of each frame */
		if (!d->ntwins && resize_frame_table(d, 2 * d->nframes))
			return -1;
		k = (size_t)(st->frames[j] - s->frame_table);
		d->twin_of[k] = (uint32_t)(d->nframes + d->ntwins) + 1;
		s->frame_table[d->nframes + d->ntwins] = s->frame_table[k];
		s->frame_table[d->nframes + d->ntwins].inlined = (uint8_t)inlined;
		d->ntwins++;
		s->nframe_table = (uint32_t)(d->nframes + d->ntwins);
	}
	st->frames[j] = &s->frame_table[d->twin_of[k] - 1];
	return 0;
}

static void mark_inlined_free(struct decoder *d)
{
	free(d->inl_state);
	free(d->twin_of);
	d->inl_state = NULL;
	d->twin_of = NULL;
}

static int mark_inlined_end(struct decoder *d)
{
	mark_inlined_free(d);
	/* the room twins did not take goes back */
	return d->ntwins ? resize_frame_table(d, d->s->nframe_table) : 0;
}

/*
 * Per stack: its stack_end and the indexes of its inlined frames; then the
 * modules that cut stacks short. Must follow the stacks section.
 */
static int dec_stack_info(struct reader *r)
{
	struct decoder *d = r->d;
	struct snapshot *s = d->s;
	uint32_t n, k, idx = 0;

	if (rd_count(r, 2, SNAPSHOT_MAX_STACKS, &n))
		return -1;
	if (n != s->nstacks)
		return dec_fail(d, "stack_info section: %u stacks, not %u", n, s->nstacks);
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
				return dec_fail(d, "stack_info section: frame index out of range");
			listed[idx / 8] |= (uint8_t)(1u << (idx % 8));
		}
		for (uint32_t j = 0; j < st->nframes; j++)
			if (mark_inlined(d, st, j, (listed[j / 8] >> (j % 8)) & 1))
				return -1;
	}
	if (mark_inlined_end(d))
		return -1;
	if (rd_count(r, 3, SNAPSHOT_MAX_STRINGS, &n))
		return -1;
	s->truncations = calloc(n ? n : 1, sizeof(*s->truncations));
	if (!s->truncations)
		return dec_fail(d, "out of memory");
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
		return dec_fail(r->d, "temporary section: %llu entries for %u stacks",
				(unsigned long long)n, s->nstacks);
	for (uint32_t i = 0; i < s->nstacks; i++) {
#define RD_STACK_COUNTER(field, name, section)                                                     \
	if (section == 1 && rd_varint(r, &s->stacks[i].t.field))                                   \
		return -1;
		MT_STACK_COUNTERS(RD_STACK_COUNTER)
#undef RD_STACK_COUNTER
	}
	return 0;
}

/* Section SEC_TRACE: when tracing began, then a counted list of options (more may follow). */
static int dec_trace(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint64_t n, v;

	if (rd_varint(r, &s->started_unix_ns) || rd_varint(r, &n))
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		if (rd_varint(r, &v))
			return -1;
		if (i < SNAP_NOPTIONS)
			memcpy((char *)&s->options + snap_option_offsets[i], &v, sizeof(v));
	}
	return 0;
}

static int dec_ages(struct reader *r)
{
	struct snapshot *s = r->d->s;
	uint64_t n;

	if (rd_varint(r, &n))
		return -1;
	if (n != s->nstacks)
		return dec_fail(r->d, "ages section: %llu entries for %u stacks",
				(unsigned long long)n, s->nstacks);
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
	size_t i = SEARCH_FIRST(0, d->nstrings, d->strings[mid] >= p);

	return i < d->nstrings && d->strings[i] == p ? (long)i : -1;
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
		return dec_fail(d, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		uint64_t module;
		char *id;

		if (rd_varint(r, &module) || rd_string(r, &id)) {
			free(id_of);
			return -1;
		}
		if (!module || module > d->nstrings) {
			free(id_of);
			return dec_fail(d, "build_ids section: string index out of range");
		}
		id_of[module - 1] = id;
	}
	/* frames are shared: each gets its module's once (twins too) */
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

static int (*const section_decoders[])(struct reader *) = {
    [SEC_STRINGS] = dec_strings,
    [SEC_META] = dec_meta,
    [SEC_TOTALS] = dec_totals,
    [SEC_EVENTS_LOST] = dec_events_lost,
    [SEC_TARGETS] = dec_targets,
    [SEC_FRAMES] = dec_frames,
    [SEC_STACKS] = dec_stacks,
    [SEC_TIMELINE] = dec_timeline,
    [SEC_BLOCKS] = dec_blocks,
    [SEC_STACK_INFO] = dec_stack_info,
    [SEC_TEMPORARY] = dec_temporary,
    [SEC_TRACE] = dec_trace,
    [SEC_AGES] = dec_ages,
    [SEC_TARGET_NOTES] = dec_target_notes,
    [SEC_UNWIND] = dec_unwind,
    [SEC_PROBE_SITES] = dec_probe_sites,
    [SEC_DAEMON] = dec_daemon,
    [SEC_GROUPS] = dec_groups,
    [SEC_LEAKS] = dec_leaks,
    [SEC_RESIDENT] = dec_resident,
    [SEC_MEMORY] = dec_memory,
    [SEC_SCAN] = dec_scan,
    [SEC_SCAN_ENTRIES] = dec_scan_entries,
    [SEC_INHERITED] = dec_inherited,
    [SEC_FAMILY] = dec_family,
    [SEC_MATCH] = dec_match,
    [SEC_TIMELINE_TARGETS] = dec_timeline_targets,
    [SEC_WALKER] = dec_walker,
    [SEC_CGROUP] = dec_cgroup,
    [SEC_TIMELINE_CGROUP] = dec_timeline_cgroup,
    [SEC_OOM] = dec_oom,
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
			return dec_fail(d, "section %llu out of order", (unsigned long long)tag);
		if (size > rd_left(&top))
			return dec_fail(d, "payload truncated");
		r = (struct reader){.d = d, .p = top.p, .end = top.p + size};
		top.p += size;
		if (last < SEC_LAST && tag > last + 1)
			return dec_fail(d, "missing %s section", section_names[last + 1]);
		last = tag;
		if (tag >= SEC_HISTOGRAM && tag <= SEC_OWN_LAST) {
			r.section = own_section_names[tag - SEC_HISTOGRAM];
			if (own_section_decoders[tag - SEC_HISTOGRAM](&r))
				return -1;
			if (r.p != r.end)
				return dec_fail(d, "%s section: %zu unexpected bytes at its end",
						r.section, rd_left(&r));
			continue;
		}
		if (tag >= SEC_KNOWN || !section_decoders[tag])
			continue;
		r.section = section_names[tag];
		if (section_decoders[tag](&r))
			return -1;
		if (r.p != r.end)
			return dec_fail(d, "%s section: %zu unexpected bytes at its end", r.section,
					rd_left(&r));
	}
	if (last < SEC_LAST)
		return dec_fail(d, "missing %s section", section_names[last + 1]);
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
		dec_fail(&d, "out of memory");
		goto out;
	}
	out_len = ulen;
	in_len = clen;
	if (uncompress2(payload, &out_len, buf + HEADER_SIZE, &in_len) != Z_OK || out_len != ulen ||
	    in_len != clen) {
		dec_fail(&d, "corrupt compressed payload");
		goto out;
	}
	rc = decode_payload(&d, payload, ulen);
out:
	free(payload);
	free(d.strings);
	mark_inlined_free(&d);
	if (rc)
		snapshot_free(s);
	return rc;
}
