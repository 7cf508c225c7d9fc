// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Process families (see family.h): the side tables that let a forked child
 * share its parent's heap as of the fork, and what a change costs on each
 * side. Every operation here is O(1) in the size of the heap: a few hash
 * lookups, and one walk up the (short) chain of ancestors.
 */
#include "daemon/core/family.h"
#include "daemon/core/state.h"

#include <stdlib.h>
#include <string.h>

static struct tracker_target *parent_of(const struct tracker *t, const struct tracker_target *tt)
{
	return tt->parent ? &t->targets[tt->parent - 1] : NULL;
}

static struct family *fam_of(struct tracker_target *tt)
{
	if (!tt->fam)
		tt->fam = calloc(1, sizeof(*tt->fam));
	return tt->fam;
}

static int grow(void **v, uint32_t *cap, uint32_t n, size_t size)
{
	uint32_t c;
	void *nv;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 16;
	nv = realloc(*v, (size_t)c * size);
	if (!nv)
		return -1;
	*v = nv;
	*cap = c;
	return 0;
}

/* Forget what tt kept as a parent: no child shares its view any more. */
static void forget_parent_side(struct tracker *t, struct tracker_target *tt)
{
	struct family *f = tt->fam;

	tt->last_fork = 0;
	if (!f)
		return;
	for (uint32_t i = 0; i < f->nhist_stacks; i++) {
		struct stack_entry *s = stack_get(&t->stacks, f->hist_stacks[i]);

		s->hist = 0;
	}
	addrmap_free(&f->births);
	addrmap_free(&f->ghost_at);
	free(f->ghosts);
	free(f->hist);
	free(f->hist_stacks);
	f->ghosts = NULL;
	f->hist = NULL;
	f->hist_stacks = NULL;
	f->nghosts = f->ghosts_cap = f->nhist = f->hist_cap = 0;
	f->nhist_stacks = f->hist_stacks_cap = 0;
}

static void forget_child_side(struct tracker_target *tt)
{
	struct family *f = tt->fam;

	if (!f)
		return;
	addrmap_free(&f->tombs);
	addrmap_free(&f->ifree_at);
	free(f->ifree);
	f->ifree = NULL;
	f->nifree = f->ifree_cap = 0;
}

void family_free(struct tracker *t, struct tracker_target *tt)
{
	forget_parent_side(t, tt);
	forget_child_side(tt);
	free(tt->fam);
	tt->fam = NULL;
}

/*
 * Does tt still need its parent's view? While its inherited blocks are in
 * its heap, while the current peak counts them, and while a child of its
 * own needs its view (which includes what it inherited). Moves the refs up
 * the chain and drops the side tables no one needs.
 */
static void update_hold(struct tracker *t, struct tracker_target *tt)
{
	for (uint32_t hops = 0; tt && hops < 1024; hops++) {
		struct tracker_target *p = parent_of(t, tt);
		int need = p && (!tt->released || tt->peak_holder || tt->refs);

		if (!tt->refs)
			forget_parent_side(t, tt);
		if (need == tt->holds_parent)
			return;
		tt->holds_parent = need;
		if (need) {
			p->refs++;
		} else {
			forget_child_side(tt);
			p->refs--;
		}
		tt = p; /* its need may have changed with its refs */
	}
}

int family_fork(struct tracker *t, struct tracker_target *parent, struct tracker_target *child)
{
	child->parent = (uint32_t)(parent - t->targets) + 1;
	child->fork_epoch = ++t->forks;
	parent->last_fork = child->fork_epoch;
	child->inherited_live = parent->c.live_allocations;
	child->inherited_live_bytes = parent->c.live_bytes;
	update_hold(t, child);
	return 0;
}

void family_born(struct tracker *t, struct tracker_target *tt, uint64_t addr)
{
	if (!tt->last_fork || !fam_of(tt))
		return;
	/* out of memory: taken as born before the fork (a child may see it) */
	addrmap_put(&tt->fam->births, addr, t->forks);
}

