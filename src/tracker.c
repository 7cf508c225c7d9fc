// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Event accounting (see tracker.h and docs/metrics.md). Every event is O(1):
 * one heap table operation, one stack lookup, and the peak epoch check that
 * lets "live at peak" be reported per stack without an event log.
 */
#include "tracker.h"

#include <stdlib.h>
#include <string.h>

int tracker_init(struct tracker *t, size_t max_live_blocks, uint32_t max_stacks)
{
	memset(t, 0, sizeof(*t));
	if (heap_init(&t->heap, max_live_blocks))
		return -1;
	if (stacks_init(&t->stacks, max_stacks)) {
		heap_destroy(&t->heap);
		return -1;
	}
	t->temporary_threshold = 1;
	return 0;
}

void tracker_destroy(struct tracker *t)
{
	uint32_t i;

	for (i = 0; i < t->ntargets; i++)
		free(t->targets[i].parked);
	free(t->targets);
	free(t->thread_seqs);
	heap_destroy(&t->heap);
	stacks_destroy(&t->stacks);
	memset(t, 0, sizeof(*t));
}

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

struct tracker_target *tracker_find_space(struct tracker *t, uint32_t space)
{
	uint32_t i;

	for (i = 0; i < t->ntargets; i++) {
		if (t->targets[i].space == space)
			return &t->targets[i];
	}
	return NULL;
}

uint32_t tracker_space_pid(const struct tracker *t, uint32_t space)
{
	uint32_t i;

	if (!(space & TRACKER_RETIRED))
		return space;
	for (i = 0; i < t->ntargets; i++) {
		if (t->targets[i].space == space)
			return t->targets[i].tgid;
	}
	return 0;
}

uint32_t tracker_retire(struct tracker *t, uint32_t tgid)
{
	struct tracker_target *tg = tracker_find_space(t, tgid);
	struct heap_block *moved = NULL, b;
	const struct heap_block *hb;
	size_t n = 0, cap = 0, pos = 0, k;
	uint32_t key, i;

	if (!tg)
		return 0;
	key = TRACKER_RETIRED | ++t->retired;
	tg->space = key;
	/* Stacks keep their index slot: a lookup compares the whole key, so
	 * the old key's slot position is never matched again. */
	for (i = 0; i < t->stacks.count; i++) {
		if (t->stacks.v[i].tgid == tgid)
			t->stacks.v[i].tgid = key;
	}
	/* Blocks are hashed by key: take them out, then put them back. */
	while ((hb = heap_next(&t->heap, &pos))) {
		if (hb->tgid != tgid)
			continue;
		if (n == cap) {
			struct heap_block *v;

			cap = cap ? cap * 2 : 256;
			v = realloc(moved, cap * sizeof(*v));
			if (!v)
				break; /* the rest stay under tgid: freed by nothing */
			moved = v;
		}
		moved[n++] = *hb;
	}
	for (k = 0; k < n; k++) {
		heap_remove(&t->heap, tgid, moved[k].addr, &b);
		b.tgid = key;
		heap_insert(&t->heap, &b, NULL);
	}
	free(moved);
	return key;
}

struct tracker_target *tracker_add_target(struct tracker *t, uint32_t tgid, uint64_t start_ns)
{
	struct tracker_target *tg, *v;
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
	tg = &t->targets[t->ntargets++];
	memset(tg, 0, sizeof(*tg));
	tg->tgid = tgid;
	tg->space = tgid;
	tg->start_ns = start_ns;
	tg->empty_stack = empty;
	if (t->ntargets == 1)
		t->start_ns = start_ns;
	return tg;
}

uint64_t tracker_stack_peak_bytes(const struct tracker *t, const struct stack_entry *s)
{
	return s->t.peak_epoch == t->peak_epoch ? s->t.peak_live_bytes : s->t.live_bytes;
}

#define THREADS_MIN_CAPACITY 64

