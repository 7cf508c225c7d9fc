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
#include "common/search.h"

#include <stdlib.h>
#include <string.h>

#define PAGE_SHIFT 12
/* Blocks farther apart than this start a cluster of their own. */
#define CLUSTER_GAP (16ull << 20)

/*
 * A run of blocks close to each other (an arena, the brk heap): a page table
 * over its span when that is dense enough, else a binary search.
 */
struct cluster {
	uint64_t base;	/* its first block's page */
	uint64_t end;	/* the end of its last block (span) */
	uint32_t first; /* its blocks are positions [first, last) of the index */
	uint32_t last;
	uint32_t *pages; /* page p from base: the first position ending after it; or NULL */
	uint64_t npages;
};

struct reach_index {
	uint32_t *idx; /* the blocks looked up (none overlaps another): block numbers */
	uint32_t nidx;
	uint64_t *start, *end; /* by position: address, address + span (searched) */
	uint64_t *cend;	       /* address + size: where its content ends (its words) */
	struct cluster *c;
	uint32_t nc;
};

static uint64_t span_of(const struct reach_block *b)
{
	return b->size ? b->size : 1; /* malloc(0) is a unique address: a pointer to it counts */
}

/* Sort by address: least significant digit first, 16 bits at a time, skipping a
 * digit every block shares (a heap's addresses share their top bits). */
