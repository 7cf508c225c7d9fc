// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of the snapshot codec: generated snapshots survive a round trip field
 * for field; truncated, bit-flipped and hand-crafted malicious inputs fail
 * with a one-line message and without leaking (run under ASan); selection
 * for --from files sorts, filters and limits like the daemon.
 */
#include "unit.h"

#include "memtrace/event.h"
#include "memtrace/snapshot.h"
#include "common/util.h"

#include <errno.h>
#include <stdlib.h>
#include <zlib.h>

#define HEADER_SIZE 36

/* ---- building snapshots ------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static char *long_string(size_t len, char fill)
{
	char *s = xmalloc(len + 1);

	memset(s, fill, len);
	s[len] = '\0';
	return s;
}

/* A malloc'd string (or NULL) as s's own, as every string of a snapshot is. */
static char *own(struct snapshot *s, char *str)
{
	char *copy = snapshot_strdup(s, str);

	free(str);
	return copy;
}

static void counters_fill(struct mt_counters *c, uint64_t base)
{
	c->allocations = base + 1;
	c->frees = base + 2;
	c->bytes_allocated = base * 1000 + 3;
	c->bytes_freed = base * 900 + 4;
	c->live_allocations = base + 5;
	c->live_bytes = base * 100 + 6;
	c->peak_live_bytes = UINT64_MAX - base;
	c->peak_time_ns = base * 1000000000ull + 7;
	c->unknown_frees = base + 8;
	c->missed_frees = base + 9;
	c->missed_free_bytes = base + 10;
	c->untracked_allocations = base + 11;
}

/*
 * Frames for every stack of s (nframes set): each stack its own, all of them
 * in s's frame table, the references in its one block, as every snapshot has
 * them.
 */
static void give_frames(struct snapshot *s)
{
	uint32_t total = 0, k = 0;

	for (uint32_t i = 0; i < s->nstacks; i++)
		total += s->stacks[i].nframes;
	s->frame_table = xcalloc(total ? total : 1, sizeof(*s->frame_table));
	s->nframe_table = total;
	s->frame_refs = xcalloc(total ? total : 1, sizeof(*s->frame_refs));
	for (uint32_t i = 0; i < s->nstacks; i++) {
		struct snap_stack *st = &s->stacks[i];

		st->frames = s->frame_refs + k;
		for (uint32_t j = 0; j < st->nframes; j++, k++)
			st->frames[j] = &s->frame_table[k];
	}
}

/* A hand-written snapshot: three targets, stacks with every kind of frame. */
static void build_known(struct snapshot *s)
{
	static const struct {
		uint64_t address, offset;
		const char *function, *module, *file;
		int64_t line;
	} frames[] = {
	    {0x55550000123, 0x1234, "leak_some", "/usr/bin/demo", "demo.c", 42},
	    {0x55550000200, 0x1300, "main", "/usr/bin/demo", NULL, 0},
	    {0x7f0000027249, 0x27249, NULL, "/lib/x86_64-linux-gnu/libc.so.6", NULL, 0},
	    {0x7fff00001234, 0, NULL, NULL, NULL, 0},
	    {0x1, 0x2, "neg_line", "m", "f.c", -5},
	};

	memset(s, 0, sizeof(*s));
	s->version = SNAPSHOT_VERSION;
	s->tracer_version = snapshot_strdup(s, "0.1.0");
	s->created_unix_ns = 1700000000123456789ull;
	s->uptime_ns = 3723000000000ull;
	s->events_received = 123456;
	s->events_lost[1] = 1;
	s->events_lost[2] = 20;
	s->events_lost[3] = 300;
	s->events_lost[4] = 4000;
	s->events_lost[7] = 5;
	s->stacks_total = 99;
	counters_fill(&s->totals, 1000);

	s->ntargets = 3;
	s->targets = xcalloc(3, sizeof(*s->targets));
	for (uint32_t i = 0; i < 3; i++) {
		struct snap_target *t = &s->targets[i];

		t->pid = 1000 + i;
		t->state = i;
		t->exit_status = i == 2 ? 256 : -1;
		t->probes = 10 + i;
		t->command = i == 1 ? NULL : snapshot_strdup(s, i ? "./b --flag 'x y'" : "./a");
		t->allocator =
		    i == 2 ? NULL : snapshot_strdup(s, "/lib/x86_64-linux-gnu/libc.so.6");
		t->note =
		    i == 1 ? snapshot_strdup(s, "pymalloc is inlined at 189 call sites") : NULL;
		t->traced_ns = 5000000000ull * (i + 1);
		counters_fill(&t->counters, i);
		if (i == 0) { /* where its functions are probed */
			t->nsites = 2;
			t->sites = xcalloc(2, sizeof(*t->sites));
			t->sites[0] = (struct snap_probe_site){
			    snapshot_strdup(s, "free"),
			    snapshot_strdup(s, "/lib/x86_64-linux-gnu/libc.so.6"),
			    0x98ef0,
			    3,
			    snapshot_strdup(s, "je 0x98fb8"),
			    NULL,
			    NULL};
			t->sites[1] = (struct snap_probe_site){
			    snapshot_strdup(s, "_PyObject_Free"),
			    snapshot_strdup(s, "/usr/lib/libpython3.12.so"),
			    0x1cef80,
			    0,
			    snapshot_strdup(s, "test rsi, rsi"),
			    snapshot_strdup(s, "a branch reaches +1..+3"),
			    snapshot_strdup(s, "PyObject_Free")};
		}
	}

	s->unwind = xmalloc(sizeof(*s->unwind));
	*s->unwind = (struct snap_unwind){.memory_limit = 256u << 20,
					  .memory_used = 2u << 20,
					  .table_bytes = 1234567,
					  .tables = 5,
					  .modules_without = 2,
					  .modules_refused = 1};
	s->nstacks = 4;
	s->stacks = xcalloc(4, sizeof(*s->stacks));
	for (uint32_t i = 0; i < 4; i++)
		s->stacks[i].nframes = i == 3 ? 0 : (uint32_t)ARRAY_SIZE(frames) - i;
	give_frames(s);
	for (uint32_t i = 0; i < 4; i++) {
		struct snap_stack *st = &s->stacks[i];

		st->pid = 1000 + i % 3;
		for (uint32_t j = 0; j < st->nframes; j++) {
			st->frames[j]->address = frames[j + i].address;
			st->frames[j]->offset = frames[j + i].offset;
			st->frames[j]->function = snapshot_strdup(s, frames[j + i].function);
			st->frames[j]->module = snapshot_strdup(s, frames[j + i].module);
			st->frames[j]->file = snapshot_strdup(s, frames[j + i].file);
			st->frames[j]->line = frames[j + i].line;
		}
		st->t.allocations = 32 + i;
		st->t.bytes_allocated = 2097152 + i;
		st->t.frees = 16 + i;
		st->t.bytes_freed = 1048576 + i;
		st->t.live_allocations = 16;
		st->t.live_bytes = 1048576 - i;
		st->t.peak_live_bytes = 4000000 + i;
	}
}

static const char *const names[] = {"malloc", "operator new", "main", "", "é ü", "x"};

/* A string of s's, or NULL. */
static char *random_name(struct snapshot *s)
{
	uint64_t r = rng() % 10;

	if (r == 0)
		return NULL;
	if (r == 1)
		return own(s, long_string(rng() % 5000, 'a' + (char)(rng() % 26)));
	return snapshot_strdup(s, names[rng() % ARRAY_SIZE(names)]);
}

static uint64_t random_u64(void)
{
	switch (rng() % 4) {
	case 0:
		return 0;
	case 1:
		return UINT64_MAX;
	case 2:
		return rng() % 300;
	default:
		return rng();
	}
}

