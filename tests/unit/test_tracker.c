// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of the accounting core: the heap table, stack interning and the
 * event semantics of docs/metrics.md (realloc, unknown and missed frees, peak
 * and live-at-peak), driven by hand-made ring buffer events.
 */
#include <stdlib.h>

#include "daemon/core/heap.h"
#include "daemon/core/stacks.h"
#include "daemon/core/tracker.h"
#include "unit.h"

#define PID 100
#define TID 101

static unsigned char evbuf[sizeof(struct mt_event) + (MT_MAX_FRAMES + 1) * 8];
static uint64_t now_ns = 1000;
static uint8_t ev_flags; /* MT_EVF_* of the events sent */

static void send(struct tracker *t, int kind, int func, uint32_t tid, uint64_t addr, uint64_t old,
		 uint64_t size, uint64_t site)
{
	struct mt_event *ev = (struct mt_event *)evbuf;
	size_t len = sizeof(*ev);

	memset(evbuf, 0, sizeof(evbuf));
	ev->kind = (uint8_t)kind;
	ev->func = (uint8_t)func;
	ev->flags = ev_flags;
	ev->tgid = PID;
	ev->tid = tid;
	ev->time_ns = now_ns += 10;
	ev->addr = addr;
	ev->old_addr = old;
	ev->size = size;
	if (site) {
		ev->nframes = 2;
		ev->frames[0] = site;
		ev->frames[1] = 0x400000;
		len += 16;
	}
	tracker_event(t, evbuf, len);
}

static void alloc(struct tracker *t, uint64_t addr, uint64_t size, uint64_t site)
{
	send(t, MT_EV_ALLOC, MT_FN_MALLOC, TID, addr, 0, size, site);
}

static void release(struct tracker *t, uint64_t addr)
{
	send(t, MT_EV_FREE, MT_FN_FREE, TID, addr, 0, 0, 0);
}

static void realloc_call(struct tracker *t, uint32_t tid, uint64_t old, uint64_t addr,
			 uint64_t size, uint64_t site)
{
	if (old)
		send(t, MT_EV_REALLOC_ENTER, MT_FN_REALLOC, tid, 0, old, 0, 0);
	send(t, old ? MT_EV_REALLOC : MT_EV_ALLOC, MT_FN_REALLOC, tid, addr, old, size,
	     addr ? site : 0);
}

static void setup(struct tracker *t)
{
	CHECK(tracker_init(t, 0, 0) == 0);
	CHECK(tracker_add_target(t, PID, 1000) != NULL);
}

static const struct stack_entry *site_stack(struct tracker *t, uint64_t site)
{
	uint32_t i;

	for (i = 0; i < t->stacks.count; i++) {
		const struct stack_entry *s = stack_get(&t->stacks, i);

		if (s->nframes && stack_word(&t->stacks, i, 0) == site)
			return s;
	}
	return NULL;
}

static void check_invariants(struct tracker *t)
{
	const struct mt_counters *c = &t->totals;

	CHECK_EQ_U64(c->live_allocations,
		     c->allocations - c->frees - c->missed_frees - c->untracked_allocations);
	CHECK_EQ_U64(c->live_allocations, t->heap.count);
	CHECK(c->peak_live_bytes >= c->live_bytes);
}

/* A stack table with one empty stack for each of tgids 1, 2 and 7 (the heap
 * takes a block's tgid from its stack). */
static uint32_t stack_of[8];

static void tgid_stacks(struct stack_table *st)
{
	int is_new;

	stacks_init(st, 0);
	for (uint32_t tgid = 1; tgid < 8; tgid++)
		stack_of[tgid] = stack_intern(st, tgid, NULL, 0, &is_new);
}

/* The size of a live block, or UINT64_MAX when it is not live. */
static uint64_t live_size(const struct heap *h, uint32_t tgid, uint64_t addr)
{
	struct heap_block b;

	return heap_get(h, tgid, addr, &b) ? b.size : UINT64_MAX;
}

TEST(heap_insert_find_remove)
{
	struct stack_table st;
	struct heap h;
	struct heap_block b = {.addr = 0x1000, .size = 10, .tgid = 1}, out;
	uint64_t i;

	tgid_stacks(&st);
	b.stack = stack_of[1];
	CHECK(heap_init(&h, 0, &st) == 0);
	CHECK(heap_insert(&h, &b, &out) == HEAP_INSERTED);
	b.size = 20;
	CHECK(heap_insert(&h, &b, &out) == HEAP_REPLACED);
	CHECK_EQ_U64(out.size, 10);
	CHECK_EQ_U64(out.tgid, 1);
	CHECK_EQ_U64(h.count, 1);
	/* same address, other process: a different block */
	b.tgid = 2;
	b.stack = stack_of[2];
	CHECK(heap_insert(&h, &b, &out) == HEAP_INSERTED);
	CHECK(heap_get(&h, 1, 0x1000, &out) && out.size == 20);
	CHECK(heap_remove(&h, 1, 0x1000, &out) == 1);
	CHECK(heap_remove(&h, 1, 0x1000, &out) == 0);
	CHECK(heap_get(&h, 2, 0x1000, NULL));
	/* sizes and times as they were, to the microsecond, up to 48 bits */
	b.addr = 0x2000;
	b.size = (1ull << 47) + 12345;
	b.time_ns = 987654321123000ull;
	CHECK(heap_insert(&h, &b, NULL) == HEAP_INSERTED);
	CHECK(heap_get(&h, 2, 0x2000, &out) && out.size == b.size && out.time_ns == b.time_ns);
	CHECK(heap_set_size(&h, 2, 0x2000, 7) && heap_get(&h, 2, 0x2000, &out) && out.size == 7);
	b.size = 1ull << 48; /* one too many */
	b.addr = 0x3000;
	CHECK(heap_insert(&h, &b, NULL) == HEAP_FULL);
	CHECK(heap_remove(&h, 2, 0x2000, NULL) == 1);
	/* many blocks force growth; backward-shift deletion keeps all findable */
	for (i = 1; i <= 100000; i++) {
		struct heap_block x = {.addr = i * 16, .size = i, .tgid = 7, .stack = stack_of[7]};

		CHECK(heap_insert(&h, &x, NULL) == HEAP_INSERTED);
	}
	for (i = 1; i <= 100000; i += 2)
		CHECK(heap_remove(&h, 7, i * 16, &out) == 1 && out.size == i);
	for (i = 2; i <= 100000; i += 2)
		CHECK(heap_get(&h, 7, i * 16, &out) && out.size == i);
	for (i = 1; i <= 100000; i += 2)
		CHECK(!heap_get(&h, 7, i * 16, NULL));
	CHECK_EQ_U64(h.count, 50000 + 1);
	/* 18 bytes a slot, at least 72% full once grown */
	CHECK_EQ_U64(sizeof(struct heap_slot), 18);
	CHECK(h.bytes * 72 <= (100000 + 1) * 18 * 100 + 16 * 18 * HEAP_SHARDS * 100);
	/* every block once by iteration */
	{
		uint64_t pos = 0, seen = 0, sum = 0;

		while (heap_next(&h, &pos, &out)) {
			seen++;
			sum += out.size;
		}
		CHECK_EQ_U64(seen, h.count);
		CHECK_EQ_U64(sum, 50000ull * 50001 + 20);
	}
	heap_destroy(&h);
	stacks_destroy(&st);
}

