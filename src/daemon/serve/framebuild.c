// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Building a snapshot's stacks (see framebuild.h): the rows' numbers, where
 * each stack ends, and the shared frames. A memo from (generation, word) to the
 * run of table frames it became makes each reference one hash lookup; the
 * references are kept as table indices while the table grows and become
 * pointers at the end.
 */
#include "daemon/serve/framebuild.h"
#include "daemon/serve/service.h"
#include "daemon/core/tracker.h"
#include "daemon/symbols/pystacks.h"
#include "daemon/symbols/symbolize.h"
#include "common/hashindex.h"
#include "common/util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct word_run {
	uint64_t word;
	uint32_t gen;
	uint32_t first, count; /* frames in the table */
};

struct framebuild {
	const struct daemon_view *v;
	const struct stack_ends *ends;
	struct snap_frame *table;
	uint32_t ntable, table_cap;
	/* (generation, word) -> runs: open addressing of run numbers + 1, probed
	 * inline (this is looked up once per frame of every stack walked) */
	uint32_t *memo;
	size_t memo_mask;
	struct word_run *runs;
	size_t nruns, runs_cap;
	uint32_t *refs; /* table indices */
	uint64_t nrefs, refs_cap;
	/* word number of the stack table -> its run + 1 (0: not yet), for the
	 * generation of that run: the common case without hashing the word */
	uint32_t *by_num;
	uint32_t nby_num;
};

struct framebuild *framebuild_new(const struct daemon_view *v, const struct stack_ends *ends)
{
	struct framebuild *b = xcalloc(1, sizeof(*b));

	b->v = v;
	b->ends = ends;
	return b;
}

static uint32_t table_add(struct framebuild *b, const struct snap_frame *f)
{
	if (b->ntable == b->table_cap) {
		b->table_cap = b->table_cap ? 2 * b->table_cap : 256;
		b->table = xrealloc(b->table, b->table_cap * sizeof(*b->table));
	}
	b->table[b->ntable] = *f;
	return b->ntable++;
}

/* A Python frame, its strings kept by the symbolizer like the native ones. */
static void python_frame(const struct daemon_view *v, uint32_t gen, uint64_t word,
			 struct snap_frame *out)
{
	struct snap_frame f;

	pystacks_frame(v->py, (int)gen, word, &f);
	*out = f;
	out->function = (char *)symbolizer_intern(v->sym, f.function);
	out->file = (char *)symbolizer_intern(v->sym, f.file);
	out->module = (char *)symbolizer_intern(v->sym, f.module);
	out->build_id = (char *)symbolizer_intern(v->sym, f.build_id);
	free(f.function);
	free(f.module);
	free(f.file);
	free(f.build_id);
}

static size_t run_slot(const struct framebuild *b, uint32_t gen, uint64_t word)
{
	uint64_t h = (word ^ (uint64_t)gen << 40) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h ^ h >> 31) & b->memo_mask;
}

static void memo_grow(struct framebuild *b)
{
	size_t cap = b->memo ? 2 * (b->memo_mask + 1) : 1024;

	free(b->memo);
	b->memo = xcalloc(cap, sizeof(*b->memo));
	b->memo_mask = cap - 1;
	for (size_t i = 0; i < b->nruns; i++) {
		size_t pos = run_slot(b, b->runs[i].gen, b->runs[i].word);

		while (b->memo[pos])
			pos = (pos + 1) & b->memo_mask;
		b->memo[pos] = (uint32_t)i + 1;
	}
}