static size_t thread_slot(const uint64_t *v, size_t mask, uint32_t tid)
{
	size_t i = (tid * 0x9e3779b97f4a7c15ull) >> 20 & mask;

	while (v[i] && (uint32_t)(v[i] >> 32) != tid)
		i = (i + 1) & mask;
	return i;
}

/*
 * Count one allocation in thread tid; returns the count, or 0 when the
 * table cannot grow (that block is then never temporary). Threads are never
 * removed: 8 bytes per thread ever seen.
 */
static uint32_t thread_count_alloc(struct tracker *t, uint32_t tid)
{
	size_t i;

	if (!tid)
		return 0;
	if (t->thread_seqs && (t->nthreads + 1) * 4 > (t->thread_mask + 1) * 3) {
		size_t cap = (t->thread_mask + 1) * 2;
		uint64_t *v = calloc(cap, sizeof(*v));

		if (!v)
			return 0;
		for (size_t k = 0; k <= t->thread_mask; k++)
			if (t->thread_seqs[k])
				v[thread_slot(v, cap - 1, (uint32_t)(t->thread_seqs[k] >> 32))] =
				    t->thread_seqs[k];
		free(t->thread_seqs);
		t->thread_seqs = v;
		t->thread_mask = cap - 1;
	}
	if (!t->thread_seqs) {
		t->thread_seqs = calloc(THREADS_MIN_CAPACITY, sizeof(*t->thread_seqs));
		if (!t->thread_seqs)
			return 0;
		t->thread_mask = THREADS_MIN_CAPACITY - 1;
	}
	i = thread_slot(t->thread_seqs, t->thread_mask, tid);
	if (!t->thread_seqs[i]) {
		t->thread_seqs[i] = (uint64_t)tid << 32;
		t->nthreads++;
	}
	/* the count wraps; differences of counts stay right */
	t->thread_seqs[i] = (uint64_t)tid << 32 | (uint32_t)(t->thread_seqs[i] + 1);
	if (!(uint32_t)t->thread_seqs[i])
		t->thread_seqs[i] = (uint64_t)tid << 32 | 1;
	return (uint32_t)t->thread_seqs[i];
}

/*
 * Was b freed by thread tid before temporary_threshold further allocations
 * of its own thread? (heaptrack's temporary allocation for a threshold of 1.)
 */
static int is_temporary(const struct tracker *t, const struct heap_block *b, uint32_t tid)
{
	size_t i;

	if (!t->temporary_threshold || !b->seq || b->tid != tid || !t->thread_seqs)
		return 0;
	i = thread_slot(t->thread_seqs, t->thread_mask, tid);
	return (uint32_t)t->thread_seqs[i] - b->seq < t->temporary_threshold;
}

/* Before a stack's live bytes change: if a peak was set since it last changed,
 * its current value is its value at that peak. */
static void peak_touch(struct tracker *t, struct stack_entry *s)
{
	if (s->t.peak_epoch != t->peak_epoch) {
		s->t.peak_live_bytes = s->t.live_bytes;
		s->t.peak_epoch = t->peak_epoch;
	}
}

static uint64_t since(uint64_t now, uint64_t start)
{
	return now > start ? now - start : 0;
}

static void count_alloc(struct mt_counters *c, uint64_t size, uint64_t rel_ns)
{
	c->allocations++;
	c->bytes_allocated += size;
	c->live_allocations++;
	c->live_bytes += size;
	if (c->live_bytes > c->peak_live_bytes) {
		c->peak_live_bytes = c->live_bytes;
		c->peak_time_ns = rel_ns;
	}
}

static void count_release(struct mt_counters *c, uint64_t size, int missed, int temporary)
{
	if (temporary) {
		c->temporary_allocations++;
		c->temporary_bytes += size;
	}
	if (missed) {
		c->missed_frees++;
		c->missed_free_bytes += size;
	} else {
		c->frees++;
		c->bytes_freed += size;
	}
	c->live_allocations--;
	c->live_bytes -= size;
}

