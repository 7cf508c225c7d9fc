// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Conservative marking of a stopped process's live blocks (see reach.h).
 *
 * Finding the block a word points into is the hot loop: every word of the
 * process's writable memory (100 MB is 13 million words) asks it. Words
 * outside [min_addr, max_end) are rejected by two compares; the others look
 * up their 4 KiB page in a hash of the pages blocks touch, which names the
 * blocks starting in that page (a binary search among them) and the block
 * before them (which may reach into the page). Blocks larger than BIG_SPAN
 * put only their first page in the hash and are searched apart, so a huge
 * block costs one entry, not one per page.
 */
#include "daemon/scan/reach.h"

#include <stdlib.h>
#include <string.h>

#define PAGE_SHIFT 12
#define BIG_SPAN   (2ull << 20)

struct page_entry {
	uint64_t key; /* page number + 1; 0 = empty */
	uint32_t lo;  /* position in idx[] of the first block starting at or after the page */
	uint32_t count; /* blocks starting in the page: idx[lo .. lo + count) */
};

struct reach_index {
	uint32_t *idx; /* the blocks looked up, sorted, non-overlapping: indices into blocks */
	uint32_t nidx;
	struct page_entry *pages;
	uint64_t mask; /* capacity - 1 (a power of two) */
	uint32_t *big; /* positions in idx[] of blocks larger than BIG_SPAN */
	uint32_t nbig;
};

static uint64_t span_of(const struct reach_block *b)
{
	return b->size ? b->size : 1; /* malloc(0) is a unique address: a pointer to it counts */
}

static int block_cmp(const void *x, const void *y)
{
	const struct reach_block *a = x, *b = y;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return a->size < b->size ? -1 : a->size > b->size;
}

static struct page_entry *page_slot(const struct reach_index *ix, uint64_t page)
{
	uint64_t h = ((page + 1) * 0x9e3779b97f4a7c15ull) >> 20;

	for (;; h++) {
		struct page_entry *e = &ix->pages[h & ix->mask];

		if (!e->key || e->key == page + 1)
			return e;
	}
}

/* Blocks that overlap another cannot be told apart: both are kept reachable. */
static void mark_overlaps(struct reach *r)
{
	uint64_t max_end = 0;
	uint32_t holder = 0;

	for (uint32_t i = 0; i < r->n; i++) {
		const struct reach_block *b = &r->blocks[i];

		if (i && b->addr < max_end) {
			r->flags[i] |= REACH_F_OVERLAP;
			r->flags[holder] |= REACH_F_OVERLAP;
		}
		if (b->addr + span_of(b) > max_end) {
			max_end = b->addr + span_of(b);
			holder = i;
		}
	}
	for (uint32_t i = 0; i < r->n; i++) {
		if (r->flags[i] & REACH_F_OVERLAP) {
			r->state[i] = REACH_REACHABLE;
			r->overlapping++;
		}
	}
}

static int build_index(struct reach *r)
{
	struct reach_index *ix = calloc(1, sizeof(*ix));
	uint64_t entries = 0, cap = 16, last_page = UINT64_MAX;

	if (!ix)
		return -1;
	r->index = ix;
	ix->idx = malloc((r->n ? r->n : 1) * sizeof(*ix->idx));
	if (!ix->idx)
		return -1;
	for (uint32_t i = 0; i < r->n; i++) {
		const struct reach_block *b = &r->blocks[i];
		uint64_t span = span_of(b);

		if (r->flags[i] & REACH_F_OVERLAP)
			continue;
		ix->idx[ix->nidx++] = i;
		entries += span > BIG_SPAN ? 1 : ((b->addr + span - 1) >> PAGE_SHIFT) -
						     (b->addr >> PAGE_SHIFT) + 1;
	}
	while (cap < 2 * entries)
		cap *= 2;
	ix->pages = calloc(cap, sizeof(*ix->pages));
	ix->big = malloc((ix->nidx ? ix->nidx : 1) * sizeof(*ix->big));
	if (!ix->pages || !ix->big)
		return -1;
	ix->mask = cap - 1;
	r->min_addr = UINT64_MAX;
	for (uint32_t k = 0; k < ix->nidx; k++) {
		const struct reach_block *b = &r->blocks[ix->idx[k]];
		uint64_t span = span_of(b), first = b->addr >> PAGE_SHIFT;
		uint64_t last = span > BIG_SPAN ? first : (b->addr + span - 1) >> PAGE_SHIFT;
		struct page_entry *e;

		if (b->addr < r->min_addr)
			r->min_addr = b->addr;
		if (b->addr + span > r->max_end)
			r->max_end = b->addr + span;
		if (span > BIG_SPAN)
			ix->big[ix->nbig++] = k;
		/* the page it starts in: blocks are in order, so it is the last one entered
		 * or a new one */
		e = page_slot(ix, first);
		if (!e->key) {
			e->key = first + 1;
			e->lo = k;
			e->count = 0;
		}
		e->count++;
		if (last_page == UINT64_MAX || first > last_page)
			last_page = first;
		/* pages it reaches into: the blocks starting there come after it */
		for (uint64_t p = (first > last_page ? first : last_page) + 1; p <= last; p++) {
			e = page_slot(ix, p);
			e->key = p + 1;
			e->lo = k + 1;
			e->count = 0;
		}
		if (last > last_page)
			last_page = last;
	}
	if (!ix->nidx)
		r->min_addr = 0;
	return 0;
}

