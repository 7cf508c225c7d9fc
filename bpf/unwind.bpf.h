/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The stack walkers, included by memtrace.bpf.c: DWARF (--stack-walker
 * dwarf) and frame pointers (fp).
 * Userspace (src/daemon/unwind/unwind.c) loads each module's compact unwind rows into a
 * pool of array maps and lists each traced process's executable mappings
 * in uw_procs. Per frame: the row of the pc, from a per-CPU cache of rows
 * recently used or else found from the mapping of the pc (binary search,
 * the last one found tried first), the page entry and a binary search of
 * at most MT_UW_SEARCH_STEPS; then CFA, return address and caller's rbp,
 * read through the stack window (memtrace.bpf.c). Where no row exists the
 * frame-pointer step is taken instead; a rule the rows mark unexpressible
 * or a failed read ends the walk, marked. Every step is bounded and the
 * stack pointer must grow, so the walk ends. tests/unit/test_walk.c runs
 * both walkers in user space on recorded stacks (tests/unit/bpfshim.h).
 */
#ifndef MEMTRACE_UNWIND_BPF_H
#define MEMTRACE_UNWIND_BPF_H

#include "memtrace/unwind.h"

struct uw_chunk {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MT_UW_CHUNK_ROWS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64); /* struct mt_unwind_row or struct mt_unwind_page */
};

/* The pool's chunks, made by the daemon as tables need them. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, MT_UW_MAX_CHUNKS);
	__type(key, __u32);
	__array(values, struct uw_chunk);
} uw_pool SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MT_UW_MAX_TABLES);
	__type(key, __u32);
	__type(value, struct mt_unwind_table);
} uw_tables SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct mt_unwind_proc);
} uw_procs SEC(".maps");

/*
 * Bumped after every change of uw_procs (by the daemon, and here at an exec
 * or a fork): a CPU that walked a process's stack keeps that process's
 * list generation, and while this is unchanged it needs no lookup of
 * uw_procs (a hash map, about 50 ns here) until a row is not in its cache.
 */
volatile __u64 uw_lists_changed;

/*
 * Rows recently used, per CPU, by the address they were looked up at and
 * the generation of the mapping list they came from (mt_unwind_proc.gen:
 * the daemon numbers every list it writes, and a forked child's copy keeps
 * its parent's, whose mappings it has): allocation stacks repeat, so most
 * frames cost one probe here instead of a mapping search, a page entry and
 * a binary search of the rows. Direct-mapped; a slot holds only a row that
 * was found in a mapping (kind MT_UW_CFA_NONE: a mapping without one, the
 * frame-pointer step). Generation 0 is never written, so the zeroed slots
 * match nothing.
 */
#define UW_CACHE_SLOTS 512

struct uw_cached {
	__u64 look; /* the pc looked up: a return address - 1, or an exact pc */
	__u64 gen;
	struct mt_unwind_row row;
};

/* The walk's registers and progress, per CPU (the verifier checks the
 * bpf_loop callback once, whatever their values). */
struct uw_state {
	__u64 pc, sp, bp, sp0;
	__u64 gen;	      /* of the process's mapping list */
	__u64 pgen, pchanged; /* the last process walked here: its list's gen, */
	__u32 ptgid;	      /* when uw_lists_changed was pchanged */
	__u32 n, depth;
	__u32 bp_ok;
	__u32 map_cache;
	__u32 lo, cnt; /* a binary search's bounds */
	__u32 exact;   /* pc is an exact pc (interrupted by a signal), not a return address */
	__u8 end;
	struct mt_unwind_row row; /* the rule at pc, looked up when its frame was recorded */
	struct uw_cached cache[UW_CACHE_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MT_SCRATCH_SETS); /* one a scratch set (memtrace.bpf.c) */
	__type(key, __u32);
	__type(value, struct uw_state);
} uw_state SEC(".maps");

struct uw_ctx {
	struct uw_state *st;
	__u32 set; /* the scratch set, whose uw_state st is */
	struct stack_window *win;
	__u64 *frames;
	__u32 tgid;
};

