// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The tracker's targets (see generations.h): one entry per traced generation of
 * a process, found by its pid while it runs and by its generation key (the pid,
 * or a retired key of its own) for as long as its data is kept.
 */
#include "daemon/core/generations.h"

#include <stdlib.h>
#include <string.h>

struct tracker_target *tracker_find_target(struct tracker *t, uint32_t tgid)
{
	uint32_t i = t->last_found;

	/* events come in runs from one process: try the last one found first */
	if (i < t->ntargets && t->targets[i].tgid == tgid && !t->targets[i].ended)
		return &t->targets[i];
	for (i = t->ntargets; i-- > 0;) {
		if (t->targets[i].tgid == tgid && !t->targets[i].ended) {
			t->last_found = i;
			return &t->targets[i];
		}
	}
	return NULL;
}

struct tracker_target *tracker_gen_target(struct tracker *t, uint32_t gen)
{
	uint32_t i;

	for (i = 0; i < t->ntargets; i++) {
		if (t->targets[i].gen == gen)
			return &t->targets[i];
	}
	return NULL;
}

const struct tracker_target *tracker_find_gen(const struct tracker *t, uint32_t gen)
{
	return tracker_gen_target((struct tracker *)t, gen);
}

uint32_t tracker_gen_pid(const struct tracker *t, uint32_t gen)
{
	uint32_t i;

	if (!(gen & TRACKER_RETIRED))
		return gen;
	for (i = 0; i < t->ntargets; i++) {
		if (t->targets[i].gen == gen)
			return t->targets[i].tgid;
	}
	return 0;
}

uint32_t tracker_retire(struct tracker *t, uint32_t tgid)
{
	struct tracker_target *tt = tracker_gen_target(t, tgid);
	uint32_t key, i;

	if (!tt)
		return 0;
	key = TRACKER_RETIRED | ++t->retired;
	tt->gen = key;
	addrmap_free(&tt->freed); /* it takes no more events */
	/* Stacks keep their index slot: a lookup compares the whole key, so
	 * the old key's slot position is never matched again. A block's key
	 * is its stack's: the blocks follow. */
	for (i = 0; i < t->stacks.count; i++) {
		if (t->stacks.v[i].tgid == tgid)
			t->stacks.v[i].tgid = key;
	}
	return key;
}

struct tracker_target *tracker_add_target(struct tracker *t, uint32_t tgid, uint64_t start_ns)
{
	struct tracker_target *tt, *v;
	int is_new;
	uint32_t empty;

	if (tracker_find_target(t, tgid))
		return NULL;
	tracker_retire(t, tgid);
	/* The empty stack is interned first so it always exists. */
	empty = stack_intern(&t->stacks, tgid, NULL, 0, &is_new);
	if (empty == STACK_NONE)
		return NULL;
	v = realloc(t->targets, (t->ntargets + 1) * sizeof(*v));
	if (!v)
		return NULL;
	t->targets = v;
	tt = &t->targets[t->ntargets++];
	memset(tt, 0, sizeof(*tt));
	tt->tgid = tgid;
	tt->gen = tgid;
	tt->refrees = 1; /* until the daemon knows its allocator is not glibc */
	tt->start_ns = start_ns;
	tt->empty_stack = empty;
	if (t->ntargets == 1)
		t->start_ns = start_ns;
	return tt;
}