static void build_random(struct snapshot *s)
{
	struct snap_timeline_targets *tt = NULL;
	struct snap_block_list *l = NULL;

	memset(s, 0, sizeof(*s));
	s->version = SNAPSHOT_VERSION;
	s->tracer_version = random_name(s);
	s->created_unix_ns = random_u64();
	s->uptime_ns = random_u64();
	s->events_received = random_u64();
	for (size_t k = 0; k < ARRAY_SIZE(s->events_lost); k++)
		s->events_lost[k] = rng() % 3 ? 0 : random_u64() >> 4;
	s->stacks_total = random_u64();
	for (size_t k = 0; k < sizeof(s->totals) / sizeof(uint64_t); k++)
		((uint64_t *)&s->totals)[k] = random_u64();

	s->ntargets = (uint32_t)(rng() % 5);
	s->targets = s->ntargets ? xcalloc(s->ntargets, sizeof(*s->targets)) : NULL;
	for (uint32_t i = 0; i < s->ntargets; i++) {
		struct snap_target *t = &s->targets[i];

		t->pid = (uint32_t)rng();
		t->state = (uint32_t)(rng() % 5);
		t->exit_status = (int32_t)(uint32_t)rng();
		t->probes = (uint32_t)rng();
		t->command = random_name(s);
		t->allocator = random_name(s);
		t->note = rng() % 2 ? random_name(s) : NULL;
		t->traced_ns = random_u64();
		t->nsites = (uint32_t)(rng() % 3);
		t->sites = t->nsites ? xcalloc(t->nsites, sizeof(*t->sites)) : NULL;
		for (uint32_t k = 0; k < t->nsites; k++)
			t->sites[k] = (struct snap_probe_site){random_name(s),
							       rng() % 2 ? random_name(s) : NULL,
							       random_u64(),
							       random_u64(),
							       random_name(s),
							       rng() % 2 ? random_name(s) : NULL,
							       rng() % 2 ? random_name(s) : NULL};
		for (size_t k = 0; k < sizeof(t->counters) / sizeof(uint64_t); k++)
			((uint64_t *)&t->counters)[k] = random_u64();
	}

	s->nstacks = (uint32_t)(rng() % 4 ? rng() % 40 : 0);
	s->stacks = s->nstacks ? xcalloc(s->nstacks, sizeof(*s->stacks)) : NULL;
	for (uint32_t i = 0; i < s->nstacks; i++) {
		s->stacks[i].pid = (uint32_t)rng() % 4;
		s->stacks[i].nframes = (uint32_t)(rng() % 30);
	}
	give_frames(s);
	for (uint32_t i = 0; i < s->nstacks; i++) {
		struct snap_stack *st = &s->stacks[i];

		for (uint32_t j = 0; j < st->nframes; j++) {
			struct snap_frame *f = st->frames[j];

			/* Few distinct frames, so that the frame table dedupes. */
			f->address = rng() % 8;
			f->offset = f->address * 16;
			f->function = random_name(s);
			f->module = rng() % 2 ? snapshot_strdup(s, "/usr/lib/libfoo.so") : NULL;
			f->file = rng() % 3 ? NULL : random_name(s);
			f->line = (int64_t)(rng() % 3) - 1;
			if (rng() % 10 == 0)
				f->line = INT64_MIN;
		}
		st->t.allocations = random_u64();
		st->t.bytes_allocated = random_u64();
		st->t.frees = random_u64();
		st->t.bytes_freed = random_u64();
		st->t.live_allocations = random_u64();
		st->t.live_bytes = random_u64();
		st->t.peak_live_bytes = random_u64();
		st->t.temporary_allocations = random_u64();
		st->t.temporary_bytes = random_u64();
	}
	s->has_ages = rng() % 2;
	for (uint32_t i = 0; s->has_ages && i < s->nstacks; i++)
		s->stacks[i].oldest_live_age_ns = random_u64();
	/* memory over time and the block list (sections SEC_TIMELINE and SEC_BLOCKS) */
	s->ntimeline = (uint32_t)(rng() % 3 ? rng() % 50 : 0);
	s->timeline = s->ntimeline ? xcalloc(s->ntimeline, sizeof(*s->timeline)) : NULL;
	s->timeline_interval_ns = s->ntimeline ? random_u64() : 0;
	for (uint32_t i = 0; i < s->ntimeline; i++) {
		s->timeline[i].time_ns = random_u64();
		s->timeline[i].total.live_bytes = random_u64();
		s->timeline[i].total.live_allocations = random_u64();
		s->timeline[i].total.allocations = random_u64();
		s->timeline[i].total.bytes_allocated = random_u64();
	}
	/* the points' targets (section SEC_TIMELINE_TARGETS): some of the targets at each, in order
	 */
	if (s->ntimeline && rng() % 2) {
		tt = s->timeline_targets = xcalloc(1, sizeof(*tt));
		tt->figures = xcalloc((size_t)s->ntimeline * (s->ntargets ? s->ntargets : 1),
				      sizeof(*tt->figures));
	}
	for (uint32_t i = 0; tt && i < s->ntargets; i++)
		s->targets[i].started_ns = random_u64();
	for (uint32_t i = 0; tt && i < s->ntimeline; i++) {
		struct snap_timeline_point *p = &s->timeline[i];

		p->first = tt->nfigures;
		for (uint32_t k = 0; k < s->ntargets; k++) {
			struct snap_timeline_target *t;

			if (rng() % 3 == 0)
				continue;
			t = &tt->figures[tt->nfigures++];
			t->target = k;
			t->f.live_bytes = random_u64();
			t->f.live_allocations = random_u64();
			t->f.allocations = random_u64();
			t->f.bytes_allocated = random_u64();
			t->f.has_resident = rng() % 2;
			for (size_t j = 0; t->f.has_resident && j < MT_NRESIDENT; j++)
				mt_resident_set(&t->f.resident, j, random_u64());
			p->ntargets++;
		}
	}
	if (s->nstacks && rng() % 2) {
		l = s->block_list = xcalloc(1, sizeof(*l));
		l->nblocks = (uint32_t)(rng() % 60);
		l->blocks = l->nblocks ? xcalloc(l->nblocks, sizeof(*l->blocks)) : NULL;
		l->older_than_ns = random_u64();
	}
	s->started_unix_ns = rng() % 2 ? random_u64() | 1 : 0;
	for (size_t k = 0; s->started_unix_ns && k < sizeof(s->options) / sizeof(uint64_t); k++)
		((uint64_t *)&s->options)[k] = random_u64();
	for (uint32_t i = 0; l && i < l->nblocks; i++) {
		l->blocks[i].stack = (uint32_t)(rng() % s->nstacks);
		l->blocks[i].address = random_u64();
		l->blocks[i].size = random_u64();
		l->blocks[i].age_ns = random_u64();
	}
}

/* ---- comparing ---------------------------------------------------------- */

static int str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static int counters_eq(const struct mt_counters *a, const struct mt_counters *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/* Every field; prints the first difference. */
static int snapshot_eq(const struct snapshot *a, const struct snapshot *b)
{
#define SAME(cond)                                                                                 \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "snapshots differ: %s\n", #cond);                          \
			return 0;                                                                  \
		}                                                                                  \
	} while (0)
	SAME(a->version == b->version);
	SAME(str_eq(a->tracer_version, b->tracer_version));
	SAME(a->created_unix_ns == b->created_unix_ns);
	SAME(a->uptime_ns == b->uptime_ns);
	SAME(a->events_received == b->events_received);
	SAME(!memcmp(a->events_lost, b->events_lost, sizeof(a->events_lost)));
	SAME(a->stacks_total == b->stacks_total);
	SAME(counters_eq(&a->totals, &b->totals));
	SAME(!a->unwind == !b->unwind);
	SAME(!a->unwind || !memcmp(a->unwind, b->unwind, sizeof(*a->unwind)));
	SAME(a->ntargets == b->ntargets);
	for (uint32_t i = 0; i < a->ntargets; i++) {
		const struct snap_target *x = &a->targets[i], *y = &b->targets[i];

		SAME(x->pid == y->pid);
		SAME(x->state == y->state);
		SAME(x->exit_status == y->exit_status);
		SAME(x->probes == y->probes);
		SAME(str_eq(x->command, y->command));
		SAME(str_eq(x->allocator, y->allocator));
		SAME(str_eq(x->note, y->note));
		SAME(x->traced_ns == y->traced_ns);
		SAME(x->started_ns == y->started_ns);
		SAME(x->nsites == y->nsites);
		for (uint32_t k = 0; k < x->nsites && k < y->nsites; k++) {
			const struct snap_probe_site *u = &x->sites[k], *v = &y->sites[k];

			SAME(str_eq(u->function, v->function) && str_eq(u->object, v->object));
			SAME(u->offset == v->offset && u->at == v->at);
			SAME(str_eq(u->instruction, v->instruction) && str_eq(u->why, v->why));
			SAME(str_eq(u->via, v->via));
		}
		SAME(counters_eq(&x->counters, &y->counters));
		SAME(!memcmp(&x->oom, &y->oom, sizeof(x->oom)));
	}
	SAME(a->nstacks == b->nstacks);
	for (uint32_t i = 0; i < a->nstacks; i++) {
		const struct snap_stack *x = &a->stacks[i], *y = &b->stacks[i];

		SAME(x->pid == y->pid);
		SAME(x->nframes == y->nframes);
		for (uint32_t j = 0; j < x->nframes; j++) {
			const struct snap_frame *f = x->frames[j], *g = y->frames[j];

			SAME(f->address == g->address);
			SAME(f->offset == g->offset);
			SAME(str_eq(f->function, g->function));
			SAME(str_eq(f->module, g->module));
			SAME(str_eq(f->file, g->file));
			SAME(f->line == g->line);
		}
		SAME(x->t.allocations == y->t.allocations);
		SAME(x->t.bytes_allocated == y->t.bytes_allocated);
		SAME(x->t.frees == y->t.frees);
		SAME(x->t.bytes_freed == y->t.bytes_freed);
		SAME(x->t.live_allocations == y->t.live_allocations);
		SAME(x->t.live_bytes == y->t.live_bytes);
		SAME(x->t.peak_live_bytes == y->t.peak_live_bytes);
		SAME(x->t.temporary_allocations == y->t.temporary_allocations);
		SAME(x->t.temporary_bytes == y->t.temporary_bytes);
		SAME(x->oldest_live_age_ns == y->oldest_live_age_ns);
	}
	SAME(a->ntimeline == b->ntimeline);
	SAME(!a->ntimeline || a->timeline_interval_ns == b->timeline_interval_ns);
	for (uint32_t i = 0; i < a->ntimeline; i++)
		SAME(!memcmp(&a->timeline[i], &b->timeline[i], sizeof(a->timeline[i])));
	SAME(!a->timeline_targets == !b->timeline_targets);
	SAME(!a->timeline_targets ||
	     a->timeline_targets->nfigures == b->timeline_targets->nfigures);
	for (uint32_t i = 0; a->timeline_targets && i < a->timeline_targets->nfigures; i++)
		SAME(!memcmp(&a->timeline_targets->figures[i], &b->timeline_targets->figures[i],
			     sizeof(a->timeline_targets->figures[i])));
	SAME(a->started_unix_ns == b->started_unix_ns);
	SAME(!memcmp(&a->options, &b->options, sizeof(a->options)));
	SAME(a->has_ages == b->has_ages);
	SAME(!a->block_list == !b->block_list);
	if (!a->block_list)
		return 1;
	SAME(a->block_list->nblocks == b->block_list->nblocks);
	SAME(a->block_list->older_than_ns == b->block_list->older_than_ns);
	for (uint32_t i = 0; i < a->block_list->nblocks; i++) {
		const struct snap_block *x = &a->block_list->blocks[i],
					*y = &b->block_list->blocks[i];

		SAME(x->stack == y->stack);
		SAME(x->address == y->address);
		SAME(x->size == y->size);
		SAME(x->age_ns == y->age_ns);
	}
	return 1;
#undef SAME
}

static int is_zeroed(const struct snapshot *s)
{
	static const struct snapshot zero;

	return !memcmp(s, &zero, sizeof(zero));
}

/* One line, starting "snapshot: ". */
static int good_message(const char *err)
{
	return !strncmp(err, "snapshot: ", 10) && strlen(err) > 10 && !strchr(err, '\n');
}

static void roundtrip(const struct snapshot *s)
{
	struct snapshot d;
	uint8_t *bytes;
	size_t len;
	char err[256];

	CHECK_EQ_U64(snapshot_encode(s, &bytes, &len), 0);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == 0);
	CHECK_STR(err, "");
	CHECK(snapshot_eq(s, &d));
	snapshot_free(&d);
	CHECK(is_zeroed(&d));
	/* scanned without decoding: the same counts; a byte changed or lost: refused */
	{
		struct snapshot_counts c;

		CHECK(snapshot_scan(bytes, len, &c, err, sizeof(err)) == 0);
		CHECK_EQ_U64(c.stacks, s->nstacks);
		CHECK_EQ_U64(c.blocks, s->block_list ? s->block_list->nblocks : 0);
		CHECK_EQ_U64(c.timeline_points, s->ntimeline);
		CHECK(snapshot_scan(bytes, len - 1, &c, err, sizeof(err)) == -1);
		bytes[len - 1] ^= 1;
		CHECK(snapshot_scan(bytes, len, &c, err, sizeof(err)) == -1);
		CHECK_STR(err, "snapshot: bad checksum");
	}
	free(bytes);
}

/* ---- hand-made payloads ------------------------------------------------- */