TEST(heap_limit)
{
	struct stack_table st;
	struct heap h;
	struct heap_block b = {.addr = 16, .size = 1, .tgid = 1};

	tgid_stacks(&st);
	b.stack = stack_of[1];
	CHECK(heap_init(&h, 2, &st) == 0);
	CHECK(heap_insert(&h, &b, NULL) == HEAP_INSERTED);
	b.addr = 32;
	CHECK(heap_insert(&h, &b, NULL) == HEAP_INSERTED);
	b.addr = 48;
	CHECK(heap_insert(&h, &b, NULL) == HEAP_FULL);
	b.addr = 32; /* replacing is always possible */
	CHECK(heap_insert(&h, &b, NULL) == HEAP_REPLACED);
	heap_destroy(&h);
	stacks_destroy(&st);
}

/*
 * The heap against a plain list of what it should hold, under random
 * inserts, replacements, resizes and removals: blocks a slot holds, blocks
 * it cannot (addresses from 2^48 on, sizes from 16 MiB on: the side table),
 * and one address in many processes (one home: runs of hundreds of blocks,
 * and runs that wrap around a shard's end). The table's invariants
 * (heap_valid) every 97 steps.
 */
#define MODEL_TGIDS 1000
#define MODEL_N	    4000

struct model_block {
	int live;
	uint64_t addr, size, time_ns;
	uint32_t tgid;
};

static uint64_t model_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

TEST(heap_model)
{
	static struct model_block m[MODEL_N];
	static uint32_t tstack[MODEL_TGIDS + 1];
	struct stack_table st;
	struct heap h;
	uint64_t x = 88172645463325252ull;
	size_t live = 0;
	int is_new, ok = 1, far = 0, wrapped = 0;

	CHECK(stacks_init(&st, 0) == 0);
	for (uint32_t tgid = 1; tgid <= MODEL_TGIDS; tgid++)
		tstack[tgid] = stack_intern(&st, tgid, NULL, 0, &is_new);
	CHECK(heap_init(&h, 0, &st) == 0);
	for (int i = 0; i < MODEL_N; i++) {
		uint64_t r = model_rand(&x);

		m[i].tgid = 1 + (uint32_t)(r % MODEL_TGIDS);
		switch (i % 5) {
		case 0: /* one address, many processes */
			m[i].addr = 0x7f0000001230ull;
			break;
		case 1: /* past 48 bits */
			m[i].addr = (1ull << 48) + (r >> 20 << 4);
			break;
		default:
			m[i].addr = 0x555500000000ull + (r >> 40 << 4);
			break;
		}
	}
	for (int step = 0; step < 200000 && ok; step++) {
		uint64_t r = model_rand(&x);
		struct model_block *b = &m[r % MODEL_N];
		struct heap_block hb, out;
		int res, found = 0;

		/* another live block at the same key: the model keeps one */
		for (int j = 0; j < MODEL_N && !found; j++)
			if (m[j].live && m[j].addr == b->addr && m[j].tgid == b->tgid && &m[j] != b)
				found = 1;
		if (found)
			continue;
		switch (r >> 60) {
		case 0:
		case 1:
		case 2:
		case 3:
		case 4:
		case 5:
		case 6:
			/* allocate (or replace) */
			hb.addr = b->addr;
			hb.tgid = b->tgid;
			hb.stack = tstack[b->tgid];
			/* mostly small; some about a slot's most (16 MiB), some far past */
			hb.size = r >> 54 & 15	? (r >> 8 & 0xfff)
				  : r >> 53 & 1 ? HEAP_SLOT_MAX_SIZE - 1 + (r >> 8 & 3)
						: (r >> 8 & 0xffffffffffull);
			hb.time_ns = (r >> 12 & 0xffffffffffffull) * 1000;
			res = heap_insert(&h, &hb, &out);
			ok &= res == (b->live ? HEAP_REPLACED : HEAP_INSERTED);
			if (b->live)
				ok &= out.size == b->size && out.time_ns == b->time_ns &&
				      out.addr == b->addr && out.tgid == b->tgid;
			else
				live++;
			b->live = 1;
			b->size = hb.size;
			b->time_ns = hb.time_ns;
			break;
		case 7:
		case 8:
			/* resize */
			if (b->live) {
				b->size = r >> 18 & 15 ? r >> 22 & 0xff : r >> 22 & 0x3ffffffffull;
				ok &= heap_set_size(&h, b->tgid, b->addr, b->size);
			} else {
				ok &= !heap_set_size(&h, b->tgid, b->addr, 5);
			}
			break;
		default:
			/* free */
			res = heap_remove(&h, b->tgid, b->addr, &out);
			ok &= res == b->live;
			if (b->live) {
				ok &= out.size == b->size && out.time_ns == b->time_ns &&
				      out.addr == b->addr && out.tgid == b->tgid;
				live--;
			}
			b->live = 0;
			break;
		}
		ok &= h.count == live;
		if (step % 97 == 0 || step > 199000)
			ok &= heap_valid(&h);
		if (step % 97 == 0) {
			for (unsigned k = 0; k < HEAP_SHARDS; k++) {
				for (uint32_t i = 0; i < h.shards[k].cap; i++)
					far |= heap_slot_distance(&h, k, i) > 255;
				wrapped |= heap_slot_distance(&h, k, 0) > 0;
			}
		}
	}
	CHECK(ok);
	CHECK(heap_valid(&h));
	CHECK(far);	/* a run longer than 255 */
	CHECK(wrapped); /* and runs across a shard's end: the cases were met */
	/* everything by lookup, and by iteration once */
	for (int i = 0; i < MODEL_N; i++) {
		struct heap_block out;

		int held = 0;

		if (m[i].live) {
			CHECK(heap_get(&h, m[i].tgid, m[i].addr, &out) && out.size == m[i].size &&
			      out.time_ns == m[i].time_ns);
			continue;
		}
		for (int j = 0; j < MODEL_N; j++)
			held |= m[j].live && m[j].addr == m[i].addr && m[j].tgid == m[i].tgid;
		CHECK(held || !heap_get(&h, m[i].tgid, m[i].addr, NULL));
	}
	{
		uint64_t pos = 0, seen = 0;
		struct heap_block out;

		while (heap_next(&h, &pos, &out))
			seen++;
		CHECK_EQ_U64(seen, live);
	}
	CHECK(h.wide.count > 0);
	heap_destroy(&h);
	stacks_destroy(&st);
}