int reach_init(struct reach *r, struct reach_block *blocks, uint32_t n)
{
	memset(r, 0, sizeof(*r));
	r->blocks = blocks;
	r->n = n;
	if (n)
		qsort(blocks, n, sizeof(*blocks), block_cmp);
	r->state = calloc(n ? n : 1, 1);
	r->flags = calloc(n ? n : 1, 1);
	r->kind = calloc(n ? n : 1, 1);
	if (!r->state || !r->flags || !r->kind) {
		r->nomem = 1;
		return -1;
	}
	mark_overlaps(r);
	if (build_index(r)) {
		r->nomem = 1;
		return -1;
	}
	return 0;
}

void reach_free(struct reach *r)
{
	if (r->index) {
		free(r->index->idx);
		free(r->index->pages);
		free(r->index->big);
		free(r->index);
	}
	free(r->blocks);
	free(r->state);
	free(r->flags);
	free(r->kind);
	free(r->edges);
	free(r->first);
	free(r->stack_buf);
	memset(r, 0, sizeof(*r));
}

/* The block at position k of the index contains v? */
static int contains(const struct reach *r, uint32_t k, uint64_t v)
{
	const struct reach_block *b = &r->blocks[r->index->idx[k]];

	return v >= b->addr && v - b->addr < span_of(b);
}

int64_t reach_find(const struct reach *r, uint64_t value, int *start)
{
	const struct reach_index *ix = r->index;
	const struct page_entry *e;
	int64_t cand = -1;

	if (value < r->min_addr || value >= r->max_end || !ix)
		return -1;
	e = page_slot(ix, value >> PAGE_SHIFT);
	if (e->key) {
		/* the last block starting at or before value among those of the page */
		uint32_t lo = e->lo, hi = e->lo + e->count;

		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (r->blocks[ix->idx[mid]].addr <= value)
				lo = mid + 1;
			else
				hi = mid;
		}
		cand = (int64_t)lo - 1;
		if (cand >= 0 && !contains(r, (uint32_t)cand, value))
			cand = -1;
	}
	if (cand < 0 && ix->nbig) {
		uint32_t lo = 0, hi = ix->nbig;

		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (r->blocks[ix->idx[ix->big[mid]]].addr <= value)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo && contains(r, ix->big[lo - 1], value))
			cand = ix->big[lo - 1];
	}
	if (cand < 0)
		return -1;
	cand = ix->idx[cand];
	if (start)
		*start = r->blocks[cand].addr == value;
	return cand;
}

static void mark(struct reach *r, uint32_t i, int state)
{
	if (r->state[i] < state)
		r->state[i] = (uint8_t)state;
}

static void add_edge(struct reach *r, uint32_t src, uint32_t dst, int interior)
{
	uint64_t e = (uint64_t)src << 32 | (uint64_t)dst << 1 | (uint64_t)interior;

	if (r->nedges && r->edges[r->nedges - 1] == e)
		return; /* an array of pointers to one block: one edge */
	if (r->nedges == r->edges_cap) {
		size_t cap = r->edges_cap ? 2 * r->edges_cap : 4096;
		uint64_t *v = realloc(r->edges, cap * sizeof(*v));

		if (!v) {
			r->nomem = 1;
			return;
		}
		r->edges = v;
		r->edges_cap = cap;
	}
	r->edges[r->nedges++] = e;
	free(r->first); /* edges changed: the next reach_mark() indexes them again */
	r->first = NULL;
}

