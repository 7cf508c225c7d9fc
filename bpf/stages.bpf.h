/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The stages of an allocation's event, each a program of its own (enum
 * mt_stage), included by memtrace.bpf.c. The return probe (or the mmap
 * tracepoint) takes a scratch set, writes the record's header and the user
 * registers there and tail-calls the walker; the walker writes the native
 * frames and tail-calls the Python stage (a CPython target) or the emit
 * stage; the emit stage writes the record to the ring buffer and gives the
 * set back. One program had all of this inline: the verifier then checked
 * every path of the walk times every path of the emission, and needed from
 * 1,000,001 instructions (more than it allows) on one kernel to a few
 * hundred thousand on another (docs/design.md, "The BPF programs' split").
 * Split, each stage is checked once, whatever the others do.
 *
 * Each stage exists twice, as a uprobe program (its slot in "stages") and
 * as a tracepoint program (in "stages_tp"): a tail call reaches only
 * programs of the caller's type. A stage that cannot go on (a slot empty:
 * never, once the daemon filled them) gives the set back and counts the
 * event lost.
 */
#ifndef MEMTRACE_STAGES_BPF_H
#define MEMTRACE_STAGES_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, MT_STAGE_COUNT);
	__type(key, __u32);
	__type(value, __u32);
} stages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, MT_STAGE_COUNT);
	__type(key, __u32);
	__type(value, __u32);
} stages_tp SEC(".maps");

/*
 * Known stacks sent as an id (include/memtrace/event.h, MT_SF_ID). The
 * frames registered under each hash of (tgid, frames) are kept in stack_ids; an event whose walked
 * frames are equal to the stored ones, word for word, carries only the hash. An entry is inserted
 * once and never changed or deleted while the programs are loaded, so an id
 * always names the frames its one registration carried; and the event that
 * registers it is reserved in the ring buffer before the entry is inserted,
 * so that it precedes, in the buffer's order, every event that can find the
 * entry. A stack that cannot be registered (the map is full, another stack
 * has the same hash, another CPU registered it first) travels in full.
 */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* an element is allocated when a stack registers */
	__uint(max_entries, MT_STACK_IDS);
	__type(key, __u64);
	__type(value, struct stack_id_entry);
} stack_ids SEC(".maps");

/*
 * The loops over an event's frames as functions the verifier checks once
 * each, on their own (global functions: their arguments unknown). Inline,
 * each loop was checked again for every way into it and out of it: 100,000
 * instructions for the emit stage on this project's development kernel.
 * They take the scratch set's number and find the event there themselves
 * (a global function's arguments are numbers, on every kernel).
 */
static __always_inline struct mt_event *set_event(__u32 set, struct scratch **sc)
{
	*sc = bpf_map_lookup_elem(&scratch, &set);
	return *sc ? (struct mt_event *)(*sc)->words : NULL;
}

/* The id of the n frames of set's event. */
__noinline __u64 stack_id_of(__u32 set, __u32 n)
{
	struct scratch *sc;
	struct mt_event *ev = set_event(set, &sc);

	return ev ? stack_hash(ev->tgid, ev->frames, n) : 1;
}

/* Does this CPU's known slot hold the n frames of set's event under id h? */
__noinline int stack_is_known(__u32 set, __u32 slot, __u64 h, __u32 n)
{
	struct scratch *sc;
	struct mt_event *ev = set_event(set, &sc);
	struct known_stack *k;

	if (!ev)
		return 0;
	k = &sc->known[slot & (MT_KNOWN_SLOTS - 1)];
	return k->id == h && stack_entry_is(&k->e, ev->tgid, ev->frames, n);
}

/* The n frames of set's event under id h in the known slot. Returns 0. */
__noinline int stack_remember(__u32 set, __u32 slot, __u64 h, __u32 n)
{
	struct scratch *sc;
	struct mt_event *ev = set_event(set, &sc);
	struct known_stack *k;

	if (!ev)
		return 0;
	k = &sc->known[slot & (MT_KNOWN_SLOTS - 1)];
	k->id = h;
	stack_entry_fill(&k->e, ev->tgid, ev->frames, n);
	return 0;
}

