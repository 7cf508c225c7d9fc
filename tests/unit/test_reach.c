// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of the reachability marking (src/daemon/scan/reach.c): a fake
 * process memory of a few pages with blocks in it and pointers between them,
 * each case built so that its answer is known: reachable, possible (an
 * interior pointer on the way), direct and indirect leaks as LSan names them
 * (the rest of a lost list, every block of a lost ring), suppressed leaks
 * holding others, blocks that overlap or cannot be read, huge blocks, and
 * the lookup against a brute-force search.
 */
#include "daemon/scan/reach.h"
#include "unit.h"

#include <stdlib.h>

#define BASE  0x10000000ull
#define WORDS 4096 /* 32 KiB of fake memory */

struct mem {
	uint64_t w[WORDS];
	struct reach_block blocks[64];
	uint32_t n;
};

static uint64_t at(uint64_t word)
{
	return BASE + 8 * word;
}

/* A block of size bytes at word w (stack = its number). */
static uint32_t block(struct mem *m, uint64_t w, uint64_t size)
{
	m->blocks[m->n] = (struct reach_block){.addr = at(w), .size = size, .stack = m->n};
	return m->n++;
}

/* Word w of the memory points to p. */
static void point(struct mem *m, uint64_t w, uint64_t p)
{
	m->w[w] = p;
}

/* Build the reach of m, scan its whole memory, mark and classify. */
static void run(struct mem *m, struct reach *r)
{
	struct reach_block *b = malloc(m->n * sizeof(*b) + 1);

	memcpy(b, m->blocks, m->n * sizeof(*b));
	CHECK(!reach_init(r, b, m->n));
	reach_scan(r, BASE, m->w, sizeof(m->w));
}

static void finish(struct reach *r)
{
	CHECK(!reach_mark(r));
	CHECK(!reach_classify(r));
}

/* The kind of the block whose stack is s (blocks get sorted). */
static int kind_of(const struct reach *r, uint32_t s)
{
	for (uint32_t i = 0; i < r->n; i++)
		if (r->blocks[i].stack == s)
			return r->kind[i];
	return -1;
}

TEST(roots_and_chains)
{
	static struct mem m;
	struct reach r;
	uint32_t global, child, inner, lost, interior_held, after_interior;

	memset(&m, 0, sizeof(m));
	/* words 0..99 are "globals"; blocks from word 100 on */
	global = block(&m, 100, 32);	    /* held by word 0 (start) */
	child = block(&m, 110, 16);	    /* held by global's first word */
	inner = block(&m, 120, 24);	    /* held by child, through an interior pointer */
	lost = block(&m, 130, 40);	    /* nobody points to it */
	interior_held = block(&m, 140, 64); /* word 1 points into its middle */
	after_interior = block(&m, 160, 8); /* held (start) only by interior_held */
	point(&m, 0, at(100));
	point(&m, 100, at(110));
	point(&m, 110, at(120) + 8);
	point(&m, 1, at(140) + 24);
	point(&m, 141, at(160));
	run(&m, &r);
	finish(&r);
	CHECK_EQ_U64(kind_of(&r, global), REACH_KIND_REACHABLE);
	CHECK_EQ_U64(kind_of(&r, child), REACH_KIND_REACHABLE);
	CHECK_EQ_U64(kind_of(&r, inner), REACH_KIND_POSSIBLE);
	CHECK_EQ_U64(kind_of(&r, lost), REACH_KIND_DIRECT);
	CHECK_EQ_U64(kind_of(&r, interior_held), REACH_KIND_POSSIBLE);
	CHECK_EQ_U64(kind_of(&r, after_interior), REACH_KIND_POSSIBLE);
	reach_free(&r);
}