/* The frames one word of a space stands for (symbolized on first sight). */
static const struct word_run *word_run(struct framebuild *b, uint32_t gen, uint64_t word)
{
	struct snap_frame one[SYMBOLIZER_MAX_INLINE + 1];
	struct word_run *r;
	size_t pos, n;

	if ((b->nruns + 1) * 2 > b->memo_mask + 1 || !b->memo)
		memo_grow(b);
	for (pos = run_slot(b, gen, word); b->memo[pos]; pos = (pos + 1) & b->memo_mask) {
		r = &b->runs[b->memo[pos] - 1];
		if (r->word == word && r->gen == gen)
			return r;
	}
	if (b->nruns == b->runs_cap) {
		b->runs_cap = b->runs_cap ? 2 * b->runs_cap : 256;
		b->runs = xrealloc(b->runs, b->runs_cap * sizeof(*b->runs));
	}
	b->memo[pos] = (uint32_t)b->nruns + 1;
	r = &b->runs[b->nruns++];
	r->word = word;
	r->gen = gen;
	r->first = b->ntable;
	/* the symbolizer fills its caches: another lane may look up too */
	if (b->v->sym_lock)
		pthread_mutex_lock(b->v->sym_lock);
	if (word & MT_PY_WORD) {
		python_frame(b->v, gen, word, &one[0]);
		n = 1;
	} else {
		/* inlined functions add frames at the same address */
		n = symbolizer_frames_interned(b->v->sym, (int)gen, word, one, ARRAY_SIZE(one));
	}
	if (b->v->sym_lock)
		pthread_mutex_unlock(b->v->sym_lock);
	for (size_t k = 0; k < n; k++)
		table_add(b, &one[k]);
	r->count = (uint32_t)n;
	return r;
}

/* The run of word number num of the stack table, in generation. */
static const struct word_run *num_run(struct framebuild *b, uint32_t gen, uint32_t num)
{
	const struct stack_table *t = &b->v->tracker->stacks;
	const struct word_run *r;

	if (!b->by_num) {
		/* the table does not change while a snapshot is built */
		b->nby_num = t->nwords;
		b->by_num = xcalloc(b->nby_num ? b->nby_num : 1, sizeof(*b->by_num));
	}
	if (num < b->nby_num && b->by_num[num]) {
		r = &b->runs[b->by_num[num] - 1];
		if (r->gen == gen)
			return r;
	}
	r = word_run(b, gen, t->words[num]);
	if (num < b->nby_num)
		b->by_num[num] = (uint32_t)(r - b->runs) + 1;
	return r;
}

void framebuild_word(struct framebuild *b, uint32_t gen, uint32_t num, uint32_t *first,
		     uint32_t *count)
{
	const struct word_run *r = num_run(b, gen, num);

	*first = r->first;
	*count = r->count;
}

static void ref_add(struct framebuild *b, uint32_t first, uint32_t count)
{
	if (b->nrefs + count > b->refs_cap) {
		while (b->nrefs + count > b->refs_cap)
			b->refs_cap = b->refs_cap ? 2 * b->refs_cap : 4096;
		b->refs = xrealloc(b->refs, b->refs_cap * sizeof(*b->refs));
	}
	for (uint32_t k = 0; k < count; k++)
		b->refs[b->nrefs++] = first + k;
}

/* The interpreter loop: one native frame per run, which ran Python frames. */
static int is_eval_loop(const struct snap_frame *f)
{
	return f->function && (!strcmp(f->function, "_PyEval_EvalFrameDefault") ||
			       !strncmp(f->function, "_PyEval_EvalFrameDefault.", 25));
}

void framebuild_walk(struct framebuild *b, uint32_t idx, framebuild_fn *fn, void *arg)
{
	const struct stack_table *t = &b->v->tracker->stacks;
	uint32_t stack = view_row_stack(b->v, idx), nums[STACK_MAX_FRAMES];
	const struct stack_entry *s = stack_get(t, stack);
	const uint64_t *words = t->words;
	uint32_t nat = 0, py, i;
	uint32_t gen = s->tgid;

	stack_nums(t, stack, nums);
	/* Python frame words follow the native ones: each run of the
	 * interpreter loop is replaced by the Python frames it was running (up
	 * to the word marked MT_PY_GROUP_END); Python frames left over (native
	 * frames cut short: a module without frame pointers) come last */
	while (nat < s->nframes && !(words[nums[nat]] & MT_PY_WORD))
		nat++;
	py = nat;
	for (i = 0; i < nat; i++) {
		const struct word_run *r = num_run(b, gen, nums[i]);
		uint32_t first = r->first, count = r->count;

		if (py < s->nframes && count && is_eval_loop(&b->table[first + count - 1])) {
			do {
				const struct word_run *p = num_run(b, gen, nums[py]);

				if (fn(arg, p->first, p->count))
					return;
			} while (!(words[nums[py++]] & MT_PY_GROUP_END) && py < s->nframes);
			continue;
		}
		if (fn(arg, first, count))
			return;
	}
	for (; py < s->nframes; py++) {
		const struct word_run *p = num_run(b, gen, nums[py]);

		if (fn(arg, p->first, p->count))
			return;
	}
}