static void put_varint(struct buf *b, uint64_t v)
{
	do {
		uint8_t byte = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));

		buf_put(b, &byte, 1);
		v >>= 7;
	} while (v);
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Wrap payload in a valid header: only the decoder's payload checks can fail. */
static uint8_t *wrap(const uint8_t *payload, size_t plen, size_t *len)
{
	uLongf clen = compressBound(plen);
	uint8_t *out = xmalloc(HEADER_SIZE + clen);

	if (compress2(out + HEADER_SIZE, &clen, payload, plen, 6) != Z_OK)
		abort();
	memcpy(out, SNAPSHOT_MAGIC, 8);
	put_le(out + 8, SNAPSHOT_VERSION, 4);
	put_le(out + 12, 0, 4);
	put_le(out + 16, plen, 8);
	put_le(out + 24, clen, 8);
	put_le(out + 32, crc32(0, out + HEADER_SIZE, clen), 4);
	*len = HEADER_SIZE + clen;
	return out;
}

/* Append section tag with body, and clear body. */
static void section(struct buf *p, uint64_t tag, struct buf *body)
{
	put_varint(p, tag);
	put_varint(p, body->len);
	buf_put(p, body->data, body->len);
	body->len = 0;
}

enum { S_STRINGS = 1, S_META, S_TOTALS, S_LOST, S_TARGETS, S_FRAMES, S_STACKS };

/*
 * A minimal valid payload with the given section replaced by bad (or left
 * out when bad is NULL and omit is set); extra is appended at the end.
 */
static void build_payload(struct buf *p, int replace, const struct buf *bad, int omit)
{
	struct buf body = {0};

	p->len = 0;
	for (int tag = S_STRINGS; tag <= S_STACKS; tag++) {
		if (tag == replace) {
			if (!omit)
				section(p, tag, &(struct buf){.data = bad->data, .len = bad->len});
			continue;
		}
		switch (tag) {
		case S_STRINGS: /* "a", "bc" */
			put_varint(&body, 2);
			put_varint(&body, 1);
			buf_put(&body, "a", 1);
			put_varint(&body, 2);
			buf_put(&body, "bc", 2);
			break;
		case S_META: /* version "a", four numbers */
			for (int i = 0; i < 5; i++)
				put_varint(&body, i == 0 ? 1 : 7);
			break;
		case S_TOTALS:
		case S_LOST:
			put_varint(&body, 0);
			break;
		case S_TARGETS: /* none */
			put_varint(&body, 0);
			break;
		case S_FRAMES: /* one: 1, 2, "a", "bc", NULL, line 3 */
			put_varint(&body, 1);
			put_varint(&body, 1);
			put_varint(&body, 2);
			put_varint(&body, 1);
			put_varint(&body, 2);
			put_varint(&body, 0);
			put_varint(&body, 6);
			break;
		case S_STACKS: /* one stack of the frame twice */
			put_varint(&body, 1);
			put_varint(&body, 42);
			put_varint(&body, 2);
			put_varint(&body, 0);
			put_varint(&body, 0);
			for (int i = 0; i < 7; i++)
				put_varint(&body, i);
			break;
		}
		section(p, tag, &body);
	}
	buf_free(&body);
}

/* Decode payload wrapped in a good header; returns rc, message in err. */
static int decode_payload(const struct buf *p, struct snapshot *s, char *err, size_t errlen)
{
	size_t len;
	uint8_t *bytes = wrap(p->data, p->len, &len);
	int rc = snapshot_decode(bytes, len, s, err, errlen);

	free(bytes);
	return rc;
}

/* The section replaced by the bytes given must fail with message want. */
static void check_bad_section(int tag, const uint8_t *bytes, size_t n, const char *want)
{
	struct buf bad = {0}, p = {0};
	struct snapshot s;
	char err[256];

	buf_put(&bad, bytes, n);
	build_payload(&p, tag, &bad, 0);
	CHECK(decode_payload(&p, &s, err, sizeof(err)) == -1);
	CHECK_STR(err, want);
	CHECK(is_zeroed(&s));
	buf_free(&bad);
	buf_free(&p);
}

/* ---- tests -------------------------------------------------------------- */

TEST(test_roundtrip_known)
{
	struct snapshot s;

	build_known(&s);
	roundtrip(&s);
	snapshot_free(&s);
	CHECK(is_zeroed(&s));
}

/* Section SEC_MATCH: what whole-host mode matches, and the matches not traced; a
 * reader takes the figures it knows of a longer list. */
TEST(test_roundtrip_match)
{
	struct snapshot s, d;
	uint8_t *bytes;
	size_t len;
	char err[256];

	build_known(&s);
	s.match = xmalloc(sizeof(*s.match));
	*s.match = (struct snap_match){.what = snapshot_strdup(&s, "--exe /usr/sbin/nginx"),
				       .max_targets = 64,
				       .traced = 12,
				       .over_limit = UINT64_MAX - 5};
	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == 0);
	CHECK(snapshot_eq(&s, &d));
	CHECK(d.match);
	CHECK_STR(d.match->what, "--exe /usr/sbin/nginx");
	CHECK_EQ_U64(d.match->max_targets, 64);
	CHECK_EQ_U64(d.match->traced, 12);
	CHECK_EQ_U64(d.match->over_limit, UINT64_MAX - 5);
	snapshot_free(&d);
	free(bytes);
	snapshot_free(&s);
	/* without it: absent */
	build_known(&s);
	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == 0);
	CHECK(!d.match);
	snapshot_free(&d);
	free(bytes);
	snapshot_free(&s);
}

/* Section SEC_WALKER: the stack walker and why it runs; absent in a snapshot without it. */
TEST(test_roundtrip_walker)
{
	struct snapshot s, d;
	uint8_t *bytes;
	size_t len;
	char err[256];

	build_known(&s);
	s.walker = xmalloc(sizeof(*s.walker));
	*s.walker = (struct snap_walker){
	    .name = snapshot_strdup(&s, "fp"),
	    .reason = snapshot_strdup(&s, "dwarf refused by the verifier: walk_dwarf: R1 !read_ok"),
	    .refused = 1};
	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == 0);
	CHECK(snapshot_eq(&s, &d));
	CHECK(d.walker);
	CHECK_STR(d.walker->name, "fp");
	CHECK_STR(d.walker->reason, "dwarf refused by the verifier: walk_dwarf: R1 !read_ok");
	CHECK_EQ_U64(d.walker->refused, 1);
	snapshot_free(&d);
	free(bytes);
	snapshot_free(&s);
	build_known(&s);
	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == 0);
	CHECK(!d.walker);
	snapshot_free(&d);
	free(bytes);
	snapshot_free(&s);
}

/* Section SEC_OOM: the OOM killer's mark on a target, with what it held then; absent in a
 * snapshot where it chose none (older readers skip it: a later tag). A reader takes the figures
 * it knows of a longer list, and a count that is not the targets' fails. */
TEST(test_roundtrip_oom)
{
	struct snapshot s, d;
	uint8_t *bytes;
	size_t len;
	char err[256];

	build_known(&s);
	s.targets[1].oom = (struct snap_oom){.killed = 1,
					     .time_ns = 12345678901ull,
					     .live_bytes = 61ull << 20,
					     .live_blocks = 61,
					     .resident_bytes = 63ull << 20,
					     .cgroup_usage = 67108864,
					     .cgroup_limit = 67108864};
	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == 0);
	CHECK(snapshot_eq(&s, &d));
	CHECK(!d.targets[0].oom.killed && d.targets[1].oom.killed);
	CHECK_EQ_U64(d.targets[1].oom.cgroup_limit, 67108864);
	CHECK_EQ_U64(d.targets[1].oom.live_blocks, 61);
	snapshot_free(&d);
	free(bytes);
	snapshot_free(&s);
	build_known(&s);
	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == 0);
	for (uint32_t i = 0; i < d.ntargets; i++)
		CHECK(!d.targets[i].oom.killed);
	snapshot_free(&d);
	free(bytes);
	snapshot_free(&s);
}

/* Sections SEC_DAEMON and SEC_GROUPS: the daemon's figures, a grouped snapshot's rows. */
TEST(test_roundtrip_daemon_sections)
{
	struct snapshot s, d;
	uint8_t *bytes;
	size_t len;
	char err[256];

	build_known(&s);
	s.daemon = xcalloc(1, sizeof(*s.daemon));
	for (size_t i = 0; i < sizeof(*s.daemon) / sizeof(uint64_t); i++)
		((uint64_t *)s.daemon)[i] = 1000003ull * (i + 1) << (i * 5);
	s.kind = SNAP_ROWS;
	s.groups.by = 4;
	s.groups.cumulative = 1;
	s.groups.order = MT_SORT_PEAK;
	s.groups.rows = xcalloc(s.nstacks, sizeof(*s.groups.rows));
	for (uint32_t i = 0; i < s.nstacks; i++) {
		s.groups.rows[i].key = snapshot_strdup(&s, i == 2 ? "" : i ? "demo.c:42" : "é ü");
		s.groups.rows[i].stacks = 7 * i + 1;
	}
	s.groups.rest_rows = 9;
	s.groups.rest_rows_live = 8;
	s.groups.rest_rows_allocated = 7;
	s.groups.rest_rows_peak = 6;
	for (size_t i = 0; i < sizeof(s.groups.rest) / sizeof(uint64_t); i++)
		((uint64_t *)&s.groups.rest)[i] = UINT64_MAX - i;

	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == 0);
	CHECK(snapshot_eq(&s, &d));
	CHECK(d.daemon && !memcmp(d.daemon, s.daemon, sizeof(*s.daemon)));
	CHECK_EQ_U64(d.kind, SNAP_ROWS);
	CHECK_EQ_U64(d.groups.by, 4);
	CHECK_EQ_U64(d.groups.cumulative, 1);
	CHECK_EQ_U64(d.groups.order, MT_SORT_PEAK);
	for (uint32_t i = 0; i < s.nstacks; i++) {
		CHECK_STR(d.groups.rows[i].key, s.groups.rows[i].key);
		CHECK_EQ_U64(d.groups.rows[i].stacks, s.groups.rows[i].stacks);
	}
	CHECK_EQ_U64(d.groups.rest_rows, 9);
	CHECK_EQ_U64(d.groups.rest_rows_live, 8);
	CHECK_EQ_U64(d.groups.rest_rows_allocated, 7);
	CHECK_EQ_U64(d.groups.rest_rows_peak, 6);
	CHECK(!memcmp(&d.groups.rest, &s.groups.rest, sizeof(s.groups.rest)));
	snapshot_free(&d);
	CHECK(is_zeroed(&d));
	free(bytes);
	snapshot_free(&s);
	CHECK(is_zeroed(&s));
}

