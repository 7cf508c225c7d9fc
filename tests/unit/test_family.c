// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of process families (src/daemon/core/family.c, viewrows.c): a
 * forked child's heap begins as its parent's, its frees of inherited blocks
 * are ordinary frees, its rows and blocks are those of a copy of the
 * parent's heap taken at the fork, whatever either side does afterwards;
 * checked by hand on small cases and against a model (a real copy at every
 * fork) on random families.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/core/addrmap.h"
#include "daemon/core/tracker.h"
#include "daemon/core/family.h"
#include "daemon/core/viewrows.h"
#include "daemon/core/check.h"
#include "common/invariant.h"
#include "unit.h"

static unsigned char evbuf[sizeof(struct mt_event) + MT_MAX_FRAMES * 8];
static uint64_t now_ns = 1000;

static void send(struct tracker *t, uint32_t pid, int kind, uint64_t addr, uint64_t old,
		 uint64_t size, uint64_t site)
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

static void alloc(struct tracker *t, uint32_t pid, uint64_t addr, uint64_t size, uint64_t site)
{
	send(t, pid, MT_EV_ALLOC, addr, 0, size, site);
}

static void release(struct tracker *t, uint32_t pid, uint64_t addr)
{
	send(t, pid, MT_EV_FREE, addr, 0, 0, 0);
}

static void re_alloc(struct tracker *t, uint32_t pid, uint64_t old, uint64_t addr, uint64_t size,
		     uint64_t site)
{
	send(t, pid, MT_EV_REALLOC_ENTER, 0, old, 0, 0);
	send(t, pid, MT_EV_REALLOC, addr, old, size, addr ? site : 0);
}

static struct tracker_target *target(struct tracker *t, uint32_t pid)
{
	return tracker_find_target(t, pid);
}

/* The invariant of docs/metrics.md for one set of counters. */
static int balanced(const struct mt_counters *c)
{
	return c->live_allocations == c->inherited_allocations + c->allocations - c->frees -
					  c->missed_frees - c->untracked_allocations -
					  c->inherited_released;
}

/* Sum of a pid's rows (now and at the peak), and of every row's value at the peak. */
struct sums {
	uint64_t live, live_bytes, peak_bytes, inherited;
	uint64_t all_peak_bytes;
	uint64_t site_live[16]; /* by site 0x10 .. 0x1f0 */
};

static void row_sums(const struct tracker *t, uint32_t pid, struct sums *out)
{
	struct viewrows r;

	memset(out, 0, sizeof(*out));
	CHECK(viewrows_build(t, 0, 1, &r) == 0);
	for (uint32_t id = 0; id < viewrows_count(&r); id++) {
		struct mt_stack_counters c = viewrows_counters(t, &r, id);
		uint32_t s = viewrows_stack(&r, id);
		const struct stack_entry *e = stack_get(&t->stacks, s);

		out->all_peak_bytes += c.peak_live_bytes;
		if (viewrows_pid(t, &r, id) != pid)
			continue;
		out->live += c.live_allocations;
		out->live_bytes += c.live_bytes;
		out->peak_bytes += c.peak_live_bytes;
		out->inherited += viewrows_inherited(&r, id).live_allocations;
		if (e->nframes) {
			uint64_t site = stack_word(&t->stacks, s, 0);

			if (site >= 0x10 && site < 0x200 && !(site & 0xf))
				out->site_live[site / 0x10 - 1] += c.live_allocations;
		}
	}
	viewrows_free(&r);
}

struct block_count {
	const struct tracker *t;
	const struct viewrows *r;
	uint32_t pid;
	uint64_t n, bytes;
	struct addrmap seen; /* addr -> 1: each block once per pid */
	int dup;
};

static int count_block(void *arg, uint32_t id, const struct heap_block *b)
{
	struct block_count *bc = arg;

	if (viewrows_pid(bc->t, bc->r, id) != bc->pid)
		return 0;
	if (addrmap_get(&bc->seen, b->addr, NULL))
		bc->dup = 1;
	addrmap_put(&bc->seen, b->addr, 1);
	bc->n++;
	bc->bytes += b->size;
	return 0;
}

