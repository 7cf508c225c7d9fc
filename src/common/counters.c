// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The tables and operations generated from include/memtrace/counters.h: the
 * counter descriptions, per-process merging, sort keys and the one top-N
 * selection that the daemon and the client share.
 */
#include "memtrace/counters.h"
#include "memtrace/event.h"

#include <stdlib.h>
#include <string.h>

const struct mt_counter_desc mt_counter_descs[] = {
#define MT_COUNTER_DESC(field, name, unit, merge, summary, prom, prom_type, help)                  \
	{name, offsetof(struct mt_counters, field), unit, merge, summary, prom, prom_type, help},
    MT_COUNTERS(MT_COUNTER_DESC)
#undef MT_COUNTER_DESC
};

_Static_assert(sizeof(struct mt_counters) == MT_NCOUNTERS * sizeof(uint64_t),
	       "every counter is in the table");

void mt_counters_merge(struct mt_counters *out, const struct mt_counters *c)
{
	/* which side holds the peak decides every MT_MERGE_AT_PEAK field */
	int theirs = c->peak_live_bytes > out->peak_live_bytes;

	for (size_t i = 0; i < MT_NCOUNTERS; i++) {
		uint64_t v = mt_counter_get(c, i);

		switch (mt_counter_descs[i].merge) {
		case MT_MERGE_SUM:
			mt_counter_set(out, i, mt_counter_get(out, i) + v);
			break;
		case MT_MERGE_PEAK:
		case MT_MERGE_AT_PEAK:
			if (theirs)
				mt_counter_set(out, i, v);
			break;
		}
	}
}

const struct mt_stack_counter_desc mt_stack_counter_descs[MT_NSTACK_COUNTERS] = {
#define MT_STACK_COUNTER_DESC(field, name, section)                                                \
	[MT_SC_##field] = {name, offsetof(struct mt_stack_counters, field), section},
    MT_STACK_COUNTERS(MT_STACK_COUNTER_DESC)
#undef MT_STACK_COUNTER_DESC
};

_Static_assert(sizeof(struct mt_stack_counters) == MT_NSTACK_COUNTERS * sizeof(uint64_t),
	       "every stack counter is in the table");

void mt_stack_counters_add(struct mt_stack_counters *out, const struct mt_stack_counters *c)
{
#define MT_STACK_COUNTER_ADD(field, name, section) out->field += c->field;
	MT_STACK_COUNTERS(MT_STACK_COUNTER_ADD)
#undef MT_STACK_COUNTER_ADD
}

uint64_t mt_sort_value(const struct mt_stack_counters *c, int sort)
{
	switch (sort) {
	case MT_SORT_LIVE:
		return c->live_bytes;
	case MT_SORT_ALLOCATED:
		return c->bytes_allocated;
	case MT_SORT_COUNT:
		return c->allocations;
	case MT_SORT_PEAK:
		return c->peak_live_bytes;
	case MT_SORT_TEMPORARY:
		return c->temporary_allocations;
	default:
		return 0;
	}
}

static const char *const sort_names[MT_SORT_KEY_COUNT] = {
    [MT_SORT_LIVE] = "live", [MT_SORT_ALLOCATED] = "allocated", [MT_SORT_COUNT] = "count",
    [MT_SORT_PEAK] = "peak", [MT_SORT_TEMPORARY] = "temporary",
};

const char *mt_sort_name(int sort)
{
	return sort >= 0 && sort < MT_SORT_KEY_COUNT ? sort_names[sort] : NULL;
}

int mt_sort_from_name(const char *name)
{
	for (int i = 0; i < MT_SORT_KEY_COUNT; i++)
		if (!strcmp(name, sort_names[i]))
			return i;
	return -1;
}

static int rank_cmp(const void *a, const void *b)
{
	const struct mt_rank *x = a, *y = b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	if (x->allocations != y->allocations)
		return x->allocations > y->allocations ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

size_t mt_rank_sort(struct mt_rank *r, size_t n)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++)
		if (r[i].value)
			r[kept++] = r[i];
	qsort(r, kept, sizeof(*r), rank_cmp);
	return kept;
}

/* Restore the heap order of r[0..n) below i: the worst of them at the root. */
static void worst_down(struct mt_rank *r, size_t n, size_t i)
{
	for (;;) {
		size_t w = i, c = 2 * i + 1;

		if (c < n && rank_cmp(&r[c], &r[w]) > 0)
			w = c;
		if (c + 1 < n && rank_cmp(&r[c + 1], &r[w]) > 0)
			w = c + 1;
		if (w == i)
			return;
		struct mt_rank tmp = r[i];

		r[i] = r[w];
		r[w] = tmp;
		i = w;
	}
}

