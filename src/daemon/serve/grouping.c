// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Grouped views in the daemon (see grouping.h). Keys are made per distinct
 * frame (framebuild's table), with group.c's own functions (rows by cgroup,
 * unit or container: per stack's pid, from the answer's targets), and a row is
 * found by its key's number; a stack row by a hash of its frames' locations,
 * confirmed frame by frame. Rows are ordered as the client orders them
 * (group_order(), common/order.h, then the key), ties on the key compared
 * without writing keys out; only the rows sent get their key string.
 */
#include "daemon/serve/grouping.h"
#include "daemon/serve/framebuild.h"
#include "daemon/serve/service.h"
#include "daemon/core/tracker.h"
#include "common/groupkey.h"
#include "common/order.h"
#include "common/strtab.h"
#include "common/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_STACK_KEY "(no stack)"
/* Locations packed into a row's prefix for quick ordering: numbers below 255. */
#define PREFIX_LOCATIONS 8
#define PREFIX_BITS	 8
#define PREFIX_NONE	 0xff

/*
 * A row: its first stack in the request's order, and, once a second stack
 * joins it, its sums (most rows of a stack grouping are one stack, whose
 * own counters are the row's: no copy of them is made).
 */
struct row {
	uint32_t key;	 /* key number: a string of keys (function ... module, site), or 0 */
	uint32_t rep;	 /* its first stack */
	uint32_t frame0; /* site rows: the first stack's frame 0 + 1 (0: none) */
	uint32_t sums;	 /* its totals in g->totals + 1, or 0: its first stack alone */
	uint64_t hash;	 /* stack rows: the hash of their locations */
	uint64_t prefix; /* stack rows: their first locations' numbers, in order */
};

struct row_total {
	uint64_t nstacks;
	struct mt_stack_counters t;
};

struct grouping {
	const struct daemon_view *v;
	const struct stack_ends *ends;
	struct framebuild *fb;
	int by; /* enum group_by */
	int cumulative;
	struct strtab keys;   /* key strings; stack rows: location strings, in order */
	uint32_t *frame_key;  /* per table frame: its key (or location) number + 1 */
	size_t frame_key_cap; /* entries */
	struct row *rows;
	size_t nrows, rows_cap;
	struct row_total *totals; /* of the rows of more than one stack */
	size_t ntotals, totals_cap;
	struct hash_index index; /* rows by key number or location hash */
	uint32_t *seq[2];	 /* location numbers of two stacks, for comparing */
	size_t seq_cap[2], nseq[2];
	uint32_t *loc_rank;  /* stack rows: rank of each location string in string order */
	uint8_t *loc_prefix; /* ... whether it is a prefix of another location */
	int rows_are_stacks; /* stacks_are_rows() said so: one generation, native frames only */
	const struct snapshot *s; /* the answer: its targets (their cgroups) key label rows */
	uint32_t label_pid;	  /* label rows: the last stack's pid, and its key number */
	uint32_t label_key;
};

/* ---- keys ---------------------------------------------------------------- */

/* The string that makes frames one site exactly when group_site_cmp() says so. */
static void site_key(const struct snap_frame *f, struct buf *b)
{
	if (f->function) {
		buf_printf(b, "F%s", f->function);
		buf_put(b, "", 1);
		if (f->file)
			buf_printf(b, "S%s", f->file);
		else
			buf_printf(b, "N");
		buf_put(b, "", 1);
		buf_printf(b, "%" PRId64, f->line);
	} else if (f->module) {
		buf_printf(b, "M%s", f->module);
		buf_put(b, "", 1);
		buf_printf(b, "%" PRIx64, f->offset);
	} else {
		buf_printf(b, "A%" PRIx64, f->address);
	}
}

/* The key (or location) number of table frame i. */
static uint32_t frame_key(struct grouping *g, uint32_t i)
{
	const struct snap_frame *f;
	char key[4096];
	size_t k;

	if (i >= g->frame_key_cap) {
		size_t cap = g->frame_key_cap ? g->frame_key_cap : 256;

		while (cap <= i)
			cap *= 2;
		g->frame_key = xrealloc(g->frame_key, cap * sizeof(*g->frame_key));
		memset(g->frame_key + g->frame_key_cap, 0,
		       (cap - g->frame_key_cap) * sizeof(*g->frame_key));
		g->frame_key_cap = cap;
	}
	if (g->frame_key[i])
		return g->frame_key[i] - 1;
	f = framebuild_frame(g->fb, i);
	if (g->by == GROUP_SITE) {
		struct buf b = {0};

		site_key(f, &b);
		k = strtab_intern(&g->keys, (const char *)b.data, b.len);
		buf_free(&b);
	} else {
		if (g->by == GROUP_STACK)
			group_frame_location(f, key, sizeof(key));
		else
			group_frame_key(f, g->by, key, sizeof(key));
		k = strtab_intern(&g->keys, key, strlen(key));
	}
	g->frame_key[i] = (uint32_t)k + 1;
	return (uint32_t)k;
}

/* The number of a key given as a string (the empty stack's). */
static uint32_t string_key(struct grouping *g, const char *s)
{
	return (uint32_t)strtab_intern(&g->keys, s, strlen(s));
}

/* ---- walking a stack's frames ---------------------------------------------- */

struct first_frames {
	struct grouping *g;
	uint32_t frame0; /* table index + 1 of frame 0 */
	uint32_t python; /* ... of the first Python frame */
	int want_python;
};

static int first_frames(void *arg, uint32_t first, uint32_t count)
{
	struct first_frames *ff = arg;

	for (uint32_t k = 0; k < count; k++) {
		if (!ff->frame0)
			ff->frame0 = first + k + 1;
		if (!ff->want_python)
			return 1;
		if (group_python_frame(framebuild_frame(ff->g->fb, first + k))) {
			ff->python = first + k + 1;
			return 1;
		}
	}
	return 0;
}

struct all_keys {
	struct grouping *g;
	int which; /* seq slot to fill */
	uint64_t hash;
};

static int all_keys(void *arg, uint32_t first, uint32_t count)
{
	struct all_keys *ak = arg;
	struct grouping *g = ak->g;

	for (uint32_t k = 0; k < count; k++) {
		uint32_t key = frame_key(g, first + k);
		size_t *n = &g->nseq[ak->which];

		if (*n == g->seq_cap[ak->which]) {
			g->seq_cap[ak->which] =
			    g->seq_cap[ak->which] ? 2 * g->seq_cap[ak->which] : 256;
			g->seq[ak->which] =
			    xrealloc(g->seq[ak->which], g->seq_cap[ak->which] * sizeof(*g->seq[0]));
		}
		g->seq[ak->which][(*n)++] = key;
		ak->hash = hash_mix(ak->hash, key);
	}
	return 0;
}

/* Every frame's key (or location) number of stack idx into seq[which]; returns their hash. */
static uint64_t stack_keys(struct grouping *g, uint32_t idx, int which)
{
	struct all_keys ak = {g, which, 0x9ae16a3b2f90404full};

	g->nseq[which] = 0;
	framebuild_walk(g->fb, idx, all_keys, &ak);
	return ak.hash;
}

/* ---- rows ---------------------------------------------------------------- */

struct row_key {
	struct grouping *g;
	uint32_t key;
	uint64_t hash;
	uint32_t stack; /* stack rows: the stack whose locations are in seq[0] */
};

static int row_eq(const void *arg, size_t i)
{
	const struct row_key *k = arg;
	struct grouping *g = k->g;
	const struct row *r = &g->rows[i];

	if (g->by != GROUP_STACK)
		return r->key == k->key;
	if (r->hash != k->hash)
		return 0;
	/* the same locations, frame by frame (never trust a hash alone) */
	stack_keys(g, r->rep, 1);
	return g->nseq[0] == g->nseq[1] &&
	       !memcmp(g->seq[0], g->seq[1], g->nseq[0] * sizeof(*g->seq[0]));
}

/* A stack's counters as a row's. */
static void stack_sums(const struct daemon_view *v, uint32_t idx, struct mt_stack_counters *out)
{
	*out = framebuild_row_counters(v, idx);
}

/* A row's totals and how many stacks it holds. */
static void row_totals(const struct grouping *g, const struct row *r, struct mt_stack_counters *out,
		       uint64_t *nstacks)
{
	if (r->sums) {
		*out = g->totals[r->sums - 1].t;
		*nstacks = g->totals[r->sums - 1].nstacks;
	} else {
		stack_sums(g->v, r->rep, out);
		*nstacks = 1;
	}
}

/* Stack idx joins row r (which already has its first stack). */
static void row_join(struct grouping *g, struct row *r, uint32_t idx)
{
	struct mt_stack_counters add;

	if (!r->sums) {
		if (g->ntotals == g->totals_cap) {
			g->totals_cap = g->totals_cap ? 2 * g->totals_cap : 256;
			g->totals = xrealloc(g->totals, g->totals_cap * sizeof(*g->totals));
		}
		g->totals[g->ntotals].nstacks = 1;
		stack_sums(g->v, r->rep, &g->totals[g->ntotals].t);
		r->sums = (uint32_t)++g->ntotals;
	}
	stack_sums(g->v, idx, &add);
	mt_stack_counters_add(&g->totals[r->sums - 1].t, &add);
	g->totals[r->sums - 1].nstacks++;
}

/* Add stack idx to the row of key (a new row, of which it is the first, when there is none). */
static struct row *row_of(struct grouping *g, struct row_key *k, uint32_t idx)
{
	uint64_t hash = g->by == GROUP_STACK ? k->hash : hash_mix(0, k->key);
	int is_new;
	size_t i = hash_index_find(&g->index, hash, row_eq, k, &is_new);

	if (!is_new) {
		row_join(g, &g->rows[i], idx);
		return &g->rows[i];
	}
	if (i == g->rows_cap) {
		g->rows_cap = g->rows_cap ? 2 * g->rows_cap : 1024;
		g->rows = xrealloc(g->rows, g->rows_cap * sizeof(*g->rows));
	}
	memset(&g->rows[i], 0, sizeof(g->rows[i]));
	g->rows[i].key = k->key;
	g->rows[i].hash = k->hash;
	g->rows[i].rep = idx;
	g->nrows++;
	return &g->rows[i];
}

/* A stack row's prefix: its first locations' numbers (seq[0]), packed. */
static uint64_t pack_prefix(const struct grouping *g)
{
	uint64_t prefix = 0;

	for (size_t i = 0; i < g->nseq[0] && i < PREFIX_LOCATIONS; i++) {
		uint64_t v = g->seq[0][i] + 1 < PREFIX_NONE ? g->seq[0][i] + 1 : PREFIX_NONE;

		prefix |= v << (PREFIX_BITS * (PREFIX_LOCATIONS - 1 - i));
	}
	return prefix;
}

/* Add stack idx to its row or rows. */
static void group_stack(struct grouping *g, uint32_t idx)
{
	struct row_key k = {.g = g, .stack = idx};
	struct row *r;
	size_t before;

	if (g->by == GROUP_STACK) {
		k.hash = stack_keys(g, idx, 0);
		if (!g->nseq[0])
			k.hash = hash_mix(0, string_key(g, NO_STACK_KEY));
		before = g->nrows;
		r = row_of(g, &k, idx);
		if (g->nrows != before)
			r->prefix = pack_prefix(g);
		return;
	}
	if (group_by_target(g->by)) {
		/* its process's label, as the answer's targets have it (group.c's key) */
		uint32_t pid = framebuild_row_pid(g->v, idx);

		if (!g->label_pid ||
		    pid != g->label_pid) { /* a pid's stacks mostly come together */
			g->label_pid = pid;
			g->label_key = string_key(g, group_target_key(g->s, pid, g->by));
		}
		k.key = g->label_key;
		row_of(g, &k, idx);
		return;
	}
	if (g->cumulative && g->by != GROUP_SITE) {
		/* every distinct key among its frames, once (a recursive stack too) */
		stack_keys(g, idx, 0);
		if (!g->nseq[0]) {
			k.key = string_key(g, NO_STACK_KEY);
			row_of(g, &k, idx);
		}
		for (size_t i = 0; i < g->nseq[0]; i++) {
			size_t j;

			for (j = 0; j < i && g->seq[0][j] != g->seq[0][i]; j++)
				;
			if (j < i)
				continue;
			k.key = g->seq[0][i];
			row_of(g, &k, idx);
		}
		return;
	}
	{
		struct first_frames ff = {g, 0, 0, g->by != GROUP_SITE};

		framebuild_walk(g->fb, idx, first_frames, &ff);
		if (!ff.frame0)
			k.key = string_key(g, g->by == GROUP_SITE ? "" : NO_STACK_KEY);
		else
			k.key = frame_key(g, (ff.python ? ff.python : ff.frame0) - 1);
		before = g->nrows;
		r = row_of(g, &k, idx);
		if (g->nrows != before)
			r->frame0 = ff.frame0;
	}
}

/* Its first locations' numbers, up to PREFIX_LOCATIONS of them (seq[0]). */
struct first_locations {
	struct grouping *g;
};

static int first_locations(void *arg, uint32_t first, uint32_t count)
{
	struct grouping *g = ((struct first_locations *)arg)->g;

	for (uint32_t k = 0; k < count && g->nseq[0] < PREFIX_LOCATIONS; k++) {
		if (g->nseq[0] == g->seq_cap[0]) {
			g->seq_cap[0] = g->seq_cap[0] ? 2 * g->seq_cap[0] : 256;
			g->seq[0] = xrealloc(g->seq[0], g->seq_cap[0] * sizeof(*g->seq[0]));
		}
		g->seq[0][g->nseq[0]++] = frame_key(g, first + k);
	}
	return g->nseq[0] >= PREFIX_LOCATIONS;
}

/*
 * Stack rows when no two selected stacks can share a row: one generation (a
 * process's stacks differ in some return address, hence in some location)
 * and no Python frames (those all have the one location "0x0"). Each stack
 * is its row; only its first locations are looked at, for ordering.
 */
static int stacks_are_rows(struct grouping *g, const uint32_t *sel, uint32_t nsel)
{
	const struct stack_table *t = &g->v->tracker->stacks;

	/* a forked child's inherited rows share frames with its ancestors' */
	for (uint32_t i = 0; i < nsel; i++)
		if (sel[i] >= t->count)
			return 0;
	for (uint32_t i = 0; i < nsel; i++) {
		const struct stack_entry *e = stack_get(t, sel[i]);
		uint64_t words[STACK_MAX_FRAMES];

		if (e->tgid != stack_get(t, sel[0])->tgid || !e->nframes)
			return 0;
		stack_words(t, sel[i], words);
		for (uint32_t k = 0; k < e->nframes; k++)
			if (words[k] & MT_PY_WORD)
				return 0;
	}
	g->rows_are_stacks = 1;
	g->rows = xmalloc((nsel ? nsel : 1) * sizeof(*g->rows));
	g->rows_cap = nsel;
	for (uint32_t i = 0; i < nsel; i++) {
		struct first_locations fl = {g};
		struct row *r = &g->rows[g->nrows++];

		memset(r, 0, sizeof(*r));
		r->rep = sel[i];
		g->nseq[0] = 0;
		framebuild_walk(g->fb, sel[i], first_locations, &fl);
		r->prefix = pack_prefix(g);
	}
	return 1;
}

/* ---- ordering ------------------------------------------------------------- */

/*
 * Stack rows are ordered by their key string, the locations joined by ';'.
 * Locations are numbered in string order (loc_rank), so where two stacks
 * differ first, the numbers decide, unless one location starts with the
 * other: then the character after the shorter one decides (';' when its
 * stack goes on, the end of the string when not).
 */
static char *stack_row_key(struct grouping *g, const struct row *r);

/* The location numbers of a stack of native frames of one generation, one at a time. */
struct loc_iter {
	struct grouping *g;
	uint32_t gen;
	struct stack_cursor words; /* its word numbers, from the next */
	uint32_t first, count, k;  /* the current word's frames, and the next of them */
};

/* From word from of stack idx. */
static void loc_iter_init(struct loc_iter *it, struct grouping *g, uint32_t idx, uint32_t from)
{
	const struct stack_table *t = &g->v->tracker->stacks;

	*it = (struct loc_iter){g, stack_get(t, idx)->tgid, {0}, 0, 0, 0};
	stack_cursor_init(&it->words, t, idx, from);
}

/* The next location number into *loc: 1, or 0 at the end. */
static int loc_iter_next(struct loc_iter *it, uint32_t *loc)
{
	uint32_t num;

	while (it->k == it->count) {
		if (!stack_cursor_next(&it->words, &num))
			return 0;
		framebuild_word(it->g->fb, it->gen, num, &it->first, &it->count);
		it->k = 0;
	}
	*loc = frame_key(it->g, it->first + it->k++);
	return 1;
}

/*
 * chain_cmp() for stacks that are rows: their word numbers are equal as far
 * as their locations are (the same words of the same generation, the same frames),
 * so the comparison starts at the first word they differ in.
 */
static int chain_cmp_words(struct grouping *g, const struct row *a, const struct row *b)
{
	const struct stack_table *t = &g->v->tracker->stacks;
	struct stack_cursor ca, cb;
	struct loc_iter ia, ib;
	uint32_t x, y, i = 0;
	int more_a, more_b;

	/* the first word they differ in (or where the shorter ends) */
	stack_cursor_init(&ca, t, a->rep, 0);
	stack_cursor_init(&cb, t, b->rep, 0);
	while (stack_cursor_next(&ca, &x) && stack_cursor_next(&cb, &y) && x == y)
		i++;
	loc_iter_init(&ia, g, a->rep, i);
	loc_iter_init(&ib, g, b->rep, i);
	for (;;) {
		more_a = loc_iter_next(&ia, &x);
		more_b = loc_iter_next(&ib, &y);
		if (!more_a || !more_b) /* one is a prefix of the other: the shorter first */
			return more_a - more_b;
		if (x != y)
			break;
	}
	{
		const char *sx = g->keys.strs[x], *sy = g->keys.strs[y];
		size_t lx = g->keys.lens[x], ly = g->keys.lens[y], m = lx < ly ? lx : ly;
		int c = memcmp(sx, sy, m);
		unsigned char cx, cy;
		uint32_t unused;

		if (c || lx == ly)
			return c;
		/* one location starts with the other: what follows it decides */
		cx = lx > m ? (unsigned char)sx[m] : (loc_iter_next(&ia, &unused) ? ';' : '\0');
		cy = ly > m ? (unsigned char)sy[m] : (loc_iter_next(&ib, &unused) ? ';' : '\0');
		return cx < cy ? -1 : cx > cy;
	}
}

static int chain_cmp(struct grouping *g, const struct row *a, const struct row *b)
{
	size_t n, i;

	if (g->rows_are_stacks)
		return chain_cmp_words(g, a, b);

	stack_keys(g, a->rep, 0);
	stack_keys(g, b->rep, 1);
	if (!g->nseq[0] || !g->nseq[1]) {
		/* the empty stack's key is "(no stack)": compare the strings (rare) */
		char *x = stack_row_key(g, a), *y = stack_row_key(g, b);
		int c = strcmp(x, y);

		free(x);
		free(y);
		return c;
	}
	n = g->nseq[0] < g->nseq[1] ? g->nseq[0] : g->nseq[1];
	for (i = 0; i < n && g->seq[0][i] == g->seq[1][i]; i++)
		;
	if (i == n) /* one is a prefix of the other: the shorter string first */
		return g->nseq[0] < g->nseq[1] ? -1 : g->nseq[0] > g->nseq[1];
	{
		uint32_t x = g->seq[0][i], y = g->seq[1][i];
		const char *sx = g->keys.strs[x], *sy = g->keys.strs[y];
		size_t lx = g->keys.lens[x], ly = g->keys.lens[y], m = lx < ly ? lx : ly;
		int c = memcmp(sx, sy, m);
		unsigned char nx, ny;

		if (c || lx == ly)
			return c;
		/* one location starts with the other */
		nx = lx > m ? (unsigned char)sx[m] : (i + 1 < g->nseq[0] ? ';' : '\0');
		ny = ly > m ? (unsigned char)sy[m] : (i + 1 < g->nseq[1] ? ';' : '\0');
		return nx < ny ? -1 : nx > ny;
	}
}

/* A row's sums. */
static void row_counters(const struct grouping *g, const struct row *r,
			 struct mt_stack_counters *out)
{
	if (r->sums)
		*out = g->totals[r->sums - 1].t;
	else
		stack_sums(g->v, r->rep, out);
}

/* Does a come before b in the view's order? (group_order(), then the keys) */
static int row_before(struct grouping *g, const struct row *a, const struct row *b, int order)
{
	struct mt_stack_counters ca, cb;
	int c;

	row_counters(g, a, &ca);
	row_counters(g, b, &cb);
	if ((c = group_order(&ca, &cb, order, g->by)))
		return c < 0;
	if (g->by == GROUP_SITE) {
		c = group_site_cmp(a->frame0 ? framebuild_frame(g->fb, a->frame0 - 1) : NULL,
				   b->frame0 ? framebuild_frame(g->fb, b->frame0 - 1) : NULL);
		return c < 0;
	}
	if (g->by != GROUP_STACK)
		return strcmp(g->keys.strs[a->key], g->keys.strs[b->key]) < 0;
	/* locations numbered in string order decide quickly where they may */
	if (a->prefix != b->prefix) {
		for (int i = 0; i < PREFIX_LOCATIONS; i++) {
			int shift = PREFIX_BITS * (PREFIX_LOCATIONS - 1 - i);
			uint32_t x = (uint32_t)(a->prefix >> shift) & PREFIX_NONE;
			uint32_t y = (uint32_t)(b->prefix >> shift) & PREFIX_NONE;

			if (x == y && x != PREFIX_NONE)
				continue;
			if (x && y && x != PREFIX_NONE && y != PREFIX_NONE &&
			    !g->loc_prefix[x - 1] && !g->loc_prefix[y - 1])
				return g->loc_rank[x - 1] < g->loc_rank[y - 1];
			break;
		}
	}
	return chain_cmp(g, a, b) < 0;
}

/* Rows in order: the first n (all when n is 0), through a bounded heap. */
struct order_ctx {
	struct grouping *g;
	int order;
};

static int row_cmp(const void *x, const void *y, void *arg)
{
	struct order_ctx *c = arg;
	const struct row *a = &c->g->rows[*(const uint32_t *)x];
	const struct row *b = &c->g->rows[*(const uint32_t *)y];

	return row_before(c->g, a, b, c->order) ? -1 : row_before(c->g, b, a, c->order);
}

/* h[0..n) is a heap whose root comes last in the order: restore it from i down. */
static void sift_down(struct order_ctx *c, uint32_t *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, last = i;
		uint32_t tmp;

		if (l < n && row_before(c->g, &c->g->rows[h[last]], &c->g->rows[h[l]], c->order))
			last = l;
		if (r < n && row_before(c->g, &c->g->rows[h[last]], &c->g->rows[h[r]], c->order))
			last = r;
		if (last == i)
			return;
		tmp = h[i];
		h[i] = h[last];
		h[last] = tmp;
		i = last;
	}
}