TEST(stack_interning)
{
	struct stack_table st;
	uint64_t a[3] = {1, 2, 3}, b[3] = {1, 2, 4};
	uint32_t i, x, y, z;
	int is_new;

	CHECK(stacks_init(&st, 0) == 0);
	x = stack_intern(&st, 1, a, 3, &is_new);
	CHECK(is_new == 1);
	y = stack_intern(&st, 1, b, 3, &is_new);
	CHECK(is_new == 1 && x != y);
	CHECK(stack_intern(&st, 1, a, 3, &is_new) == x && is_new == 0);
	/* a prefix, and the same frames in another process, are other stacks */
	z = stack_intern(&st, 1, a, 2, &is_new);
	CHECK(is_new == 1 && z != x);
	CHECK(stack_intern(&st, 2, a, 3, &is_new) != x && is_new == 1);
	/* growth keeps indexes and frames stable */
	for (i = 0; i < 50000; i++) {
		uint64_t f[2] = {i, i * 7};

		stack_intern(&st, 3, f, 2, &is_new);
		CHECK(is_new);
	}
	CHECK(stack_intern(&st, 1, a, 3, &is_new) == x && !is_new);
	CHECK_EQ_U64(stack_word(&st, y, 2), 4);
	CHECK_EQ_U64(st.count, 50004);
	/* words are held once: 1, 2, 3, 4 of a and b, then i and i * 7 */
	CHECK(st.nwords <= 4 + 2 * 50000);
	/* nodes: one for each stack of at most STACK_RUN frames so far; the
	 * same frames in process 2 are a's node */
	CHECK_EQ_U64(st.nnodes, 3 + 50000);
	{
		/* 20 frames: runs of 8, 8 and 4 from the outermost (3 nodes); a
		 * stack with its outer 18 frames shares the first 2 and adds a
		 * run of 2, one with its outer 12 frames shares the outermost and
		 * adds a run of 4 */
		uint64_t f[20];
		uint32_t before = st.nnodes, s20, s18, s12;

		for (i = 0; i < 20; i++)
			f[i] = 1000 + i;
		s20 = stack_intern(&st, 4, f, 20, &is_new);
		CHECK(is_new && st.nnodes == before + 3);
		s18 = stack_intern(&st, 4, f + 2, 18, &is_new);
		CHECK(is_new && st.nnodes == before + 4);
		s12 = stack_intern(&st, 4, f + 8, 12, &is_new);
		CHECK(is_new && st.nnodes == before + 4 + 1);
		CHECK_EQ_U64(stack_word(&st, s20, 19), 1019);
		CHECK_EQ_U64(stack_word(&st, s18, 0), 1002);
		CHECK_EQ_U64(stack_word(&st, s12, 11), 1019);
		CHECK(stack_intern(&st, 4, f + 2, 18, &is_new) == s18 && !is_new);
		/* a cursor from any word: inside a run, at a run's start, at the end */
		for (uint32_t from = 0; from <= 20; from++) {
			struct stack_cursor c;
			uint32_t num, k = from;

			stack_cursor_init(&c, &st, s20, from);
			while (stack_cursor_next(&c, &num))
				CHECK_EQ_U64(st.words[num], 1000 + k++);
			CHECK_EQ_U64(k, 20);
		}
	}
	CHECK_EQ_U64(stack_get(&st, x)->leaf,
		     stack_get(&st, stack_intern(&st, 2, a, 3, &is_new))->leaf);
	{
		uint64_t w[STACK_MAX_FRAMES];

		CHECK_EQ_U64(stack_words(&st, y, w), 3);
		CHECK(w[0] == 1 && w[1] == 2 && w[2] == 4);
		CHECK_EQ_U64(stack_words(&st, z, w), 2);
		CHECK(w[0] == 1 && w[1] == 2);
	}
	stacks_destroy(&st);

	CHECK(stacks_init(&st, 1) == 0);
	CHECK(stack_intern(&st, 1, a, 3, &is_new) == 0);
	CHECK(stack_intern(&st, 1, b, 3, &is_new) == STACK_NONE);
	stacks_destroy(&st);
}

TEST(malloc_free_counts)
{
	struct tracker t;

	setup(&t);
	alloc(&t, 0x1000, 100, 0xa);
	alloc(&t, 0x2000, 50, 0xb);
	release(&t, 0x1000);
	CHECK_EQ_U64(t.totals.allocations, 2);
	CHECK_EQ_U64(t.totals.bytes_allocated, 150);
	CHECK_EQ_U64(t.totals.frees, 1);
	CHECK_EQ_U64(t.totals.bytes_freed, 100);
	CHECK_EQ_U64(t.totals.live_allocations, 1);
	CHECK_EQ_U64(t.totals.live_bytes, 50);
	CHECK_EQ_U64(t.totals.peak_live_bytes, 150);
	CHECK_EQ_U64(t.totals.peak_time_ns, 20); /* second event, 10 ns apart */
	CHECK_EQ_U64(site_stack(&t, 0xa)->t.live_bytes, 0);
	CHECK_EQ_U64(site_stack(&t, 0xa)->t.frees, 1);
	CHECK_EQ_U64(site_stack(&t, 0xb)->t.live_bytes, 50);
	CHECK_EQ_U64(t.targets[0].c.live_bytes, 50);
	check_invariants(&t);
	tracker_destroy(&t);
}

TEST(unknown_and_missed_frees)
{
	struct tracker t;

	setup(&t);
	release(&t, 0x9000); /* allocated before tracing began */
	CHECK_EQ_U64(t.totals.unknown_frees, 1);
	CHECK_EQ_U64(t.totals.frees, 0);
	CHECK_EQ_U64(t.totals.live_bytes, 0);
	alloc(&t, 0x1000, 10, 0xa);
	alloc(&t, 0x1000, 30, 0xb); /* the free of the first was missed */
	CHECK_EQ_U64(t.totals.missed_frees, 1);
	CHECK_EQ_U64(t.totals.missed_free_bytes, 10);
	CHECK_EQ_U64(t.totals.live_bytes, 30);
	CHECK_EQ_U64(t.totals.live_allocations, 1);
	CHECK_EQ_U64(site_stack(&t, 0xa)->t.live_bytes, 0);
	CHECK_EQ_U64(site_stack(&t, 0xa)->t.frees, 0);
	check_invariants(&t);
	tracker_destroy(&t);
}