/* Section SEC_LEAKS: a snapshot of leaking stacks. */
TEST(test_roundtrip_leaks)
{
	struct snapshot s, d;
	uint8_t *bytes;
	size_t len;
	char err[256];

	build_known(&s);
	s.kind = SNAP_LEAKS;
	s.leaks.older_than_ns = 5000000000ull;
	s.leaks.blocks = 123;
	s.leaks.bytes = 4567;
	s.leaks.stacks_total = 11;
	s.leaks.stacks = xcalloc(s.nstacks, sizeof(*s.leaks.stacks));
	for (uint32_t i = 0; i < s.nstacks; i++)
		s.leaks.stacks[i] = (struct snap_leak){i, 32 * i, 9000000000ull + i, 6000000000ull};

	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == 0);
	CHECK(snapshot_eq(&s, &d));
	CHECK_EQ_U64(d.kind, SNAP_LEAKS);
	CHECK_EQ_U64(d.leaks.older_than_ns, s.leaks.older_than_ns);
	CHECK_EQ_U64(d.leaks.blocks, 123);
	CHECK_EQ_U64(d.leaks.bytes, 4567);
	CHECK_EQ_U64(d.leaks.stacks_total, 11);
	CHECK(!memcmp(d.leaks.stacks, s.leaks.stacks, s.nstacks * sizeof(*s.leaks.stacks)));
	/* a selection (what a file's reader makes of it) forgets what the stacks were */
	snapshot_select(&d, MT_SORT_LIVE, 0, 0);
	CHECK_EQ_U64(d.kind, SNAP_STACKS);
	CHECK(!d.leaks.stacks);
	snapshot_free(&d);
	CHECK(is_zeroed(&d));
	free(bytes);
	snapshot_free(&s);
	CHECK(is_zeroed(&s));
}

/* Sections SEC_RESIDENT and SEC_MEMORY: resident memory per target and over time, breakdowns by
 * mapping. */
TEST(test_roundtrip_resident_sections)
{
	struct snapshot s, d;
	uint8_t *bytes;
	size_t len;
	char err[256];

	build_known(&s);
	s.ntimeline = 3;
	s.timeline_interval_ns = 1000000000ull;
	s.timeline = xcalloc(3, sizeof(*s.timeline));
	for (uint32_t i = 0; i < 3; i++) {
		s.timeline[i].time_ns = 1000000000ull * i;
		s.timeline[i].total.live_bytes = 100 * i;
		s.timeline[i].total.has_resident = i != 1; /* its round was still being read */
		for (size_t k = 0; i != 1 && k < MT_NRESIDENT; k++)
			mt_resident_set(&s.timeline[i].total.resident, k, (1ull << (40 + k)) + i);
	}
	s.has_resident = 1;
	s.targets[0].resident = (struct snap_resident){.sampled = 1,
						       .time_ns = 2000000000ull,
						       .peak_bytes = 9ull << 30,
						       .peak_time_ns = 1000000000ull};
	for (size_t k = 0; k < MT_NRESIDENT; k++)
		mt_resident_set(&s.targets[0].resident.r, k, UINT64_MAX - k);
	s.targets[2].resident = (struct snap_resident){.sampled = 1, .time_ns = 5};
	s.breakdowns = xcalloc(1, sizeof(*s.breakdowns));
	s.breakdowns->nmemory = 2;
	s.breakdowns->memory = xcalloc(2, sizeof(*s.breakdowns->memory));
	s.breakdowns->memory[0] = (struct snap_memory){.target = 0, .time_ns = 2000000001ull};
	for (size_t k = 0; k < MT_MEM_KIND_COUNT; k++)
		for (size_t f = 0; f < MT_NMEM_FIELDS; f++)
			*mt_mem_field(&s.breakdowns->memory[0].m.kinds[k], f) = 1000 * k + f;
	s.breakdowns->memory[0].m.unmapped_allocations = 3;
	s.breakdowns->memory[0].m.unmapped_bytes = 300;
	s.breakdowns->memory[1] = (struct snap_memory){
	    .target = 2,
	    .error = snapshot_strdup(&s, "cannot read /proc/1002/smaps: No such process")};

	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == 0);
	CHECK(snapshot_eq(&s, &d)); /* the timeline's points, resident figures with them */
	CHECK(d.has_resident && d.breakdowns && d.breakdowns->nmemory == 2);
	for (uint32_t i = 0; i < 3; i++)
		CHECK(!memcmp(&d.targets[i].resident, &s.targets[i].resident,
			      sizeof(s.targets[i].resident)));
	CHECK(!d.targets[1].resident.sampled);
	CHECK_EQ_U64(d.breakdowns->memory[0].target, 0);
	CHECK(d.breakdowns->memory[0].error == NULL);
	CHECK(!memcmp(&d.breakdowns->memory[0].m, &s.breakdowns->memory[0].m,
		      sizeof(s.breakdowns->memory[0].m)));
	CHECK_EQ_U64(d.breakdowns->memory[1].target, 2);
	CHECK_STR(d.breakdowns->memory[1].error, s.breakdowns->memory[1].error);
	snapshot_free(&d);
	free(bytes);
	/* a breakdown of a target the snapshot has not, or out of order: never written */
	s.breakdowns->memory[1].target = 3;
	CHECK(snapshot_encode(&s, &bytes, &len) == -E2BIG);
	s.breakdowns->memory[1].target = 0;
	CHECK(snapshot_encode(&s, &bytes, &len) == -E2BIG);
	snapshot_free(&s);
	CHECK(is_zeroed(&s));
}

/* Hand-made sections SEC_RESIDENT and SEC_MEMORY after a minimal payload (no targets, no timeline).
 */
static int decode_with(uint64_t tag, const struct buf *body, struct snapshot *s, char *err)
{
	struct buf p = {0};
	int rc;

	build_payload(&p, 0, NULL, 0);
	section(&p, tag, &(struct buf){.data = body->data, .len = body->len});
	rc = decode_payload(&p, s, err, 256);
	buf_free(&p);
	return rc;
}

TEST(test_resident_sections_checked)
{
	struct buf b = {0};
	struct snapshot s;
	char err[256];

	/* figures, targets 0, points 0: read, and resident memory is there */
	put_varint(&b, 7);
	put_varint(&b, 0);
	put_varint(&b, 0);
	CHECK(decode_with(45, &b, &s, err) == 0 && s.has_resident && !s.breakdowns);
	snapshot_free(&s);
	b.len = 0;
	put_varint(&b, 7);
	put_varint(&b, 1); /* the targets section has none */
	put_varint(&b, 0);
	CHECK(decode_with(45, &b, &s, err) == -1);
	CHECK_STR(err, "snapshot: resident section: 1 targets, not 0");
	CHECK(is_zeroed(&s));
	b.len = 0;
	put_varint(&b, 7);
	put_varint(&b, 0);
	put_varint(&b, 2); /* nor the timeline any point */
	put_varint(&b, 0);
	put_varint(&b, 0);
	CHECK(decode_with(45, &b, &s, err) == -1);
	CHECK_STR(err, "snapshot: resident section: 2 points, not 0");
	b.len = 0;
	put_varint(&b, 0); /* no breakdown: asked for, no target traced */
	CHECK(decode_with(46, &b, &s, err) == 0 && s.breakdowns && s.breakdowns->nmemory == 0);
	snapshot_free(&s);
	b.len = 0;
	put_varint(&b, 1); /* a breakdown of target 0, of none */
	for (int i = 0; i < 8; i++)
		put_varint(&b, 0);
	CHECK(decode_with(46, &b, &s, err) == -1);
	CHECK_STR(err, "snapshot: memory section: 1 breakdowns for 0 targets");
	buf_free(&b);
}

/*
 * Section SEC_CGROUP: each target's cgroup labels and memory cgroup figures, read
 * back as written (a target with none stays unknown, "no limit" stays
 * UINT64_MAX); a snapshot without it (every file before it) has none; a
 * malformed one is refused with one line.
 */
TEST(test_roundtrip_cgroup)
{
	struct snapshot s, d;
	struct buf b = {0};
	uint8_t *bytes;
	size_t len;
	char err[256];

	build_known(&s);
	CHECK(s.ntargets >= 2);
	s.targets[0].cgroup = (struct snap_cgroup){
	    .known = 1,
	    .path = snapshot_strdup(&s, "/libpod_parent/libpod-ab12"),
	    .memory_path = snapshot_strdup(&s, "/libpod_parent/libpod-ab12"),
	    .container = snapshot_strdup(&s, "ab12"),
	    .runtime = snapshot_strdup(&s, "podman"),
	    .why = snapshot_strdup(&s, "the unified cgroup has no memory controller files"),
	    .nspid = 1,
	    .time_ns = 123456789,
	    .m = {.version = MT_CGROUP_V1, .have = 0x151b}};
	for (size_t k = 0; k < MT_NCGROUP; k++)
		mt_cgroup_set(&s.targets[0].cgroup.m.f, k, (1ull << (20 + k)) + k);
	s.targets[0].cgroup.m.f.high_bytes = MT_CGROUP_NO_LIMIT;
	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == 0);
	CHECK(snapshot_eq(&s, &d));
	CHECK(d.targets[0].cgroup.known);
	CHECK_STR(d.targets[0].cgroup.path, "/libpod_parent/libpod-ab12");
	CHECK_STR(d.targets[0].cgroup.container, "ab12");
	CHECK_STR(d.targets[0].cgroup.runtime, "podman");
	CHECK(!d.targets[0].cgroup.unit && !d.targets[0].cgroup.pod);
	CHECK_STR(d.targets[0].cgroup.why, "the unified cgroup has no memory controller files");
	CHECK_EQ_U64(d.targets[0].cgroup.nspid, 1);
	CHECK_EQ_U64(d.targets[0].cgroup.time_ns, 123456789);
	CHECK(
	    !memcmp(&d.targets[0].cgroup.m, &s.targets[0].cgroup.m, sizeof(s.targets[0].cgroup.m)));
	CHECK_EQ_U64(d.targets[0].cgroup.m.f.high_bytes, MT_CGROUP_NO_LIMIT);
	CHECK(!d.targets[1].cgroup.known && !d.targets[1].cgroup.path);
	snapshot_free(&d);
	free(bytes);
	snapshot_free(&s);
	/* without labels, no section: decoded as before */
	build_known(&s);
	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == 0);
	for (uint32_t i = 0; i < d.ntargets; i++)
		CHECK(!d.targets[i].cgroup.known);
	snapshot_free(&d);
	free(bytes);
	snapshot_free(&s);
	/* malformed: a count of targets that is not the targets section's, a bad flag */
	put_varint(&b, 1);
	put_varint(&b, MT_NCGROUP);
	put_varint(&b, 0);
	CHECK(decode_with(54, &b, &s, err) == -1);
	CHECK_STR(err, "snapshot: cgroup section: 1 targets, not 0");
	CHECK(is_zeroed(&s));
	b.len = 0;
	put_varint(&b, 0);
	put_varint(&b, 65);
	CHECK(decode_with(54, &b, &s, err) == -1);
	CHECK_STR(err, "snapshot: cgroup section: 65 figures per entry exceed the limit of 64");
	b.len = 0;
	put_varint(&b, 1); /* a figure of a timeline that has none */
	put_varint(&b, 2);
	put_varint(&b, 0);
	CHECK(decode_with(55, &b, &s, err) == -1);
	CHECK_STR(err, "snapshot: timeline_cgroup section: 1 figures, not 0");
	buf_free(&b);
}

