// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The rows of the views (see viewrows.h). For each child that still holds
 * inherited blocks, the stacks of its ancestors are summed by their frames
 * (the same return addresses in the same order: the same word numbers of
 * the stack table) at the epochs of the forks, from the stacks' kept
 * values (family.h); each sum goes to the child's own stack of those
 * frames, or becomes an extra row.
 */
#include "daemon/core/viewrows.h"
#include "daemon/core/tracker.h"
#include "daemon/core/family.h"

#include <stdlib.h>
#include <string.h>

/* One level of a child's chain: an ancestor and the fork epoch it is seen at. */
struct level {
	uint32_t target;
	uint32_t epoch;
};

#define MAX_LEVELS 64

/* Stacks of the same frames, summed: open addressing over group numbers. */
struct group {
	uint32_t stack; /* the first (nearest) stack with these frames */
	uint64_t hash;
	uint64_t live_allocations, live_bytes;
	uint32_t id; /* the row they make + 1 */
};

struct groups {
	const struct stack_table *st;
	uint64_t *hash;	 /* by stack: its frames' hash, | 1; 0 until needed */
	uint32_t *slots; /* group + 1; 0 empty */
	size_t mask;
	struct group *g;
	uint32_t n, cap;
};

/* Equal frames are one node of the stack table's tree (stacks.h). */
static uint64_t frames_hash(const struct stack_table *st, uint32_t s)
{
	uint64_t h = stack_get(st, s)->leaf * 0x9e3779b97f4a7c15ull;

	return h ^ h >> 29;
}

static int frames_equal(const struct stack_table *st, uint32_t a, uint32_t b)
{
	return stack_get(st, a)->leaf == stack_get(st, b)->leaf;
}

/* The group of stack s's frames (made when add): its index, or -1. */
static int64_t group_find(struct groups *gs, uint32_t s, int add)
{
	uint64_t h = gs->hash[s] ? gs->hash[s] : (gs->hash[s] = frames_hash(gs->st, s) | 1);
	size_t i;

	if (add && ((size_t)gs->n + 1) * 2 > (gs->slots ? gs->mask + 1 : 0)) {
		size_t slots = gs->slots ? 2 * (gs->mask + 1) : 256, j;
		uint32_t *v = calloc(slots, sizeof(*v));

		if (!v)
			return -1;
		for (uint32_t k = 0; k < gs->n; k++) {
			for (j = gs->g[k].hash & (slots - 1); v[j]; j = (j + 1) & (slots - 1))
				;
			v[j] = k + 1;
		}
		free(gs->slots);
		gs->slots = v;
		gs->mask = slots - 1;
	}
	if (!gs->slots)
		return -1;
	for (i = h & gs->mask; gs->slots[i]; i = (i + 1) & gs->mask) {
		const struct group *g = &gs->g[gs->slots[i] - 1];

		if (g->hash == h && frames_equal(gs->st, g->stack, s))
			return gs->slots[i] - 1;
	}
	if (!add)
		return -1;
	if (gs->n == gs->cap) {
		uint32_t cap = gs->cap ? gs->cap * 2 : 256;
		struct group *v = realloc(gs->g, (size_t)cap * sizeof(*v));

		if (!v)
			return -1;
		gs->g = v;
		gs->cap = cap;
	}
	gs->g[gs->n] = (struct group){.stack = s, .hash = h};
	gs->slots[i] = ++gs->n;
	return gs->n - 1;
}

static void groups_reset(struct groups *gs)
{
	if (gs->slots)
		memset(gs->slots, 0, (gs->mask + 1) * sizeof(*gs->slots));
	gs->n = 0;
}

static void groups_free(struct groups *gs)
{
	free(gs->slots);
	free(gs->g);
	free(gs->hash);
}