/* The first position of the index whose block ends after addr. */
static uint32_t first_ending_after(const struct reach *r, uint64_t addr)
{
	const struct reach_index *ix = r->index;
	uint32_t lo = 0, hi = ix->nidx;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct reach_block *b = &r->blocks[ix->idx[mid]];

		if (b->addr + b->size <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void reach_scan(struct reach *r, uint64_t addr, const void *bytes, size_t len)
{
	const struct reach_index *ix = r->index;
	const uint8_t *p = bytes;
	uint64_t a = (addr + 7) & ~7ull, end = addr + len;
	uint32_t k;

	if (!ix || end < addr)
		return;
	k = first_ending_after(r, a);
	for (; a + 8 <= end; a += 8) {
		uint64_t v;
		int64_t owner = -1, t;
		int start;

		memcpy(&v, p + (a - addr), 8);
		r->words_scanned++;
		/* the block this word lies in, if any: blocks end in order */
		while (k < ix->nidx && r->blocks[ix->idx[k]].addr + r->blocks[ix->idx[k]].size <= a)
			k++;
		if (k < ix->nidx && r->blocks[ix->idx[k]].addr <= a)
			owner = ix->idx[k];
		if (v < r->min_addr || v >= r->max_end)
			continue;
		t = reach_find(r, v, &start);
		if (t < 0)
			continue;
		if (owner < 0) {
			r->root_words++;
			mark(r, (uint32_t)t, start ? REACH_REACHABLE : REACH_POSSIBLE);
		} else if (owner != t) { /* a block's pointer to itself holds nothing */
			add_edge(r, (uint32_t)owner, (uint32_t)t, !start);
		}
	}
}

void reach_scan_root(struct reach *r, const uint64_t *words, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int start;
		int64_t t = reach_find(r, words[i], &start);

		r->words_scanned++;
		if (t >= 0) {
			r->root_words++;
			mark(r, (uint32_t)t, start ? REACH_REACHABLE : REACH_POSSIBLE);
		}
	}
}

void reach_mark_containing(struct reach *r, uint64_t addr)
{
	int64_t t = reach_find(r, addr, NULL);

	if (t >= 0)
		mark(r, (uint32_t)t, REACH_REACHABLE);
}

void reach_unread(struct reach *r, uint64_t start, uint64_t end)
{
	uint32_t lo = 0, hi = r->n;

	/* the first block starting at or after start; one before it may reach in */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->blocks[mid].addr < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* overlapping blocks are all reachable already: one step back is enough
	 * for the others, which do not overlap */
	if (lo && r->blocks[lo - 1].addr + r->blocks[lo - 1].size > start)
		lo--;
	for (; lo < r->n && r->blocks[lo].addr < end; lo++) {
		if (r->blocks[lo].addr + span_of(&r->blocks[lo]) <= start)
			continue;
		r->flags[lo] |= REACH_F_UNREAD;
		r->state[lo] = REACH_REACHABLE;
	}
}

static int edge_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* Index the edges by source block (first[]). */
static int index_edges(struct reach *r)
{
	int sorted = 1;

	if (r->first)
		return 0;
	for (size_t i = 1; i < r->nedges && sorted; i++)
		sorted = r->edges[i - 1] >> 32 <= r->edges[i] >> 32;
	if (!sorted)
		qsort(r->edges, r->nedges, sizeof(*r->edges), edge_cmp);
	r->first = calloc((size_t)r->n + 1, sizeof(*r->first));
	if (!r->first)
		return -1;
	for (size_t i = 0; i < r->nedges; i++)
		r->first[(r->edges[i] >> 32) + 1]++;
	for (uint32_t i = 0; i < r->n; i++)
		r->first[i + 1] += r->first[i];
	return 0;
}

int reach_mark(struct reach *r)
{
	size_t top = 0;

	if (r->nomem || index_edges(r))
		return r->nomem = 1, -1;
	if (!r->stack_buf) {
		/* every block enters once as a seed and at most twice more, as it rises */
		r->stack_buf = malloc((3 * (size_t)r->n + 1) * sizeof(*r->stack_buf));
		if (!r->stack_buf)
			return r->nomem = 1, -1;
	}
	for (uint32_t i = 0; i < r->n; i++)
		if (r->state[i] != REACH_UNREACHED)
			r->stack_buf[top++] = i;
	while (top) {
		uint32_t i = r->stack_buf[--top];
		int from = r->state[i];

		for (uint64_t e = r->first[i]; e < r->first[i + 1]; e++) {
			uint32_t dst = (uint32_t)(r->edges[e] & 0xffffffffu) >> 1;
			int to = (r->edges[e] & 1) ? REACH_POSSIBLE : from;

			if (r->state[dst] < to) {
				r->state[dst] = (uint8_t)to;
				r->stack_buf[top++] = dst;
			}
		}
	}
	return 0;
}

void reach_ignore(struct reach *r, uint32_t i)
{
	r->flags[i] |= REACH_F_SUPPRESSED;
	r->state[i] = REACH_REACHABLE;
}

int reach_classify(struct reach *r)
{
	if (r->nomem || index_edges(r))
		return r->nomem = 1, -1;
	for (uint32_t i = 0; i < r->n; i++) {
		if (r->flags[i] & (REACH_F_OVERLAP | REACH_F_UNREAD))
			r->kind[i] = REACH_KIND_REACHABLE;
		else if (r->flags[i] & REACH_F_SUPPRESSED)
			r->kind[i] = REACH_KIND_SUPPRESSED;
		else if (r->state[i] == REACH_REACHABLE)
			r->kind[i] = REACH_KIND_REACHABLE;
		else if (r->state[i] == REACH_POSSIBLE)
			r->kind[i] = REACH_KIND_POSSIBLE;
		else
			r->kind[i] = REACH_KIND_DIRECT;
	}
	/* an unreached block that another unreached block points into is indirect */
	for (size_t e = 0; e < r->nedges; e++) {
		uint32_t src = (uint32_t)(r->edges[e] >> 32);
		uint32_t dst = (uint32_t)(r->edges[e] & 0xffffffffu) >> 1;

		if (r->state[src] == REACH_UNREACHED && r->kind[dst] == REACH_KIND_DIRECT)
			r->kind[dst] = REACH_KIND_INDIRECT;
	}
	return 0;
}

void reach_totals(const struct reach *r, struct reach_totals *out)
{
	memset(out, 0, sizeof(*out));
	for (uint32_t i = 0; i < r->n; i++) {
		out->blocks[r->kind[i]]++;
		out->bytes[r->kind[i]] += r->blocks[i].size;
	}
}

static int is_leak(int kind)
{
	return kind == REACH_KIND_DIRECT || kind == REACH_KIND_INDIRECT ||
	       kind == REACH_KIND_POSSIBLE;
}

static int key_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

static int entry_cmp(const void *x, const void *y)
{
	const struct reach_entry *a = x, *b = y;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	if (a->blocks != b->blocks)
		return a->blocks > b->blocks ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

int64_t reach_entries(const struct reach *r, struct reach_entry **out)
{
	uint64_t *keys;
	size_t nkeys = 0, n = 0;
	struct reach_entry *v;

	*out = NULL;
	keys = malloc(((size_t)r->n + 1) * sizeof(*keys));
	if (!keys)
		return -1;
	/* (stack, kind, block) keys, sorted: a run is an entry */
	for (uint32_t i = 0; i < r->n; i++)
		if (is_leak(r->kind[i]))
			keys[nkeys++] = (uint64_t)r->blocks[i].stack << 34 |
					(uint64_t)r->kind[i] << 32 | i;
	qsort(keys, nkeys, sizeof(*keys), key_cmp);
	v = malloc((nkeys ? nkeys : 1) * sizeof(*v));
	if (!v) {
		free(keys);
		return -1;
	}
	for (size_t i = 0; i < nkeys; i++) {
		const struct reach_block *b = &r->blocks[keys[i] & 0xffffffffu];

		if (!i || keys[i] >> 32 != keys[i - 1] >> 32)
			v[n++] = (struct reach_entry){.stack = (uint32_t)(keys[i] >> 34),
						      .kind = (uint8_t)((keys[i] >> 32) & 3)};
		v[n - 1].blocks++;
		v[n - 1].bytes += b->size;
	}
	free(keys);
	qsort(v, n, sizeof(*v), entry_cmp);
	*out = v;
	return (int64_t)n;
}