/* Pool slot s: a row or a page entry (both 8 bytes). */
static __always_inline const struct mt_unwind_row *uw_slot(__u32 s)
{
	__u32 chunk = s >> MT_UW_CHUNK_SHIFT, idx = s & (MT_UW_CHUNK_ROWS - 1);
	void *inner = bpf_map_lookup_elem(&uw_pool, &chunk);

	if (!inner)
		return NULL;
	return bpf_map_lookup_elem(inner, &idx);
}

/*
 * The binary searches keep their bounds in the per-CPU state (st->lo,
 * st->cnt), not in registers: values loaded from a map are unknown to the
 * verifier, so each step is checked once, not once per path of the steps
 * before it.
 */

/* The index of the mapping holding pc, or -1. */
static __always_inline int uw_find_map(struct uw_state *st, const struct mt_unwind_proc *p,
				       __u64 pc)
{
	__u32 i = st->map_cache & (MT_UW_MAX_MAPS - 1), lo, n, half;

	if (i < p->nmaps && p->maps[i].start <= pc && pc < p->maps[i].end)
		return (int)i;
	st->lo = 0;
	st->cnt = p->nmaps > MT_UW_MAX_MAPS ? MT_UW_MAX_MAPS : p->nmaps;
	for (int k = 0; k < 10; k++) {
		lo = st->lo;
		n = st->cnt;
		if (n <= 1)
			break;
		half = n / 2;
		if (p->maps[(lo + half) & (MT_UW_MAX_MAPS - 1)].start <= pc) {
			st->lo = lo + half;
			st->cnt = n - half;
		} else {
			st->cnt = half;
		}
	}
	if (!st->cnt)
		return -1;
	lo = st->lo & (MT_UW_MAX_MAPS - 1);
	if (p->maps[lo].start <= pc && pc < p->maps[lo].end) {
		st->map_cache = lo;
		return (int)lo;
	}
	return -1;
}

/* The row for table offset off of table id, or NULL (no row: frame pointers). */
static __always_inline const struct mt_unwind_row *uw_find_row(struct uw_state *st, __u32 id,
							       __u64 off)
{
	const struct mt_unwind_table *t = bpf_map_lookup_elem(&uw_tables, &id);
	const struct mt_unwind_page *pg;
	const struct mt_unwind_row *r;
	__u32 lo, n, half;

	if (!t || off >= ((__u64)t->npages << MT_UW_PAGE_SHIFT))
		return NULL;
	pg = (const struct mt_unwind_page *)uw_slot(t->pages_slot +
						    (__u32)(off >> MT_UW_PAGE_SHIFT));
	if (!pg)
		return NULL;
	st->lo = pg->first;
	st->cnt = pg->count;
	for (int k = 0; k < MT_UW_SEARCH_STEPS; k++) {
		lo = st->lo;
		n = st->cnt;
		if (n <= 1)
			break;
		half = n / 2;
		r = uw_slot(t->rows_slot + lo + half);
		if (!r)
			return NULL;
		if (r->pc <= off) {
			st->lo = lo + half;
			st->cnt = n - half;
		} else {
			st->cnt = half;
		}
	}
	if (st->lo >= t->nrows)
		return NULL;
	return uw_slot(t->rows_slot + st->lo);
}

/*
 * The rule at look (a return address - 1, or an exact pc) into st->row: 0,
 * or -1 when look is in none of the process's mappings. Through the cache.
 */