/* Stack s's live values at fork epoch e (its owner's kept records: family.h). */
static void value_at(const struct tracker *t, const struct tracker_target *owner, uint32_t s,
		     uint32_t e, uint64_t *live_allocations, uint64_t *live_bytes)
{
	const struct stack_entry *se = stack_get(&t->stacks, s);
	const struct family_hist *best = NULL;

	for (uint32_t i = se->hist; i && owner->fam && i <= owner->fam->nhist;) {
		const struct family_hist *h = &owner->fam->hist[i - 1];

		if (h->epoch < e)
			break;
		best = h;
		i = h->prev;
	}
	*live_allocations = best ? best->live_allocations : se->t.live_allocations;
	*live_bytes = best ? best->live_bytes : se->t.live_bytes;
}

/* The chain of child c: its ancestors, each with the epoch it is seen at. */
static uint32_t chain_of(const struct tracker *t, uint32_t c, struct level *out)
{
	uint32_t n = 0;

	while (t->targets[c].parent && n < MAX_LEVELS) {
		out[n].epoch = t->targets[c].fork_epoch;
		c = t->targets[c].parent - 1;
		out[n++].target = c;
	}
	return n;
}

static int needs_rows(const struct tracker_target *tt, uint32_t pid)
{
	return tt->parent && (!tt->released || tt->peak_holder) && (!pid || tt->tgid == pid);
}

/* The stacks of each target, bucketed: first[i] .. first[i + 1] in list. */
struct buckets {
	uint32_t *first; /* ntargets + 1 */
	uint32_t *list;
};

static int bucket_stacks(const struct tracker *t, const struct addrmap *target_of,
			 struct buckets *b)
{
	uint32_t n = t->stacks.count, nt = t->ntargets, ti;

	b->first = calloc((size_t)nt + 2, sizeof(*b->first));
	b->list = malloc(((size_t)n + 1) * sizeof(*b->list));
	if (!b->first || !b->list)
		return -1;
	for (uint32_t s = 0; s < n; s++)
		if (addrmap_get(target_of, (uint64_t)stack_get(&t->stacks, s)->tgid + 1, &ti))
			b->first[ti + 2]++;
	for (uint32_t i = 0; i < nt; i++)
		b->first[i + 2] += b->first[i + 1];
	for (uint32_t s = 0; s < n; s++)
		if (addrmap_get(target_of, (uint64_t)stack_get(&t->stacks, s)->tgid + 1, &ti))
			b->list[b->first[ti + 1]++] = s;
	return 0; /* first[i] .. first[i + 1] now */
}

static int add_base(struct viewrows *r, uint32_t stack, const struct viewrows_base *base)
{
	if (r->nbases == r->bases_cap) {
		uint32_t cap = r->bases_cap ? 2 * r->bases_cap : 64;
		struct viewrows_base *v = realloc(r->bases, (size_t)cap * sizeof(*v));

		if (!v)
			return -1;
		r->bases = v;
		r->bases_cap = cap;
	}
	if (addrmap_put(&r->base_at, (uint64_t)stack + 1, r->nbases))
		return -1;
	r->bases[r->nbases++] = *base;
	return 0;
}

static int add_row(struct viewrows *r, const struct viewrows_row *row)
{
	if (r->nrows == r->rows_cap) {
		uint32_t cap = r->rows_cap ? 2 * r->rows_cap : 64;
		struct viewrows_row *v = realloc(r->rows, (size_t)cap * sizeof(*v));

		if (!v)
			return -1;
		r->rows = v;
		r->rows_cap = cap;
	}
	r->rows[r->nrows++] = *row;
	return 0;
}

/* Where the blocks of ancestor stack s count for child x: row id. */
static int row_for(struct viewrows *r, uint32_t x, uint32_t s, uint32_t id)
{
	return r->blocks ? addrmap_put(&r->row_of, ((uint64_t)x + 1) << 32 | s, id + 1) : 0;
}

/*
 * The rows of a child forked from a parent that is not a child itself: the
 * parent's stacks are its groups already (a space holds each stack once);
 * only the child's own stacks are looked up by frames.
 */
static int child_rows_one(const struct tracker *t, struct viewrows *r, const struct buckets *b,
			  struct groups *gs, uint32_t x, const struct level *lev,
			  struct viewrows_base base)
{
	const struct tracker_target *p = &t->targets[lev->target];