static int add_refs(void *arg, uint32_t first, uint32_t count)
{
	ref_add(arg, first, count);
	return 0;
}

uint64_t framebuild_stack(struct framebuild *b, uint32_t idx, uint32_t *n)
{
	uint64_t start = b->nrefs;

	framebuild_walk(b, idx, add_refs, b);
	*n = (uint32_t)(b->nrefs - start);
	return start;
}

const struct snap_frame *framebuild_frame(const struct framebuild *b, uint32_t i)
{
	return &b->table[i];
}

/*
 * The frames' strings, the symbolizer's, as s's own: each distinct string
 * once (the symbolizer's are interned, so one pointer is one string), by a
 * map of the pointers seen to their copies. The table holds the distinct
 * frames of the snapshot, a few thousand for a heap of millions of blocks:
 * this copies those few strings, never one per stack or block.
 */
static void own_strings(struct framebuild *b, struct snapshot *s)
{
	size_t mask = 63; /* more than twice the strings there can be */
	struct {
		const char *from;
		char *to;
	} * map;

	while (mask + 1 < 8 * (size_t)b->ntable)
		mask = 2 * mask + 1;
	map = xcalloc(mask + 1, sizeof(*map));
	for (uint32_t i = 0; i < b->ntable; i++) {
		char **field[] = {&b->table[i].function, &b->table[i].module, &b->table[i].file,
				  &b->table[i].build_id};

		for (size_t k = 0; k < ARRAY_SIZE(field); k++) {
			const char *from = *field[k];
			size_t pos = (size_t)(hash_mix(0, (uintptr_t)from) & mask);

			if (!from)
				continue;
			while (map[pos].from && map[pos].from != from)
				pos = (pos + 1) & mask;
			if (!map[pos].from) {
				map[pos].from = from;
				map[pos].to = snapshot_strdup(s, from);
			}
			*field[k] = map[pos].to;
		}
	}
	free(map);
}

void framebuild_finish(struct framebuild *b, struct snapshot *s, const uint64_t *offsets)
{
	own_strings(b, s);
	s->frame_table = b->table;
	s->nframe_table = b->ntable;
	s->frame_refs = xmalloc((b->nrefs ? b->nrefs : 1) * sizeof(*s->frame_refs));
	for (uint64_t k = 0; k < b->nrefs; k++)
		s->frame_refs[k] = &s->frame_table[b->refs[k]];
	for (uint32_t i = 0; i < s->nstacks; i++)
		s->stacks[i].frames = s->frame_refs + offsets[i];
	free(b->memo);
	free(b->runs);
	free(b->refs);
	free(b->by_num);
	free(b);
}

/* ---- a stack as a snapshot shows it -------------------------------------- */

uint32_t framebuild_nrows(const struct daemon_view *v)
{
	return v->rows ? viewrows_count(v->rows) : v->tracker->stacks.count;
}

struct mt_stack_counters framebuild_row_counters(const struct daemon_view *v, uint32_t id)
{
	const struct tracker *t = v->tracker;
	struct mt_stack_counters c;

	if (v->rows) {
		struct viewrows_base base = viewrows_inherited(v->rows, id);

		c = viewrows_counters(t, v->rows, id);
		c.inherited_allocations = base.live_allocations;
		c.inherited_bytes = base.live_bytes;
		return c;
	}
	c = stack_counters(stack_get(&t->stacks, id));
	c.peak_live_bytes = tracker_stack_peak_bytes(t, stack_get(&t->stacks, id));
	return c;
}

uint32_t framebuild_row_pid(const struct daemon_view *v, uint32_t id)
{
	const struct tracker *t = v->tracker;

	if (v->rows)
		return viewrows_pid(t, v->rows, id);
	return tracker_gen_pid(t, stack_get(&t->stacks, id)->tgid);
}

/* Functions that start a program or a thread: a stack that reaches one is whole. */
static const char *const root_functions[] = {
    "_start",
    "__libc_start_main",
    "__libc_start_call_main",
    "__libc_start_main_impl",
    "start_thread",
    "clone",
    "clone3",
    "__clone",
    "__clone3",
    "__clone_internal",
};

/* Is this frame where stacks begin: a root function, or inside libc or ld.so
 * (whose thread and program start functions may be nameless without debug
 * info)? */
