// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of target_blocks_each (src/daemon/core/blocks.c), the one list
 * of a target's live blocks a leak scan copies: a forked child's own blocks
 * and those it inherited and holds still, each once, with a stack of the
 * frames that allocated it, whether the inherited block shows under an
 * ancestor's row or under the child's own stack of the same frames; and
 * nothing of another target.
 */
#include <stdlib.h>

#include "daemon/core/blocks.h"
#include "daemon/core/stacks.h"
#include "daemon/core/tracker.h"
#include "unit.h"

static unsigned char evbuf[sizeof(struct mt_event) + MT_MAX_FRAMES * 8];
static uint64_t now_ns = 1000;

static void send(struct tracker *t, uint32_t pid, int kind, uint64_t addr, uint64_t size,
		 uint64_t site)
{
	struct mt_event *ev = (struct mt_event *)evbuf;
	size_t len = sizeof(*ev);

	memset(evbuf, 0, sizeof(evbuf));
	ev->kind = (uint8_t)kind;
	ev->func = kind == MT_EV_FREE ? MT_FN_FREE : MT_FN_MALLOC;
	ev->tgid = pid;
	ev->tid = pid;
	ev->time_ns = now_ns += 10;
	ev->addr = addr;
	ev->size = size;
	if (site) {
		ev->nframes = 2;
		ev->frames[0] = site;
		ev->frames[1] = 0x400000;
		len += 16;
	}
	tracker_event(t, evbuf, len);
}

static void alloc(struct tracker *t, uint32_t pid, uint64_t addr, uint64_t size, uint64_t site)
{
	send(t, pid, MT_EV_ALLOC, addr, size, site);
}

static void release(struct tracker *t, uint32_t pid, uint64_t addr)
{
	send(t, pid, MT_EV_FREE, addr, 0, 0);
}

#define MAXB 64

/* What target_blocks_each gave: each block's address, size, site and origin. */
struct listed {
	const struct tracker *t;
	uint64_t addr[MAXB], size[MAXB], site[MAXB];
	int inherited[MAXB];
	unsigned n;
	int stop_after; /* nonzero: stop once this many were listed */
};

static int take(void *arg, const struct heap_block *b, int inherited)
{
	struct listed *l = arg;
	const struct stack_entry *e = stack_get(&l->t->stacks, b->stack);

	if (l->n < MAXB) {
		l->addr[l->n] = b->addr;
		l->size[l->n] = b->size;
		l->site[l->n] = e && e->nframes ? stack_word(&l->t->stacks, b->stack, 0) : 0;
		l->inherited[l->n] = inherited;
	}
	l->n++;
	return l->stop_after && (int)l->n >= l->stop_after;
}

static void list(const struct tracker *t, uint32_t pid, struct listed *l)
{
	const struct tracker_target *tt = tracker_find_target((struct tracker *)t, pid);

	memset(l, 0, sizeof(*l));
	l->t = t;
	CHECK(tt != NULL);
	if (tt)
		CHECK(target_blocks_each(t, tt->gen, take, l) == 0);
}

/* The listed block at addr: its index, or -1 (and a failure if it is there twice). */
static int at(const struct listed *l, uint64_t addr)
{
	int found = -1;

	for (unsigned i = 0; i < l->n && i < MAXB; i++) {
		if (l->addr[i] != addr)
			continue;
		CHECK(found < 0);
		found = (int)i;
	}
	return found;
}

static void expect(const struct listed *l, uint64_t addr, uint64_t size, uint64_t site,
		   int inherited)
{
	int i = at(l, addr);

	CHECK(i >= 0);
	if (i < 0)
		return;
	CHECK_EQ_U64(l->size[i], size);
	CHECK_EQ_U64(l->site[i], site);
	CHECK_EQ_U64(l->inherited[i], inherited);
}

/*
 * A child frees some of what it inherited and allocates from one of the
 * same sites: the inherited blocks of that site share a row with its own.
 */
TEST(child_own_and_inherited)
{
	struct tracker t;
	struct listed l;

	CHECK(tracker_init(&t, 0, 0) == 0);
	CHECK(tracker_add_target(&t, 100, 1000) != NULL);
	for (uint64_t i = 0; i < 6; i++)
		alloc(&t, 100, 0x1000 + i * 0x100, 16 + i * 16, i < 3 ? 0x10 : 0x20);
	CHECK(tracker_fork(&t, 100, 200, now_ns) != NULL);
	release(&t, 200, 0x1000);
	alloc(&t, 200, 0x9000, 500, 0x10);
	alloc(&t, 200, 0xa000, 600, 0x30);
	/* the parent's later changes are not the child's */
	release(&t, 100, 0x1500);
	alloc(&t, 100, 0xb000, 700, 0x20);

	list(&t, 200, &l);
	CHECK_EQ_U64(l.n, 7);
	expect(&l, 0x1100, 32, 0x10, 1);
	expect(&l, 0x1200, 48, 0x10, 1);
	expect(&l, 0x1300, 64, 0x20, 1);
	expect(&l, 0x1400, 80, 0x20, 1);
	expect(&l, 0x1500, 96, 0x20, 1);
	expect(&l, 0x9000, 500, 0x10, 0);
	expect(&l, 0xa000, 600, 0x30, 0);
	CHECK(at(&l, 0x1000) < 0);
	CHECK(at(&l, 0xb000) < 0);

	list(&t, 100, &l);
	CHECK_EQ_U64(l.n, 6);
	for (uint64_t i = 0; i < 5; i++)
		expect(&l, 0x1000 + i * 0x100, 16 + i * 16, i < 3 ? 0x10 : 0x20, 0);
	expect(&l, 0xb000, 700, 0x20, 0);
	CHECK(at(&l, 0x9000) < 0);
	tracker_destroy(&t);
}

/* A grandchild holds blocks of both its ancestors; fn can stop the walk. */
TEST(grandchild_and_stop)
{
	struct tracker t;
	struct listed l;
	const struct tracker_target *g;

	CHECK(tracker_init(&t, 0, 0) == 0);
	CHECK(tracker_add_target(&t, 100, 1000) != NULL);
	alloc(&t, 100, 0x1000, 16, 0x10);
	alloc(&t, 100, 0x2000, 32, 0x10);
	CHECK(tracker_fork(&t, 100, 200, now_ns) != NULL);
	release(&t, 200, 0x1000);
	alloc(&t, 200, 0x3000, 48, 0x20);
	CHECK(tracker_fork(&t, 200, 300, now_ns) != NULL);
	release(&t, 200, 0x2000);
	release(&t, 200, 0x3000);
	release(&t, 100, 0x2000);
	alloc(&t, 300, 0x4000, 64, 0x30);

	list(&t, 300, &l);
	CHECK_EQ_U64(l.n, 3);
	expect(&l, 0x2000, 32, 0x10, 1);
	expect(&l, 0x3000, 48, 0x20, 1);
	expect(&l, 0x4000, 64, 0x30, 0);
	list(&t, 200, &l);
	CHECK_EQ_U64(l.n, 0);

	g = tracker_find_target(&t, 300);
	memset(&l, 0, sizeof(l));
	l.t = &t;
	l.stop_after = 2;
	CHECK(g && target_blocks_each(&t, g->gen, take, &l) == 0);
	CHECK_EQ_U64(l.n, 2);
	CHECK(target_blocks_each(&t, 0xfffffff0u, take, &l) == 0); /* no such target */
	CHECK_EQ_U64(l.n, 2);
	tracker_destroy(&t);
}

UNIT_MAIN()