static size_t top_rows(struct grouping *g, int order, size_t n, uint32_t *out)
{
	struct order_ctx c = {g, order};

	if (!n || n > g->nrows)
		n = g->nrows;
	for (size_t i = 0; i < n; i++)
		out[i] = (uint32_t)i;
	if (n < g->nrows) {
		for (size_t j = n / 2 + 1; j-- > 0;)
			sift_down(&c, out, n, j);
		for (size_t i = n; i < g->nrows; i++) {
			if (row_before(g, &g->rows[i], &g->rows[out[0]], order)) {
				out[0] = (uint32_t)i;
				sift_down(&c, out, n, 0);
			}
		}
	}
	qsort_r(out, n, sizeof(*out), row_cmp, &c);
	return n;
}

/* Number locations in string order, and mark those another starts with. */
static int str_index_cmp(const void *a, const void *b, void *arg)
{
	const struct strtab *t = arg;

	return strcmp(t->strs[*(const uint32_t *)a], t->strs[*(const uint32_t *)b]);
}

static void rank_locations(struct grouping *g)
{
	size_t n = strtab_count(&g->keys);
	uint32_t *order = xmalloc((n ? n : 1) * sizeof(*order));

	g->loc_rank = xcalloc(n ? n : 1, sizeof(*g->loc_rank));
	g->loc_prefix = xcalloc(n ? n : 1, 1);
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, n, sizeof(*order), str_index_cmp, &g->keys);
	for (size_t i = 0; i < n; i++) {
		g->loc_rank[order[i]] = (uint32_t)i;
		/* in string order, a string's extensions follow it at once */
		if (i + 1 < n && !strncmp(g->keys.strs[order[i]], g->keys.strs[order[i + 1]],
					  g->keys.lens[order[i]]))
			g->loc_prefix[order[i]] = g->loc_prefix[order[i + 1]] = 1;
	}
	free(order);
}