static int sort_blocks(struct reach_block *b, uint32_t n, struct reach_block *tmp)
{
	uint32_t *count;

	if (n < 2)
		return 0;
	count = malloc(65536 * sizeof(*count));
	if (!count)
		return -1;
	for (int shift = 0; shift < 64; shift += 16) {
		uint32_t sum = 0;
		int skip = 0;

		memset(count, 0, 65536 * sizeof(*count));
		for (uint32_t i = 0; i < n; i++)
			count[(b[i].addr >> shift) & 0xffff]++;
		for (uint32_t d = 0; d < 65536 && !skip; d++)
			skip = count[d] == n;
		if (skip)
			continue;
		for (uint32_t d = 0; d < 65536; d++) {
			uint32_t c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (uint32_t i = 0; i < n; i++)
			tmp[count[(b[i].addr >> shift) & 0xffff]++] = b[i];
		memcpy(b, tmp, (size_t)n * sizeof(*b));
	}
	free(count);
	return 0;
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

/* Cluster c's page table, when its span is dense enough in blocks. */
static int build_pages(struct reach_index *ix, struct cluster *c)
{
	uint64_t pages = ((c->end - 1) >> PAGE_SHIFT) - (c->base >> PAGE_SHIFT) + 1;
	uint32_t k = c->first;

	if (pages > 4 * (uint64_t)(c->last - c->first) + 4096)
		return 0; /* sparse: a few blocks far apart, a binary search is as good */
	c->pages = malloc(pages * sizeof(*c->pages));
	if (!c->pages)
		return -1;
	c->npages = pages;
	for (uint64_t p = 0; p < pages; p++) {
		uint64_t at = c->base + (p << PAGE_SHIFT);

		while (k < c->last && ix->end[k] <= at)
			k++;
		c->pages[p] = k;
	}
	return 0;
}

static int build_index(struct reach *r)
{
	struct reach_index *ix = r->index;
	uint32_t cap = 16;

	ix->c = malloc(cap * sizeof(*ix->c));
	if (!ix->c)
		return -1;
	for (uint32_t i = 0; i < r->n; i++) {
		const struct reach_block *b = &r->blocks[i];
		uint32_t k = ix->nidx;

		if (r->flags[i] & REACH_F_OVERLAP)
			continue;
		ix->idx[k] = i;
		ix->start[k] = b->addr;
		ix->end[k] = b->addr + span_of(b);
		ix->cend[k] = b->addr + b->size;
		if (!ix->nc || b->addr - ix->c[ix->nc - 1].end > CLUSTER_GAP) {
			if (ix->nc == cap) {
				struct cluster *more = realloc(ix->c, 2 * cap * sizeof(*more));

				if (!more)
					return -1;
				ix->c = more;
				cap *= 2;
			}
			ix->c[ix->nc++] = (struct cluster){
			    .base = b->addr & ~((1ull << PAGE_SHIFT) - 1), .first = k};
		}
		ix->c[ix->nc - 1].end = ix->end[k];
		ix->c[ix->nc - 1].last = k + 1;
		ix->nidx++;
	}
	for (uint32_t i = 0; i < ix->nc; i++)
		if (build_pages(ix, &ix->c[i]))
			return -1;
	r->min_addr = ix->nidx ? ix->start[0] : 0;
	r->max_end = ix->nidx ? ix->end[ix->nidx - 1] : 0;
	return 0;
}

/* Room for cap blocks, the array of blocks given (or made when NULL); touch it
 * all (memset) when asked, so that no page of it is first faulted in later. */
static int make_room(struct reach *r, struct reach_block *blocks, uint32_t cap, int touch)
{
	size_t n = cap ? cap : 1;
	struct reach_index *ix;

	memset(r, 0, sizeof(*r));
	r->cap = cap;
	r->blocks = blocks ? blocks : malloc(n * sizeof(*r->blocks));
	r->sort_tmp = malloc(n * sizeof(*r->sort_tmp));
	r->state = malloc(n);
	r->flags = malloc(n);
	r->kind = malloc(n);
	r->edges = malloc(n * sizeof(*r->edges));
	r->edges_cap = n;
	r->index = ix = calloc(1, sizeof(*ix));
	if (ix) {
		ix->idx = malloc(n * sizeof(*ix->idx));
		ix->start = malloc(n * sizeof(*ix->start));
		ix->end = malloc(n * sizeof(*ix->end));
		ix->cend = malloc(n * sizeof(*ix->cend));
	}
	if (!r->blocks || !r->sort_tmp || !r->state || !r->flags || !r->kind || !r->edges || !ix ||
	    !ix->idx || !ix->start || !ix->end || !ix->cend) {
		r->nomem = 1;
		return -1;
	}
	if (touch) {
		memset(r->blocks, 0, n * sizeof(*r->blocks));
		memset(r->sort_tmp, 0, n * sizeof(*r->sort_tmp));
		memset(r->state, 0, n);
		memset(r->flags, 0, n);
		memset(r->kind, 0, n);
		memset(r->edges, 0, n * sizeof(*r->edges));
		memset(ix->idx, 0, n * sizeof(*ix->idx));
		memset(ix->start, 0, n * sizeof(*ix->start));
		memset(ix->end, 0, n * sizeof(*ix->end));
		memset(ix->cend, 0, n * sizeof(*ix->cend));
	}
	return 0;
}

struct reach_block *reach_prepare(struct reach *r, uint32_t cap)
{
	return make_room(r, NULL, cap, 1) ? NULL : r->blocks;
}

int reach_load(struct reach *r, uint32_t n)
{
	if (r->nomem || n > r->cap)
		return -1;
	r->n = n;
	memset(r->state, 0, n ? n : 1);
	memset(r->flags, 0, n ? n : 1);
	memset(r->kind, 0, n ? n : 1);
	if (sort_blocks(r->blocks, n, r->sort_tmp)) {
		r->nomem = 1;
		return -1;
	}
	free(r->sort_tmp); /* not needed past the sort */
	r->sort_tmp = NULL;
	mark_overlaps(r);
	if (build_index(r)) {
		r->nomem = 1;
		return -1;
	}
	return 0;
}

int reach_init(struct reach *r, struct reach_block *blocks, uint32_t n)
{
	if (make_room(r, blocks, n, 0))
		return -1;
	return reach_load(r, n);
}

void reach_free(struct reach *r)
{
	if (r->index) {
		for (uint32_t i = 0; r->index->c && i < r->index->nc; i++)
			free(r->index->c[i].pages);
		free(r->index->c);
		free(r->index->idx);
		free(r->index->start);
		free(r->index->end);
		free(r->index->cend);
		free(r->index);
	}
	free(r->blocks);
	free(r->sort_tmp);
	free(r->state);
	free(r->flags);
	free(r->kind);
	free(r->edges);
	free(r->first);
	free(r->stack_buf);
	memset(r, 0, sizeof(*r));
}

/* The first position in [lo, hi) whose block ends after v (hi when none). */
static uint32_t first_ending_after(const uint64_t *end, uint32_t lo, uint32_t hi, uint64_t v)
{
	return (uint32_t)SEARCH_FIRST(lo, hi, end[mid] > v);
}

int64_t reach_find(const struct reach *r, uint64_t value, int *start)
{
	const struct reach_index *ix = r->index;
	const struct cluster *c;
	uint32_t lo, hi, k;

	if (value < r->min_addr || value >= r->max_end || !ix)
		return -1;
	/* the last cluster starting at or before value */
	lo = (uint32_t)SEARCH_FIRST(0, ix->nc, ix->c[mid].base > value);
	if (!lo || value >= ix->c[lo - 1].end)
		return -1;
	c = &ix->c[lo - 1];
	if (c->pages) {
		uint64_t p = (value - c->base) >> PAGE_SHIFT;

		/* the block holding value ends after it: at or before the first
		 * position ending after the next page starts */
		lo = c->pages[p];
		hi = p + 1 < c->npages ? c->pages[p + 1] + 1 : c->last;
		if (hi > c->last)
			hi = c->last;
	} else {
		lo = c->first;
		hi = c->last;
	}
	k = first_ending_after(ix->end, lo, hi, value);
	if (k >= c->last || ix->start[k] > value)
		return -1;
	if (start)
		*start = ix->start[k] == value;
	return ix->idx[k];
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

void reach_scan(struct reach *r, uint64_t addr, const void *bytes, size_t len)
{
	const struct reach_index *ix = r->index;
	const uint8_t *p = bytes;
	uint64_t a = (addr + 7) & ~7ull, end = addr + len;
	uint64_t min = r->min_addr, max = r->max_end;
	uint32_t k;

	if (!ix || end < addr)
		return;
	/* the block the words lie in, if any: blocks' contents end in order */
	k = first_ending_after(ix->cend, 0, ix->nidx, a);
	for (; a + 8 <= end; a += 8) {
		uint64_t v;
		int64_t owner = -1, t;
		int start;

		memcpy(&v, p + (a - addr), 8);
		while (k < ix->nidx && ix->cend[k] <= a)
			k++;
		if (k < ix->nidx && ix->start[k] <= a)
			owner = ix->idx[k];
		if (v < min || v >= max)
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
	r->words_scanned += len / 8;
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
	/* the first block starting at or after start; one before it may reach in */
	uint32_t lo = (uint32_t)SEARCH_FIRST(0, r->n, r->blocks[mid].addr >= start);

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

	/* LeakSanitizer's order: direct leaks first, then indirect, then possible */
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	if (a->blocks != b->blocks)
		return a->blocks > b->blocks ? -1 : 1;
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
			keys[nkeys++] =
			    (uint64_t)r->blocks[i].stack << 34 | (uint64_t)r->kind[i] << 32 | i;
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