static __always_inline int uw_rule_at(struct uw_state *st, __u32 tgid, __u64 look)
{
	struct uw_cached *c =
	    &st->cache[((look * 0x9e3779b97f4a7c15ull) >> 40) & (UW_CACHE_SLOTS - 1)];
	const struct mt_unwind_row *row = NULL;
	const struct mt_unwind_proc *p;
	int m;

	if (c->look == look && c->gen == st->gen) {
		st->row = c->row;
		return 0;
	}
	p = bpf_map_lookup_elem(&uw_procs, &tgid);
	if (!p)
		return -1;
	if (p->gen != st->gen) {
		/* written anew since this CPU took its number (the counter not
		 * yet bumped): its rows go under its own number, which a
		 * forked child still on the old list never looks up */
		st->gen = p->gen;
		st->pgen = p->gen;
	}
	m = uw_find_map(st, p, look);
	if (m < 0)
		return -1;
	{
		const struct mt_unwind_map *mp = &p->maps[m & (MT_UW_MAX_MAPS - 1)];

		if (mp->table != MT_UW_NO_TABLE)
			row = uw_find_row(st, mp->table, look - mp->bias);
	}
	if (row) {
		st->row = *row;
	} else {
		st->row.pc = 0;
		st->row.kind = MT_UW_CFA_NONE;
		st->row.rbp_off = 0;
		st->row.cfa_off = 0;
	}
	c->look = look;
	c->gen = st->gen;
	c->row = st->row;
	return 0;
}

/*
 * uw_rule_at as a function the verifier checks once, on its own, with its
 * arguments unknown (a global function): inlined, it was checked again for
 * every path of the frame step that reaches it. set names the walk's state.
 */
__noinline int uw_rule_lookup(__u32 set, __u32 tgid, __u64 look)
{
	struct uw_state *st = bpf_map_lookup_elem(&uw_state, &set);

	if (!st)
		return -1;
	return uw_rule_at(st, tgid, look);
}

/* A thread's stack is at most this far above its stack pointer. */
#define MT_UW_STACK_SPAN (256ull << 20)

/*
 * The frame-pointer step from st's sp and bp: 0 with st->pc, sp and bp the
 * caller's, or 1 with st->end saying why the walk ends. The frame pointer is
 * checked before it is read: 8-byte aligned, above the stack pointer (so the
 * walk always ends), within MT_UW_STACK_SPAN of the walk's first; a zero
 * one is where the ABI says the chain ends (process entry).
 */
static __always_inline int uw_fp_step(struct uw_state *st, struct stack_window *w)
{
	__u64 bp = st->bp, pair[2];

	if (st->bp_ok && !bp) {
		st->end = MT_STACK_COMPLETE;
		return 1;
	}
	if (!st->bp_ok || (bp & 7) || bp < st->sp || bp - st->sp0 > MT_UW_STACK_SPAN ||
	    win_read(w, bp, pair, 2)) {
		st->end = MT_STACK_BROKEN;
		return 1;
	}
	if (!pair[1]) {
		st->end = MT_STACK_COMPLETE;
		return 1;
	}
	st->pc = pair[1];
	st->sp = bp + 16;
	st->bp = pair[0];
	return 0;
}

/*
 * One frame: from st's registers and st->row, the rule at st->pc, to its
 * caller's, whose rule is looked up as it is recorded. 0 goes on, 1 stops.
 */