/*
 * A second free of an address freed already, with no allocation there in
 * between (glibc's thread exit frees its cached chunks again), is nothing:
 * not an unknown free; an allocation there makes a free of it a free again.
 */
TEST(refree_is_nothing)
{
	struct tracker t;

	setup(&t);
	alloc(&t, 0x1000, 10, 0xa);
	release(&t, 0x1000);
	release(&t, 0x1000); /* the allocator's own second free */
	CHECK_EQ_U64(t.totals.frees, 1);
	CHECK_EQ_U64(t.totals.unknown_frees, 0);
	CHECK_EQ_U64(t.events_refree, 1);
	release(&t, 0x9000); /* allocated before tracing began */
	release(&t, 0x9000); /* and cached: its second free is nothing too */
	CHECK_EQ_U64(t.totals.unknown_frees, 1);
	CHECK_EQ_U64(t.events_refree, 2);
	alloc(&t, 0x1000, 20, 0xa); /* in use again */
	release(&t, 0x1000);
	CHECK_EQ_U64(t.totals.frees, 2);
	CHECK_EQ_U64(t.totals.bytes_freed, 30);
	realloc_call(&t, TID, 0, 0x3000, 8, 0xb);
	realloc_call(&t, TID, 0x3000, 0x4000, 16, 0xb); /* moved: 0x3000 freed */
	release(&t, 0x3000);
	CHECK_EQ_U64(t.totals.unknown_frees, 1);
	CHECK_EQ_U64(t.events_refree, 3);
	/* past TRACKER_FREED_MAX freed addresses all are forgotten: counted as
	 * unknown then, never as a free */
	for (uint64_t i = 0; i <= TRACKER_FREED_MAX; i++)
		release(&t, 0x100000000ull + 16 * i);
	release(&t, 0x1000);
	CHECK_EQ_U64(t.totals.unknown_frees, 1 + (TRACKER_FREED_MAX + 1) + 1);
	CHECK_EQ_U64(t.totals.frees, 3);
	check_invariants(&t);
	tracker_destroy(&t);
}

/* Once an event says the BPF side lost one, an allocation may have gone
 * unseen: a free of an address freed already counts as unknown again. */
TEST(refree_after_losses)
{
	struct tracker t;

	setup(&t);
	alloc(&t, 0x1000, 10, 0xa);
	release(&t, 0x1000);
	release(&t, 0x1000);
	CHECK_EQ_U64(t.totals.unknown_frees, 0);
	alloc(&t, 0x2000, 10, 0xa);
	release(&t, 0x2000);
	ev_flags = MT_EVF_LOSSES; /* (the allocation at 0x2000 that followed was lost) */
	release(&t, 0x2000);
	ev_flags = 0; /* (a later event without it changes nothing) */
	release(&t, 0x1000);
	CHECK_EQ_U64(t.totals.unknown_frees, 2);
	CHECK_EQ_U64(t.totals.frees, 2);
	CHECK_EQ_U64(t.events_refree, 1);
	check_invariants(&t);
	tracker_destroy(&t);
}

TEST(realloc_semantics)
{
	struct tracker t;

	setup(&t);
	realloc_call(&t, TID, 0, 0x1000, 10, 0xa); /* realloc(NULL, 10): an allocation */
	CHECK_EQ_U64(t.totals.allocations, 1);
	CHECK_EQ_U64(t.totals.frees, 0);
	realloc_call(&t, TID, 0x1000, 0x1000, 20, 0xb); /* in place: free + allocation */
	CHECK_EQ_U64(t.totals.allocations, 2);
	CHECK_EQ_U64(t.totals.frees, 1);
	CHECK_EQ_U64(t.totals.bytes_freed, 10);
	CHECK_EQ_U64(t.totals.live_bytes, 20);
	realloc_call(&t, TID, 0x1000, 0x5000, 40, 0xb); /* moved */
	CHECK_EQ_U64(t.totals.live_bytes, 40);
	CHECK_EQ_U64(t.totals.live_allocations, 1);
	realloc_call(&t, TID, 0x5000, 0, 1000, 0xb); /* failed: nothing changes */
	CHECK_EQ_U64(t.totals.allocations, 3);
	CHECK_EQ_U64(t.totals.frees, 2);
	CHECK_EQ_U64(t.totals.live_bytes, 40);
	CHECK(heap_get(&t.heap, PID, 0x5000, NULL));
	realloc_call(&t, TID, 0x5000, 0, 0, 0); /* realloc(p, 0) returning NULL: a free */
	CHECK_EQ_U64(t.totals.frees, 3);
	CHECK_EQ_U64(t.totals.bytes_freed, 70);
	CHECK_EQ_U64(t.totals.live_bytes, 0);
	CHECK_EQ_U64(t.totals.live_allocations, 0);
	realloc_call(&t, TID, 0x7000, 0x8000, 5, 0xc); /* old block predates tracing */
	CHECK_EQ_U64(t.totals.unknown_frees, 1);
	CHECK_EQ_U64(t.totals.allocations, 4);
	CHECK_EQ_U64(t.totals.live_bytes, 5);
	CHECK_EQ_U64(t.totals.peak_live_bytes, 40);
	check_invariants(&t);
	tracker_destroy(&t);
}

TEST(realloc_race_with_other_thread)
{
	struct tracker t;

	/* Thread 1 reallocs 0x1000 to 0x2000; before its return event, thread 2
	 * is handed 0x1000 by malloc. Neither event may disturb the other. */
	setup(&t);
	alloc(&t, 0x1000, 10, 0xa);
	send(&t, MT_EV_REALLOC_ENTER, MT_FN_REALLOC, 1, 0, 0x1000, 0, 0);
	send(&t, MT_EV_ALLOC, MT_FN_MALLOC, 2, 0x1000, 0, 7, 0xd);
	send(&t, MT_EV_REALLOC, MT_FN_REALLOC, 1, 0x2000, 0x1000, 30, 0xb);
	CHECK_EQ_U64(t.totals.missed_frees, 0);
	CHECK_EQ_U64(t.totals.allocations, 3);
	CHECK_EQ_U64(t.totals.frees, 1);
	CHECK_EQ_U64(t.totals.live_bytes, 37);
	CHECK(live_size(&t.heap, PID, 0x1000) == 7);
	check_invariants(&t);
	tracker_destroy(&t);
}

