// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Event accounting (see tracker.h and docs/metrics.md). Every event is O(1):
 * one heap table operation, one stack lookup, and the peak epoch check that
 * lets "live at peak" be reported per stack without an event log.
 */
#include "daemon/core/tracker.h"
#include "daemon/core/check.h"
#include "daemon/core/family.h"
#include "common/invariant.h"
#include "common/search.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(MT_FN_COUNT <= SNAP_MAX_FUNCS, "the snapshot cannot carry every allocator kind");
_Static_assert(MT_MAX_FRAMES + MT_MAX_PYFRAMES <= STACK_MAX_FRAMES,
	       "the stack table cannot hold an event's stack");

int tracker_init(struct tracker *t, size_t max_live_blocks, uint32_t max_stacks)
{
	memset(t, 0, sizeof(*t));
	if (heap_init(&t->heap, max_live_blocks, &t->stacks))
		return -1;
	if (stacks_init(&t->stacks, max_stacks)) {
		heap_destroy(&t->heap);
		return -1;
	}
	t->temporary_threshold = 1;
	recent_init(&t->recent, t->temporary_threshold);
	stackids_init(&t->ids);
	return 0;
}

void tracker_destroy(struct tracker *t)
{
	uint32_t i;

	for (i = 0; i < t->ntargets; i++) {
		free(t->targets[i].parked);
		free(t->targets[i].maps);
		addrmap_free(&t->targets[i].freed);
		family_free(t, &t->targets[i]);
	}
	free(t->targets);
	recent_destroy(&t->recent);
	stackids_destroy(&t->ids);
	heap_destroy(&t->heap);
	stacks_destroy(&t->stacks);
	memset(t, 0, sizeof(*t));
}

uint64_t tracker_stack_peak_bytes(const struct tracker *t, const struct stack_entry *s)
{
	return s->peak_epoch == (uint32_t)t->peak_epoch ? s->t.peak_live_bytes : s->t.live_bytes;
}

/* Before a stack's live bytes change: if a peak was set since it last changed,
 * its current value is its value at that peak; if its target forked since,
 * its current values are the child's (family.h). */
static struct stack_entry *stack_touch(struct tracker *t, const struct tracker_target *tt,
				       uint32_t idx)
{
	struct stack_entry *s = stack_get(&t->stacks, idx);

	if (s->peak_epoch != (uint32_t)t->peak_epoch) {
		s->t.peak_live_bytes = s->t.live_bytes;
		s->peak_epoch = (uint32_t)t->peak_epoch;
	}
	if (tt->last_fork)
		family_stack_save(t, tt, idx);
	return s;
}