static long uw_step(__u64 i, void *arg)
{
	struct uw_ctx *c = arg;
	struct uw_state *st = c->st;
	struct stack_window *w = c->win;
	const struct mt_unwind_row row = st->row;
	__u64 pc = st->pc, sp = st->sp, bp = st->bp, cfa = 0, ra, pair[2];
	int kind, rbpk;
	__u32 n = st->n;

	if (n >= st->depth || n >= MT_MAX_FRAMES) {
		st->end = MT_STACK_DEPTH;
		return 1;
	}
	kind = MT_UW_CFA_KIND(row.kind);
	st->exact = 0;
	if (kind == MT_UW_CFA_NONE) {
		/* no call frame information here: the frame-pointer step */
		if (uw_fp_step(st, w))
			return 1;
		goto next;
	}
	switch (kind) {
	case MT_UW_CFA_RSP:
		cfa = sp + (__s64)row.cfa_off * 8;
		break;
	case MT_UW_CFA_RBP:
		if (!st->bp_ok)
			goto truncated;
		cfa = bp + (__s64)row.cfa_off * 8;
		break;
	case MT_UW_CFA_DEREF_RBP:
		if (!st->bp_ok || win_read(w, bp + (__s64)row.cfa_off * 8, &cfa, 1))
			goto truncated;
		break;
	case MT_UW_CFA_PLT:
		cfa = sp + 8 + ((pc & 15) >= (__u64)row.cfa_off ? 8 : 0);
		break;
	case MT_UW_CFA_ROOT:
		st->end = MT_STACK_OUTERMOST;
		return 1;
	case MT_UW_CFA_SIGNAL:
		/* the interrupted registers: rsp, then rip, at sp + cfa_off; rbp
		 * at sp + rbp_off. The interrupted stack may be another one
		 * (sigaltstack): the span starts again there. */
		if (win_read(w, sp + (__s64)row.cfa_off * 8, pair, 2) || !pair[0] || !pair[1])
			goto truncated;
		st->bp_ok = !win_read(w, sp + (__s64)row.rbp_off * 8, &st->bp, 1);
		st->pc = pair[1];
		st->sp = st->sp0 = pair[0];
		st->exact = 1;
		goto next;
	default:
		goto truncated;
	}
	if (cfa <= sp || cfa - st->sp0 > MT_UW_STACK_SPAN)
		goto truncated;
	rbpk = MT_UW_RBP_KIND(row.kind);
	if (rbpk == MT_UW_RBP_AT_CFA && row.rbp_off == -2) {
		/* pushed first, as nearly every function that saves it does: the
		 * caller's rbp and the return address side by side */
		if (win_read(w, cfa - 16, pair, 2))
			goto truncated;
		st->bp = pair[0];
		st->bp_ok = 1;
		ra = pair[1];
		goto regs;
	}
	if (win_read(w, cfa - 8, &ra, 1))
		goto truncated;
	if (rbpk == MT_UW_RBP_AT_CFA) {
		/* a frame that saved it: known again, even after one that lost it */
		st->bp_ok = !win_read(w, cfa + (__s64)row.rbp_off * 8, &st->bp, 1);
	} else if (rbpk == MT_UW_RBP_AT_RBP) {
		if (!st->bp_ok || win_read(w, bp + (__s64)row.rbp_off * 8, &st->bp, 1))
			st->bp_ok = 0;
	} else if (rbpk == MT_UW_RBP_UNKNOWN) {
		st->bp_ok = 0;
	}
regs:
	if (!ra) {
		st->end = MT_STACK_COMPLETE;
		return 1;
	}
	st->pc = ra;
	st->sp = cfa;
next:
	/* a return address outside the process's code: call frame information
	 * that does not describe the code (hand-written assembly) or a chain
	 * that left the stack; the frame is not recorded */
	if (uw_rule_lookup(c->set, c->tgid, st->pc - (st->exact ? 0 : 1)) < 0) {
		st->end = MT_STACK_BROKEN;
		return 1;
	}
	c->frames[n & 127] /* n < MT_MAX_FRAMES */ = st->pc;
	st->n = n + 1;
	return 0;
truncated:
	st->end = MT_STACK_TRUNCATED;
	return 1;
}

/* The walk's state: its registers start at ip, sp and bp; frame 0 is ip. */
static __always_inline void uw_start(struct uw_ctx *c, __u64 ip, __u64 sp, __u64 bp,
				     struct stack_window *win, __u64 *frames, __u32 depth)
{
	c->frames = frames;
	c->win = win;
	win->len = 0;
	c->st->pc = ip;
	c->st->sp = c->st->sp0 = sp;
	c->st->bp = bp;
	c->st->bp_ok = 1;
	c->st->exact = 0;
	c->st->n = 1;
	c->st->depth = depth;
	c->st->end = MT_STACK_DEPTH;
	frames[0] = ip;
}

/*
 * The DWARF walk from the user registers ip, sp and bp: frame 0 is the pc
 * itself, then each caller's return address. Returns the number of frames;
 * *end says why it stopped. -1 when the process has no mapping list (then
 * the caller takes the frame-pointer walk).
 */