TEST(realloc_enter_lost)
{
	struct tracker t;

	setup(&t);
	alloc(&t, 0x1000, 10, 0xa);
	/* only the return event arrived */
	send(&t, MT_EV_REALLOC, MT_FN_REALLOC, TID, 0x2000, 0x1000, 30, 0xb);
	CHECK_EQ_U64(t.totals.frees, 1);
	CHECK_EQ_U64(t.totals.live_bytes, 30);
	check_invariants(&t);
	tracker_destroy(&t);
}

TEST(peak_per_stack)
{
	struct tracker t;

	setup(&t);
	alloc(&t, 0x1000, 100, 0xa);
	alloc(&t, 0x2000, 300, 0xb); /* peak: a=100, b=300 */
	release(&t, 0x2000);
	alloc(&t, 0x3000, 50, 0xa); /* a=150, below the peak of 400 */
	CHECK_EQ_U64(t.totals.peak_live_bytes, 400);
	CHECK_EQ_U64(tracker_stack_peak_bytes(&t, site_stack(&t, 0xa)), 100);
	CHECK_EQ_U64(tracker_stack_peak_bytes(&t, site_stack(&t, 0xb)), 300);
	alloc(&t, 0x4000, 500, 0xc); /* new peak 650: a=150, b=0, c=500 */
	CHECK_EQ_U64(t.totals.peak_live_bytes, 650);
	CHECK_EQ_U64(tracker_stack_peak_bytes(&t, site_stack(&t, 0xa)), 150);
	CHECK_EQ_U64(tracker_stack_peak_bytes(&t, site_stack(&t, 0xb)), 0);
	CHECK_EQ_U64(tracker_stack_peak_bytes(&t, site_stack(&t, 0xc)), 500);
	release(&t, 0x4000);
	release(&t, 0x1000);
	CHECK_EQ_U64(tracker_stack_peak_bytes(&t, site_stack(&t, 0xc)), 500);
	CHECK_EQ_U64(tracker_stack_peak_bytes(&t, site_stack(&t, 0xa)), 150);
	tracker_destroy(&t);
}

/* A stack keeps the peak epoch's low 32 bits: across their wrap, a stack last
 * touched 2^32 peaks ago is not taken for one of the current peak. */
TEST(peak_epoch_wrap)
{
	struct tracker t;
	struct stack_entry *a;

	setup(&t);
	alloc(&t, 0x1000, 100, 0xa);
	a = (struct stack_entry *)site_stack(&t, 0xa);
	/* as if a's last change was at the epoch 2^32 + 1 peaks from now */
	t.peak_epoch = 0xfffffffeull;
	a->peak_epoch = 1;
	a->t.peak_live_bytes = 999;
	alloc(&t, 0x2000, 300, 0xb); /* a peak: epoch 0xffffffff */
	alloc(&t, 0x3000, 10, 0xb);  /* a peak: 2^32 + 1 (0 is skipped) */
	CHECK_EQ_U64(t.peak_epoch, 0x100000001ull);
	CHECK_EQ_U64(tracker_stack_peak_bytes(&t, a), 100);
	CHECK_EQ_U64(tracker_stack_peak_bytes(&t, site_stack(&t, 0xb)), 310);
	release(&t, 0x2000);
	alloc(&t, 0x4000, 5, 0xa);
	CHECK_EQ_U64(tracker_stack_peak_bytes(&t, a), 100);
	CHECK_EQ_U64(tracker_stack_peak_bytes(&t, site_stack(&t, 0xb)), 310);
	tracker_destroy(&t);
}

TEST(foreign_and_malformed_events)
{
	struct tracker t;
	struct mt_event ev = {.kind = MT_EV_ALLOC, .tgid = 999, .addr = 16, .size = 1};

	setup(&t);
	tracker_event(&t, &ev, sizeof(ev));
	CHECK_EQ_U64(t.events_foreign, 1);
	ev.tgid = PID;
	ev.nframes = 5; /* claims frames it does not carry */
	tracker_event(&t, &ev, sizeof(ev));
	CHECK_EQ_U64(t.events_malformed, 1);
	tracker_event(&t, &ev, 3);
	CHECK_EQ_U64(t.events_malformed, 2);
	ev.nframes = 0;
	ev.kind = 77;
	tracker_event(&t, &ev, sizeof(ev));
	CHECK_EQ_U64(t.events_malformed, 3);
	CHECK_EQ_U64(t.totals.allocations, 0);
	CHECK_EQ_U64(t.events_received, 4);
	tracker_destroy(&t);
}

static uint32_t seen_words;

static void count_words(void *arg, uint32_t tgid, const uint64_t *frames, uint32_t n)
{
	seen_words = n;
}

/* Python frame words after the native frames: part of the stack's identity. */
TEST(python_frame_words)
{
	static uint64_t buf[sizeof(struct mt_event) / 8 + 4];
	struct mt_event *ev = (struct mt_event *)buf;
	struct tracker t;
	uint32_t i, n;

	setup(&t);
	t.on_new_stack = count_words;
	memset(buf, 0, sizeof(buf));
	ev->kind = MT_EV_ALLOC;
	ev->func = MT_FN_PYMALLOC_MALLOC;
	ev->tgid = PID;
	ev->tid = TID;
	ev->addr = 0x1000;
	ev->size = 10;
	ev->nframes = 2;
	ev->npyframes = 2;
	ev->frames[0] = 0x401000;
	ev->frames[1] = 0x402000;
	ev->frames[2] = MT_PY_WORD | (0x7f0000001000ull >> 3) << MT_PY_INSTR_BITS | 7;
	ev->frames[3] = MT_PY_WORD | MT_PY_GROUP_END | (0x7f0000002000ull >> 3) << MT_PY_INSTR_BITS;
	tracker_event(&t, buf, sizeof(buf));
	CHECK_EQ_U64(t.totals.allocations, 1);
	CHECK_EQ_U64(seen_words, 4);
	CHECK_EQ_U64(MT_PY_CODE(ev->frames[2]), 0x7f0000001000ull);
	CHECK_EQ_U64(MT_PY_INSTR(ev->frames[2]), 7);
	/* same native frames, another Python line: another stack */
	ev->addr = 0x2000;
	ev->frames[2] += 1;
	tracker_event(&t, buf, sizeof(buf));
	for (i = 0, n = 0; i < t.stacks.count; i++)
		n += stack_get(&t.stacks, i)->nframes == 4;
	CHECK_EQ_U64(n, 2);
	/* Python words claimed but not carried: malformed */
	ev->addr = 0x3000;
	tracker_event(&t, buf, sizeof(buf) - 8);
	CHECK_EQ_U64(t.events_malformed, 1);
	CHECK_EQ_U64(t.totals.allocations, 2);
	tracker_destroy(&t);
}