	groups_reset(gs);
	for (uint32_t i = b->first[x]; i < b->first[x + 1]; i++)
		if (group_find(gs, b->list[i], 1) < 0)
			return -1;
	for (uint32_t i = b->first[lev->target]; i < b->first[lev->target + 1]; i++) {
		uint32_t s = b->list[i], id;
		int64_t g;

		value_at(t, p, s, lev->epoch, &base.live_allocations, &base.live_bytes);
		if (!base.live_allocations && !base.live_bytes)
			continue;
		g = gs->n ? group_find(gs, s, 0) : -1;
		if (g >= 0) {
			id = gs->g[g].stack; /* the child's own stack of these frames */
			if (add_base(r, id, &base))
				return -1;
		} else {
			struct viewrows_row row = {.stack = s, .target = x, .base = base};

			if (add_row(r, &row))
				return -1;
			id = r->nstacks + r->nrows - 1;
		}
		if (row_for(r, x, s, id))
			return -1;
	}
	return 0;
}

/* The rows of child x (which needs them): groups its ancestors' stacks by frames. */
static int child_rows(const struct tracker *t, struct viewrows *r, const struct buckets *b,
		      struct groups *gs, uint32_t x)
{
	const struct tracker_target *xt = &t->targets[x];
	struct level chain[MAX_LEVELS];
	uint32_t nlev = chain_of(t, x, chain);
	struct viewrows_base base = {
	    .now = !xt->released,
	    .at_peak = t->peak_epoch > xt->fork_peak_epoch,
	};

	if (nlev == 1)
		return child_rows_one(t, r, b, gs, x, &chain[0], base);
	groups_reset(gs);
	for (uint32_t k = 0; k < nlev; k++) {
		const struct tracker_target *a = &t->targets[chain[k].target];

		for (uint32_t i = b->first[chain[k].target]; i < b->first[chain[k].target + 1];
		     i++) {
			uint32_t s = b->list[i];
			int64_t g = group_find(gs, s, 1);
			uint64_t la, lb;

			if (g < 0)
				return -1;
			value_at(t, a, s, chain[k].epoch, &la, &lb);
			gs->g[g].live_allocations += la;
			gs->g[g].live_bytes += lb;
		}
	}
	/* each group's row: the child's own stack of those frames, or a new one */
	for (uint32_t i = b->first[x]; i < b->first[x + 1]; i++) {
		uint32_t s = b->list[i];
		int64_t g = group_find(gs, s, 0);

		if (g < 0 || (!gs->g[g].live_allocations && !gs->g[g].live_bytes))
			continue;
		base.live_allocations = gs->g[g].live_allocations;
		base.live_bytes = gs->g[g].live_bytes;
		if (add_base(r, s, &base))
			return -1;
		gs->g[g].id = s + 1;
	}
	for (uint32_t g = 0; g < gs->n; g++) {
		struct viewrows_row row = {.stack = gs->g[g].stack, .target = x};

		if (gs->g[g].id || (!gs->g[g].live_allocations && !gs->g[g].live_bytes))
			continue;
		row.base = base;
		row.base.live_allocations = gs->g[g].live_allocations;
		row.base.live_bytes = gs->g[g].live_bytes;
		if (add_row(r, &row))
			return -1;
		gs->g[g].id = r->nstacks + r->nrows; /* its id + 1 */
	}
	/* where each ancestor stack's blocks count for this child */
	for (uint32_t k = 0; r->blocks && k < nlev; k++) {
		for (uint32_t i = b->first[chain[k].target]; i < b->first[chain[k].target + 1];
		     i++) {
			uint32_t s = b->list[i];
			int64_t g = group_find(gs, s, 0);

			if (g >= 0 && gs->g[g].id && row_for(r, x, s, gs->g[g].id - 1))
				return -1;
		}
	}
	return 0;
}