/*
 * Section SEC_TIMELINE_TARGETS: each timeline point's targets with their figures, read back
 * as written; a file without it (every file written before it) has none.
 */
TEST(test_roundtrip_timeline_targets)
{
	struct snap_timeline_targets *tt;
	struct snapshot s, d;
	uint8_t *bytes;
	size_t len;
	char err[256];

	build_known(&s);
	s.ntimeline = 3;
	s.timeline_interval_ns = 1000000000ull;
	s.timeline = xcalloc(3, sizeof(*s.timeline));
	tt = xcalloc(1, sizeof(*tt));
	tt->figures = xcalloc(5, sizeof(*tt->figures));
	for (uint32_t i = 0; i < 3; i++) {
		s.timeline[i].time_ns = 1000000000ull * i;
		s.timeline[i].total.live_bytes = 100 * i;
		s.timeline[i].first = tt->nfigures;
		/* target 0 at every point, target 2 from the second on */
		for (uint32_t k = 0; k < 3; k += 2) {
			struct snap_timeline_target *t;

			if (k == 2 && !i)
				continue;
			t = &tt->figures[tt->nfigures++];
			t->target = k;
			t->f.live_bytes = 10 * i + k;
			t->f.bytes_allocated = UINT64_MAX - i;
			t->f.has_resident = i != 1 || k;
			for (size_t j = 0; t->f.has_resident && j < MT_NRESIDENT; j++)
				mt_resident_set(&t->f.resident, j, (1ull << (50 + j)) + k);
			s.timeline[i].ntargets++;
		}
	}
	s.targets[2].started_ns = 1500000000ull;
	/* without the section: the points have no targets, nor the targets a start */
	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == 0);
	CHECK(d.timeline_targets == NULL);
	CHECK(!d.targets[2].started_ns);
	d.targets[2].started_ns = s.targets[2].started_ns; /* for snapshot_eq below */
	for (uint32_t i = 0; i < 3; i++)
		CHECK(d.timeline[i].ntargets == 0 && d.timeline[i].total.live_bytes == 100 * i);
	snapshot_free(&d);
	free(bytes);
	s.timeline_targets = tt;
	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == 0);
	CHECK(snapshot_eq(&s, &d));
	CHECK(d.timeline_targets && d.timeline_targets->nfigures == 5 && d.timeline[1].first == 1 &&
	      d.timeline[1].ntargets == 2);
	CHECK(!d.timeline_targets->figures[1].f.has_resident &&
	      d.timeline_targets->figures[2].f.has_resident);
	CHECK_EQ_U64(d.timeline_targets->figures[4].f.resident.lazyfree_bytes, (1ull << 56) + 2);
	CHECK(!d.timeline_targets->figures[4].f.has_cgroup); /* no section SEC_TIMELINE_CGROUP */
	snapshot_free(&d);
	free(bytes);
	/* section SEC_TIMELINE_CGROUP: the memory cgroup's usage and limit of some figures */
	tt->figures[3].f = (struct snap_figures){
	    .has_cgroup = 1, .cgroup_usage_bytes = 7, .cgroup_limit_bytes = MT_CGROUP_NO_LIMIT};
	tt->figures[4].f.has_cgroup = 1;
	tt->figures[4].f.cgroup_usage_bytes = 48 << 20;
	tt->figures[4].f.cgroup_limit_bytes = 64 << 20;
	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == 0);
	CHECK(snapshot_eq(&s, &d));
	for (uint32_t i = 0; i < 5; i++)
		CHECK(!memcmp(&d.timeline_targets->figures[i].f, &tt->figures[i].f,
			      sizeof(tt->figures[i].f)));
	CHECK_EQ_U64(d.timeline_targets->figures[3].f.cgroup_limit_bytes, MT_CGROUP_NO_LIMIT);
	CHECK(!d.timeline_targets->figures[2].f.has_cgroup);
	snapshot_free(&d);
	free(bytes);
	tt->figures[3].f.has_cgroup = tt->figures[4].f.has_cgroup = 0;
	/* what the decoder would refuse is never written */
	s.timeline_targets->figures[2].target = 0; /* the second point's targets out of order */
	CHECK(snapshot_encode(&s, &bytes, &len) == -E2BIG);
	s.timeline_targets->figures[2].target = 3; /* no such target */
	CHECK(snapshot_encode(&s, &bytes, &len) == -E2BIG);
	s.timeline_targets->figures[2].target = 2;
	s.timeline[2].ntargets = 3; /* past the figures */
	CHECK(snapshot_encode(&s, &bytes, &len) == -E2BIG);
	snapshot_free(&s);
}

/* A payload of two targets (pids 7 and 8) and a timeline of one point, then section
 * SEC_TIMELINE_TARGETS. */
static int decode_timeline_targets(const struct buf *b51, struct snapshot *s, char *err)
{
	struct buf p = {0}, targets = {0}, body = {0};
	int rc;

	put_varint(&targets, 2);
	for (int i = 0; i < 2; i++) {
		put_varint(&targets, 7 + (uint64_t)i); /* pid */
		put_varint(&targets, 1);	       /* attached */
		put_varint(&targets, 1);	       /* exit status -1, zigzag */
		put_varint(&targets, 3);	       /* probes */
		put_varint(&targets, 0);	       /* no command */
		put_varint(&targets, 0);	       /* no allocator */
		put_varint(&targets, 100);	       /* traced_ns */
		put_varint(&targets, 0);	       /* no counters */
	}
	build_payload(&p, S_TARGETS, &targets, 0);
	put_varint(&body, 1000); /* interval */
	put_varint(&body, 1);	 /* one point */
	for (int i = 0; i < 5; i++)
		put_varint(&body, 50 + (uint64_t)i);
	section(&p, 8, &body);
	section(&p, 52, &(struct buf){.data = b51->data, .len = b51->len});
	rc = decode_payload(&p, s, err, 256);
	buf_free(&p);
	buf_free(&targets);
	buf_free(&body);
	return rc;
}

TEST(test_timeline_targets_checked)
{
	struct buf b = {0};
	struct snapshot s;
	char err[256];

	/* a later version's: more figures of each kind, skipped */
	put_varint(&b, 5);
	put_varint(&b, 8);
	put_varint(&b, 2); /* the targets' starts */
	put_varint(&b, 0);
	put_varint(&b, 3000);
	put_varint(&b, 1); /* points */
	put_varint(&b, 2); /* targets at it */
	put_varint(&b, 0);
	for (int i = 0; i < 5; i++)
		put_varint(&b, 11 + (uint64_t)i);
	put_varint(&b, 1);
	for (int i = 0; i < 8; i++)
		put_varint(&b, 4096 * (1 + (uint64_t)i));
	put_varint(&b, 1);
	for (int i = 0; i < 5; i++)
		put_varint(&b, 21 + (uint64_t)i);
	put_varint(&b, 0);
	CHECK(decode_timeline_targets(&b, &s, err) == 0);
	CHECK(s.timeline_targets && s.timeline_targets->nfigures == 2 &&
	      s.timeline[0].ntargets == 2);
	CHECK(s.targets[0].started_ns == 0 && s.targets[1].started_ns == 3000);
	CHECK(s.timeline_targets->figures[0].target == 0 &&
	      s.timeline_targets->figures[0].f.live_bytes == 11 &&
	      s.timeline_targets->figures[0].f.bytes_allocated == 14);
	CHECK(s.timeline_targets->figures[0].f.has_resident &&
	      s.timeline_targets->figures[0].f.resident.lazyfree_bytes == 7 * 4096);
	CHECK(s.timeline_targets->figures[1].target == 1 &&
	      !s.timeline_targets->figures[1].f.has_resident &&
	      s.timeline_targets->figures[1].f.live_allocations == 22);
	snapshot_free(&s);

	/* malformed: a clear one-line error, nothing kept */
	static const struct {
		uint64_t v[16];
		size_t n;
		const char *want;
	} bad[] = {
	    {{4, 7, 1, 0, 1, 0}, 6, "snapshot: timeline_targets section: 1 targets, not 2"},
	    {{4, 7, 2, 0, 0, 2, 0, 0}, 8, "snapshot: timeline_targets section: 2 points, not 1"},
	    {{4, 7, 2, 0, 0, 1, 1, 2, 1, 1, 1, 1, 0},
	     13,
	     "snapshot: timeline_targets section: target 2 of 2"},
	    {{4, 7, 2, 0, 0, 1, 2, 1, 1, 1, 1, 1, 0, 0, 1},
	     15,
	     "snapshot: timeline_targets section: truncated"},
	    {{4, 7, 2, 0, 0, 1, 1, 0, 1, 1, 1, 1, 2},
	     13,
	     "snapshot: timeline_targets section: bad sampled flag"},
	    {{65, 7, 2, 0, 0, 1, 0},
	     7,
	     "snapshot: timeline_targets section: 65 figures per entry exceed the limit of 64"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b.len = 0;
		for (size_t k = 0; k < bad[i].n; k++)
			put_varint(&b, bad[i].v[k]);
		CHECK(decode_timeline_targets(&b, &s, err) == -1);
		CHECK_STR(err, bad[i].want);
		CHECK(is_zeroed(&s));
	}
	/* out of order */
	b.len = 0;
	put_varint(&b, 4);
	put_varint(&b, 7);
	put_varint(&b, 2);
	put_varint(&b, 0);
	put_varint(&b, 0);
	put_varint(&b, 1);
	put_varint(&b, 2);
	for (uint64_t t = 2; t-- > 0;) {
		put_varint(&b, t);
		for (int k = 0; k < 4; k++)
			put_varint(&b, 1);
		put_varint(&b, 0);
	}
	CHECK(decode_timeline_targets(&b, &s, err) == -1);
	CHECK_STR(err, "snapshot: timeline_targets section: targets out of order");
	buf_free(&b);
}

/* A scan's sections (47, 48): figures, suppressions and pids, entries by stack and kind. */
TEST(test_roundtrip_scan)
{
	struct snapshot s, d;
	uint8_t *bytes;
	size_t len;
	char err[256];

	build_known(&s);
	s.kind = SNAP_SCAN;
	for (size_t i = 0; i < sizeof(s.scan.f) / sizeof(uint64_t); i++)
		((uint64_t *)&s.scan.f)[i] = 77777ull * (i + 1) << (i * 2);
	s.scan.nsuppressions = 2;
	s.scan.suppressions = xcalloc(2, sizeof(*s.scan.suppressions));
	s.scan.suppressions[0] =
	    (struct snap_scan_suppression){snapshot_strdup(&s, "^lib*.so$"), 3, 96};
	s.scan.suppressions[1] =
	    (struct snap_scan_suppression){snapshot_strdup(&s, "make_ring"), 0, 0};
	s.scan.npids = 2;
	s.scan.pids = xcalloc(2, sizeof(*s.scan.pids));
	s.scan.pids[0] = 1234;
	s.scan.pids[1] = 4194304;
	s.scan.nentries = s.nstacks * SNAP_LEAK_KINDS;
	s.scan.entries = xcalloc(s.scan.nentries, sizeof(*s.scan.entries));
	for (uint32_t i = 0; i < s.scan.nentries; i++)
		s.scan.entries[i] = (struct snap_scan_entry){
		    i / SNAP_LEAK_KINDS, i % SNAP_LEAK_KINDS, i + 1, 48ull * (i + 1)};
	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == 0);
	CHECK(snapshot_eq(&s, &d));
	CHECK_EQ_U64(d.kind, SNAP_SCAN);
	CHECK(!memcmp(&d.scan.f, &s.scan.f, sizeof(s.scan.f)));
	CHECK_EQ_U64(d.scan.nsuppressions, 2);
	CHECK_STR(d.scan.suppressions[0].pattern, "^lib*.so$");
	CHECK_EQ_U64(d.scan.suppressions[0].blocks, 3);
	CHECK_EQ_U64(d.scan.suppressions[0].bytes, 96);
	CHECK_STR(d.scan.suppressions[1].pattern, "make_ring");
	CHECK_EQ_U64(d.scan.npids, 2);
	CHECK_EQ_U64(d.scan.pids[1], 4194304);
	CHECK_EQ_U64(d.scan.nentries, s.scan.nentries);
	CHECK(!memcmp(d.scan.entries, s.scan.entries, s.scan.nentries * sizeof(*s.scan.entries)));
	snapshot_free(&d);
	CHECK(is_zeroed(&d));
	free(bytes);
	/* an entry naming a stack the snapshot does not hold is never written */
	s.scan.entries[0].stack = s.nstacks;
	CHECK(snapshot_encode(&s, &bytes, &len) == -E2BIG);
	s.scan.entries[0].stack = 0;
	s.scan.entries[0].kind = SNAP_LEAK_KINDS;
	CHECK(snapshot_encode(&s, &bytes, &len) == -E2BIG);
	snapshot_free(&s);
	CHECK(is_zeroed(&s));
	CHECK_STR(snap_leak_kind_name(SNAP_LEAK_INDIRECT), "indirect");
	CHECK_STR(snap_leak_kind_name(9), "unknown");
}