/* stack_ids' entry h: 1 when it holds the n frames of set's event, 0 when it
 * holds others, -1 when there is none. */
__noinline int stack_registered(__u32 set, __u64 h, __u32 n)
{
	const struct stack_id_entry *e = bpf_map_lookup_elem(&stack_ids, &h);
	struct scratch *sc;
	struct mt_event *ev = set_event(set, &sc);

	if (!e)
		return -1;
	return ev && stack_entry_is(e, ev->tgid, ev->frames, n);
}

/* Register the n frames of set's event as h: 0, or -1 when they cannot be
 * (another CPU registered h first, or the map is full). */
__noinline int stack_register(__u32 set, __u64 h, __u32 n)
{
	struct scratch *sc;
	struct mt_event *ev = set_event(set, &sc);

	if (!ev)
		return -1;
	stack_entry_fill(&sc->entry, ev->tgid, ev->frames, n);
	return bpf_map_update_elem(&stack_ids, &h, &sc->entry, BPF_NOEXIST) ? -1 : 0;
}

/*
 * Write ev (of scratch set set), whose nat native frames (and no Python
 * frames) were walked, as an id when stack_ids holds exactly that stack,
 * else in full, registering it (stack_ids above: the record is reserved
 * before the entry is inserted).
 */
static __always_inline void emit_with_id(__u32 set, struct mt_event *ev, __u32 nat, __u8 kind,
					 __u64 flags)
{
	struct bpf_dynptr dp;
	__u64 h, size;
	__u32 slot;
	int reg;

	h = stack_id_of(set, nat);
	slot = (h >> 17) & (MT_KNOWN_SLOTS - 1);
	if (stack_is_known(set, slot, h, nat))
		goto known;
	reg = stack_registered(set, h, nat);
	if (reg <= 0)
		goto full;
	stack_remember(set, slot, h, nat);
known:
	ev->nframes = 0;
	ev->stack_flags = MT_SF_ID;
	ev->frames[0] = h;
	if (bpf_ringbuf_output(&events, ev, sizeof(*ev) + sizeof(__u64), flags))
		count_lost(kind);
	return;
full:
	/* the frames, and a word for the id they may register */
	ev->frames[nat & (MT_ID_FRAMES * 2 - 1)] = 0;
	size = sizeof(*ev) + (nat + 1) * sizeof(__u64);
	if (size > sizeof(*ev) + (MT_ID_FRAMES + 1) * sizeof(__u64))
		size = sizeof(*ev) + (MT_ID_FRAMES + 1) * sizeof(__u64);
	if (bpf_ringbuf_reserve_dynptr(&events, size, 0, &dp)) {
		bpf_ringbuf_discard_dynptr(&dp, 0);
		count_lost(kind);
		return;
	}
	if (reg < 0 && !stack_register(set, h, nat)) {
		ev->stack_flags = MT_SF_ID;
		ev->frames[nat & (MT_ID_FRAMES * 2 - 1)] = h;
		stack_remember(set, slot, h, nat);
	}
	bpf_dynptr_write(&dp, 0, ev, size, 0);
	bpf_ringbuf_submit_dynptr(&dp, flags);
}

/* The tail call to stage of the event in sc; when it cannot be made, the
 * set is given back and the event counted lost. Returns 0. */
static __always_inline int stage_next(void *ctx, void *prog_array, struct scratch *sc, __u32 stage)
{
	__u8 kind = ((struct mt_event *)sc->words)->kind;

	bpf_tail_call(ctx, prog_array, stage);
	scratch_give(sc);
	count_lost(MT_LOST_SLOT(kind & 7));
	return 0;
}

/*
 * The first stage: an allocation's record header and the user registers its
 * walk starts from (at the return probe, the caller's: the walk starts at
 * the call site itself, so the immediate caller is never skipped, whatever
 * the allocator's prologue looks like). Returns 0.
 */