static void account_alloc(struct tracker *t, struct tracker_target *tg, const struct mt_event *ev,
			  uint32_t stack)
{
	struct stack_entry *s = stack_get(&t->stacks, stack);
	uint64_t old_peak = t->totals.peak_live_bytes;

	peak_touch(t, s);
	s->t.allocations++;
	s->t.bytes_allocated += ev->size;
	s->t.live_allocations++;
	s->t.live_bytes += ev->size;
	count_alloc(&tg->c, ev->size, since(ev->time_ns, tg->start_ns));
	count_alloc(&t->totals, ev->size, since(ev->time_ns, t->start_ns));
	if (t->totals.peak_live_bytes != old_peak)
		t->peak_epoch++;
}

static void account_release(struct tracker *t, struct tracker_target *tg,
			    const struct heap_block *b, int missed, uint32_t tid)
{
	struct stack_entry *s = stack_get(&t->stacks, b->stack);
	int temporary = !missed && is_temporary(t, b, tid);

	peak_touch(t, s);
	if (missed) {
		/* a stack's frees count only calls that were seen */
	} else {
		s->t.frees++;
		s->t.bytes_freed += b->size;
	}
	if (temporary) {
		s->t.temporary_allocations++;
		s->t.temporary_bytes += b->size;
	}
	s->t.live_allocations--;
	s->t.live_bytes -= b->size;
	count_release(&tg->c, b->size, missed, temporary);
	count_release(&t->totals, b->size, missed, temporary);
}

static void on_alloc(struct tracker *t, struct tracker_target *tg, const struct mt_event *ev)
{
	struct heap_block b, old;
	uint32_t stack;
	int is_new, r;

	/* Python frame words (MT_PY_WORD) follow the native frames */
	stack = stack_intern(&t->stacks, tg->space, (const uint64_t *)ev->frames,
			     (uint32_t)ev->nframes + ev->npyframes, &is_new);
	if (stack == STACK_NONE) {
		stack = tg->empty_stack;
		tg->c.stackless_allocations++;
		t->totals.stackless_allocations++;
	} else if (is_new) {
		stack_get(&t->stacks, stack)->stack_end = ev->stack_end;
		if (t->on_new_stack)
			t->on_new_stack(t->on_new_stack_arg, tg->space,
					(const uint64_t *)ev->frames,
					(uint32_t)ev->nframes + ev->npyframes);
	}

	t->size_histogram[tracker_size_bin(ev->size)]++;
	if (ev->func < SNAP_MAX_FUNCS) {
		t->allocations_by_func[ev->func]++;
		t->bytes_by_func[ev->func] += ev->size;
	}

	b.addr = ev->addr;
	b.size = ev->size;
	b.time_ns = ev->time_ns;
	b.tgid = tg->space;
	b.stack = stack;
	b.tid = ev->tid;
	b.seq = thread_count_alloc(t, ev->tid);
	r = heap_insert(&t->heap, &b, &old);
	if (r == HEAP_FULL) {
		/* counted as an allocation, never as live: its free will be an
		 * unknown free */
		tg->c.allocations++;
		tg->c.bytes_allocated += ev->size;
		tg->c.untracked_allocations++;
		t->totals.allocations++;
		t->totals.bytes_allocated += ev->size;
		t->totals.untracked_allocations++;
		return;
	}
	if (r == HEAP_REPLACED)
		account_release(t, tg, &old, 1, ev->tid);
	account_alloc(t, tg, ev, stack);
}

static void count_unknown_free(struct tracker_target *tg, struct tracker *t)
{
	tg->c.unknown_frees++;
	t->totals.unknown_frees++;
}

static void release_addr(struct tracker *t, struct tracker_target *tg, uint64_t addr, uint32_t tid)
{
	struct heap_block b;

	if (heap_remove(&t->heap, tg->space, addr, &b))
		account_release(t, tg, &b, 0, tid);
	else
		count_unknown_free(tg, t);
}

static struct tracker_parked *parked_find(struct tracker_target *tg, uint32_t tid)
{
	uint32_t i;

	for (i = 0; i < tg->nparked; i++) {
		if (tg->parked[i].tid == tid)
			return &tg->parked[i];
	}
	return NULL;
}