/* A block list bigger than the encoder's pieces: streamed, read back the same. */
TEST(test_roundtrip_many_blocks)
{
	struct snapshot s;

	build_known(&s);
	s.block_list = xcalloc(1, sizeof(*s.block_list));
	s.block_list->older_than_ns = 12345;
	s.block_list->nblocks = 100000;
	s.block_list->blocks = xcalloc(s.block_list->nblocks, sizeof(*s.block_list->blocks));
	for (uint32_t i = 0; i < s.block_list->nblocks; i++)
		s.block_list->blocks[i] =
		    (struct snap_block){.stack = i % s.nstacks,
					.address = 0x7f0000000000ull + 48ull * i,
					.size = rng() % 100000,
					.age_ns = rng() >> (i % 64)};
	roundtrip(&s);
	snapshot_free(&s);
	CHECK(is_zeroed(&s));
}

TEST(test_roundtrip_random)
{
	for (int i = 0; i < 300; i++) {
		struct snapshot s;

		build_random(&s);
		roundtrip(&s);
		snapshot_free(&s);
	}
}

TEST(test_roundtrip_empty)
{
	struct snapshot s = {.version = SNAPSHOT_VERSION};

	roundtrip(&s);
}

TEST(test_roundtrip_long_strings)
{
	struct snapshot s;

	build_known(&s);
	s.targets[0].command = own(&s, long_string(SNAPSHOT_MAX_STRING, 'c'));
	s.stacks[0].frames[0]->function = own(&s, long_string(300000, 'f'));
	roundtrip(&s);

	/* One byte more than a string may have: refused, not truncated. */
	s.targets[0].command = own(&s, long_string(SNAPSHOT_MAX_STRING + 1, 'c'));
	{
		uint8_t *bytes = (uint8_t *)"x";
		size_t len = 1;

		CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), -E2BIG);
		CHECK(bytes == NULL && len == 0);
	}
	snapshot_free(&s);
}

TEST(test_encode_limits)
{
	struct snapshot s;
	uint8_t *bytes;
	size_t len;

	build_known(&s);
	s.stacks[0].nframes = SNAPSHOT_MAX_DEPTH + 1;
	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), -E2BIG);
	s.stacks[0].nframes = 5;
	snapshot_free(&s);
}

/* Strings and frames repeat across stacks; the payload holds each once. */
TEST(test_dedup)
{
	struct snapshot s = {.version = SNAPSHOT_VERSION};
	uint8_t *bytes;
	size_t len;
	uint64_t payload_len = 0;

	s.nstacks = 1000;
	s.stacks = xcalloc(s.nstacks, sizeof(*s.stacks));
	for (uint32_t i = 0; i < s.nstacks; i++)
		s.stacks[i].nframes = 20;
	give_frames(&s);
	for (uint32_t i = 0; i < s.nstacks; i++) {
		for (uint32_t j = 0; j < 20; j++) {
			s.stacks[i].frames[j]->address = j;
			s.stacks[i].frames[j]->function =
			    own(&s, long_string(100, (char)('a' + j)));
			s.stacks[i].frames[j]->module =
			    snapshot_strdup(&s, "/usr/lib/x86_64-linux-gnu/libc.so.6");
		}
	}
	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	for (int i = 7; i >= 0; i--)
		payload_len = payload_len << 8 | bytes[16 + i];
	/* 20 strings of 100 bytes, 20 frames, 1000 x (20 one-byte refs + counters
	 * + the optional per-stack sections: temporary, stack_info) */
	CHECK(payload_len < 2000 + 20 * 8 + 1000 * 40);
	free(bytes);
	roundtrip(&s);
	snapshot_free(&s);
}

TEST(test_truncation)
{
	struct snapshot s, d;
	uint8_t *bytes;
	size_t len;
	char err[256];

	build_known(&s);
	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	for (size_t n = 0; n < len; n++) {
		/* A copy of exactly n bytes, so ASan sees any read past them. */
		uint8_t *cut = xmalloc(n);

		memcpy(cut, bytes, n);
		CHECK(snapshot_decode(cut, n, &d, err, sizeof(err)) == -1);
		CHECK_STR(err, "snapshot: truncated");
		CHECK(is_zeroed(&d));
		free(cut);
	}
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == 0);
	snapshot_free(&d);
	free(bytes);
	snapshot_free(&s);
}