static __always_inline int stages_begin(void *ctx, void *prog_array, __u8 kind, __u8 func,
					__u64 addr, __u64 old, __u64 size, __u64 ip, __u64 sp,
					__u64 bp)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct mt_event *ev;
	struct scratch *sc;

	sc = scratch_take((__u32)id);
	if (!sc) {
		count_lost(kind);
		return 0;
	}
	ev = (struct mt_event *)sc->words;
	ev->kind = kind;
	ev->func = func;
	ev->nframes = 0;
	ev->tgid = id >> 32;
	ev->tid = (__u32)id;
	ev->stack_end = MT_STACK_NONE;
	ev->npyframes = 0;
	ev->stack_flags = 0;
	ev->flags = event_flags();
	ev->time_ns = bpf_ktime_get_ns();
	ev->addr = addr;
	ev->old_addr = old;
	ev->size = size;
	sc->ip = ip;
	sc->sp = sp;
	sc->bp = bp;
	sc->fp_walking = 0;
	return stage_next(ctx, prog_array, sc, MT_STAGE_WALK);
}

/* The scratch set of this thread's event, for a stage after the first. */
#define STAGE_SCRATCH(sc, set)                                                                     \
	do {                                                                                       \
		sc = scratch_find((__u32)bpf_get_current_pid_tgid(), &set);                        \
		if (!sc)                                                                           \
			return 0;                                                                  \
	} while (0)

/* After the walk: the Python stage for a CPython target, else the emit stage. */
static __always_inline int walk_done(void *ctx, void *prog_array, struct scratch *sc, __u32 n,
				     __u8 end)
{
	struct mt_event *ev = (struct mt_event *)sc->words;
	__u32 tgid = ev->tgid;

	if (n > MT_MAX_FRAMES)
		n = MT_MAX_FRAMES;
	ev->nframes = n;
	ev->stack_end = end;
	if (python_targets && bpf_map_lookup_elem(&pyconf, &tgid))
		return stage_next(ctx, prog_array, sc, MT_STAGE_PYTHON);
	return stage_next(ctx, prog_array, sc, MT_STAGE_EMIT);
}

static __always_inline __u32 stack_depth(void)
{
	return cfg.stack_depth > MT_MAX_FRAMES ? MT_MAX_FRAMES : cfg.stack_depth;
}

static __always_inline int walk_dwarf_stage(void *ctx, void *prog_array)
{
	struct mt_event *ev;
	struct scratch *sc;
	__u32 set = 0;
	__u8 end = MT_STACK_NONE;
	int n;

	STAGE_SCRATCH(sc, set);
	ev = (struct mt_event *)sc->words;
	n = uw_walk(sc->ip, sc->sp, sc->bp, &sc->win, ev->frames, stack_depth(), &end, ev->tgid,
		    set);
	if (n < 0) /* a process without unwind tables (yet) */
		return stage_next(ctx, prog_array, sc, MT_STAGE_WALK_FP);
	return walk_done(ctx, prog_array, sc, (__u32)n, end);
}

/* The frame-pointer walk (walk_fp_batch, bpf/unwind.bpf.h), a batch a run. */
static __always_inline int walk_fp_stage(void *ctx, void *prog_array)
{
	__u64 sp, fp, prev, *frames;
	struct stack_window *w;
	struct mt_event *ev;
	struct scratch *sc;
	__u32 set = 0, n, depth = stack_depth();
	__u8 end = MT_STACK_DEPTH;

	STAGE_SCRATCH(sc, set);
	ev = (struct mt_event *)sc->words;
	frames = ev->frames;
	w = &sc->win;
	sp = sc->sp;
	if (!sc->fp_walking) { /* the walk's first batch */
		w->len = 0;
		frames[0] = sc->ip;
		sc->fp_n = 1;
		sc->fp_prev = sp;
		sc->fp_next = sc->bp;
	}
	n = sc->fp_n;
	prev = sc->fp_prev;
	fp = sc->fp_next;
	if (walk_fp_batch(w, frames, sp, depth, &n, &prev, &fp, &end))
		goto done;
	sc->fp_walking = 1;
	sc->fp_n = n;
	sc->fp_prev = prev;
	sc->fp_next = fp;
	return stage_next(ctx, prog_array, sc, MT_STAGE_WALK_FP);
done:
	sc->fp_walking = 0;
	return walk_done(ctx, prog_array, sc, n, end);
}