static void blocks_of(const struct tracker *t, uint32_t pid, struct block_count *bc)
{
	struct viewrows r;

	memset(bc, 0, sizeof(*bc));
	CHECK(viewrows_build(t, 0, 1, &r) == 0);
	bc->t = t;
	bc->r = &r;
	bc->pid = pid;
	viewrows_blocks(t, &r, count_block, bc);
	viewrows_free(&r);
	addrmap_free(&bc->seen);
	bc->r = NULL;
}

TEST(addrmap_basics)
{
	struct addrmap m = {0};
	uint32_t v;

	for (uint64_t k = 1; k <= 5000; k++)
		CHECK(addrmap_put(&m, k * 16, (uint32_t)k) == 0);
	CHECK_EQ_U64(m.count, 5000);
	for (uint64_t k = 1; k <= 5000; k += 2)
		CHECK(addrmap_del(&m, k * 16, &v) && v == k);
	CHECK_EQ_U64(m.count, 2500);
	for (uint64_t k = 1; k <= 5000; k++)
		CHECK(addrmap_get(&m, k * 16, &v) == !(k & 1) && (!(k & 1) ? v == k : 1));
	CHECK(!addrmap_del(&m, 16, NULL));
	CHECK(addrmap_put(&m, 0, 1) == -1);
	addrmap_free(&m);
}

/* The parent's blocks are the child's; its frees of them are ordinary frees. */
TEST(child_inherits_heap)
{
	struct tracker t;
	struct sums s;
	struct block_count bc;
	const struct tracker_target *c;

	CHECK(tracker_init(&t, 0, 0) == 0);
	CHECK(tracker_add_target(&t, 100, 1000) != NULL);
	for (uint64_t i = 0; i < 10; i++)
		alloc(&t, 100, 0x1000 + i * 0x100, 100, i < 5 ? 0x10 : 0x20);
	CHECK(tracker_fork(&t, 100, 200, now_ns) != NULL);
	c = target(&t, 200);
	CHECK_EQ_U64(c->c.inherited_allocations, 10);
	CHECK_EQ_U64(c->c.inherited_bytes, 1000);
	CHECK_EQ_U64(c->c.live_allocations, 10);
	CHECK_EQ_U64(t.totals.live_allocations, 20);
	/* the child frees three inherited blocks and allocates its own */
	release(&t, 200, 0x1000);
	release(&t, 200, 0x1100);
	release(&t, 200, 0x1500);
	alloc(&t, 200, 0x9000, 50, 0x10);
	c = target(&t, 200);
	CHECK_EQ_U64(c->c.frees, 3);
	CHECK_EQ_U64(c->c.unknown_frees, 0);
	CHECK_EQ_U64(c->c.live_allocations, 8);
	CHECK_EQ_U64(c->c.live_bytes, 750);
	CHECK(balanced(&c->c));
	/* a second free of one of them is nothing (glibc's refree at a thread's
	 * exit), a free of an address never allocated is unknown */
	release(&t, 200, 0x1000);
	CHECK_EQ_U64(target(&t, 200)->c.unknown_frees, 0);
	CHECK_EQ_U64(t.events_refree, 1);
	release(&t, 200, 0x7000);
	CHECK_EQ_U64(target(&t, 200)->c.unknown_frees, 1);
	/* the parent is untouched */
	CHECK_EQ_U64(target(&t, 100)->c.live_allocations, 10);
	row_sums(&t, 200, &s);
	CHECK_EQ_U64(s.live, 8);
	CHECK_EQ_U64(s.live_bytes, 750);
	CHECK_EQ_U64(s.site_live[0], 4); /* 0x10: 5 inherited - 2 freed + 1 own */
	CHECK_EQ_U64(s.site_live[1], 4); /* 0x20: 5 - 1 */
	CHECK_EQ_U64(s.inherited, 10);
	blocks_of(&t, 200, &bc);
	CHECK_EQ_U64(bc.n, 8);
	CHECK_EQ_U64(bc.bytes, 750);
	CHECK(!bc.dup);
	blocks_of(&t, 100, &bc);
	CHECK_EQ_U64(bc.n, 10);
	tracker_destroy(&t);
}