TEST(lost_list_and_ring)
{
	static struct mem m;
	struct reach r;
	uint32_t head, n1, n2, ring[3], self;

	memset(&m, 0, sizeof(m));
	/* a list whose head nobody holds: head direct, the rest indirect */
	head = block(&m, 200, 16);
	n1 = block(&m, 210, 16);
	n2 = block(&m, 220, 16);
	point(&m, 200, at(210));
	point(&m, 210, at(220));
	/* a ring: every block is pointed to by another lost block (LSan: all indirect) */
	for (int i = 0; i < 3; i++)
		ring[i] = block(&m, 300 + 10 * (uint64_t)i, 16);
	for (int i = 0; i < 3; i++)
		point(&m, 300 + 10 * (uint64_t)i, at(300 + 10 * (uint64_t)((i + 1) % 3)));
	/* a block that points only to itself stays direct */
	self = block(&m, 400, 16);
	point(&m, 400, at(400));
	point(&m, 401, at(400) + 8);
	run(&m, &r);
	finish(&r);
	CHECK_EQ_U64(kind_of(&r, head), REACH_KIND_DIRECT);
	CHECK_EQ_U64(kind_of(&r, n1), REACH_KIND_INDIRECT);
	CHECK_EQ_U64(kind_of(&r, n2), REACH_KIND_INDIRECT);
	for (int i = 0; i < 3; i++)
		CHECK_EQ_U64(kind_of(&r, ring[i]), REACH_KIND_INDIRECT);
	CHECK_EQ_U64(kind_of(&r, self), REACH_KIND_DIRECT);
	reach_free(&r);
}

TEST(upgrade_possible_to_reachable)
{
	static struct mem m;
	struct reach r;
	uint32_t a, b, c;

	memset(&m, 0, sizeof(m));
	/* a is reached by an interior pointer first (word 0) and a start pointer
	 * later (word 50): it and what it holds are reachable */
	a = block(&m, 100, 32);
	b = block(&m, 110, 16);
	c = block(&m, 120, 16);
	point(&m, 0, at(100) + 16);
	point(&m, 50, at(100));
	point(&m, 100, at(110));
	point(&m, 110, at(120));
	run(&m, &r);
	finish(&r);
	CHECK_EQ_U64(kind_of(&r, a), REACH_KIND_REACHABLE);
	CHECK_EQ_U64(kind_of(&r, b), REACH_KIND_REACHABLE);
	CHECK_EQ_U64(kind_of(&r, c), REACH_KIND_REACHABLE);
	reach_free(&r);
}

TEST(registers_and_stack_pointer)
{
	static struct mem m;
	struct reach r;
	uint64_t regs[4];
	uint32_t by_reg, by_sp, by_reg_child;

	memset(&m, 0, sizeof(m));
	by_reg = block(&m, 100, 16);
	by_reg_child = block(&m, 110, 16);
	by_sp = block(&m, 1000, 4096); /* a stack in a heap block: sp points inside */
	point(&m, 100, at(110));
	run(&m, &r);
	regs[0] = 0;
	regs[1] = at(100);
	regs[2] = 12345;
	regs[3] = ~0ull;
	reach_scan_root(&r, regs, 4);
	reach_mark_containing(&r, at(1000) + 2000);
	finish(&r);
	CHECK_EQ_U64(kind_of(&r, by_reg), REACH_KIND_REACHABLE);
	CHECK_EQ_U64(kind_of(&r, by_reg_child), REACH_KIND_REACHABLE);
	CHECK_EQ_U64(kind_of(&r, by_sp), REACH_KIND_REACHABLE);
	reach_free(&r);
}

TEST(suppressed_leak_holds_others)
{
	static struct mem m;
	struct reach r;
	struct reach_totals t;
	uint32_t sup, held, other;

	memset(&m, 0, sizeof(m));
	sup = block(&m, 100, 16);
	held = block(&m, 110, 16);
	other = block(&m, 120, 16);
	point(&m, 100, at(110));
	run(&m, &r);
	finish(&r);
	CHECK_EQ_U64(kind_of(&r, held), REACH_KIND_INDIRECT);
	/* suppressing sup: it becomes a root, and what it holds is no leak */
	for (uint32_t i = 0; i < r.n; i++)
		if (r.blocks[i].stack == sup)
			reach_ignore(&r, i);
	finish(&r);
	CHECK_EQ_U64(kind_of(&r, sup), REACH_KIND_SUPPRESSED);
	CHECK_EQ_U64(kind_of(&r, held), REACH_KIND_REACHABLE);
	CHECK_EQ_U64(kind_of(&r, other), REACH_KIND_DIRECT);
	reach_totals(&r, &t);
	CHECK_EQ_U64(t.blocks[REACH_KIND_SUPPRESSED], 1);
	CHECK_EQ_U64(t.blocks[REACH_KIND_DIRECT], 1);
	CHECK_EQ_U64(t.bytes[REACH_KIND_DIRECT], 16);
	reach_free(&r);
}