int viewrows_build(const struct tracker *t, uint32_t pid, int blocks, struct viewrows *r)
{
	struct addrmap target_of = {0};
	struct buckets b = {0};
	struct groups gs = {.st = &t->stacks};
	uint32_t i;
	int rc = -1, any = 0;

	memset(r, 0, sizeof(*r));
	r->nstacks = t->stacks.count;
	r->pid = pid;
	r->blocks = blocks;
	for (i = 0; i < t->ntargets; i++)
		any |= needs_rows(&t->targets[i], pid);
	if (!any)
		return 0;
	for (i = 0; i < t->ntargets; i++)
		if (addrmap_put(&target_of, (uint64_t)t->targets[i].gen + 1, i))
			goto out;
	if (bucket_stacks(t, &target_of, &b))
		goto out;
	gs.hash = calloc((size_t)t->stacks.count + 1, sizeof(*gs.hash));
	if (!gs.hash)
		goto out;
	for (i = 0; i < t->ntargets; i++)
		if (needs_rows(&t->targets[i], pid) && child_rows(t, r, &b, &gs, i))
			goto out;
	rc = 0;
out:
	addrmap_free(&target_of);
	free(b.first);
	free(b.list);
	groups_free(&gs);
	if (rc)
		viewrows_free(r);
	return rc;
}

void viewrows_free(struct viewrows *r)
{
	free(r->rows);
	free(r->bases);
	addrmap_free(&r->base_at);
	addrmap_free(&r->row_of);
	memset(r, 0, sizeof(*r));
}

uint32_t viewrows_stack(const struct viewrows *r, uint32_t id)
{
	return id < r->nstacks ? id : r->rows[id - r->nstacks].stack;
}

uint32_t viewrows_pid(const struct tracker *t, const struct viewrows *r, uint32_t id)
{
	if (id < r->nstacks)
		return tracker_gen_pid(t, stack_get(&t->stacks, id)->tgid);
	return t->targets[r->rows[id - r->nstacks].target].tgid;
}

struct viewrows_base viewrows_inherited(const struct viewrows *r, uint32_t id)
{
	struct viewrows_base none = {0};
	uint32_t i;

	if (id >= r->nstacks)
		return r->rows[id - r->nstacks].base;
	if (r->nbases && addrmap_get(&r->base_at, (uint64_t)id + 1, &i))
		return r->bases[i];
	return none;
}

struct mt_stack_counters viewrows_counters(const struct tracker *t, const struct viewrows *r,
					   uint32_t id)
{
	struct mt_stack_counters c = {0};
	struct viewrows_base base = viewrows_inherited(r, id);

	if (id < r->nstacks) {
		const struct stack_entry *e = stack_get(&t->stacks, id);

		c = stack_counters(e);
		c.peak_live_bytes = tracker_stack_peak_bytes(t, e);
	}
	if (base.now) {
		c.live_allocations += base.live_allocations;
		c.live_bytes += base.live_bytes;
	}
	if (base.at_peak)
		c.peak_live_bytes += base.live_bytes;
	return c;
}

/* Is the block at addr of owner (an ancestor of x, with chain to it) in x's heap? */
static int visible(const struct tracker *t, uint32_t x, const struct level *chain, uint32_t nlev,
		   uint32_t owner, uint64_t addr, uint32_t *epoch)
{
	uint32_t e = UINT32_MAX, c = x, tomb;

	for (uint32_t k = 0; k < nlev; k++) {
		const struct family *f = t->targets[c].fam;

		if (f && addrmap_get(&f->tombs, addr, &tomb) && tomb < e)
			return 0;
		e = chain[k].epoch;
		c = chain[k].target;
		if (c == owner) {
			*epoch = e;
			return 1;
		}
	}
	return 0;
}

static uint32_t birth_of(const struct tracker_target *tt, uint64_t addr)
{
	uint32_t birth = 0;

	if (tt->fam)
		addrmap_get(&tt->fam->births, addr, &birth);
	return birth;
}

/* A child that holds inherited blocks, with its chain of ancestors. */
struct kid {
	uint32_t x, nlev;
	struct level chain[MAX_LEVELS];
};