/* ---- the reply ----------------------------------------------------------- */

/* Stack rows: the key group.c makes, the locations joined by ';' (malloc'd). */
static char *stack_row_key(struct grouping *g, const struct row *r)
{
	struct buf b = {0};

	stack_keys(g, r->rep, 0);
	if (!g->nseq[0])
		return xstrdup(NO_STACK_KEY);
	for (size_t i = 0; i < g->nseq[0]; i++) {
		if (i)
			buf_put(&b, ";", 1);
		buf_put(&b, g->keys.strs[g->seq[0][i]], g->keys.lens[g->seq[0][i]]);
	}
	buf_put(&b, "", 1);
	return (char *)b.data;
}

static void grouping_free(struct grouping *g)
{
	strtab_free(&g->keys);
	hash_index_free(&g->index);
	free(g->frame_key);
	free(g->rows);
	free(g->totals);
	free(g->seq[0]);
	free(g->seq[1]);
	free(g->loc_rank);
	free(g->loc_prefix);
}

void grouping_rows(const struct daemon_view *v, const struct stack_ends *ends,
		   const struct proto_rows *r, const uint32_t *sel, uint32_t nsel,
		   struct snapshot *s)
{
	struct grouping g = {
	    .v = v, .ends = ends, .by = r->by, .cumulative = r->cumulative, .s = s};
	uint32_t *chosen, n;
	uint8_t *sent;
	uint64_t *frames_at;