/* What the parent does after the fork changes nothing of the child's view. */
TEST(parent_changes_after_fork)
{
	struct tracker t;
	struct sums s;
	struct block_count bc;

	CHECK(tracker_init(&t, 0, 0) == 0);
	CHECK(tracker_add_target(&t, 100, 1000) != NULL);
	for (uint64_t i = 0; i < 4; i++)
		alloc(&t, 100, 0x1000 + i * 0x100, 10, 0x10);
	CHECK(tracker_fork(&t, 100, 200, now_ns) != NULL);
	/* the parent frees two, reuses one address, allocates more */
	release(&t, 100, 0x1000);
	release(&t, 100, 0x1100);
	alloc(&t, 100, 0x1100, 99, 0x20);
	alloc(&t, 100, 0x5000, 7, 0x10);
	row_sums(&t, 200, &s);
	CHECK_EQ_U64(s.live, 4);
	CHECK_EQ_U64(s.live_bytes, 40);
	CHECK_EQ_U64(s.site_live[0], 4);
	CHECK_EQ_U64(s.site_live[1], 0);
	blocks_of(&t, 200, &bc);
	CHECK_EQ_U64(bc.n, 4);
	CHECK_EQ_U64(bc.bytes, 40);
	/* the child frees the blocks the parent freed, and the reused address:
	 * its own copies, of the old sizes */
	release(&t, 200, 0x1000);
	release(&t, 200, 0x1100);
	CHECK_EQ_U64(target(&t, 200)->c.unknown_frees, 0);
	CHECK_EQ_U64(target(&t, 200)->c.bytes_freed, 20);
	/* the parent's new block is not the child's */
	release(&t, 200, 0x5000);
	CHECK_EQ_U64(target(&t, 200)->c.unknown_frees, 1);
	CHECK_EQ_U64(target(&t, 200)->c.live_allocations, 2);
	CHECK(balanced(&target(&t, 200)->c));
	CHECK_EQ_U64(target(&t, 100)->c.live_allocations, 4);
	tracker_destroy(&t);
}

/* A grandchild sees its parent's view at its fork: what the child inherited too. */
TEST(grandchild)
{
	struct tracker t;
	struct sums s;
	struct block_count bc;

	CHECK(tracker_init(&t, 0, 0) == 0);
	CHECK(tracker_add_target(&t, 100, 1000) != NULL);
	alloc(&t, 100, 0x1000, 10, 0x10);
	alloc(&t, 100, 0x2000, 10, 0x10);
	CHECK(tracker_fork(&t, 100, 200, now_ns) != NULL);
	release(&t, 200, 0x1000);
	alloc(&t, 200, 0x3000, 20, 0x20);
	CHECK(tracker_fork(&t, 200, 300, now_ns) != NULL);
	/* after the grandchild's fork its parent frees the rest */
	release(&t, 200, 0x2000);
	release(&t, 200, 0x3000);
	release(&t, 100, 0x2000);
	CHECK_EQ_U64(target(&t, 300)->c.inherited_allocations, 2);
	row_sums(&t, 300, &s);
	CHECK_EQ_U64(s.live, 2);
	CHECK_EQ_U64(s.site_live[0], 1);
	CHECK_EQ_U64(s.site_live[1], 1);
	blocks_of(&t, 300, &bc);
	CHECK_EQ_U64(bc.n, 2);
	CHECK_EQ_U64(bc.bytes, 30);
	release(&t, 300, 0x1000); /* freed by its parent before the fork */
	release(&t, 300, 0x2000);
	release(&t, 300, 0x3000);
	CHECK_EQ_U64(target(&t, 300)->c.unknown_frees, 1);
	CHECK_EQ_U64(target(&t, 300)->c.frees, 2);
	CHECK_EQ_U64(target(&t, 300)->c.live_allocations, 0);
	tracker_destroy(&t);
}