struct block_walk {
	const struct tracker *t;
	const struct viewrows *r;
	struct kid *kids;
	uint32_t nkids;
	int (*fn)(void *arg, uint32_t id, const struct heap_block *b);
	void *arg;
};

/* Block b of owner, born at birth and gone at death (UINT32_MAX: live), for each child holding it.
 */
static int emit_inherited(const struct block_walk *w, uint32_t owner, const struct heap_block *b,
			  uint32_t birth, uint32_t death)
{
	for (uint32_t k = 0; k < w->nkids; k++) {
		const struct kid *kd = &w->kids[k];
		uint32_t e, id;

		if (!visible(w->t, kd->x, kd->chain, kd->nlev, owner, b->addr, &e) ||
		    !(birth < e && e <= death))
			continue;
		if (addrmap_get(&w->r->row_of, ((uint64_t)kd->x + 1) << 32 | b->stack, &id) &&
		    w->fn(w->arg, id - 1, b))
			return 1;
	}
	return 0;
}

static int walk_families(struct block_walk *w)
{
	const struct tracker *t = w->t;
	struct addrmap target_of = {0};
	struct heap_block b;
	uint64_t pos = 0;
	uint32_t o;
	int stop = 0;

	for (uint32_t x = 0; x < t->ntargets; x++) {
		const struct tracker_target *xt = &t->targets[x];

		if (!xt->parent || xt->released || !xt->inherited_live ||
		    (w->r->pid && xt->tgid != w->r->pid))
			continue;
		w->kids[w->nkids].x = x;
		w->kids[w->nkids].nlev = chain_of(t, x, w->kids[w->nkids].chain);
		w->nkids++;
	}
	for (o = 0; o < t->ntargets; o++)
		if (t->targets[o].refs &&
		    addrmap_put(&target_of, (uint64_t)t->targets[o].gen + 1, o))
			goto out;
	while (!stop && w->nkids && heap_next(&t->heap, &pos, &b)) {
		if (b.stack < t->stacks.count && addrmap_get(&target_of, (uint64_t)b.tgid + 1, &o))
			stop =
			    emit_inherited(w, o, &b, birth_of(&t->targets[o], b.addr), UINT32_MAX);
	}
	/* blocks that left an ancestor's heap (ghosts) or are in a realloc there */
	for (o = 0; !stop && w->nkids && o < t->ntargets; o++) {
		const struct tracker_target *ot = &t->targets[o];

		if (!ot->refs)
			continue;
		for (uint32_t i = 0; !stop && i < ot->nparked; i++) {
			const struct tracker_parked *p = &ot->parked[i];

			if (p->known && !p->inherited)
				stop = emit_inherited(w, o, &p->block, birth_of(ot, p->old_addr),
						      UINT32_MAX);
		}
		for (uint32_t i = 0; !stop && ot->fam && i < ot->fam->nghosts; i++) {
			const struct family_ghost *g = &ot->fam->ghosts[i];
			struct heap_block gb = {.addr = g->addr,
						.size = g->size,
						.time_ns = g->time_ns,
						.tgid = ot->gen,
						.stack = g->stack};

			stop = emit_inherited(w, o, &gb, g->birth, g->death);
		}
	}
out:
	addrmap_free(&target_of);
	return stop;
}

void viewrows_blocks(const struct tracker *t, const struct viewrows *r,
		     int (*fn)(void *arg, uint32_t id, const struct heap_block *b), void *arg)
{
	struct block_walk w = {.t = t, .r = r, .fn = fn, .arg = arg};
	struct heap_block b;
	uint64_t pos = 0;

	while (heap_next(&t->heap, &pos, &b))
		if (b.stack < t->stacks.count && fn(arg, b.stack, &b))
			return;
	if (!r || (!r->nrows && !r->nbases))
		return;
	w.kids = malloc(((size_t)t->ntargets + 1) * sizeof(*w.kids));
	if (w.kids)
		walk_families(&w);
	free(w.kids);
}