	g.fb = framebuild_new(v, ends);
	if (g.by != GROUP_STACK || !stacks_are_rows(&g, sel, nsel))
		for (uint32_t i = 0; i < nsel; i++)
			group_stack(&g, sel[i]);
	if (g.by == GROUP_STACK)
		rank_locations(&g);
	chosen = xmalloc((g.nrows ? 2 * g.nrows : 1) * sizeof(*chosen));
	n = (uint32_t)top_rows(&g, r->order, r->top, chosen);
	if (g.by == GROUP_SITE && r->top) {
		/* stats shows the top sites by bytes and by count: both */
		uint32_t *by_count = chosen + n,
			 m = (uint32_t)top_rows(&g, MT_SORT_COUNT, r->top, by_count);
		uint32_t first = n;

		for (uint32_t i = 0; i < m; i++) {
			uint32_t j, row = by_count[i];

			for (j = 0; j < first && chosen[j] != row; j++)
				;
			if (j == first)
				chosen[n++] = row; /* never past by_count[i]: n <= first + i */
		}
	}
	/* the rows not sent add up to this */
	sent = xcalloc(g.nrows ? g.nrows : 1, 1);
	for (uint32_t i = 0; i < n; i++)
		sent[chosen[i]] = 1;
	memset(&s->groups, 0, sizeof(s->groups));
	for (size_t i = 0; i < g.nrows; i++) {
		struct mt_stack_counters t;
		uint64_t nstacks;

		if (sent[i])
			continue;
		row_totals(&g, &g.rows[i], &t, &nstacks);
		s->groups.rest_rows++;
		s->groups.rest_rows_live += t.live_allocations != 0;
		s->groups.rest_rows_allocated += t.allocations != 0;
		s->groups.rest_rows_peak += t.peak_live_bytes != 0;
		mt_stack_counters_add(&s->groups.rest, &t);
	}
	free(sent);
	s->kind = SNAP_ROWS;
	s->groups.by = (uint32_t)r->by;
	s->groups.cumulative = (uint32_t)r->cumulative;
	s->groups.order = (uint32_t)r->order;
	s->groups.rows = xcalloc(n ? n : 1, sizeof(*s->groups.rows));
	s->stacks = xcalloc(n ? n : 1, sizeof(*s->stacks));
	frames_at = xmalloc((n ? n : 1) * sizeof(*frames_at));
	s->nstacks = n;
	for (uint32_t i = 0; i < n; i++) {
		const struct row *row = &g.rows[chosen[i]];
		struct snap_stack *st = &s->stacks[i];
		uint64_t nstacks;

		framebuild_fill(g.fb, row->rep, st, &frames_at[i]);
		/* the row's sums, on its first stack */
		row_totals(&g, row, &st->t, &nstacks);
		s->groups.rows[i].stacks = nstacks;
		if (g.by == GROUP_STACK) {
			char *key = stack_row_key(&g, row);

			s->groups.rows[i].key = snapshot_strdup(s, key);
			free(key);
		} else {
			s->groups.rows[i].key = snapshot_strdup(s, g.keys.strs[row->key]);
		}
	}
	framebuild_finish(g.fb, s, frames_at);
	free(frames_at);
	free(chosen);
	grouping_free(&g);
}