void family_gone(struct tracker *t, struct tracker_target *tt, const struct heap_block *b)
{
	struct family *f = tt->fam;
	struct family_ghost *g;
	uint32_t birth = 0, prev = 0;

	if (!tt->last_fork || !f)
		return;
	addrmap_del(&f->births, b->addr, &birth);
	if (birth >= tt->last_fork)
		return; /* no fork while it lived: no child ever saw it */
	if (grow((void **)&f->ghosts, &f->ghosts_cap, f->nghosts, sizeof(*f->ghosts)))
		return;
	addrmap_get(&f->ghost_at, b->addr, &prev);
	if (addrmap_put(&f->ghost_at, b->addr, f->nghosts + 1))
		return;
	g = &f->ghosts[f->nghosts++];
	*g = (struct family_ghost){.addr = b->addr,
				   .size = b->size,
				   .time_ns = b->time_ns,
				   .stack = b->stack,
				   .birth = birth,
				   .death = t->forks,
				   .prev = prev};
}

/* Was tt's own block at addr (live now) born before epoch e? */
static int born_before(const struct tracker_target *tt, uint64_t addr, uint32_t e)
{
	uint32_t birth = 0;

	if (tt->fam)
		addrmap_get(&tt->fam->births, addr, &birth);
	return birth < e;
}

/*
 * The block at addr in tt's own part of its view at fork epoch e: a live
 * own block born before e, a block parked in a realloc, or a ghost.
 */
static int own_at(const struct tracker *t, const struct tracker_target *tt, uint64_t addr,
		  uint32_t e, struct heap_block *out)
{
	uint32_t gi;

	if (heap_get(&t->heap, tt->gen, addr, out) && born_before(tt, addr, e))
		return 1;
	for (uint32_t i = 0; i < tt->nparked; i++) {
		const struct tracker_parked *p = &tt->parked[i];

		if (p->known && !p->inherited && p->old_addr == addr && born_before(tt, addr, e)) {
			*out = p->block;
			return 1;
		}
	}
	if (!tt->fam || !addrmap_get(&tt->fam->ghost_at, addr, &gi))
		return 0;
	for (; gi; gi = tt->fam->ghosts[gi - 1].prev) {
		const struct family_ghost *g = &tt->fam->ghosts[gi - 1];

		if (g->birth < e && e <= g->death) {
			*out = (struct heap_block){.addr = g->addr,
						   .size = g->size,
						   .time_ns = g->time_ns,
						   .tgid = tt->gen,
						   .stack = g->stack};
			return 1;
		}
	}
	return 0;
}

int family_inherited(const struct tracker *t, const struct tracker_target *tt, uint64_t addr,
		     struct heap_block *out)
{
	const struct tracker_target *c = tt, *p;
	uint32_t e = UINT32_MAX, tomb, hops = 0;

	if (!tt->parent || tt->released)
		return 0;
	/* up the chain: each child's view at e holds what its parent held at
	 * the child's fork, less what the child freed before e */
	while ((p = parent_of(t, c)) && hops++ < 1024) {
		if (c->fam && addrmap_get(&c->fam->tombs, addr, &tomb) && tomb < e)
			return 0;
		e = c->fork_epoch;
		if (own_at(t, p, addr, e, out))
			return 1;
		c = p;
	}
	return 0;
}

void family_took(struct tracker *t, struct tracker_target *tt, uint64_t addr, uint32_t stack,
		 uint64_t size)
{
	struct family *f = fam_of(tt);
	uint32_t i;

	tt->inherited_live--;
	tt->inherited_live_bytes -= size;
	if (!f)
		return;
	addrmap_put(&f->tombs, addr, t->forks);
	if (!addrmap_get(&f->ifree_at, (uint64_t)stack + 1, &i)) {
		if (grow((void **)&f->ifree, &f->ifree_cap, f->nifree, sizeof(*f->ifree)) ||
		    addrmap_put(&f->ifree_at, (uint64_t)stack + 1, f->nifree))
			return;
		i = f->nifree++;
		f->ifree[i] = (struct family_ifree){.stack = stack};
	}
	f->ifree[i].count++;
	f->ifree[i].bytes += size;
}