static __always_inline int uw_walk(__u64 ip, __u64 sp, __u64 bp, struct stack_window *win,
				   __u64 *frames, __u32 depth, __u8 *end, __u32 tgid, __u32 set)
{
	const struct mt_unwind_proc *p;
	struct uw_ctx c;
	__u64 changed;

	c.st = bpf_map_lookup_elem(&uw_state, &set);
	if (!c.st)
		return -1;
	c.set = set;
	c.tgid = tgid;
	/* read before the lookup: a change after it is seen by the next walk */
	changed = uw_lists_changed;
	if (c.st->ptgid != tgid || c.st->pchanged != changed || !c.st->pgen) {
		p = bpf_map_lookup_elem(&uw_procs, &tgid);
		if (!p)
			return -1;
		c.st->ptgid = tgid;
		c.st->pchanged = changed;
		c.st->pgen = p->gen;
	}
	c.st->gen = c.st->pgen;
	uw_start(&c, ip, sp, bp, win, frames, depth);
	/* frame 0 outside every mapping still takes the frame-pointer step */
	if (uw_rule_lookup(set, tgid, ip - 1) < 0)
		c.st->row.kind = MT_UW_CFA_NONE;
	bpf_loop(MT_MAX_FRAMES, uw_step, &c, 0);
	*end = c.st->end;
	return (int)c.st->n;
}

/* A thread's stack is at most this far above its stack pointer. */
#define MT_STACK_SPAN (256ull << 20)

/*
 * The frame-pointer walk, MT_FP_BATCH frames a program run: a batch that
 * ends with frames to go keeps its place in the scratch set and tail-calls
 * the walk again (walk_fp_stage, bpf/stages.bpf.h). Frame 0 is the return address itself (the call
 * site), then each frame's saved return address. Every frame pointer is checked before it is read:
 * 8-byte aligned, above the previous one (so the walk always ends), within MT_STACK_SPAN of the
 * stack pointer. A chain that leaves those bounds or cannot be read ends the walk as "broken",
 * which costs nothing: no faulting read is attempted on a wild pointer.
 *
 * A loop the verifier checks frame by frame, its state in registers: a
 * frame costs a third less than as a bpf_loop callback with its state in
 * memory (make bench: 9.8 against 14.0 ns). The verifier's work grows with
 * the frames a run walks, and faster than they on 7.2 (16 frames: 36,331
 * instructions, 24: 57,750, 32: 102,661; all 127: 141,885; 25,998 for 24
 * on 6.18), hence the batches (docs/design.md).
 */
#define MT_FP_BATCH 24

/* idx &= 127 where the verifier sees it: clang would drop a mask it can prove
 * idle, and index from a pointer it moves along the loop. (The walkers' test
 * in user space, not BPF, defines it first: tests/unit/bpfshim.h.) */
#ifndef MT_MASK_127
#define MT_MASK_127(idx) asm volatile("%0 &= 127" : "+r"(idx))
#endif

/*
 * One batch: from frame *np, frame pointer *fpp and the lowest address it
 * may have, *prevp, under the walk's first stack pointer sp. 1 when the walk
 * ended (*end says why; left as it is at the depth limit), 0 with the place
 * kept in *np, *prevp and *fpp when frames remain.
 */
static __always_inline int walk_fp_batch(struct stack_window *w, __u64 *frames, __u64 sp,
					 __u32 depth, __u32 *np, __u64 *prevp, __u64 *fpp,
					 __u8 *end)
{
	__u64 fp = *fpp, prev = *prevp, pair[2], idx;
	__u32 n = *np, j;

	for (j = 0; j < MT_FP_BATCH; j++) {
		if (n >= depth || n >= MT_MAX_FRAMES)
			goto done;
		if (!fp) {
			*end = MT_STACK_COMPLETE;
			goto done;
		}
		if ((fp & 7) || fp < prev || fp - sp > MT_STACK_SPAN || win_read(w, fp, pair, 2)) {
			*end = MT_STACK_BROKEN;
			goto done;
		}
		if (!pair[1]) {
			*end = MT_STACK_COMPLETE;
			goto done;
		}
		/* n < MT_MAX_FRAMES */
		idx = n;
		MT_MASK_127(idx);
		frames[idx] = pair[1];
		n++;
		prev = fp + 16;
		fp = pair[0];
	}
	*np = n;
	*prevp = prev;
	*fpp = fp;
	return 0;
done:
	*np = n;
	return 1;
}

#endif