static int is_root_frame(const char *function, const char *module)
{
	const char *base;
	size_t i;

	for (i = 0; function && i < ARRAY_SIZE(root_functions); i++) {
		if (!strcmp(function, root_functions[i]))
			return 1;
	}
	if (!module)
		return 0;
	base = strrchr(module, '/');
	base = base ? base + 1 : module;
	/* ld.so runs the libraries' constructors from its own start */
	return !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5) ||
	       !strncmp(base, "ld-linux", 8);
}

/*
 * Whether a stack is whole is decided by where it ends, not only by how the
 * walk ended: a chain that reached a root is whole even if the root's own
 * frame pointer is junk (libc is built without frame pointers), and one that
 * ended with a zero frame pointer anywhere else was cut short (code built
 * without frame pointers often leaves %rbp at 0); a stack the call frame
 * information says is outermost is whole. A stack's frames never change, so
 * each is checked once, from its last native frame's symbol alone (no
 * DWARF); the stack table is only read.
 */
void stack_ends_check(const struct daemon_view *v, struct stack_ends *ce, uint64_t budget_ns)
{
	const struct tracker *t = v->tracker;
	uint64_t start = budget_ns == UINT64_MAX ? 0 : time_monotonic_ns();

	if (ce->cap < t->stacks.count) {
		ce->cap = t->stacks.count + t->stacks.count / 2 + 256;
		ce->end = xrealloc(ce->end, ce->cap * sizeof(*ce->end));
	}
	for (; ce->checked < t->stacks.count; ce->checked++) {
		uint32_t idx = ce->checked, k;
		uint64_t words[STACK_MAX_FRAMES];
		const struct stack_entry *e;
		const char *function, *module;

		if (start && !(idx & 255) && time_monotonic_ns() - start > budget_ns)
			break; /* the rest on the next tick */
		e = stack_get(&t->stacks, idx);
		ce->end[idx] = (uint8_t)(e->stack_end == MT_STACK_OUTERMOST ? MT_STACK_COMPLETE
									    : e->stack_end);
		if (!e->nframes ||
		    (e->stack_end != MT_STACK_COMPLETE && e->stack_end != MT_STACK_BROKEN &&
		     e->stack_end != MT_STACK_TRUNCATED))
			continue;
		/* the last native frame: Python frame words follow the native ones */
		stack_words(&t->stacks, idx, words);
		for (k = e->nframes; k > 1 && (words[k - 1] & MT_PY_WORD); k--)
			;
		function = symbolizer_symbol(v->sym, (int)e->tgid, words[k - 1], &module);
		if (e->stack_end != MT_STACK_TRUNCATED) {
			if (is_root_frame(function, module)) {
				ce->end[idx] = MT_STACK_COMPLETE;
				continue;
			}
			ce->end[idx] = MT_STACK_BROKEN;
		}
		/* broken (no call frame information, no frame-pointer chain) or
		 * truncated (a rule the DWARF walker cannot follow) */
		if (ce->nbroken == ce->broken_cap) {
			ce->broken_cap = ce->broken_cap ? 2 * ce->broken_cap : 64;
			ce->broken = xrealloc(ce->broken, ce->broken_cap * sizeof(*ce->broken));
		}
		ce->broken[ce->nbroken].stack = idx;
		ce->broken[ce->nbroken].module =
		    symbolizer_intern(v->sym, module ? module : "(no module)");
		ce->nbroken++;
	}
}

void stack_ends_free(struct stack_ends *e)
{
	free(e->end);
	free(e->broken);
	memset(e, 0, sizeof(*e));
}

void framebuild_fill(struct framebuild *fb, uint32_t idx, struct snap_stack *out,
		     uint64_t *frames_at)
{
	const struct daemon_view *v = fb->v;
	const struct stack_ends *ends = fb->ends;
	const struct tracker *t = v->tracker;
	uint32_t st = view_row_stack(v, idx);
	const struct stack_entry *s = stack_get(&t->stacks, st);

	out->pid = framebuild_row_pid(v, idx);
	*frames_at = framebuild_stack(fb, idx, &out->nframes);
	out->t = framebuild_row_counters(v, idx);
	out->stack_end = st < ends->checked		      ? ends->end[st]
			 : s->stack_end == MT_STACK_OUTERMOST ? MT_STACK_COMPLETE
							      : s->stack_end;
}