/* At its exit a child's inherited blocks leave it; its own stay (its leaks). */
TEST(release_at_exit)
{
	struct tracker t;
	struct sums s;
	const struct tracker_target *c, *p;

	CHECK(tracker_init(&t, 0, 0) == 0);
	CHECK(tracker_add_target(&t, 100, 1000) != NULL);
	for (uint64_t i = 0; i < 6; i++)
		alloc(&t, 100, 0x1000 + i * 0x100, 10, 0x10);
	CHECK(tracker_fork(&t, 100, 200, now_ns) != NULL);
	release(&t, 200, 0x1000);
	alloc(&t, 200, 0x8000, 5, 0x10);
	release(&t, 100, 0x1200); /* a ghost kept for the child */
	CHECK(target(&t, 100)->fam && target(&t, 100)->fam->nghosts == 1);
	CHECK(tracker_target_exited(&t, 200) == 0);
	c = target(&t, 200);
	CHECK_EQ_U64(c->c.inherited_released, 5);
	CHECK_EQ_U64(c->c.inherited_released_bytes, 50);
	CHECK_EQ_U64(c->c.live_allocations, 1);
	CHECK_EQ_U64(c->c.live_bytes, 5);
	CHECK(balanced(&c->c));
	CHECK(balanced(&t.totals));
	CHECK_EQ_U64(t.totals.live_allocations, 6);
	row_sums(&t, 200, &s);
	CHECK_EQ_U64(s.live, 1);
	CHECK_EQ_U64(s.site_live[0], 1);
	/* nothing shares the parent's view now, unless the peak counts it */
	p = target(&t, 100);
	if (!c->peak_holder) {
		CHECK_EQ_U64(p->refs, 0);
		CHECK(!p->fam || !p->fam->nghosts);
	}
	/* a new peak frees the rest */
	alloc(&t, 100, 0x100000, 1000, 0x30);
	CHECK_EQ_U64(target(&t, 100)->refs, 0);
	CHECK(!target(&t, 100)->fam || !target(&t, 100)->fam->nghosts);
	CHECK_EQ_U64(target(&t, 100)->last_fork, 0);
	tracker_destroy(&t);
}

/* The peak view sums to the peak, inherited blocks included. */
TEST(peak_counts_inherited)
{
	struct tracker t;
	struct sums s;

	CHECK(tracker_init(&t, 0, 0) == 0);
	CHECK(tracker_add_target(&t, 100, 1000) != NULL);
	alloc(&t, 100, 0x1000, 100, 0x10);
	alloc(&t, 100, 0x2000, 100, 0x20);
	CHECK(tracker_fork(&t, 100, 200, now_ns) != NULL);
	CHECK_EQ_U64(t.totals.peak_live_bytes, 400);
	row_sums(&t, 0, &s);
	CHECK_EQ_U64(s.all_peak_bytes, 400);
	release(&t, 200, 0x1000);
	release(&t, 100, 0x2000);
	row_sums(&t, 0, &s);
	CHECK_EQ_U64(s.all_peak_bytes, 400);
	CHECK(tracker_target_exited(&t, 200) == 0);
	CHECK(target(&t, 200)->peak_holder);
	row_sums(&t, 0, &s);
	CHECK_EQ_U64(s.all_peak_bytes, 400);
	row_sums(&t, 200, &s);
	CHECK_EQ_U64(s.live, 0);
	CHECK_EQ_U64(s.peak_bytes, 200);
	tracker_reset_peak(&t, now_ns);
	CHECK(!target(&t, 200)->peak_holder);
	row_sums(&t, 0, &s);
	CHECK_EQ_U64(s.all_peak_bytes, t.totals.peak_live_bytes);
	tracker_destroy(&t);
}

/* realloc of an inherited block: a free of it and an allocation, in the child only. */
TEST(realloc_inherited)
{
	struct tracker t;
	struct block_count bc;

	CHECK(tracker_init(&t, 0, 0) == 0);
	CHECK(tracker_add_target(&t, 100, 1000) != NULL);
	alloc(&t, 100, 0x1000, 10, 0x10);
	alloc(&t, 100, 0x2000, 10, 0x10);
	CHECK(tracker_fork(&t, 100, 200, now_ns) != NULL);
	re_alloc(&t, 200, 0x1000, 0x7000, 40, 0x20); /* moved */
	re_alloc(&t, 200, 0x2000, 0, 99, 0);	     /* failed: stays */
	re_alloc(&t, 200, 0x2000, 0x2000, 30, 0x20); /* in place */
	CHECK_EQ_U64(target(&t, 200)->c.frees, 2);
	CHECK_EQ_U64(target(&t, 200)->c.allocations, 2);
	CHECK_EQ_U64(target(&t, 200)->c.live_bytes, 70);
	CHECK_EQ_U64(target(&t, 200)->c.unknown_frees, 0);
	CHECK(balanced(&target(&t, 200)->c));
	blocks_of(&t, 200, &bc);
	CHECK_EQ_U64(bc.n, 2);
	CHECK_EQ_U64(bc.bytes, 70);
	CHECK_EQ_U64(target(&t, 100)->c.live_bytes, 20);
	tracker_destroy(&t);
}

/*
 * Random families against a model that copies the heap at every fork: per
 * process, its live blocks by address (size, site, inherited).
 */