TEST(test_bit_flips)
{
	struct snapshot s, d;
	uint8_t *bytes;
	size_t len, failed = 0;
	char err[256];

	build_known(&s);
	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	for (size_t bit = 0; bit < len * 8; bit++) {
		bytes[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		if (snapshot_decode(bytes, len, &d, err, sizeof(err))) {
			CHECK(good_message(err));
			CHECK(is_zeroed(&d));
			failed++;
		} else {
			CHECK(snapshot_eq(&s, &d));
			snapshot_free(&d);
		}
		bytes[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	/* CRC32 catches every single-bit error in the payload. */
	CHECK_EQ_U64(failed, len * 8);
	free(bytes);
	snapshot_free(&s);
}

TEST(test_header_errors)
{
	struct snapshot s, d;
	uint8_t *bytes, *longer, saved[8];
	size_t len;
	char err[256];

	build_known(&s);
	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);

	bytes[0] = 'X';
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: not a memtrace snapshot");
	CHECK(snapshot_decode((const uint8_t *)"{\"json\"", 7, &d, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: not a memtrace snapshot");
	bytes[0] = 'M';

	put_le(bytes + 8, SNAPSHOT_VERSION + 1, 4);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: version 2 is newer than this program supports");
	put_le(bytes + 8, 0, 4);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: bad version 0");
	put_le(bytes + 8, SNAPSHOT_VERSION, 4);

	put_le(bytes + 12, 4, 4);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: unknown flags 0x4");
	put_le(bytes + 12, 0, 4);

	bytes[32] ^= 0x10;
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: bad checksum");
	bytes[32] ^= 0x10;

	/* A payload length deflate could not have produced. */
	memcpy(saved, bytes + 16, 8);
	put_le(bytes + 16, 1ull << 31, 8);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == -1);
	CHECK(!strncmp(err, "snapshot: payload length 2147483648 is not believable", 60));
	put_le(bytes + 16, (1ull << 32) + 1, 8);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == -1);
	CHECK(good_message(err));

	longer = xmalloc(len + 3);
	CHECK(snapshot_decode(bytes, len, &d, err, 0) == -1); /* no room for a message */
	memcpy(longer, bytes, len);
	memset(longer + len, 0, 3);
	put_le(longer + 16, 0, 8);
	CHECK(snapshot_decode(longer, len + 3, &d, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: 3 bytes of garbage after the payload");
	free(longer);

	/* Claimed payload length disagrees with what inflates. */
	memcpy(bytes + 16, saved, 8);
	bytes[16] ^= 1;
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: corrupt compressed payload");

	free(bytes);
	snapshot_free(&s);
	CHECK(is_zeroed(&d));
}

TEST(test_minimal_payload)
{
	struct buf p = {0};
	struct snapshot s;
	char err[256];

	build_payload(&p, 0, NULL, 0);
	CHECK(decode_payload(&p, &s, err, sizeof(err)) == 0);
	CHECK_STR(s.tracer_version, "a");
	CHECK_EQ_U64(s.nstacks, 1);
	CHECK_EQ_U64(s.stacks[0].pid, 42);
	CHECK_EQ_U64(s.stacks[0].nframes, 2);
	CHECK_STR(s.stacks[0].frames[1]->module, "bc");
	CHECK(s.stacks[0].frames[1]->file == NULL);
	CHECK_EQ_U64(s.stacks[0].frames[1]->line, 3);
	CHECK_EQ_U64(s.stacks[0].t.peak_live_bytes, 6);
	snapshot_free(&s);

	/* The block list: its stack indices are checked against the stacks. */
	put_varint(&p, 9);
	put_varint(&p, 6);
	buf_put(&p, "\x05\x01\x00\x07\x08\x09", 6);
	CHECK(decode_payload(&p, &s, err, sizeof(err)) == 0);
	CHECK(s.block_list && s.block_list->nblocks == 1 && s.block_list->older_than_ns == 5);
	CHECK(s.block_list->blocks[0].stack == 0 && s.block_list->blocks[0].address == 7 &&
	      s.block_list->blocks[0].age_ns == 9);
	snapshot_free(&s);
	p.data[p.len - 4] = 1; /* stack 1 of 1 */
	CHECK(decode_payload(&p, &s, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: blocks section: stack index out of range");
	p.data[p.len - 4] = 0;

	/* Section SEC_MATCH with a figure of a later version: the three known are taken. */
	{
		struct buf m = {0};

		put_varint(&m, 2); /* "bc" */
		put_varint(&m, 4);
		put_varint(&m, 64);
		put_varint(&m, 5);
		put_varint(&m, 9);
		put_varint(&m, 77);
		section(&p, 51, &m);
		buf_free(&m);
	}
	CHECK(decode_payload(&p, &s, err, sizeof(err)) == 0);
	CHECK(s.match && s.match->what && !strcmp(s.match->what, "bc"));
	CHECK(s.match->max_targets == 64 && s.match->traced == 5 && s.match->over_limit == 9);
	snapshot_free(&s);

	/* A section from a later version is skipped. */
	put_varint(&p, 100);
	put_varint(&p, 3);
	buf_put(&p, "new", 3);
	CHECK(decode_payload(&p, &s, err, sizeof(err)) == 0);
	snapshot_free(&s);
	buf_free(&p);
}

TEST(test_bad_payloads)
{
	struct buf p = {0};
	struct snapshot s;
	char err[256];

	check_bad_section(S_STRINGS,
			  (const uint8_t *)"\x01\x03"
					   "a\0b",
			  5, "snapshot: strings section: string contains a NUL byte");
	check_bad_section(S_STRINGS,
			  (const uint8_t *)"\x01\x05"
					   "ab",
			  4, "snapshot: strings section: truncated");
	check_bad_section(S_STRINGS, (const uint8_t *)"\x01\x81\x80\x40", 4,
			  "snapshot: strings section: string longer than 1048576 bytes");
	/* A count far past the bytes there: refused before any allocation. */
	check_bad_section(S_STRINGS, (const uint8_t *)"\xff\xff\xff\x07", 4,
			  "snapshot: strings section: truncated");
	check_bad_section(S_STRINGS, (const uint8_t *)"\xff\xff\xff\xff\x0f", 5,
			  "snapshot: strings section: 4294967295 entries exceed the limit of "
			  "16777216");
	check_bad_section(S_META, (const uint8_t *)"\x03\x00\x00\x00\x00", 5,
			  "snapshot: meta section: string index out of range");
	check_bad_section(S_META, (const uint8_t *)"\x00\x00\x00\x00", 4,
			  "snapshot: meta section: truncated");
	check_bad_section(S_META, (const uint8_t *)"\x00\x00\x00\x00\x00\x00", 6,
			  "snapshot: meta section: 1 unexpected bytes at its end");
	check_bad_section(S_META,
			  (const uint8_t *)"\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f\x00\x00",
			  13, "snapshot: meta section: bad varint");
	check_bad_section(S_META, (const uint8_t *)"\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02",
			  11, "snapshot: meta section: bad varint");
	check_bad_section(S_LOST, (const uint8_t *)"\x09\x00\x00\x00\x00\x00\x00\x00\x00\x00", 10,
			  "snapshot: events_lost section: 9 entries exceed the limit of 8");
	check_bad_section(S_TOTALS, (const uint8_t *)"\x40\x01", 2,
			  "snapshot: totals section: truncated");
	check_bad_section(S_TARGETS, (const uint8_t *)"\x01\x80\x80\x80\x80\x10\0\0\0\0\0\0\0", 13,
			  "snapshot: targets section: value out of range");
	check_bad_section(S_TARGETS, (const uint8_t *)"\x01\x00\x00\x80\x80\x80\x80\x10\0\0\0\0\0",
			  13, "snapshot: targets section: value out of range");
	check_bad_section(S_TARGETS, (const uint8_t *)"\x01\x00\x00\x00\x00\x00\x00\x00\x05", 9,
			  "snapshot: targets section: truncated");
	check_bad_section(S_FRAMES, (const uint8_t *)"\x01\x00\x00\x04\x00\x00\x00", 7,
			  "snapshot: frames section: string index out of range");
	check_bad_section(S_STACKS, (const uint8_t *)"\x01\x00\x01\x01\0\0\0\0\0\0\0", 11,
			  "snapshot: stacks section: frame index out of range");
	check_bad_section(S_STACKS, (const uint8_t *)"\x01\x00\x81\x08\0\0\0\0\0\0\0", 11,
			  "snapshot: stacks section: 1025 entries exceed the limit of 1024");
	check_bad_section(S_STACKS, (const uint8_t *)"\x01\x00\x05\x00\x00", 5,
			  "snapshot: stacks section: truncated");

	/* Sections missing, repeated or out of order. */
	build_payload(&p, S_TARGETS, NULL, 1);
	CHECK(decode_payload(&p, &s, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: missing targets section");
	build_payload(&p, S_STACKS, NULL, 1);
	CHECK(decode_payload(&p, &s, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: missing stacks section");
	build_payload(&p, 0, NULL, 0);
	put_varint(&p, S_STACKS);
	put_varint(&p, 0);
	CHECK(decode_payload(&p, &s, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: section 7 out of order");
	build_payload(&p, 0, NULL, 0);
	put_varint(&p, 9);
	put_varint(&p, 5);
	CHECK(decode_payload(&p, &s, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: payload truncated");
	p.len = 0;
	CHECK(decode_payload(&p, &s, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: missing strings section");
	CHECK(is_zeroed(&s));
	buf_free(&p);
}

/* One kind of stacks per snapshot: a second kind's section is refused. */
TEST(test_one_kind)
{
	static const uint8_t groups[] = {1, 0, 0, 1, 0, 1, 0}; /* by stack, one row, no figures */
	static const uint8_t leaks[] = {0, 0, 0, 0, 1, 0, 0, 0, 0};
	static const uint8_t scan[] = {0, 0, 0};
	struct buf p = {0};
	struct snapshot s;
	char err[256];

	build_payload(&p, 0, NULL, 0);
	section(&p, 43, &(struct buf){.data = (uint8_t *)groups, .len = sizeof(groups)});
	CHECK(decode_payload(&p, &s, err, sizeof(err)) == 0);
	CHECK_EQ_U64(s.kind, SNAP_ROWS);
	snapshot_free(&s);
	section(&p, 44, &(struct buf){.data = (uint8_t *)leaks, .len = sizeof(leaks)});
	CHECK(decode_payload(&p, &s, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: leaks section in a snapshot of rows");
	CHECK(is_zeroed(&s));
	build_payload(&p, 0, NULL, 0);
	section(&p, 44, &(struct buf){.data = (uint8_t *)leaks, .len = sizeof(leaks)});
	section(&p, 47, &(struct buf){.data = (uint8_t *)scan, .len = sizeof(scan)});
	CHECK(decode_payload(&p, &s, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: scan section in a snapshot of leaks");
	CHECK(is_zeroed(&s));
	buf_free(&p);
}

/* A varint past 64 bits: the decoder and the scanner both refuse it, in the same words. */
TEST(test_varint_overflow)
{
	/* 2^64 as a section length: it would wrap to 0 if read without a check */
	static const uint8_t two64[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02};
	struct snapshot_counts c;
	struct buf p = {0};
	struct snapshot s;
	uint8_t *bytes;
	size_t len;
	char err[256];

	build_payload(&p, 0, NULL, 0);
	put_varint(&p, 60);
	buf_put(&p, two64, sizeof(two64));
	bytes = wrap(p.data, p.len, &len);
	CHECK(snapshot_decode(bytes, len, &s, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: payload section: bad varint");
	CHECK(snapshot_scan(bytes, len, &c, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: payload section: bad varint");
	free(bytes);

	/* the stacks section's count */
	{
		struct buf bad = {0};

		buf_put(&bad, two64, sizeof(two64));
		build_payload(&p, S_STACKS, &bad, 0);
		buf_free(&bad);
	}
	bytes = wrap(p.data, p.len, &len);
	CHECK(snapshot_decode(bytes, len, &s, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: stacks section: bad varint");
	CHECK(snapshot_scan(bytes, len, &c, err, sizeof(err)) == -1);
	CHECK_STR(err, "snapshot: stacks section: bad varint");
	free(bytes);
	buf_free(&p);
}

/* Random damage to a real payload, re-wrapped so it passes the CRC. */
TEST(test_mutated_payloads)
{
	struct snapshot s, d;
	uint8_t *bytes;
	size_t len;
	char err[256];
	struct buf payload = {0};
	uLongf plen;
	int ok = 0;

	build_known(&s);
	CHECK_EQ_U64(snapshot_encode(&s, &bytes, &len), 0);
	plen = 0;
	for (int i = 7; i >= 0; i--)
		plen = plen << 8 | bytes[16 + i];
	buf_reserve(&payload, plen);
	CHECK(uncompress(payload.data, &plen, bytes + HEADER_SIZE, len - HEADER_SIZE) == Z_OK);
	payload.len = plen;
	for (int i = 0; i < 20000; i++) {
		struct buf m = {0};

		buf_put(&m, payload.data, payload.len);
		for (uint64_t k = rng() % 4 + 1; k; k--) {
			size_t at = rng() % m.len;

			switch (rng() % 3) {
			case 0:
				m.data[at] ^= (uint8_t)(1u << (rng() % 8));
				break;
			case 1:
				m.data[at] = (uint8_t)rng();
				break;
			default:
				m.len = at + 1;
				break;
			}
		}
		if (decode_payload(&m, &d, err, sizeof(err)) == 0) {
			ok++;
			snapshot_free(&d);
		} else {
			CHECK(good_message(err));
			CHECK(is_zeroed(&d));
		}
		buf_free(&m);
	}
	CHECK(ok < 20000);
	buf_free(&payload);
	free(bytes);
	snapshot_free(&s);
}

TEST(test_select)
{
	struct snapshot s;

	build_known(&s);
	/* live_bytes are 1048576 - i: already in order; peak is 4000000 + i. */
	snapshot_select(&s, MT_SORT_PEAK, 2, 0);
	CHECK_EQ_U64(s.nstacks, 2);
	CHECK_EQ_U64(s.stacks[0].t.peak_live_bytes, 4000003);
	CHECK_EQ_U64(s.stacks[1].t.peak_live_bytes, 4000002);
	snapshot_free(&s);

	build_known(&s);
	snapshot_select(&s, MT_SORT_LIVE, 0, 1000);
	CHECK_EQ_U64(s.nstacks, 2);
	CHECK_EQ_U64(s.stacks[0].pid, 1000);
	CHECK_EQ_U64(s.stacks[1].pid, 1000);
	CHECK_EQ_U64(s.stacks[0].t.live_bytes, 1048576);
	CHECK_EQ_U64(s.stacks[1].t.live_bytes, 1048573);
	snapshot_free(&s);

	build_known(&s);
	snapshot_select(&s, MT_SORT_COUNT, 0, 4242);
	CHECK_EQ_U64(s.nstacks, 0);
	snapshot_free(&s);

	/* Stacks with nothing to sort by are not shown. */
	build_known(&s);
	s.stacks[1].t.live_bytes = 0;
	snapshot_select(&s, MT_SORT_LIVE, 0, 0);
	CHECK_EQ_U64(s.nstacks, 3);
	CHECK_EQ_U64(s.stacks[1].t.live_bytes, 1048574);
	snapshot_free(&s);

	/* Ties go as the daemon orders them: more allocations first, then
	 * the earlier stack (mt_rank_sort). */
	build_known(&s);
	for (uint32_t i = 0; i < s.nstacks; i++)
		s.stacks[i].t.bytes_allocated = 5;
	snapshot_select(&s, MT_SORT_ALLOCATED, 3, 0);
	CHECK_EQ_U64(s.nstacks, 3);
	for (uint32_t i = 0; i < s.nstacks; i++)
		CHECK_EQ_U64(s.stacks[i].t.allocations, 35 - i);
	snapshot_free(&s);
	build_known(&s);
	for (uint32_t i = 0; i < s.nstacks; i++) {
		s.stacks[i].t.bytes_allocated = 5;
		s.stacks[i].t.allocations = 7;
		s.stacks[i].t.frees = i;
	}
	snapshot_select(&s, MT_SORT_ALLOCATED, 3, 0);
	CHECK_EQ_U64(s.nstacks, 3);
	for (uint32_t i = 0; i < s.nstacks; i++)
		CHECK_EQ_U64(s.stacks[i].t.frees, i);
	snapshot_free(&s);
	/* The block list follows its stacks: dropped with them, renumbered. */
	build_known(&s);
	s.block_list = xcalloc(1, sizeof(*s.block_list));
	s.block_list->nblocks = s.nstacks;
	s.block_list->blocks = xcalloc(s.nstacks, sizeof(*s.block_list->blocks));
	for (uint32_t i = 0; i < s.block_list->nblocks; i++) {
		s.block_list->blocks[i].stack = i;
		s.block_list->blocks[i].size = 100 + i;
	}
	snapshot_select(&s, MT_SORT_PEAK, 2, 0); /* the last two, largest first */
	CHECK_EQ_U64(s.block_list->nblocks, 2);
	for (uint32_t i = 0; i < s.block_list->nblocks; i++)
		CHECK_EQ_U64(s.stacks[s.block_list->blocks[i].stack].t.peak_live_bytes,
			     4000000 + s.block_list->blocks[i].size - 100);
	snapshot_free(&s);
}

/*
 * A snapshot written by the encoder before the allocator mix grew past 16
 * kinds (funcs section only, at most 16 entries): malloc 7 calls / 700 bytes,
 * pymalloc_realloc 2 / 64, pymalloc_free 3 / 470, pid 42 "python3 x.py".
 */
/* (a string literal: sizeof counts its NUL) */
static const uint8_t old_funcs16_blob[] =
    "\x4d\x54\x53\x4e\x41\x50\x0d\x0a\x01\x00\x00\x00\x00\x00\x00\x00"
    "\xd4\x00\x00\x00\x00\x00\x00\x00\x6c\x00\x00\x00\x00\x00\x00\x00"
    "\x6e\x08\x0d\x98\x78\x01\x63\x14\x61\x62\x35\xd0\x33\xd4\x33\xe0"
    "\x29\xa8\x2c\xc9\xc8\xcf\x33\x56\xa8\xd0\x2b\xa8\x64\xe2\x65\x6c"
    "\x68\x58\xb1\xf1\xf1\xfc\xe7\xa7\xc5\x19\x18\x18\x98\x05\xf9\x79"
    "\x18\x2e\x71\x02\x59\x70\xc0\xc2\xc9\x01\x63\xb3\x4a\x32\x6a\x31"
    "\x32\x32\x30\x31\x30\x60\xa8\x62\x63\x64\x60\x67\x64\x10\x70\x72"
    "\x84\xaa\xe5\x81\xe9\x21\x99\x16\x54\x16\x60\xdf\xc3\x8a\x5b\x1b"
    "\x93\x03\xf3\x35\x66\x21\x46\x06\x09\xa0\x33\x00\x56\xf3\x10\xb5";

/* Sections of an encoded snapshot's payload: the body of tag, or NULL. */
static const uint8_t *find_section(const uint8_t *p, size_t len, uint64_t want, size_t *out_len)
{
	size_t i = 0;

	while (i < len) {
		uint64_t v[2] = {0, 0};

		for (int k = 0; k < 2; k++) {
			for (int shift = 0; i < len; shift += 7) {
				v[k] |= (uint64_t)(p[i] & 0x7f) << shift;
				if (!(p[i++] & 0x80))
					break;
			}
		}
		if (v[0] == want) {
			*out_len = v[1];
			return p + i;
		}
		i += v[1];
	}
	return NULL;
}

TEST(test_funcs_compat)
{
	struct snapshot s, d;
	char err[256];
	uint8_t *bytes, *payload;
	size_t len, flen;
	uLongf plen;
	const uint8_t *funcs;

	CHECK(snapshot_decode(old_funcs16_blob, sizeof(old_funcs16_blob) - 1, &s, err,
			      sizeof(err)) == 0);
	CHECK_STR(s.tracer_version, "0.1.0");
	CHECK_EQ_U64(s.ntargets, 1);
	CHECK_EQ_U64(s.targets[0].pid, 42);
	CHECK_STR(s.targets[0].command, "python3 x.py");
	CHECK_EQ_U64(s.allocations_by_func[MT_FN_MALLOC], 7);
	CHECK_EQ_U64(s.bytes_by_func[MT_FN_MALLOC], 700);
	CHECK_EQ_U64(s.allocations_by_func[MT_FN_PYMALLOC_REALLOC], 2);
	CHECK_EQ_U64(s.bytes_by_func[MT_FN_PYMALLOC_REALLOC], 64);
	CHECK_EQ_U64(s.allocations_by_func[MT_FN_PYMALLOC_FREE], 3);
	CHECK_EQ_U64(s.bytes_by_func[MT_FN_PYMALLOC_FREE], 470);
	for (int i = 16; i < SNAP_MAX_FUNCS; i++)
		CHECK_EQ_U64(s.allocations_by_func[i] + s.bytes_by_func[i], 0);

	/* kinds past 16 travel in funcs_ext; funcs keeps 16 entries, which a
	 * version 1 reader of before this change accepts */
	s.allocations_by_func[MT_FN_MMAP] = 5;
	s.bytes_by_func[MT_FN_MMAP] = 5 << 20;
	s.allocations_by_func[SNAP_MAX_FUNCS - 1] = 1;
	CHECK(snapshot_encode(&s, &bytes, &len) == 0);
	CHECK(snapshot_decode(bytes, len, &d, err, sizeof(err)) == 0);
	CHECK(!memcmp(d.allocations_by_func, s.allocations_by_func, sizeof(s.allocations_by_func)));
	CHECK(!memcmp(d.bytes_by_func, s.bytes_by_func, sizeof(s.bytes_by_func)));
	CHECK_EQ_U64(d.bytes_by_func[MT_FN_MMAP], 5 << 20);
	snapshot_free(&d);
	CHECK_EQ_U64(bytes[8], 1); /* still version 1 */
	plen = (uLongf)(bytes[16] | bytes[17] << 8 | bytes[18] << 16 | (uLongf)bytes[19] << 24);
	payload = xmalloc(plen);
	CHECK(uncompress(payload, &plen, bytes + HEADER_SIZE, len - HEADER_SIZE) == Z_OK);
	funcs = find_section(payload, plen, 17, &flen);
	CHECK(funcs && flen > 0 && funcs[0] == 16);
	funcs = find_section(payload, plen, 19, &flen);
	CHECK(funcs && flen > 0 && funcs[0] == SNAP_MAX_FUNCS - 16);
	free(payload);
	free(bytes);
	snapshot_free(&s);
}

TEST(test_names)
{
	struct snapshot s = {0};

	CHECK_STR(snap_target_state_name(SNAP_TARGET_ATTACHING), "attaching");
	CHECK_STR(snap_target_state_name(SNAP_TARGET_ATTACHED), "attached");
	CHECK_STR(snap_target_state_name(SNAP_TARGET_EXITED), "exited");
	CHECK_STR(snap_target_state_name(SNAP_TARGET_DETACHED), "detached");
	CHECK_STR(snap_target_state_name(SNAP_TARGET_EXECED), "execed");
	CHECK_STR(snap_target_state_name(SNAP_TARGET_STATE_COUNT), "unknown");
	CHECK_STR(mt_sort_name(MT_SORT_LIVE), "live");
	CHECK_STR(mt_sort_name(MT_SORT_PEAK), "peak");
	CHECK(mt_sort_name(MT_SORT_KEY_COUNT) == NULL);
	CHECK(mt_sort_name(-1) == NULL);
	CHECK_EQ_U64(mt_sort_from_name("allocated"), MT_SORT_ALLOCATED);
	CHECK_EQ_U64(mt_sort_from_name("count"), MT_SORT_COUNT);
	CHECK(mt_sort_from_name("size") == -1);
	s.events_lost[1] = 2;
	s.events_lost[4] = 40;
	CHECK_EQ_U64(snapshot_events_lost(&s), 42);
	/* the stack counters' names and numbers, generated from MT_STACK_COUNTERS */
	{
		struct mt_stack_counters t;

		for (size_t i = 0; i < sizeof(t) / sizeof(uint64_t); i++)
			((uint64_t *)&t)[i] = 100 + i;
		CHECK_EQ_U64(MT_NSTACK_COUNTERS, sizeof(t) / sizeof(uint64_t));
		CHECK_STR(mt_stack_counter_descs[MT_SC_live_bytes].name, "live_bytes");
		CHECK_EQ_U64(mt_stack_counter_get(&t, MT_SC_live_bytes), t.live_bytes);
		CHECK_STR(mt_stack_counter_descs[MT_SC_inherited_bytes].name, "inherited_bytes");
		CHECK_EQ_U64(mt_stack_counter_descs[MT_SC_inherited_bytes].section, 2);
		CHECK_EQ_U64(mt_stack_counter_get(&t, MT_SC_temporary_allocations),
			     t.temporary_allocations);
		CHECK_EQ_U64(mt_stack_counter_descs[MT_SC_temporary_allocations].section, 1);
		CHECK_EQ_U64(mt_stack_counter_get(&t, MT_SC_allocations), 100);
	}
}

UNIT_MAIN()