static void on_realloc_enter(struct tracker *t, struct tracker_target *tg,
			     const struct mt_event *ev)
{
	struct tracker_parked *p = parked_find(tg, ev->tid);

	if (p) {
		/* the return of this thread's previous realloc was lost: we do
		 * not know its outcome, so the old block stays live */
		if (p->known)
			heap_insert(&t->heap, &p->block, NULL);
	} else {
		if (tg->nparked == tg->parked_cap) {
			uint32_t cap = tg->parked_cap ? tg->parked_cap * 2 : 8;
			struct tracker_parked *v = realloc(tg->parked, cap * sizeof(*v));

			if (!v)
				return; /* the return event falls back to the heap */
			tg->parked = v;
			tg->parked_cap = cap;
		}
		p = &tg->parked[tg->nparked++];
	}
	p->tid = ev->tid;
	p->old_addr = ev->old_addr;
	p->known = heap_remove(&t->heap, tg->space, ev->old_addr, &p->block);
}

static void on_realloc(struct tracker *t, struct tracker_target *tg, const struct mt_event *ev)
{
	struct tracker_parked *p = parked_find(tg, ev->tid);
	struct heap_block old;
	int known;

	if (p && p->old_addr == ev->old_addr) {
		known = p->known;
		old = p->block;
		*p = tg->parked[--tg->nparked];
	} else {
		/* entry event lost: the old block is still on the heap */
		known = heap_remove(&t->heap, tg->space, ev->old_addr, &old);
	}
	if (!ev->addr && ev->size) {
		/* failed: the old block is untouched and stays live */
		if (known)
			heap_insert(&t->heap, &old, NULL);
		return;
	}
	/* succeeded (or realloc(p, 0) freed p): one free of the old block ... */
	if (known)
		account_release(t, tg, &old, 0, ev->tid);
	else
		count_unknown_free(tg, t);
	/* ... and one allocation of the new one, even at the same address */
	if (ev->addr)
		on_alloc(t, tg, ev);
}

void tracker_reset_peak(struct tracker *t, uint64_t now_ns)
{
	for (uint32_t i = 0; i < t->ntargets; i++) {
		struct tracker_target *tg = &t->targets[i];

		tg->c.peak_live_bytes = tg->c.live_bytes;
		tg->c.peak_time_ns = since(now_ns, tg->start_ns);
	}
	t->totals.peak_live_bytes = t->totals.live_bytes;
	t->totals.peak_time_ns = since(now_ns, t->start_ns);
	/* stacks on an older epoch report their current value: now the peak's */
	t->peak_epoch++;
}

int tracker_target_exec(struct tracker *t, uint32_t tgid)
{
	struct tracker_target *tg = tracker_find_target(t, tgid);

	if (!tg)
		return -1;
	tg->ended = 1;
	return 0;
}

void tracker_event(struct tracker *t, const void *data, size_t len)
{
	const struct mt_event *ev = data;
	struct tracker_target *tg;

	t->events_received++;
	if (len < sizeof(*ev) ||
	    len < sizeof(*ev) + ((size_t)ev->nframes + ev->npyframes) * sizeof(uint64_t)) {
		t->events_malformed++;
		return;
	}
	if (ev->kind == MT_EV_MATCH)
		return; /* a process to attach to: the daemon's business */
	tg = tracker_find_target(t, ev->tgid);
	if (!tg) {
		t->events_foreign++;
		return;
	}
	switch (ev->kind) {
	case MT_EV_ALLOC:
		on_alloc(t, tg, ev);
		break;
	case MT_EV_FREE:
		release_addr(t, tg, ev->addr, ev->tid);
		break;
	case MT_EV_REALLOC_ENTER:
		on_realloc_enter(t, tg, ev);
		break;
	case MT_EV_REALLOC:
		on_realloc(t, tg, ev);
		break;
	case MT_EV_EXEC:
		tg->ended = 1;
		break;
	case MT_EV_FORK:
		break; /* the daemon adds the child */
	default:
		t->events_malformed++;
		break;
	}
}