TEST(heap_full_counts_untracked)
{
	struct tracker t;

	CHECK(tracker_init(&t, 1, 0) == 0);
	CHECK(tracker_add_target(&t, PID, 0) != NULL);
	alloc(&t, 0x1000, 10, 0xa);
	alloc(&t, 0x2000, 20, 0xa);
	CHECK_EQ_U64(t.totals.untracked_allocations, 1);
	CHECK_EQ_U64(t.totals.allocations, 2);
	CHECK_EQ_U64(t.totals.live_bytes, 10);
	release(&t, 0x2000);
	CHECK_EQ_U64(t.totals.unknown_frees, 1);
	check_invariants(&t);
	tracker_destroy(&t);
}

/* After the exec event, the new program's events are foreign; the old data stays. */
TEST(exec_stops_counting)
{
	struct tracker t;

	setup(&t);
	alloc(&t, 0x1000, 10, 0xa);
	alloc(&t, 0x2000, 20, 0xa);
	release(&t, 0x1000);
	send(&t, MT_EV_EXEC, 0, TID, 0, 0, 0, 0);
	CHECK_EQ_U64(t.events_foreign, 0);
	send(&t, MT_EV_LDSO, 0, TID, 0, 0, 0, 0); /* the daemon's business, not an error */
	alloc(&t, 0x1000, 30, 0xb);		  /* the new program reuses the address */
	release(&t, 0x2000);
	CHECK_EQ_U64(t.events_foreign, 2);
	CHECK_EQ_U64(t.events_malformed, 0);
	CHECK_EQ_U64(t.totals.allocations, 2);
	CHECK_EQ_U64(t.totals.frees, 1);
	CHECK_EQ_U64(t.totals.live_bytes, 20);
	CHECK_EQ_U64(t.totals.missed_frees, 0);
	CHECK(tracker_target_exec(&t, PID) == -1); /* ended already */
	CHECK(tracker_target_exec(&t, PID + 1) == -1);
	check_invariants(&t);
	tracker_destroy(&t);
}

/*
 * After an exec the daemon starts a new generation of the pid: the old one
 * moves to a retired key with its blocks and stacks, the new one counts the
 * new program from zero, and an address live in both never collides.
 */
TEST(generations_after_exec)
{
	struct tracker t;
	const struct tracker_target *old;
	struct tracker_target *cur;
	uint32_t key;

	setup(&t);
	alloc(&t, 0x1000, 10, 0xa);
	alloc(&t, 0x2000, 20, 0xa);
	send(&t, MT_EV_EXEC, 0, TID, 0, 0, 0, 0);
	CHECK(tracker_find_target(&t, PID) == NULL);
	key = tracker_retire(&t, PID);
	CHECK(key & TRACKER_RETIRED);
	CHECK_EQ_U64(tracker_gen_pid(&t, key), PID);
	CHECK_EQ_U64(tracker_gen_pid(&t, PID), PID);
	CHECK(tracker_retire(&t, PID) == 0); /* nothing keyed by PID now */
	CHECK(tracker_add_target(&t, PID, 5) != NULL);
	CHECK(tracker_add_target(&t, PID, 6) == NULL); /* current generation exists */
	alloc(&t, 0x1000, 30, 0xb);		       /* same address, new program */
	release(&t, 0x2000);			       /* never allocated by the new program */
	old = tracker_find_gen(&t, key);
	cur = tracker_find_target(&t, PID);
	CHECK(old && cur && old != cur);
	CHECK_EQ_U64(old->c.allocations, 2);
	CHECK_EQ_U64(old->c.live_bytes, 30);
	CHECK_EQ_U64(old->c.unknown_frees, 0);
	CHECK_EQ_U64(cur->c.allocations, 1);
	CHECK_EQ_U64(cur->c.live_bytes, 30);
	CHECK_EQ_U64(cur->c.unknown_frees, 1);
	CHECK_EQ_U64(cur->c.missed_frees, 0);
	CHECK_EQ_U64(t.totals.missed_frees, 0);
	CHECK_EQ_U64(t.totals.live_bytes, 60);
	CHECK(live_size(&t.heap, key, 0x1000) == 10);
	CHECK(live_size(&t.heap, PID, 0x1000) == 30);
	/* every stack belongs to one generation or the other */
	for (uint32_t i = 0; i < t.stacks.count; i++)
		CHECK(stack_get(&t.stacks, i)->tgid == key || stack_get(&t.stacks, i)->tgid == PID);
	check_invariants(&t);
	tracker_destroy(&t);
}

static void mmap_call(struct tracker *t, uint64_t addr, uint64_t size, uint64_t site)
{
	send(t, MT_EV_ALLOC, MT_FN_MMAP, TID, addr, 0, size, site);
}

static void munmap_call(struct tracker *t, uint64_t addr, uint64_t size)
{
	send(t, MT_EV_FREE, MT_FN_MMAP, TID, addr, 0, size, 0);
}

static void check_bytes(struct tracker *t)
{
	const struct mt_counters *c = &t->totals;
	uint64_t heap_bytes = 0, maps_bytes = 0;
	struct heap_block b;
	const struct tracker_target *tt = tracker_find_target(t, PID);

	for (uint64_t i = 0; heap_next(&t->heap, &i, &b);)
		heap_bytes += b.size;
	CHECK_EQ_U64(c->live_bytes, heap_bytes);
	CHECK_EQ_U64(c->live_bytes, c->bytes_allocated - c->bytes_freed - c->missed_free_bytes);
	for (uint32_t i = 0; i < tt->nmaps; i++) {
		CHECK(tt->maps[i].start < tt->maps[i].end);
		if (i)
			CHECK(tt->maps[i - 1].end <= tt->maps[i].start);
		maps_bytes += tt->maps[i].end - tt->maps[i].start;
	}
	/* every test block but the 100-byte malloc one is an mmap block */
	CHECK_EQ_U64(maps_bytes + 100, heap_bytes);
	check_invariants(t);
}