size_t mt_rank_top(struct mt_rank *r, size_t n, size_t top)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++)
		if (r[i].value)
			r[kept++] = r[i];
	if (!top || top >= kept / 4) {
		qsort(r, kept, sizeof(*r), rank_cmp);
		return kept;
	}
	/* the best top of them in a heap whose root is the worst kept so far */
	for (size_t i = top / 2 + 1; i-- > 0;)
		worst_down(r, top, i);
	for (size_t i = top; i < kept; i++) {
		if (rank_cmp(&r[i], &r[0]) < 0) {
			r[0] = r[i];
			worst_down(r, top, 0);
		}
	}
	qsort(r, top, sizeof(*r), rank_cmp);
	return kept;
}

/*
 * The lost kinds are the BPF array's slots: as many (the initializer below
 * refuses a slot past the count, -Werror=override-init one named twice), and
 * each named as event.h numbers its event kind.
 */
_Static_assert(MT_LOST_KIND_COUNT == MT_LOST_SLOTS, "one lost kind per slot of the BPF array");
enum {
#define MT_LOST_KIND_AT(slot, name, always) MT_LOST_AT_##name = slot,
	MT_LOST_KINDS(MT_LOST_KIND_AT)
#undef MT_LOST_KIND_AT
};
#define SAME(lost, kind) ((int)MT_LOST_AT_##lost == (int)(kind))
_Static_assert(SAME(alloc, MT_EV_ALLOC) && SAME(free, MT_EV_FREE) &&
		   SAME(realloc_enter, MT_EV_REALLOC_ENTER) && SAME(realloc, MT_EV_REALLOC) &&
		   SAME(exec, MT_EV_EXEC) && SAME(fork, MT_EV_FORK) && SAME(match, MT_EV_MATCH) &&
		   SAME(inflight_full, 0),
	       "a lost kind's slot is its event kind's number");
#undef SAME
/* every event kind is counted in some slot */
#define MT_LOST_SLOT_OK(kind) (MT_LOST_SLOT(kind) < MT_LOST_SLOTS)
_Static_assert(MT_LOST_SLOT_OK(MT_EV_ALLOC) && MT_LOST_SLOT_OK(MT_EV_FREE) &&
		   MT_LOST_SLOT_OK(MT_EV_REALLOC_ENTER) && MT_LOST_SLOT_OK(MT_EV_REALLOC) &&
		   MT_LOST_SLOT_OK(MT_EV_EXEC) && MT_LOST_SLOT_OK(MT_EV_FORK) &&
		   MT_LOST_SLOT_OK(MT_EV_MATCH) && MT_LOST_SLOT_OK(MT_EV_LDSO) &&
		   MT_LOST_SLOT_OK(MT_EV_PYALLOC) && MT_LOST_SLOT_OK(MT_EV_OOM) &&
		   MT_EV_KIND_COUNT == MT_EV_OOM + 1,
	       "every event kind has a lost slot");
#undef MT_LOST_SLOT_OK

static const struct {
	const char *name;
	int always;
} lost_kinds[MT_LOST_KIND_COUNT] = {
#define MT_LOST_KIND_ENTRY(slot, name, always) [slot] = {#name, always},
    MT_LOST_KINDS(MT_LOST_KIND_ENTRY)
#undef MT_LOST_KIND_ENTRY
};

const char *mt_lost_kind_name(unsigned slot)
{
	return slot < MT_LOST_KIND_COUNT ? lost_kinds[slot].name : NULL;
}

int mt_lost_kind_always(unsigned slot)
{
	return slot < MT_LOST_KIND_COUNT && lost_kinds[slot].always;
}

/* The allocator kinds of the allocator mix (allocations_by_func), by enum mt_func. */
static const char *const mt_func_names[MT_FN_COUNT] = {
    [MT_FN_MALLOC] = "malloc",
    [MT_FN_CALLOC] = "calloc",
    [MT_FN_REALLOC] = "realloc",
    [MT_FN_REALLOCARRAY] = "reallocarray",
    [MT_FN_FREE] = "free",
    [MT_FN_POSIX_MEMALIGN] = "posix_memalign",
    [MT_FN_ALIGNED_ALLOC] = "aligned_alloc",
    [MT_FN_MEMALIGN] = "memalign",
    [MT_FN_VALLOC] = "valloc",
    [MT_FN_PVALLOC] = "pvalloc",
    [MT_FN_NEW] = "operator new",
    [MT_FN_NEW_ARRAY] = "operator new[]",
    [MT_FN_PYMALLOC_MALLOC] = "pymalloc_malloc",
    [MT_FN_PYMALLOC_CALLOC] = "pymalloc_calloc",
    [MT_FN_PYMALLOC_REALLOC] = "pymalloc_realloc",
    [MT_FN_PYMALLOC_FREE] = "pymalloc_free",
    [MT_FN_MMAP] = "mmap",
    [MT_FN_DELETE] = "operator delete",
    [MT_FN_MALLOCX] = "mallocx",
    [MT_FN_RALLOCX] = "rallocx",
    [MT_FN_DALLOCX] = "dallocx",
    [MT_FN_XALLOCX] = "xallocx",
};

const char *mt_func_name(unsigned func)
{
	return func < MT_FN_COUNT ? mt_func_names[func] : NULL;
}