static __always_inline int walk_kernel_stage(void *ctx, void *prog_array)
{
	struct mt_event *ev;
	struct scratch *sc;
	__u32 set = 0;
	long len;

	STAGE_SCRATCH(sc, set);
	ev = (struct mt_event *)sc->words;
	len = bpf_get_stack(ctx, ev->frames, stack_depth() * sizeof(__u64), BPF_F_USER_STACK);
	if (len < 0)
		len = 0;
	return walk_done(ctx, prog_array, sc, (__u32)(len / sizeof(__u64)), MT_STACK_KERNEL);
}

/* The call site alone: no walk. */
static __always_inline int walk_caller_stage(void *ctx, void *prog_array)
{
	struct mt_event *ev;
	struct scratch *sc;
	__u32 set = 0;

	STAGE_SCRATCH(sc, set);
	ev = (struct mt_event *)sc->words;
	ev->frames[0] = sc->ip;
	return walk_done(ctx, prog_array, sc, 1, MT_STACK_DEPTH);
}

static __always_inline int python_stage(void *ctx, void *prog_array)
{
	const struct mt_py_config *pc;
	struct mt_event *ev;
	struct scratch *sc;
	__u32 set = 0, nat, tgid;

	STAGE_SCRATCH(sc, set);
	ev = (struct mt_event *)sc->words;
	tgid = ev->tgid;
	nat = ev->nframes;
	if (nat > MT_MAX_FRAMES)
		nat = MT_MAX_FRAMES;
	pc = bpf_map_lookup_elem(&pyconf, &tgid);
	if (pc)
		ev->npyframes = walk_python(pc, ev->frames + nat, set);
	return stage_next(ctx, prog_array, sc, MT_STAGE_EMIT);
}

/* The last stage: the record into the ring buffer, and the set given back. */
static __always_inline int emit_stage(void *ctx)
{
	struct mt_event *ev;
	struct scratch *sc;
	__u32 set = 0, nat, npy;
	__u64 flags;

	STAGE_SCRATCH(sc, set);
	ev = (struct mt_event *)sc->words;
	nat = ev->nframes;
	npy = ev->npyframes;
	if (nat > MT_MAX_FRAMES)
		nat = MT_MAX_FRAMES;
	if (npy > MT_MAX_PYFRAMES)
		npy = MT_MAX_PYFRAMES;
	flags = wakeup_flag();
	if (cfg.stack_ids && !npy && nat && nat <= MT_ID_FRAMES)
		emit_with_id(set, ev, nat, ev->kind, flags);
	else if (bpf_ringbuf_output(&events, ev, sizeof(*ev) + (nat + npy) * sizeof(__u64), flags))
		count_lost(MT_LOST_SLOT(ev->kind & 7));
	scratch_give(sc);
	return 0;
}

/* Each stage as a uprobe program and as a tracepoint program (see above). */
#define MT_STAGE_PROGRAMS(name, call)                                                              \
	SEC("uprobe") int name(struct pt_regs *ctx)                                                \
	{                                                                                          \
		return call(ctx, &stages);                                                         \
	}                                                                                          \
	SEC("tracepoint") int name##_tp(void *ctx)                                                 \
	{                                                                                          \
		return call(ctx, &stages_tp);                                                      \
	}

MT_STAGE_PROGRAMS(walk_dwarf, walk_dwarf_stage)
MT_STAGE_PROGRAMS(walk_fp, walk_fp_stage)
MT_STAGE_PROGRAMS(walk_kernel, walk_kernel_stage)
MT_STAGE_PROGRAMS(walk_caller, walk_caller_stage)
MT_STAGE_PROGRAMS(stage_python, python_stage)

SEC("uprobe")
int stage_emit(struct pt_regs *ctx)
{
	MT_NO_PRIV_STACK(ctx, &stages);
	return emit_stage(ctx);
}

SEC("tracepoint")
int stage_emit_tp(void *ctx)
{
	MT_NO_PRIV_STACK(ctx, &stages_tp);
	return emit_stage(ctx);
}

#endif