TEST(overlap_and_unread_never_reported)
{
	static struct mem m;
	struct reach r;
	uint32_t a, b, c, d;

	memset(&m, 0, sizeof(m));
	a = block(&m, 100, 64); /* b lies inside it: a free was missed */
	b = block(&m, 102, 16);
	c = block(&m, 200, 16); /* unreadable */
	d = block(&m, 300, 16); /* nothing: direct */
	run(&m, &r);
	reach_unread(&r, at(200), at(202));
	finish(&r);
	CHECK_EQ_U64(r.overlapping, 2);
	CHECK_EQ_U64(kind_of(&r, a), REACH_KIND_REACHABLE);
	CHECK_EQ_U64(kind_of(&r, b), REACH_KIND_REACHABLE);
	CHECK_EQ_U64(kind_of(&r, c), REACH_KIND_REACHABLE);
	CHECK_EQ_U64(kind_of(&r, d), REACH_KIND_DIRECT);
	reach_free(&r);
}

TEST(words_between_blocks_are_roots)
{
	static struct mem m;
	struct reach r;
	uint32_t a, b, c;

	memset(&m, 0, sizeof(m));
	/* a block of 20 bytes: its word at +16 starts inside it (owned), the word
	 * at +24 is past it (the allocator's, or a block from before tracing) */
	a = block(&m, 100, 20);
	b = block(&m, 110, 16);
	c = block(&m, 120, 16);
	point(&m, 102, at(110)); /* inside a: an edge */
	point(&m, 103, at(120)); /* after a: a root */
	run(&m, &r);
	finish(&r);
	CHECK_EQ_U64(kind_of(&r, a), REACH_KIND_DIRECT);
	CHECK_EQ_U64(kind_of(&r, b), REACH_KIND_INDIRECT);
	CHECK_EQ_U64(kind_of(&r, c), REACH_KIND_REACHABLE);
	reach_free(&r);
}

TEST(ranges_in_any_order)
{
	static struct mem m;
	struct reach r;
	struct reach_block *b;
	uint32_t x, y;

	memset(&m, 0, sizeof(m));
	x = block(&m, 2000, 16);
	y = block(&m, 100, 16);
	point(&m, 2000, at(100)); /* x holds y */
	point(&m, 10, at(2000));  /* a root holds x */
	b = malloc(m.n * sizeof(*b));
	memcpy(b, m.blocks, m.n * sizeof(*b));
	CHECK(!reach_init(&r, b, m.n));
	/* the second half first, then the first */
	reach_scan(&r, at(1024), &m.w[1024], (WORDS - 1024) * 8);
	reach_scan(&r, BASE, m.w, 1024 * 8);
	finish(&r);
	CHECK_EQ_U64(kind_of(&r, x), REACH_KIND_REACHABLE);
	CHECK_EQ_U64(kind_of(&r, y), REACH_KIND_REACHABLE);
	reach_free(&r);
}