/* mmap blocks: whole, partial, several at once, unknown ranges, unseen munmaps. */
TEST(mmap_blocks)
{
	struct tracker t;
	const struct stack_entry *s;
	const uint64_t A = 0x7f0000000000, M = 1 << 20;

	setup(&t);
	mmap_call(&t, A, M, 0x500);
	mmap_call(&t, A + M, M, 0x500);
	mmap_call(&t, A + 4 * M, M, 0x600);
	alloc(&t, 0x1000, 100, 0x700); /* a malloc block is never touched by munmap */
	CHECK_EQ_U64(t.totals.live_bytes, 3 * M + 100);
	CHECK_EQ_U64(t.allocations_by_func[MT_FN_MMAP], 3);
	CHECK_EQ_U64(t.bytes_by_func[MT_FN_MMAP], 3 * M);
	check_bytes(&t);

	/* whole block: one free */
	munmap_call(&t, A, M);
	CHECK_EQ_U64(t.totals.frees, 1);
	CHECK_EQ_U64(t.totals.bytes_freed, M);
	CHECK_EQ_U64(t.totals.live_bytes, 2 * M + 100);
	check_bytes(&t);

	/* the head of a block: bytes freed, no call in frees, block stays live */
	munmap_call(&t, A + M, 4096);
	CHECK_EQ_U64(t.totals.frees, 1);
	CHECK_EQ_U64(t.totals.bytes_freed, M + 4096);
	CHECK_EQ_U64(t.totals.live_allocations, 3);
	CHECK_EQ_U64(live_size(&t.heap, PID, A + M), M - 4096);
	/* a hole in the middle, then the tail */
	munmap_call(&t, A + M + 8192, 4096);
	munmap_call(&t, A + 2 * M - 4096, 4096);
	CHECK_EQ_U64(live_size(&t.heap, PID, A + M), M - 3 * 4096);
	CHECK_EQ_U64(tracker_find_target(&t, PID)->nmaps, 3); /* 2 pieces + the third block */
	s = site_stack(&t, 0x500);
	CHECK_EQ_U64(s->t.live_bytes, M - 3 * 4096);
	CHECK_EQ_U64(s->t.bytes_freed, M + 3 * 4096);
	CHECK_EQ_U64(s->t.frees, 1);
	check_bytes(&t);
	/* unmapping the hole again changes nothing; nor does a range we never saved */
	munmap_call(&t, A + M + 8192, 4096);
	munmap_call(&t, A + 8 * M, 16 * M);
	munmap_call(&t, 0x1000 & ~4095ull, 4096);
	CHECK_EQ_U64(t.totals.bytes_freed, M + 3 * 4096);
	CHECK_EQ_U64(t.totals.unknown_frees, 0);
	CHECK(heap_get(&t.heap, PID, 0x1000, NULL));
	check_bytes(&t);

	/* one munmap over the rest of both blocks: two frees, all bytes */
	munmap_call(&t, A, 8 * M);
	CHECK_EQ_U64(t.totals.frees, 3);
	CHECK_EQ_U64(t.totals.bytes_freed, 3 * M);
	CHECK_EQ_U64(t.totals.live_bytes, 100);
	CHECK_EQ_U64(tracker_find_target(&t, PID)->nmaps, 0);
	check_bytes(&t);

	/* a new mapping over one we still hold: its munmap was not seen */
	mmap_call(&t, A, 2 * M, 0x500);
	munmap_call(&t, A, 4096);
	mmap_call(&t, A + M, M, 0x600);
	CHECK_EQ_U64(t.totals.missed_frees, 1);
	CHECK_EQ_U64(t.totals.missed_free_bytes, 2 * M - 4096);
	CHECK_EQ_U64(t.totals.live_bytes, 100 + M);
	check_bytes(&t);
	tracker_destroy(&t);
}

/*
 * Temporary allocations: freed by their own thread before N more
 * allocations of that thread; kept per thread, not per block (recent.c).
 */
TEST(temporary_allocations)
{
	struct tracker t;

	setup(&t);
	/* N = 1: only the thread's latest allocation */
	alloc(&t, 0x1000, 8, 0x1111);
	release(&t, 0x1000); /* temporary */
	alloc(&t, 0x2000, 8, 0x1111);
	alloc(&t, 0x3000, 8, 0x1111);
	release(&t, 0x2000); /* one allocation came after it: not */
	send(&t, MT_EV_FREE, MT_FN_FREE, TID + 1, 0x3000, 0, 0, 0); /* another thread's free: not */
	CHECK_EQ_U64(t.totals.temporary_allocations, 1);
	CHECK_EQ_U64(t.recent.count, 0);
	tracker_destroy(&t);

	/* N = 3, two threads, a missed free and a realloc in between */
	setup(&t);
	t.temporary_threshold = 3;
	alloc(&t, 0x1000, 8, 0x1111);					    /* A #1 */
	alloc(&t, 0x2000, 8, 0x1111);					    /* A #2 */
	send(&t, MT_EV_ALLOC, MT_FN_MALLOC, TID + 1, 0x9000, 0, 8, 0x1111); /* B #1 */
	alloc(&t, 0x3000, 8, 0x1111);					    /* A #3 */
	release(&t, 0x1000);	      /* two after it: temporary */
	alloc(&t, 0x4000, 8, 0x1111); /* A #4 */
	release(&t, 0x2000);	      /* A #3 and #4 after it: temporary */
	CHECK_EQ_U64(t.totals.temporary_allocations, 2);
	alloc(&t, 0x6000, 8, 0x1111); /* A #5 */
	release(&t, 0x3000);	      /* A #4 and #5... */
	CHECK_EQ_U64(t.totals.temporary_allocations, 3);
	alloc(&t, 0x3000, 8, 0x1111); /* A #6 */
	alloc(&t, 0x7000, 8, 0x1111); /* A #7 */
	release(&t, 0x4000);	      /* #5, #6 and #7 after it: no longer */
	CHECK_EQ_U64(t.totals.temporary_allocations, 3);
	/* the address allocated again while live: its free was missed, not temporary */
	alloc(&t, 0x3000, 16, 0x1111); /* A #8 */
	CHECK_EQ_U64(t.totals.missed_frees, 1);
	CHECK_EQ_U64(t.totals.temporary_allocations, 3);
	/* realloc of a recent block by its own thread: the old one is freed
	 * (temporary), the new one allocated */
	realloc_call(&t, TID, 0x3000, 0x5000, 32, 0x2222); /* A #9 */
	CHECK_EQ_U64(t.totals.temporary_allocations, 4);
	/* a failed realloc puts the block back, still recent */
	send(&t, MT_EV_REALLOC_ENTER, MT_FN_REALLOC, TID, 0, 0x5000, 0, 0);
	send(&t, MT_EV_REALLOC, MT_FN_REALLOC, TID, 0, 0x5000, 1ull << 40, 0);
	release(&t, 0x5000);
	CHECK_EQ_U64(t.totals.temporary_allocations, 5);
	send(&t, MT_EV_FREE, MT_FN_FREE, TID + 1, 0x9000, 0, 0, 0); /* B's own, recent */
	CHECK_EQ_U64(t.totals.temporary_allocations, 6);
	release(&t, 0x7000); /* A #7: #8 and #9 came after: within 3, temporary */
	CHECK_EQ_U64(t.totals.temporary_allocations, 7);
	check_invariants(&t);
	/* nothing left but what is live and recent */
	CHECK(t.recent.count <= t.heap.count);
	tracker_destroy(&t);
}