/* A new peak: stacks on an older epoch report their current value. */
static void peak_moved(struct tracker *t)
{
	t->peak_epoch++;
	if (!(uint32_t)t->peak_epoch) {
		/* a stack keeps the epoch's low 32 bits: every 2^32 peaks, all
		 * are older than the next one, which skips 0 (never current) */
		for (uint32_t i = 0; i < t->stacks.count; i++)
			t->stacks.v[i].peak_epoch = 0;
		t->peak_epoch++;
	}
	if (t->peak_holders) /* a released child holds the peak (family.h) */
		family_peak_moved(t);
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

static void account_alloc(struct tracker *t, struct tracker_target *tt, const struct mt_event *ev,
			  uint32_t stack)
{
	struct stack_entry *s = stack_touch(t, tt, stack);
	uint64_t old_peak = t->totals.peak_live_bytes;

	s->t.allocations++;
	s->t.bytes_allocated += ev->size;
	s->t.live_allocations++;
	s->t.live_bytes += ev->size;
	count_alloc(&tt->c, ev->size, since(ev->time_ns, tt->start_ns));
	count_alloc(&t->totals, ev->size, since(ev->time_ns, t->start_ns));
	if (t->totals.peak_live_bytes != old_peak)
		peak_moved(t);
}

/* b leaves the heap: freed (by thread tid), or missed; temporary as the caller found. */
static void account_release(struct tracker *t, struct tracker_target *tt,
			    const struct heap_block *b, int missed, int temporary)
{
	struct stack_entry *s = stack_touch(t, tt, b->stack);

	if (tt->last_fork) /* a child may share it */
		family_gone(t, tt, b);
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
	count_release(&tt->c, b->size, missed, temporary);
	count_release(&t->totals, b->size, missed, temporary);
}

/*
 * tt freed (or, missed, lost the free of) the inherited block b, whose stack
 * is an ancestor's: counted as its own free on its stack of the same frames,
 * whose live values go below its own (the inherited part is added back by
 * the views, and at the release: family.h).
 */
static void account_inherited(struct tracker *t, struct tracker_target *tt,
			      const struct heap_block *b, int missed)
{
	uint64_t words[STACK_MAX_FRAMES];
	uint32_t n = stack_words(&t->stacks, b->stack, words), idx;
	struct stack_entry *s;
	int is_new;

	idx = stack_intern(&t->stacks, tt->gen, words, n, &is_new);
	if (idx == STACK_NONE) {
		idx = tt->empty_stack;
	} else if (is_new) {
		stack_get(&t->stacks, idx)->stack_end = stack_get(&t->stacks, b->stack)->stack_end;
		if (tt->last_fork)
			family_stack_new(t, tt, idx);
		if (t->on_new_stack)
			t->on_new_stack(t->on_new_stack_arg, tt->gen, words, n);
	}
	s = stack_touch(t, tt, idx);
	if (!missed) {
		s->t.frees++;
		s->t.bytes_freed += b->size;
	}
	s->t.live_allocations--;
	s->t.live_bytes -= b->size;
	family_took(t, tt, b->addr, idx, b->size);
	count_release(&tt->c, b->size, missed, 0);
	count_release(&t->totals, b->size, missed, 0);
}

/* The block at addr of tt's view leaves it: its own, or one it inherited. */
static int take_block(struct tracker *t, struct tracker_target *tt, uint64_t addr,
		      struct heap_block *out, int *inherited)
{
	*inherited = 0;
	if (heap_remove(&t->heap, tt->gen, addr, out))
		return 1;
	if (tt->inherited_live && family_inherited(t, tt, addr, out)) {
		*inherited = 1;
		return 1;
	}
	return 0;
}

/* A stack's frames interned under tt's key: STACK_NONE when it cannot be kept. */
static uint32_t intern(struct tracker *t, struct tracker_target *tt, const struct mt_event *ev,
		       const uint64_t *frames, uint32_t n)
{
	int is_new;
	uint32_t stack = stack_intern(&t->stacks, tt->gen, frames, n, &is_new);

	if (stack != STACK_NONE && is_new) {
		stack_get(&t->stacks, stack)->stack_end = ev->stack_end;
		if (tt->last_fork) /* its forks hold no blocks of it */
			family_stack_new(t, tt, stack);
		if (t->on_new_stack)
			t->on_new_stack(t->on_new_stack_arg, tt->gen, frames, n);
	}
	return stack;
}

/* Stack old, registered in an earlier generation of tt's address space (it was
 * detached and attached again): the same frames, interned for tt. */
static uint32_t intern_again(struct tracker *t, struct tracker_target *tt,
			     const struct mt_event *ev, uint32_t old)
{
	uint64_t frames[STACK_MAX_FRAMES];
	uint32_t n = stack_words(&t->stacks, old, frames);

	return intern(t, tt, ev, frames, n);
}

/*
 * The stack of an allocation event: its frames interned (Python frame words,
 * MT_PY_WORD, follow the native ones), and remembered under the id they
 * register; or, for an event that carries only an id, the stack registered
 * under it. STACK_NONE when it cannot be kept, or (never expected) when the
 * id was never registered: then it is counted, not guessed.
 */
static uint32_t event_stack(struct tracker *t, struct tracker_target *tt, const struct mt_event *ev)
{
	uint32_t n = (uint32_t)ev->nframes + ev->npyframes, stack;
	const uint64_t *frames = (const uint64_t *)ev->frames;
	uint64_t id = ev->stack_flags & MT_SF_ID ? frames[n] : 0;

	if (id && !n) {
		if (!stackids_get(&t->ids, id, &stack)) {
			t->stack_ids_unknown++;
			return STACK_NONE;
		}
		t->stack_id_events++;
		if (stack == STACK_NONE || stack_get(&t->stacks, stack)->tgid == tt->gen)
			return stack;
		stack = intern_again(t, tt, ev, stack);
	} else {
		stack = intern(t, tt, ev, frames, n);
	}
	if (id)
		stackids_put(&t->ids, id, stack);
	return stack;
}

static void on_alloc(struct tracker *t, struct tracker_target *tt, const struct mt_event *ev)
{
	struct heap_block b, old;
	uint32_t stack;
	int r;

	if (tt->freed.count) /* in use again */
		addrmap_del(&tt->freed, ev->addr, NULL);
	stack = event_stack(t, tt, ev);
	if (stack == STACK_NONE) {
		stack = tt->empty_stack;
		tt->c.stackless_allocations++;
		t->totals.stackless_allocations++;
	}

	t->size_histogram[tracker_size_bin(ev->size)]++;
	if (ev->func < SNAP_MAX_FUNCS) {
		t->allocations_by_func[ev->func]++;
		t->bytes_by_func[ev->func] += ev->size;
	}

	b.addr = ev->addr;
	b.size = ev->size;
	b.time_ns = ev->time_ns;
	b.tgid = tt->gen;
	b.stack = stack;
	r = heap_insert(&t->heap, &b, &old);
	/* counted in its thread; remembered while it may be temporary (an
	 * entry left at this address by a missed free goes) */
	t->recent.threshold = t->temporary_threshold;
	recent_alloc(&t->recent, ev->tid, tt->gen, ev->addr, r != HEAP_FULL);
	if (r == HEAP_FULL) {
		/* counted as an allocation, never as live: its free will be an
		 * unknown free */
		tt->c.allocations++;
		tt->c.bytes_allocated += ev->size;
		tt->c.untracked_allocations++;
		t->totals.allocations++;
		t->totals.bytes_allocated += ev->size;
		t->totals.untracked_allocations++;
		return;
	}
	if (r == HEAP_REPLACED)
		account_release(t, tt, &old, 1, 0);
	else if (tt->inherited_live && family_inherited(t, tt, ev->addr, &old))
		account_inherited(t, tt, &old, 1); /* its free was not seen */
	account_alloc(t, tt, ev, stack);
	if (tt->last_fork)
		family_born(t, tt, ev->addr);
}

/*
 * addr was freed: remember it until it is allocated again. A second free of
 * it meanwhile (a refree) is not the program's: glibc, as a thread exits,
 * frees the chunks the thread's cache (tcache) still holds, which the
 * program had freed already; so is a double free, which glibc aborts. It is
 * nothing (docs/metrics.md), where it would otherwise count as the free of
 * a block allocated before the attach. Past TRACKER_FREED_MAX addresses
 * all are forgotten at once: a refree after that counts as unknown; so does
 * every one once an event was lost (MT_EVF_LOSSES), since an allocation
 * there may have gone unseen.
 */
static void freed_note(struct tracker *t, struct tracker_target *tt, uint64_t addr)
{
	if (t->losses_seen || !tt->refrees)
		return; /* an allocation may have gone unseen: no address is known free;
			 * or its allocator never frees an address twice */
	if (tt->freed.count >= TRACKER_FREED_MAX)
		addrmap_free(&tt->freed);
	addrmap_put(&tt->freed, addr, 1); /* out of memory: forgotten, as above */
}

static void count_unknown_free(struct tracker_target *tt, struct tracker *t)
{
	tt->c.unknown_frees++;
	t->totals.unknown_frees++;
}

static void release_addr(struct tracker *t, struct tracker_target *tt, uint64_t addr, uint32_t tid)
{
	struct heap_block b;
	int inherited;

	if (!take_block(t, tt, addr, &b, &inherited)) {
		if (addrmap_get(&tt->freed, addr, NULL)) {
			t->events_refree++; /* freed already: nothing */
			return;
		}
		count_unknown_free(tt, t);
	} else if (inherited) {
		account_inherited(t, tt, &b, 0);
	} else {
		account_release(t, tt, &b, 0, recent_release(&t->recent, tt->gen, addr, tid));
	}
	freed_note(t, tt, addr);
}

static struct tracker_parked *parked_find(struct tracker_target *tt, uint32_t tid)
{
	uint32_t i;

	for (i = 0; i < tt->nparked; i++) {
		if (tt->parked[i].tid == tid)
			return &tt->parked[i];
	}
	return NULL;
}

static void on_realloc_enter(struct tracker *t, struct tracker_target *tt,
			     const struct mt_event *ev)
{
	struct tracker_parked *p = parked_find(tt, ev->tid);

	if (p) {
		/* the return of this thread's previous realloc was lost: we do
		 * not know its outcome, so the old block stays live */
		if (p->known && !p->inherited) {
			heap_insert(&t->heap, &p->block, NULL);
			recent_restore(&t->recent, tt->gen, p->old_addr, &p->mark);
		}
	} else {
		if (tt->nparked == tt->parked_cap) {
			uint32_t cap = tt->parked_cap ? tt->parked_cap * 2 : 8;
			struct tracker_parked *v = realloc(tt->parked, cap * sizeof(*v));

			if (!v)
				return; /* the return event falls back to the heap */
			tt->parked = v;
			tt->parked_cap = cap;
		}
		p = &tt->parked[tt->nparked++];
	}
	p->tid = ev->tid;
	p->old_addr = ev->old_addr;
	memset(&p->mark, 0, sizeof(p->mark));
	/* an inherited block stays in the parent's tables until the outcome */
	p->inherited = 0;
	p->known = heap_remove(&t->heap, tt->gen, ev->old_addr, &p->block);
	if (p->known)
		recent_take(&t->recent, tt->gen, ev->old_addr, &p->mark);
	else if (tt->inherited_live)
		p->known = p->inherited = family_inherited(t, tt, ev->old_addr, &p->block);
}

static void on_realloc(struct tracker *t, struct tracker_target *tt, const struct mt_event *ev)
{
	struct tracker_parked *p = parked_find(tt, ev->tid);
	struct recent_mark mark;
	struct heap_block old;
	int known, inherited;

	if (p && p->old_addr == ev->old_addr) {
		known = p->known;
		inherited = p->inherited;
		old = p->block;
		mark = p->mark;
		*p = tt->parked[--tt->nparked];
	} else {
		/* entry event lost: the old block is still on the heap */
		memset(&mark, 0, sizeof(mark));
		inherited = 0;
		known = heap_remove(&t->heap, tt->gen, ev->old_addr, &old);
		if (known)
			recent_take(&t->recent, tt->gen, ev->old_addr, &mark);
		else if (tt->inherited_live)
			known = inherited = family_inherited(t, tt, ev->old_addr, &old);
	}
	if (!ev->addr && ev->size) {
		/* failed: the old block is untouched and stays live */
		if (known && !inherited) {
			heap_insert(&t->heap, &old, NULL);
			recent_restore(&t->recent, tt->gen, ev->old_addr, &mark);
		}
		return;
	}
	/* succeeded (or realloc(p, 0) freed p): one free of the old block ... */
	if (known && inherited)
		account_inherited(t, tt, &old, 0);
	else if (known)
		account_release(t, tt, &old, 0, recent_judge(&t->recent, &mark, ev->tid));
	else
		count_unknown_free(tt, t);
	freed_note(t, tt, ev->old_addr);
	/* ... and one allocation of the new one, even at the same address */
	if (ev->addr)
		on_alloc(t, tt, ev);
}

/*
 * mmap blocks (MT_FN_MMAP, docs/python.md): the kernel maps and unmaps pages,
 * not blocks, so a munmap may take a whole block, a part of one, or several.
 * Each block's still-mapped pieces are kept per target; a munmap releases
 * exactly the bytes it covers. Covering the last bytes of a block is its free
 * (one call in frees); a part of a block only moves those bytes from live to
 * freed (bytes_freed, no call in frees), so the invariants of tracker.h hold.
 */
static size_t maps_first_after(const struct tracker_target *tt, uint64_t addr)
{
	/* the first piece ending above addr (pieces are sorted and disjoint) */
	return SEARCH_FIRST(0, tt->nmaps, tt->maps[mid].end > addr);
}

static int maps_insert(struct tracker_target *tt, size_t i, const struct tracker_mapping *m)
{
	if (tt->nmaps == tt->maps_cap) {
		uint32_t cap = tt->maps_cap ? tt->maps_cap * 2 : 16;
		struct tracker_mapping *v = realloc(tt->maps, cap * sizeof(*v));

		if (!v)
			return -1;
		tt->maps = v;
		tt->maps_cap = cap;
	}
	memmove(&tt->maps[i + 1], &tt->maps[i], (tt->nmaps - i) * sizeof(*m));
	tt->maps[i] = *m;
	tt->nmaps++;
	return 0;
}

static void maps_remove(struct tracker_target *tt, size_t i)
{
	memmove(&tt->maps[i], &tt->maps[i + 1], (tt->nmaps - i - 1) * sizeof(tt->maps[0]));
	tt->nmaps--;
}

/* n of a block's bytes were unmapped, not all of them. */
static void account_shrink(struct tracker *t, struct tracker_target *tt, struct heap_block *b,
			   uint64_t n)
{
	struct stack_entry *s = stack_touch(t, tt, b->stack);

	/* for the children that share it, the old size is gone: a new block */
	family_gone(t, tt, b);
	heap_set_size(&t->heap, tt->gen, b->addr, b->size - n);
	family_born(t, tt, b->addr);
	s->t.bytes_freed += n;
	s->t.live_bytes -= n;
	tt->c.bytes_freed += n;
	tt->c.live_bytes -= n;
	t->totals.bytes_freed += n;
	t->totals.live_bytes -= n;
	b->size -= n;
}

/* The block at addr leaves the heap whole (missed: its munmap was not seen). */
static void mmap_block_drop(struct tracker *t, struct tracker_target *tt, uint64_t addr,
			    uint32_t tid, int missed)
{
	struct heap_block b;

	for (size_t i = 0; i < tt->nmaps;) {
		if (tt->maps[i].block == addr)
			maps_remove(tt, i);
		else
			i++;
	}
	if (heap_remove(&t->heap, tt->gen, addr, &b))
		account_release(t, tt, &b, missed,
				recent_release(&t->recent, tt->gen, addr, missed ? 0 : tid));
}

/*
 * A forked child's munmap of mmap blocks it inherited (a CPython worker
 * giving back an arena its parent mapped): each inherited block that starts
 * in the range at a page the previous one ended on, and lies in it whole,
 * is freed. (A part of one is not followed: the block stays live.)
 */
static void munmap_inherited(struct tracker *t, struct tracker_target *tt, uint64_t start,
			     uint64_t end)
{
	struct heap_block b;

	while (start < end && tt->inherited_live && family_inherited(t, tt, start, &b) &&
	       b.size <= end - start) {
		account_inherited(t, tt, &b, 0);
		start += (b.size + 4095) & ~4095ull;
	}
}

/* munmap(start, end - start) by thread tid: release what it covers. */
static void on_munmap(struct tracker *t, struct tracker_target *tt, uint64_t start, uint64_t end,
		      uint32_t tid)
{
	size_t i = maps_first_after(tt, start);

	if (tt->inherited_live)
		munmap_inherited(t, tt, start, end);
	while (i < tt->nmaps && tt->maps[i].start < end) {
		struct tracker_mapping m = tt->maps[i];
		uint64_t lo = m.start > start ? m.start : start;
		uint64_t hi = m.end < end ? m.end : end;
		struct heap_block block, *b = NULL;

		if (lo == m.start && hi == m.end) {
			maps_remove(tt, i);
		} else if (lo == m.start) {
			tt->maps[i++].start = hi;
		} else if (hi == m.end) {
			tt->maps[i++].end = lo;
		} else {
			/* a hole in the middle: two pieces remain */
			struct tracker_mapping tail = {.start = hi, .end = m.end, .block = m.block};

			if (maps_insert(tt, i + 1, &tail)) {
				/* cannot keep the tail apart: the block goes whole */
				mmap_block_drop(t, tt, m.block, tid, 0);
				i = maps_first_after(tt, start);
				continue;
			}
			tt->maps[i].end = lo;
			i += 2;
		}
		if (heap_get(&t->heap, tt->gen, m.block, &block))
			b = &block;
		if (!b)
			continue;
		if (hi - lo < b->size)
			account_shrink(t, tt, b, hi - lo);
		else
			release_addr(t, tt, m.block, tid);
	}
}

/* An mmap block: whatever we held in its range was unmapped unseen. */
static void on_mmap(struct tracker *t, struct tracker_target *tt, const struct mt_event *ev)
{
	uint64_t end = ev->addr + ev->size;
	struct tracker_mapping m = {.start = ev->addr, .end = end, .block = ev->addr};
	size_t i;

	if (end < ev->addr) {
		t->events_malformed++;
		return;
	}
	for (i = maps_first_after(tt, ev->addr); i < tt->nmaps && tt->maps[i].start < end;
	     i = maps_first_after(tt, ev->addr))
		mmap_block_drop(t, tt, tt->maps[i].block, ev->tid, 1);
	on_alloc(t, tt, ev);
	if (!ev->size || !heap_get(&t->heap, tt->gen, ev->addr, NULL))
		return; /* not held live (--max-live-blocks) */
	if (maps_insert(tt, maps_first_after(tt, ev->addr), &m)) {
		/* out of memory: without its piece, its munmap could not find it */
		mmap_block_drop(t, tt, ev->addr, ev->tid, 1);
	}
}

void tracker_reset_peak(struct tracker *t, uint64_t now_ns)
{
	for (uint32_t i = 0; i < t->ntargets; i++) {
		struct tracker_target *tt = &t->targets[i];

		tt->c.peak_live_bytes = tt->c.live_bytes;
		tt->c.peak_time_ns = since(now_ns, tt->start_ns);
	}
	t->totals.peak_live_bytes = t->totals.live_bytes;
	t->totals.peak_time_ns = since(now_ns, t->start_ns);
	/* stacks on an older epoch report their current value: now the peak's */
	peak_moved(t);
}

/* At the release: the live values the frees of inherited blocks took from
 * a stack of its own come back (what remains is its own). */
static void undo_inherited(void *arg, uint32_t stack, uint64_t count, uint64_t bytes)
{
	struct tracker_target *tt = ((void **)arg)[1];
	struct stack_entry *s = stack_touch(((void **)arg)[0], tt, stack);

	s->t.live_allocations += count;
	s->t.live_bytes += bytes;
}

/* tt's generation ended: the inherited blocks it still holds leave its heap. */
static void release_inherited(struct tracker *t, struct tracker_target *tt)
{
	void *arg[2] = {t, tt};

	if (!tt->parent || tt->released)
		return;
	family_release(t, tt, undo_inherited, arg);
	tt->c.inherited_released += tt->inherited_live;
	tt->c.inherited_released_bytes += tt->inherited_live_bytes;
	tt->c.live_allocations -= tt->inherited_live;
	tt->c.live_bytes -= tt->inherited_live_bytes;
	t->totals.inherited_released += tt->inherited_live;
	t->totals.inherited_released_bytes += tt->inherited_live_bytes;
	t->totals.live_allocations -= tt->inherited_live;
	t->totals.live_bytes -= tt->inherited_live_bytes;
	tt->inherited_live = tt->inherited_live_bytes = 0;
}

int tracker_target_exec(struct tracker *t, uint32_t tgid)
{
	struct tracker_target *tt = tracker_find_target(t, tgid);

	if (!tt)
		return -1;
	tt->ended = 1;
	release_inherited(t, tt);
	return 0;
}

int tracker_target_exited(struct tracker *t, uint32_t gen)
{
	struct tracker_target *tt = tracker_gen_target(t, gen);

	if (!tt)
		return -1;
	release_inherited(t, tt);
	return 0;
}

struct tracker_target *tracker_fork(struct tracker *t, uint32_t parent, uint32_t child,
				    uint64_t start_ns)
{
	struct tracker_target *p = tracker_find_target(t, parent), *c;
	uint32_t pi = p ? (uint32_t)(p - t->targets) : 0;
	uint64_t old_peak = t->totals.peak_live_bytes;

	if (!(c = tracker_add_target(t, child, start_ns)) || !p)
		return c;
	p = &t->targets[pi];	 /* the array may have moved */
	c->refrees = p->refrees; /* the same program */
	c->fork_peak_epoch = t->peak_epoch;
	if (family_fork(t, p, c))
		return c;
	/* its heap is its parent's: those blocks are live in it too */
	c->c.inherited_allocations = c->inherited_live;
	c->c.inherited_bytes = c->inherited_live_bytes;
	c->c.live_allocations = c->inherited_live;
	c->c.live_bytes = c->inherited_live_bytes;
	c->c.peak_live_bytes = c->inherited_live_bytes;
	t->totals.inherited_allocations += c->inherited_live;
	t->totals.inherited_bytes += c->inherited_live_bytes;
	t->totals.live_allocations += c->inherited_live;
	t->totals.live_bytes += c->inherited_live_bytes;
	if (t->totals.live_bytes > t->totals.peak_live_bytes) {
		t->totals.peak_live_bytes = t->totals.live_bytes;
		t->totals.peak_time_ns = since(start_ns, t->start_ns);
	}
	if (t->totals.peak_live_bytes != old_peak)
		peak_moved(t);
	return c;
}

void tracker_set_refrees(struct tracker *t, uint32_t tgid, int on)
{
	struct tracker_target *tt = tracker_find_target(t, tgid);

	if (!tt)
		return;
	tt->refrees = on;
	if (!on)
		addrmap_free(&tt->freed);
}

void tracker_event(struct tracker *t, const void *data, size_t len)
{
	const struct mt_event *ev = data;
	struct tracker_target *tt;

	t->events_received++;
	if (len < sizeof(*ev) || len < sizeof(*ev) + ((size_t)ev->nframes + ev->npyframes +
						      !!(ev->stack_flags & MT_SF_ID)) *
							 sizeof(uint64_t)) {
		t->events_malformed++;
		return;
	}
	if ((ev->flags & MT_EVF_LOSSES) && !t->losses_seen) {
		t->losses_seen = 1;
		for (uint32_t i = 0; i < t->ntargets; i++)
			addrmap_free(&t->targets[i].freed);
	}
	if (ev->kind == MT_EV_MATCH || ev->kind == MT_EV_LDSO || ev->kind == MT_EV_PYALLOC ||
	    ev->kind == MT_EV_OOM)
		return; /* a process to attach to, to resolve or to mark: the daemon's business */
	tt = tracker_find_target(t, ev->tgid);
	if (!tt) {
		t->events_foreign++;
		return;
	}
	switch (ev->kind) {
	case MT_EV_ALLOC:
		if (ev->func == MT_FN_MMAP)
			on_mmap(t, tt, ev);
		else
			on_alloc(t, tt, ev);
		break;
	case MT_EV_FREE:
		if (ev->func == MT_FN_MMAP)
			on_munmap(t, tt, ev->addr,
				  ev->addr + ev->size < ev->addr ? UINT64_MAX : ev->addr + ev->size,
				  ev->tid);
		else
			release_addr(t, tt, ev->addr, ev->tid);
		break;
	case MT_EV_REALLOC_ENTER:
		on_realloc_enter(t, tt, ev);
		break;
	case MT_EV_REALLOC:
		on_realloc(t, tt, ev);
		break;
	case MT_EV_EXEC:
		tt->ended = 1;
		release_inherited(t, tt); /* its address space is gone */
		addrmap_free(&tt->freed);
		break;
	case MT_EV_FORK:
		break; /* the daemon adds the child */
	default:
		t->events_malformed++;
		break;
	}
	if (MT_CHECKING) /* the sanitizer build (check.h) */
		tracker_check_event(t, tt);
}