static void hist_push(struct tracker *t, const struct tracker_target *tt, uint32_t s,
		      uint64_t live_allocations, uint64_t live_bytes)
{
	struct family *f = fam_of((struct tracker_target *)tt);
	struct stack_entry *e = stack_get(&t->stacks, s);

	if (!f || grow((void **)&f->hist, &f->hist_cap, f->nhist, sizeof(*f->hist)))
		return;
	if (!e->hist) {
		if (grow((void **)&f->hist_stacks, &f->hist_stacks_cap, f->nhist_stacks,
			 sizeof(*f->hist_stacks)))
			return;
		f->hist_stacks[f->nhist_stacks++] = s;
	}
	f->hist[f->nhist] = (struct family_hist){.epoch = tt->last_fork,
						 .prev = e->hist,
						 .live_allocations = live_allocations,
						 .live_bytes = live_bytes};
	e->hist = ++f->nhist;
}

void family_stack_save(struct tracker *t, const struct tracker_target *tt, uint32_t s)
{
	const struct stack_entry *e = stack_get(&t->stacks, s);

	/* kept already for its latest fork? (its newest record's epoch) */
	if (e->hist && tt->fam && tt->fam->hist[e->hist - 1].epoch >= tt->last_fork)
		return;
	hist_push(t, tt, s, e->t.live_allocations, e->t.live_bytes);
}

void family_stack_new(struct tracker *t, const struct tracker_target *tt, uint32_t s)
{
	/* it did not exist at the forks so far: nothing live there */
	hist_push(t, tt, s, 0, 0);
}

void family_release(struct tracker *t, struct tracker_target *tt,
		    void (*undo)(void *arg, uint32_t stack, uint64_t count, uint64_t bytes),
		    void *arg)
{
	if (!tt->parent || tt->released)
		return;
	for (uint32_t i = 0; tt->fam && i < tt->fam->nifree; i++)
		undo(arg, tt->fam->ifree[i].stack, tt->fam->ifree[i].count,
		     tt->fam->ifree[i].bytes);
	tt->released = 1;
	/* the current peak was set while it held them: the peak view still
	 * counts them until the peak moves */
	if (t->peak_epoch > tt->fork_peak_epoch) {
		tt->peak_holder = 1;
		t->peak_holders++;
	}
	if (tt->fam) {
		addrmap_free(&tt->fam->ifree_at);
		free(tt->fam->ifree);
		tt->fam->ifree = NULL;
		tt->fam->nifree = tt->fam->ifree_cap = 0;
	}
	update_hold(t, tt);
}

void family_peak_moved(struct tracker *t)
{
	for (uint32_t i = 0; i < t->ntargets; i++) {
		struct tracker_target *tt = &t->targets[i];

		if (!tt->peak_holder)
			continue;
		tt->peak_holder = 0;
		t->peak_holders--;
		update_hold(t, tt);
	}
}

size_t family_bytes(const struct tracker *t)
{
	size_t n = 0;

	for (uint32_t i = 0; i < t->ntargets; i++) {
		const struct family *f = t->targets[i].fam;

		if (!f)
			continue;
		n += sizeof(*f) + addrmap_bytes(&f->births) + addrmap_bytes(&f->ghost_at) +
		     (size_t)f->ghosts_cap * sizeof(*f->ghosts) +
		     (size_t)f->hist_cap * sizeof(*f->hist) +
		     (size_t)f->hist_stacks_cap * sizeof(*f->hist_stacks) +
		     addrmap_bytes(&f->tombs) + addrmap_bytes(&f->ifree_at) +
		     (size_t)f->ifree_cap * sizeof(*f->ifree);
	}
	return n;
}