/*
 * An allocation as the BPF side sends it with stack ids (MT_SF_ID): frames
 * (site, 0x400000) registered under id, or with site 0 only the id.
 */
static void alloc_id(struct tracker *t, uint64_t addr, uint64_t size, uint64_t site, uint64_t id,
		     size_t slack)
{
	struct mt_event *ev = (struct mt_event *)evbuf;
	size_t len = sizeof(*ev);

	memset(evbuf, 0, sizeof(evbuf));
	ev->kind = MT_EV_ALLOC;
	ev->func = MT_FN_MALLOC;
	ev->tgid = PID;
	ev->tid = TID;
	ev->time_ns = now_ns += 10;
	ev->addr = addr;
	ev->size = size;
	ev->stack_flags = id ? MT_SF_ID : 0;
	if (site) {
		ev->nframes = 2;
		ev->frames[0] = site;
		ev->frames[1] = 0x400000;
		len += 16;
	}
	ev->frames[ev->nframes] = id;
	len += id ? 8 : slack;
	tracker_event(t, evbuf, len);
}

/* Stacks as ids: a registration and the ids that follow it are one stack. */
TEST(stack_ids)
{
	struct tracker t;
	const struct stack_entry *s;
	uint32_t stacks;

	setup(&t);
	alloc_id(&t, 0x1000, 10, 0xa, 0x77, 0); /* registers (0xa, 0x400000) as 0x77 */
	stacks = t.stacks.count;
	alloc_id(&t, 0x2000, 20, 0, 0x77, 0); /* the same stack, by its id */
	alloc_id(&t, 0x3000, 30, 0, 0x77, 0);
	CHECK_EQ_U64(t.stacks.count, stacks);
	s = site_stack(&t, 0xa);
	CHECK(s != NULL);
	CHECK_EQ_U64(s->t.allocations, 3);
	CHECK_EQ_U64(s->t.live_bytes, 60);
	CHECK_EQ_U64(s->nframes, 2);
	CHECK_EQ_U64(t.stack_id_events, 2);
	/* a stack that was not registered (slack word, no flag) is interned as
	 * ever, and registers nothing */
	alloc_id(&t, 0x4000, 40, 0xb, 0, 8);
	CHECK(site_stack(&t, 0xb) != NULL);
	CHECK_EQ_U64(site_stack(&t, 0xb)->t.allocations, 1);
	/* an id never registered is never guessed: stackless, counted */
	alloc_id(&t, 0x5000, 50, 0, 0x99, 0);
	CHECK_EQ_U64(t.stack_ids_unknown, 1);
	CHECK_EQ_U64(t.totals.stackless_allocations, 1);
	CHECK_EQ_U64(t.totals.allocations, 5);
	CHECK_EQ_U64(t.totals.live_bytes, 150);
	/* the same frames under a second id (the BPF side never sends that: an
	 * id is a hash of the frames) are still the one stack */
	alloc_id(&t, 0x6000, 60, 0xa, 0x78, 0);
	alloc_id(&t, 0x7000, 70, 0, 0x78, 0);
	CHECK_EQ_U64(site_stack(&t, 0xa)->t.allocations, 5);
	/* an id event too short for its id word is malformed */
	{
		uint64_t malformed = t.events_malformed;
		struct mt_event *ev = (struct mt_event *)evbuf;

		memset(evbuf, 0, sizeof(evbuf));
		ev->kind = MT_EV_ALLOC;
		ev->tgid = PID;
		ev->addr = 0x8000;
		ev->size = 1;
		ev->stack_flags = MT_SF_ID;
		tracker_event(&t, evbuf, sizeof(*ev));
		CHECK_EQ_U64(t.events_malformed, malformed + 1);
	}
	check_invariants(&t);
	tracker_destroy(&t);
}

/*
 * Detached and attached again (a new generation of the same process, whose
 * BPF side still holds the ids it registered): an id registered by the old
 * generation gives the same frames, interned for the new one, and the old
 * generation's stack keeps its own counts.
 */
TEST(stack_ids_new_generation)
{
	struct tracker t;
	uint32_t key, n_new = 0, n_old = 0;

	setup(&t);
	alloc_id(&t, 0x1000, 10, 0xa, 0x77, 0);
	alloc_id(&t, 0x2000, 20, 0, 0x77, 0);
	CHECK(tracker_target_exec(&t, PID) == 0); /* detached */
	key = tracker_retire(&t, PID);
	CHECK(tracker_add_target(&t, PID, 5) != NULL);
	alloc_id(&t, 0x3000, 30, 0, 0x77, 0);
	alloc_id(&t, 0x4000, 40, 0, 0x77, 0);
	CHECK_EQ_U64(t.stack_ids_unknown, 0);
	for (uint32_t i = 0; i < t.stacks.count; i++) {
		const struct stack_entry *s = stack_get(&t.stacks, i);

		if (s->nframes != 2 || stack_word(&t.stacks, i, 0) != 0xa ||
		    stack_word(&t.stacks, i, 1) != 0x400000)
			continue;
		if (s->tgid == PID)
			n_new += (uint32_t)s->t.allocations;
		else if (s->tgid == key)
			n_old += (uint32_t)s->t.allocations;
	}
	CHECK_EQ_U64(n_old, 2);
	CHECK_EQ_U64(n_new, 2);
	CHECK_EQ_U64(tracker_find_target(&t, PID)->c.stackless_allocations, 0);
	check_invariants(&t);
	tracker_destroy(&t);
}

/* With the stack table full, a registration keeps no stack: its ids are
 * stackless too, as its frames would have been. */
TEST(stack_ids_table_full)
{
	struct tracker t;

	CHECK(tracker_init(&t, 0, 2) == 0);
	CHECK(tracker_add_target(&t, PID, 1000) != NULL); /* the empty stack: 1 */
	alloc_id(&t, 0x1000, 10, 0xa, 0x70, 0);		  /* 2: full */
	alloc_id(&t, 0x2000, 20, 0xb, 0x71, 0);		  /* cannot be kept */
	alloc_id(&t, 0x3000, 30, 0, 0x71, 0);
	alloc_id(&t, 0x4000, 40, 0, 0x70, 0);
	CHECK_EQ_U64(t.totals.stackless_allocations, 2);
	CHECK_EQ_U64(site_stack(&t, 0xa)->t.allocations, 2);
	CHECK_EQ_U64(t.stack_ids_unknown, 0);
	check_invariants(&t);
	tracker_destroy(&t);
}

UNIT_MAIN()