#define MAXP  12
#define NADDR 64

struct mblock {
	uint64_t size;
	uint32_t site; /* 1-based site number; 0: not live */
	int inherited;
	int freed; /* freed by this process since its last allocation here: a free is nothing */
};

struct mproc {
	uint32_t pid;
	int alive, exited;
	struct mblock b[NADDR];
	uint64_t unknown;
};

static uint64_t rng = 88172645463325252ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static void model_check(struct tracker *t, struct mproc *m, int np)
{
	for (int i = 0; i < np; i++) {
		const struct tracker_target *tt = NULL;
		uint64_t live = 0, bytes = 0, site[16] = {0};
		struct sums s;
		struct block_count bc;

		for (int a = 0; a < NADDR; a++) {
			if (!m[i].b[a].site)
				continue;
			live++;
			bytes += m[i].b[a].size;
			site[m[i].b[a].site - 1]++;
		}
		for (uint32_t k = 0; k < t->ntargets; k++)
			if (t->targets[k].tgid == m[i].pid)
				tt = &t->targets[k];
		if (!tt)
			continue;
		CHECK_EQ_U64(tt->c.live_allocations, live);
		CHECK_EQ_U64(tt->c.live_bytes, bytes);
		CHECK_EQ_U64(tt->c.unknown_frees, m[i].unknown);
		CHECK(balanced(&tt->c));
		row_sums(t, m[i].pid, &s);
		CHECK_EQ_U64(s.live, live);
		CHECK_EQ_U64(s.live_bytes, bytes);
		for (int k = 0; k < 16; k++)
			CHECK_EQ_U64(s.site_live[k], site[k]);
		blocks_of(t, m[i].pid, &bc);
		CHECK_EQ_U64(bc.n, live);
		CHECK_EQ_U64(bc.bytes, bytes);
		CHECK(!bc.dup);
	}
	CHECK(balanced(&t->totals));
	{
		struct sums s;

		row_sums(t, 0, &s);
		CHECK_EQ_U64(s.all_peak_bytes, t->totals.peak_live_bytes);
	}
}

TEST(random_families)
{
	for (int round = 0; round < 40; round++) {
		struct tracker t;
		static struct mproc m[MAXP];
		int np = 1;

		memset(m, 0, sizeof(m));
		CHECK(tracker_init(&t, 0, 0) == 0);
		m[0].pid = 1000;
		m[0].alive = 1;
		CHECK(tracker_add_target(&t, 1000, now_ns) != NULL);
		for (int step = 0; step < 400; step++) {
			int i = (int)rnd((uint32_t)np), a = (int)rnd(NADDR), op = (int)rnd(100);
			uint64_t addr = 0x10000 + (uint64_t)a * 0x40;
			struct mproc *p = &m[i];

			if (!p->alive)
				continue;
			if (op < 40) { /* malloc at a free address */
				uint32_t sn = 1 + rnd(15);

				if (p->b[a].site)
					continue;
				p->b[a] = (struct mblock){.size = 1 + rnd(500), .site = sn};
				alloc(&t, p->pid, addr, p->b[a].size, sn * 0x10);
			} else if (op < 75) { /* free, sometimes of nothing, or freed again */
				if (!p->b[a].site && !p->b[a].freed)
					p->unknown++;
				p->b[a].site = 0;
				p->b[a].freed = 1;
				release(&t, p->pid, addr);
			} else if (op < 85) { /* realloc in place or to another free address */
				int to = (int)rnd(NADDR);
				uint32_t sn = 1 + rnd(15);

				if (!p->b[a].site || (to != a && p->b[to].site))
					continue;
				p->b[a].site = 0;
				p->b[a].freed = 1;
				p->b[to] = (struct mblock){.size = 1 + rnd(500), .site = sn};
				re_alloc(&t, p->pid, addr, 0x10000 + (uint64_t)to * 0x40,
					 p->b[to].size, sn * 0x10);
			} else if (op < 93 && np < MAXP) { /* fork */
				struct mproc *c = &m[np];

				*c = *p;
				c->pid = 1000 + (uint32_t)np;
				c->unknown = 0;
				for (int k = 0; k < NADDR; k++) {
					c->b[k].inherited = 1;
					c->b[k].freed = 0; /* a child knows its own frees only */
				}
				CHECK(tracker_fork(&t, p->pid, c->pid, now_ns) != NULL);
				np++;
			} else if (op < 97 && i) { /* exit: inherited blocks leave */
				p->alive = 0;
				for (int k = 0; k < NADDR; k++)
					if (p->b[k].inherited)
						p->b[k].site = 0;
				CHECK(tracker_target_exited(&t, target(&t, p->pid)->gen) == 0);
			} else if (op < 99) {
				tracker_reset_peak(&t, now_ns);
			}
			if (step % 50 == 49)
				model_check(&t, m, np);
		}
		model_check(&t, m, np);
		tracker_destroy(&t);
	}
}