TEST(find_against_brute_force)
{
	enum { N = 3000 };
	struct reach_block *b = malloc(N * sizeof(*b)), *copy = malloc(N * sizeof(*b));
	struct reach r;
	uint64_t a = 0x7f0000000000ull;
	unsigned seed = 12345;

	/* sizes from 0 to several MiB (huge blocks are searched apart), gaps from
	 * none to many pages, in random order */
	for (uint32_t i = 0; i < N; i++) {
		uint64_t size;

		seed = seed * 1103515245u + 12345u;
		size = (seed >> 8) % 7 == 0 ? (seed >> 4) % (5u << 20) : (seed >> 8) % 300;
		seed = seed * 1103515245u + 12345u;
		a += ((seed >> 8) % 4 == 0 ? (seed >> 4) % 100000 : 0) + 16;
		if ((seed >> 8) % 97 == 0)
			a += 1ull << 30; /* another arena: a cluster of its own */
		a = (a + 15) & ~15ull;
		b[i] = (struct reach_block){.addr = a, .size = size, .stack = i};
		a += size;
	}
	for (uint32_t i = 0; i < N; i++) { /* shuffle */
		uint32_t j;
		struct reach_block t;

		seed = seed * 1103515245u + 12345u;
		j = (seed >> 8) % N;
		t = b[i];
		b[i] = b[j];
		b[j] = t;
	}
	memcpy(copy, b, N * sizeof(*b));
	CHECK(!reach_init(&r, b, N));
	for (int probe = 0; probe < 40000; probe++) {
		uint64_t v;
		int64_t want = -1, got;
		int start = -1;

		seed = seed * 1103515245u + 12345u;
		v = 0x7f0000000000ull + ((uint64_t)seed * 7919u) % (a - 0x7f0000000000ull + 8192);
		if (probe % 3 == 0)
			v = copy[seed % N].addr + (probe % 2 ? 0 : copy[seed % N].size / 2);
		if (probe % 5 == 0) /* the edges: a block's last byte, the byte after it */
			v = copy[seed % N].addr + copy[seed % N].size - (probe % 2);
		for (uint32_t i = 0; i < N; i++) {
			uint64_t span = copy[i].size ? copy[i].size : 1;

			if (v >= copy[i].addr && v - copy[i].addr < span)
				want = copy[i].stack;
		}
		got = reach_find(&r, v, &start);
		if (got >= 0)
			got = r.blocks[got].stack;
		CHECK_EQ_U64((uint64_t)got, (uint64_t)want);
		if (got >= 0 && (int64_t)got == want) {
			for (uint32_t i = 0; i < N; i++)
				if (copy[i].stack == (uint32_t)want)
					CHECK_EQ_U64(start, copy[i].addr == v);
		}
		if (unit_failed_checks)
			break;
	}
	reach_free(&r);
	free(copy);
}

TEST(entries_by_stack_and_kind)
{
	static struct mem m;
	struct reach r;
	struct reach_entry *e;
	int64_t n;

	memset(&m, 0, sizeof(m));
	/* stack 7: two direct blocks of 16; stack 9: one direct of 100 and, held
	 * by it, one indirect of 8 */
	block(&m, 100, 16);
	block(&m, 110, 16);
	block(&m, 120, 100);
	block(&m, 140, 8);
	m.blocks[0].stack = m.blocks[1].stack = 7;
	m.blocks[2].stack = m.blocks[3].stack = 9;
	point(&m, 120, at(140));
	run(&m, &r);
	finish(&r);
	n = reach_entries(&r, &e);
	CHECK_EQ_U64(n, 3);
	if (n == 3) {
		CHECK_EQ_U64(e[0].stack, 9);
		CHECK_EQ_U64(e[0].kind, REACH_KIND_DIRECT);
		CHECK_EQ_U64(e[0].bytes, 100);
		CHECK_EQ_U64(e[1].stack, 7);
		CHECK_EQ_U64(e[1].blocks, 2);
		CHECK_EQ_U64(e[1].bytes, 32);
		CHECK_EQ_U64(e[2].stack, 9);
		CHECK_EQ_U64(e[2].kind, REACH_KIND_INDIRECT);
		CHECK_EQ_U64(e[2].bytes, 8);
	}
	free(e);
	reach_free(&r);
}

TEST(no_blocks)
{
	struct reach r;
	uint64_t w[4] = {1, 2, 3, 4};
	struct reach_entry *e;

	CHECK(!reach_init(&r, malloc(1), 0));
	reach_scan(&r, BASE, w, sizeof(w));
	reach_scan_root(&r, w, 4);
	finish(&r);
	CHECK_EQ_U64(reach_entries(&r, &e), 0);
	free(e);
	reach_free(&r);
}

UNIT_MAIN()
