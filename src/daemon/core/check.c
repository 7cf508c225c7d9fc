// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The core's invariants (see check.h), stated as docs/metrics.md and the
 * tables' headers state them. Each check aborts with the condition on
 * failure (common/invariant.h); in a build without checks they compile to
 * nothing.
 */
#include "daemon/core/check.h"
#include "daemon/core/addrmap.h"
#include "common/invariant.h"

#include <stdlib.h>
#include <string.h>

/* docs/metrics.md, "Invariants", for one set of counters. */
static void check_counters(const struct mt_counters *c)
{
	MT_INVARIANT(c->live_allocations == c->inherited_allocations + c->allocations - c->frees -
						c->missed_frees - c->untracked_allocations -
						c->inherited_released);
	/* the bytes of untracked blocks are not counted: exact without them */
	MT_INVARIANT(c->untracked_allocations ||
		     c->live_bytes == c->inherited_bytes + c->bytes_allocated - c->bytes_freed -
					  c->missed_free_bytes - c->inherited_released_bytes);
	MT_INVARIANT(c->peak_live_bytes >= c->live_bytes);
	MT_INVARIANT(c->inherited_released <= c->inherited_allocations);
	MT_INVARIANT(c->temporary_allocations <= c->frees);
}

static void check_target(const struct tracker_target *tt)
{
	check_counters(&tt->c);
	/* what it inherited and still holds is part of its live heap */
	MT_INVARIANT(tt->inherited_live <= tt->c.live_allocations);
	MT_INVARIANT(tt->inherited_live_bytes <= tt->c.live_bytes);
	MT_INVARIANT(!tt->released || !tt->inherited_live);
	MT_INVARIANT(!tt->parent || tt->c.inherited_allocations >= tt->inherited_live);
	MT_INVARIANT(tt->nparked <= tt->parked_cap);
}

void tracker_check_event(const struct tracker *t, const struct tracker_target *tt)
{
	if (!MT_CHECKING)
		return;
	check_target(tt);
	check_counters(&t->totals);
}

void tracker_check_state(const struct tracker *t)
{
	struct mt_counters sum = {0};
	uint64_t own = 0, parked = 0;
	struct addrmap at = {0};
	uint64_t *live, *bytes;
	uint32_t i;

	if (!MT_CHECKING)
		return;
	for (i = 0; i < t->ntargets; i++) {
		const struct tracker_target *tt = &t->targets[i];

		check_target(tt);
		for (size_t k = 0; k < MT_NCOUNTERS; k++)
			if (mt_counter_descs[k].merge == MT_MERGE_SUM)
				mt_counter_set(&sum, k,
					       mt_counter_get(&sum, k) + mt_counter_get(&tt->c, k));
		own += tt->c.live_allocations - tt->inherited_live;
		for (uint32_t p = 0; p < tt->nparked; p++)
			parked += tt->parked[p].known && !tt->parked[p].inherited;
		MT_INVARIANT(!addrmap_put(&at, (uint64_t)tt->gen + 1, i));
	}
	/* the totals are the targets' sums */
	for (size_t k = 0; k < MT_NCOUNTERS; k++)
		if (mt_counter_descs[k].merge == MT_MERGE_SUM)
			MT_INVARIANT(mt_counter_get(&sum, k) == mt_counter_get(&t->totals, k));
	check_counters(&t->totals);
	/* the heap table holds every own live block but those parked in a realloc */
	MT_INVARIANT(heap_valid(&t->heap));
	MT_INVARIANT(own == t->heap.count + parked);
	/* a target's stacks hold its own live blocks; a child's also count the
	 * inherited ones it freed (below zero: the views add what it inherited) */
	live = calloc((size_t)t->ntargets + 1, sizeof(*live));
	bytes = calloc((size_t)t->ntargets + 1, sizeof(*bytes));
	MT_INVARIANT(live && bytes);
	for (uint32_t s = 0; s < t->stacks.count; s++) {
		const struct stack_entry *e = stack_get(&t->stacks, s);
		uint32_t ti;

		MT_INVARIANT(addrmap_get(&at, (uint64_t)e->tgid + 1, &ti));
		live[ti] += e->t.live_allocations;
		bytes[ti] += e->t.live_bytes;
	}
	for (i = 0; i < t->ntargets; i++) {
		const struct tracker_target *tt = &t->targets[i];
		int shares = tt->parent && !tt->released;

		MT_INVARIANT(live[i] ==
			     tt->c.live_allocations - (shares ? tt->c.inherited_allocations : 0));
		MT_INVARIANT(bytes[i] == tt->c.live_bytes - (shares ? tt->c.inherited_bytes : 0));
	}
	free(live);
	free(bytes);
	addrmap_free(&at);
}