/* A child's munmap of mmap blocks (CPython arenas) it inherited frees them. */
TEST(munmap_inherited)
{
	struct tracker t;
	const uint64_t A = 0x7f0000000000, M = 1 << 18;
	struct mt_event *ev = (struct mt_event *)evbuf;

	CHECK(tracker_init(&t, 0, 0) == 0);
	CHECK(tracker_add_target(&t, 100, 1000) != NULL);
	for (uint64_t i = 0; i < 4; i++) {
		memset(evbuf, 0, sizeof(evbuf));
		ev->kind = MT_EV_ALLOC;
		ev->func = MT_FN_MMAP;
		ev->tgid = ev->tid = 100;
		ev->time_ns = now_ns += 10;
		ev->addr = A + i * M;
		ev->size = M;
		ev->nframes = 1;
		ev->frames[0] = 0x50;
		tracker_event(&t, evbuf, sizeof(*ev) + 8);
	}
	CHECK(tracker_fork(&t, 100, 200, now_ns) != NULL);
	/* one arena alone, then two adjacent ones in one call */
	memset(evbuf, 0, sizeof(evbuf));
	ev->kind = MT_EV_FREE;
	ev->func = MT_FN_MMAP;
	ev->tgid = ev->tid = 200;
	ev->addr = A;
	ev->size = M;
	tracker_event(&t, evbuf, sizeof(*ev));
	ev->addr = A + M;
	ev->size = 2 * M;
	tracker_event(&t, evbuf, sizeof(*ev));
	CHECK_EQ_U64(target(&t, 200)->c.frees, 3);
	CHECK_EQ_U64(target(&t, 200)->c.live_allocations, 1);
	CHECK_EQ_U64(target(&t, 200)->c.live_bytes, M);
	CHECK_EQ_U64(target(&t, 100)->c.live_allocations, 4);
	CHECK(balanced(&target(&t, 200)->c));
	tracker_destroy(&t);
}

/* The checks of the sanitizer build hold on a family, and catch a broken one. */
TEST(invariants_checked)
{
	struct tracker t;
	pid_t p;
	int status;

	if (!MT_CHECKING)
		return; /* only the SAN=1 build checks them */
	CHECK(tracker_init(&t, 0, 0) == 0);
	CHECK(tracker_add_target(&t, 100, 1000) != NULL);
	alloc(&t, 100, 0x1000, 10, 0x10);
	alloc(&t, 100, 0x2000, 10, 0x10);
	CHECK(tracker_fork(&t, 100, 200, now_ns) != NULL);
	release(&t, 200, 0x1000);
	tracker_check_state(&t); /* holds: returns */
	p = fork();
	if (!p) {
		/* one count off: a target's counters no longer add up */
		target(&t, 200)->c.frees++;
		tracker_check_state(&t);
		_exit(0);
	}
	CHECK(p > 0 && waitpid(p, &status, 0) == p);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	tracker_destroy(&t);
}

/* A top N by selection is the first N of the whole sort. */
TEST(rank_top_matches_sort)
{
	static struct mt_rank a[5000], b[5000];

	for (int round = 0; round < 20; round++) {
		size_t n = 1 + rnd(5000), top = rnd(40), ka, kb;

		for (size_t i = 0; i < n; i++)
			a[i] = (struct mt_rank){
			    .value = rnd(50), .allocations = rnd(3), .index = (uint32_t)i};
		memcpy(b, a, n * sizeof(*a));
		ka = mt_rank_sort(a, n);
		kb = mt_rank_top(b, n, top);
		CHECK_EQ_U64(ka, kb);
		for (size_t i = 0; i < (top && top < ka ? top : ka); i++)
			CHECK(a[i].index == b[i].index);
	}
}

UNIT_MAIN()
