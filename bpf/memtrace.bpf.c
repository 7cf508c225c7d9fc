// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Allocator probes. Entry probes stash the arguments per thread; return probes
 * emit one event with the user stack into the shared ring buffer. Only the
 * outermost allocator call of a thread is traced (glibc's reallocarray
 * tail-calls realloc, realloc(NULL, n) calls malloc): one user call, one event.
 * Every failed ring buffer write is counted in "lost"; nothing is dropped
 * silently.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "memtrace/event.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile struct mt_bpf_config cfg = {
    .stack_depth = MT_MAX_FRAMES,
    .wakeup_bytes = 1 << 20,
};

/* Arguments of the allocator call a thread is inside. */
struct inflight {
	__u64 size;
	__u64 ptr; /* realloc: old block; posix_memalign: where the result goes */
	__u64 sp;  /* stack pointer at entry: tells nested calls from stale entries */
	__u32 func;
	__u32 depth; /* allocator entry points active in this thread */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct inflight);
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 32 << 20); /* resized by the daemon before load */
} events SEC(".maps");

/* Slot 0: calls not traced because the inflight table was full; 1..: by kind. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MT_LOST_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/* Processes traced: see struct mt_target_watch. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct mt_target_watch);
} targets SEC(".maps");

/* An event with room for the deepest stack, built here before the copy. */
struct scratch {
	__u64 words[sizeof(struct mt_event) / 8 + MT_MAX_FRAMES + MT_MAX_PYFRAMES];
};

/* CPython targets: where their frames are (set by the daemon). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct mt_py_config);
} pyconf SEC(".maps");

/* Nonzero once some target is a CPython: others skip the pyconf lookup. */
volatile __u32 python_targets;

/*
 * Targets whose anonymous mmaps outside the allocator are traced (the daemon
 * sets them: CPython targets in default mode, for pymalloc's arenas). The
 * syscall tracepoints run for every process; mmap_targets lets them return
 * at once while no target has it on.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} mmaptrace SEC(".maps");

volatile __u32 mmap_targets;

/*
 * Whole-host mode: the processes exec_match stopped that the daemon has not
 * continued yet. The daemon's keeper process holds this map too and
 * continues them if the daemon dies first (src/daemon/main.c, keeper).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} stopped SEC(".maps");

/* An mmap between its entry and exit tracepoints: the length, page-rounded. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} mmap_pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

static __always_inline void count_lost(__u32 slot)
{
	__u64 *n = bpf_map_lookup_elem(&lost, &slot);

	if (n)
		*n += 1;
}

static __always_inline __u64 wakeup_flag(void)
{
	/* Waking the consumer costs ~9 us per event here; the daemon polls on a
	 * short timer and is only woken when the buffer starts to fill. */
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= cfg.wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

/* A stack-less event (free, realloc entry): fixed size, reserved in place. */
static __always_inline int emit_small(__u8 kind, __u8 func, __u64 addr, __u64 old_addr, __u64 size)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct mt_event *ev;

	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count_lost(MT_LOST_SLOT(kind));
		return -1;
	}
	ev->kind = kind;
	ev->func = func;
	ev->nframes = 0;
	ev->tgid = id >> 32;
	ev->tid = (__u32)id;
	ev->stack_end = MT_STACK_NONE;
	ev->npyframes = 0;
	ev->pad[0] = ev->pad[1] = 0;
	ev->time_ns = bpf_ktime_get_ns();
	ev->addr = addr;
	ev->old_addr = old_addr;
	ev->size = size;
	/* a process may be stopped waiting for the daemon (exec, ld.so): wake it
	 * for those now, not at its next timer tick */
	bpf_ringbuf_submit(ev, kind >= MT_EV_EXEC ? BPF_RB_FORCE_WAKEUP : wakeup_flag());
	return 0;
}

/* A thread's stack is at most this far above its stack pointer. */
#define MT_STACK_SPAN (256ull << 20)

/*
 * Walk the frame-pointer chain from the caller's registers: frame 0 is the
 * return address itself (the call site), then each frame's saved return
 * address. Every frame pointer is checked before it is read: 8-byte aligned,
 * above the previous one (so the walk always ends), within MT_STACK_SPAN of
 * the stack pointer. A chain that leaves those bounds or cannot be read ends
 * the walk as "broken", which costs nothing: no faulting read is attempted
 * on a wild pointer. Returns the number of frames; *end says why it stopped.
 */
static __always_inline __u32 walk_frames(struct pt_regs *ctx, __u64 *frames, __u32 depth, __u8 *end)
{
	__u64 sp = PT_REGS_SP(ctx), fp = PT_REGS_FP(ctx), prev = sp, pair[2];
	__u32 n = 1, i;

	frames[0] = PT_REGS_IP(ctx);
	*end = MT_STACK_DEPTH;
	for (i = 1; i < MT_MAX_FRAMES; i++) {
		if (i >= depth)
			return n;
		if (!fp) {
			*end = MT_STACK_COMPLETE;
			return n;
		}
		if ((fp & 7) || fp < prev || fp - sp > MT_STACK_SPAN ||
		    bpf_probe_read_user(pair, sizeof(pair), (void *)fp)) {
			*end = MT_STACK_BROKEN;
			return n;
		}
		if (!pair[1]) {
			*end = MT_STACK_COMPLETE;
			return n;
		}
		frames[i] = pair[1];
		n = i + 1;
		prev = fp + 16;
		fp = pair[0];
	}
	return n;
}

#include "unwind.bpf.h"

#define MT_PY_MAX_THREADS 64

static __always_inline __u64 read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/*
 * The Python frames this thread is running, innermost first, as MT_PY_WORD
 * words into out[0..MT_MAX_PYFRAMES). The thread state is the one whose
 * thread_id (pthread_self, which is the fsbase on x86-64) is this thread's:
 * no GIL or thread-local assumption, so threads without the GIL are right.
 */
/*
 * The walk's state lives in a per-CPU map value, not on the stack: the
 * verifier does not track map contents, so each bpf_loop callback is checked
 * once instead of once per value of the frame count.
 */
struct py_walk {
	struct mt_py_config pc;
	__u64 fsbase, ts, frame;
	__u32 n, found;
	__u64 out[MT_MAX_PYFRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_walk);
} pywalk SEC(".maps");

static long py_thread_step(__u64 i, void *arg)
{
	__u32 zero = 0;
	struct py_walk *w = bpf_map_lookup_elem(&pywalk, &zero);

	if (!w || !w->ts)
		return 1;
	if (read_ptr(w->ts + w->pc.tstate_thread_id) == w->fsbase) {
		w->found = 1;
		return 1;
	}
	w->ts = read_ptr(w->ts + w->pc.tstate_next);
	return 0;
}

static long py_frame_step(__u64 i, void *arg)
{
	__u32 zero = 0, n;
	struct py_walk *w = bpf_map_lookup_elem(&pywalk, &zero);
	__u64 code, instr, first, idx, frame;
	__u8 owner = 0;

	if (!w)
		return 1;
	frame = w->frame;
	n = w->n;
	if (!frame || n >= MT_MAX_PYFRAMES)
		return 1;
	bpf_probe_read_user(&owner, 1, (void *)(frame + w->pc.frame_owner));
	w->frame = read_ptr(frame + w->pc.frame_previous);
	if (w->pc.minor >= 12 && owner == 3) {
		/* the interpreter loop's entry shim: the frame above it was the
		 * outermost of that run */
		if (n > 0)
			w->out[(n - 1) & (MT_MAX_PYFRAMES - 1)] |= MT_PY_GROUP_END;
		return 0;
	}
	code = read_ptr(frame + w->pc.frame_code);
	instr = read_ptr(frame + w->pc.frame_instr);
	if (w->pc.minor == 10) {
		/* f_lasti: an int, the instruction index, -1 before the first */
		idx = (__s32)instr < 0 ? 0 : (__u32)instr;
	} else {
		first = code + w->pc.code_adaptive;
		idx = instr >= first ? (instr - first) / 2 : 0;
	}
	if (idx >= (1ull << MT_PY_INSTR_BITS))
		idx = (1ull << MT_PY_INSTR_BITS) - 1;
	/* 3.10 runs each Python frame in its own call of the loop */
	w->out[n & (MT_MAX_PYFRAMES - 1)] =
	    MT_PY_WORD | ((code >> 3) & ((1ull << 44) - 1)) << MT_PY_INSTR_BITS | idx |
	    ((w->pc.minor == 11 && owner) || w->pc.minor == 10 ? MT_PY_GROUP_END : 0);
	w->n = n + 1;
	return 0;
}

/* Python frame words into out[0..MT_MAX_PYFRAMES); returns how many. */
static __always_inline __u32 walk_python(const struct mt_py_config *pc, __u64 *out)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 zero = 0, n;
	struct py_walk *w = bpf_map_lookup_elem(&pywalk, &zero);
	__u64 ts;

	if (!w)
		return 0;
	w->pc = *pc;
	w->fsbase = task->thread.fsbase;
	w->found = 0;
	w->n = 0;
	ts = read_ptr(pc->interp_head);
	if (!ts)
		return 0;
	w->ts = read_ptr(ts + pc->interp_threads_head);
	bpf_loop(MT_PY_MAX_THREADS, py_thread_step, NULL, 0);
	if (!w->found)
		return 0;
	w->frame = read_ptr(w->ts + pc->tstate_frame);
	if (w->frame && pc->cframe_current != ~0u)
		w->frame = read_ptr(w->frame + pc->cframe_current);
	bpf_loop(2 * MT_MAX_PYFRAMES, py_frame_step, NULL, 0);
	n = w->n;
	if (n > MT_MAX_PYFRAMES)
		n = MT_MAX_PYFRAMES;
	if (n && bpf_probe_read_kernel(out, n * sizeof(__u64), w->out))
		return 0;
	return n;
}

/*
 * Is this thread inside an allocator call already? An entry whose stack
 * pointer is below (or, for a tail call, equal to) the recorded one is nested;
 * one above it is a leftover of a call whose return was never seen.
 */
static __always_inline struct inflight *inside_allocator(__u32 tid, __u64 sp)
{
	struct inflight *in = bpf_map_lookup_elem(&inflight, &tid);

	if (in && sp <= in->sp)
		return in;
	return NULL;
}

static __always_inline int is_realloc(__u32 func)
{
	return func == MT_FN_REALLOC || func == MT_FN_REALLOCARRAY ||
	       func == MT_FN_PYMALLOC_REALLOC || func == MT_FN_RALLOCX || func == MT_FN_XALLOCX;
}

/*
 * An allocation (or realloc outcome) with its user stack, native then Python
 * frames. regs are the user registers: the uprobe's context, or the task's
 * saved user registers in a syscall tracepoint; ctx is the program's context
 * (for bpf_get_stack).
 */
static __always_inline void emit_alloc(void *ctx, struct pt_regs *regs, __u8 kind, __u8 func,
				       __u64 addr, __u64 old, __u64 size)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, zero = 0, tgid = id >> 32, npy, nat;
	const struct mt_py_config *pc;
	struct scratch *sc;
	struct mt_event *ev;
	__u64 flags;
	__u32 depth;
	long len;
	__u8 end;

	sc = bpf_map_lookup_elem(&scratch, &zero);
	if (!sc)
		return;
	ev = (struct mt_event *)sc->words;
	len = 0;
	end = MT_STACK_NONE;
	if (addr) {
		/* At the return probe the registers are the caller's, so the walk
		 * starts at the call site itself: the immediate caller is never
		 * skipped, whatever the allocator's prologue looks like. */
		depth = cfg.stack_depth;
		if (depth > MT_MAX_FRAMES)
			depth = MT_MAX_FRAMES;
		if (cfg.stack_walker == MT_WALK_KERNEL) {
			len =
			    bpf_get_stack(ctx, ev->frames, depth * sizeof(__u64), BPF_F_USER_STACK);
			end = MT_STACK_KERNEL;
		} else if (cfg.stack_walker == MT_WALK_DWARF &&
			   (len = uw_walk(regs, ev->frames, depth, &end)) >= 0) {
			len *= sizeof(__u64);
		} else {
			/* fp, or a process without unwind tables (yet) */
			len = walk_frames(regs, ev->frames, depth, &end) * sizeof(__u64);
		}
		if (len < 0)
			len = 0;
		if (len > MT_MAX_FRAMES * 8)
			len = MT_MAX_FRAMES * 8;
	}
	npy = 0;
	if (addr && python_targets) {
		pc = bpf_map_lookup_elem(&pyconf, &tgid);
		if (pc) {
			nat = len / sizeof(__u64);
			if (nat > MT_MAX_FRAMES)
				nat = MT_MAX_FRAMES;
			npy = walk_python(pc, ev->frames + nat);
		}
	}
	ev->kind = kind;
	ev->func = func;
	ev->nframes = len / sizeof(__u64);
	ev->tgid = id >> 32;
	ev->tid = tid;
	ev->stack_end = end;
	ev->npyframes = npy;
	ev->pad[0] = ev->pad[1] = 0;
	ev->time_ns = bpf_ktime_get_ns();
	ev->addr = addr;
	ev->old_addr = old;
	ev->size = size;
	flags = wakeup_flag();
	if (npy > MT_MAX_PYFRAMES)
		npy = MT_MAX_PYFRAMES;
	if (bpf_ringbuf_output(&events, ev, sizeof(*ev) + len + npy * sizeof(__u64), flags))
		count_lost(kind);
}

/*
 * An entry probe's arguments: where the ABI puts them, or for a probe
 * placed past the function's first instructions, in the registers its
 * cookie names (include/memtrace/event.h).
 */
static __always_inline void entry_args(struct pt_regs *ctx, __u64 cookie, __u64 *a1, __u64 *a2,
				       __u64 *a3)
{
	/* every register read unconditionally, then picked by index: clang
	 * would make a choice between ctx fields one load through a computed
	 * ctx pointer, which the verifier refuses */
	__u64 r[16], regs = cookie & MT_COOKIE_REGS ? cookie : (7 | 6 << 4 | 2 << 8) << 16;

	r[0] = ctx->ax;
	r[1] = ctx->cx;
	r[2] = ctx->dx;
	r[3] = ctx->bx;
	r[4] = ctx->sp;
	r[5] = ctx->bp;
	r[6] = ctx->si;
	r[7] = ctx->di;
	r[8] = ctx->r8;
	r[9] = ctx->r9;
	r[10] = ctx->r10;
	r[11] = ctx->r11;
	r[12] = ctx->r12;
	r[13] = ctx->r13;
	r[14] = ctx->r14;
	r[15] = ctx->r15;
	*a1 = r[MT_COOKIE_ARG_REG(regs, 0)];
	*a2 = r[MT_COOKIE_ARG_REG(regs, 1)];
	*a3 = r[MT_COOKIE_ARG_REG(regs, 2)];
}

/* The stack pointer at the function's entry, whatever the probe's place. */
static __always_inline __u64 entry_sp(struct pt_regs *ctx, __u64 cookie)
{
	return PT_REGS_SP(ctx) + 8ull * MT_COOKIE_SP_WORDS(cookie);
}

SEC("uprobe")
int alloc_enter(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 sp = entry_sp(ctx, cookie);
	struct inflight *in = inside_allocator(tid, sp);
	struct inflight st = {};
	__u64 n, m, a1, a2, a3;

	if (in) {
		in->depth++;
		return 0;
	}
	/* all arguments read up front: the verifier rejects the ctx pointer
	 * arithmetic clang makes of reads inside the switch */
	entry_args(ctx, cookie, &a1, &a2, &a3);
	st.func = MT_COOKIE_FUNC(cookie);
	st.sp = sp;
	st.depth = 1;
	switch (st.func) {
	case MT_FN_CALLOC:
	case MT_FN_PYMALLOC_CALLOC:
	case MT_FN_REALLOCARRAY:
		if (st.func == MT_FN_REALLOCARRAY) {
			st.ptr = a1;
			n = a2;
			m = a3;
		} else {
			n = a1;
			m = a2;
		}
		st.size = n * m;
		/* On overflow the call fails; keep a nonzero size so a failed
		 * reallocarray is never mistaken for realloc(p, 0). (The barrier
		 * keeps clang from making the check a 128-bit multiply, which BPF
		 * does not have.) */
		asm volatile("" : "+r"(n));
		if (n && st.size / n != m)
			st.size = ~0ull;
		break;
	case MT_FN_REALLOC:
	case MT_FN_PYMALLOC_REALLOC:
	case MT_FN_RALLOCX:
	case MT_FN_XALLOCX:
		st.ptr = a1;
		st.size = a2;
		break;
	case MT_FN_POSIX_MEMALIGN:
		st.ptr = a1;
		st.size = a3;
		break;
	case MT_FN_ALIGNED_ALLOC:
	case MT_FN_MEMALIGN:
		st.size = a2;
		break;
	default: /* malloc, valloc, pvalloc, mallocx */
		st.size = a1;
		break;
	}
	if (bpf_map_update_elem(&inflight, &tid, &st, BPF_ANY)) {
		count_lost(0);
		return 0;
	}
	if (is_realloc(st.func) && st.ptr)
		emit_small(MT_EV_REALLOC_ENTER, st.func, 0, st.ptr, 0);
	return 0;
}

SEC("uretprobe")
int alloc_return(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct inflight *in = bpf_map_lookup_elem(&inflight, &tid);
	struct inflight st;
	__u64 addr, old = 0;
	__u8 kind = MT_EV_ALLOC;

	if (!in)
		return 0;
	if (in->depth > 1) {
		in->depth--;
		return 0;
	}
	st = *in;
	bpf_map_delete_elem(&inflight, &tid);
	if (st.func == MT_FN_PYMALLOC_FREE || st.func == MT_FN_DELETE)
		return 0; /* reported at entry (outer_free_enter) */

	addr = PT_REGS_RC(ctx);
	if (st.func == MT_FN_XALLOCX) /* the usable size: enough is success, in place */
		addr = addr >= st.size ? st.ptr : 0;
	if (st.func == MT_FN_POSIX_MEMALIGN) {
		if ((int)addr != 0)
			return 0;
		if (bpf_probe_read_user(&addr, sizeof(addr), (void *)st.ptr))
			return 0;
	}
	if (is_realloc(st.func) && st.ptr) {
		kind = MT_EV_REALLOC;
		old = st.ptr;
	} else if (!addr) {
		return 0; /* a failed allocation is nothing */
	}

	emit_alloc(ctx, ctx, kind, st.func, addr, old, st.size);
	return 0;
}

/*
 * A target executed a new program. Its old address space is gone, and probes
 * placed for the old program must not count the new one's calls: one event,
 * ordered in the ring buffer after every event of the old program (its other
 * threads are gone by now) and before any of the new one.
 */
/* Matched targets alive now (the daemon takes exited ones off). */
volatile __s32 matched;

/*
 * Stop the current process (SIGSTOP) for the daemon, recorded in "stopped"
 * so that the keeper continues it if the daemon dies first; cont_current
 * undoes it when the daemon cannot be told.
 */
static __always_inline void stop_current(__u32 tgid)
{
	__u8 one = 1;

	bpf_map_update_elem(&stopped, &tgid, &one, BPF_ANY);
	bpf_send_signal(19 /* SIGSTOP */);
}

static __always_inline void cont_current(__u32 tgid)
{
	bpf_send_signal(18 /* SIGCONT */);
	bpf_map_delete_elem(&stopped, &tgid);
}

/*
 * Whole-host mode: does the program just executed match --comm or --exe?
 * Its comm is already the new program's name here.
 */
static __always_inline int exec_matches(struct linux_binprm *bprm)
{
	char comm[16];

	if (cfg.match_comm[0]) {
		bpf_get_current_comm(comm, sizeof(comm));
		for (int i = 0; i < 16; i++) {
			if (comm[i] != cfg.match_comm[i])
				return 0;
			if (!comm[i])
				break;
		}
		return 1;
	}
	if (cfg.match_ino) {
		struct inode *ino = BPF_CORE_READ(bprm, file, f_inode);

		return BPF_CORE_READ(ino, i_ino) == cfg.match_ino &&
		       BPF_CORE_READ(ino, i_sb, s_dev) == cfg.match_dev;
	}
	return 0;
}

/*
 * A matching program starts (whole-host mode): it becomes a watched target
 * and is stopped before its first instruction, so that the daemon can place
 * the probes before any allocation; the daemon continues it (SIGCONT) as
 * soon as they are attached. Past max_matches, it is left alone.
 */
static __always_inline void exec_match(struct linux_binprm *bprm, __u32 tgid)
{
	struct mt_target_watch w = {.follow = cfg.match_follow};
	struct mt_event *ev;

	if (!exec_matches(bprm))
		return;
	/* two execs at once may both pass: the daemon checks the cap again */
	if (matched >= (__s32)cfg.max_matches)
		return;
	if (bpf_map_update_elem(&targets, &tgid, &w, BPF_NOEXIST)) {
		count_lost(MT_EV_MATCH);
		return;
	}
	__sync_fetch_and_add(&matched, 1);
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		/* the daemon would never hear of it: leave it alone, counted */
		bpf_map_delete_elem(&targets, &tgid);
		__sync_fetch_and_add(&matched, -1);
		count_lost(MT_EV_MATCH);
		return;
	}
	stop_current(tgid);
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->kind = MT_EV_MATCH;
	ev->tgid = tgid;
	ev->tid = (__u32)bpf_get_current_pid_tgid();
	ev->stack_end = MT_STACK_NONE;
	ev->time_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(ev, BPF_RB_FORCE_WAKEUP);
}

SEC("raw_tp/sched_process_exec")
int on_exec(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct mt_target_watch *w = bpf_map_lookup_elem(&targets, &tgid);

	if (!w) {
		if (cfg.match_comm[0] || cfg.match_ino)
			exec_match((struct linux_binprm *)ctx->args[2], tgid);
		return 0;
	}
	__sync_fetch_and_add(&w->execs, 1);
	/* the old program's unwind mappings: the daemon lists the new one's */
	bpf_map_delete_elem(&uw_procs, &tgid);
	if (!cfg.hold_exec) {
		emit_small(MT_EV_EXEC, 0, 0, 0, 0);
		return 0;
	}
	/* stopped until the daemon has placed a probe on the new program's
	 * ld.so (ldso_state), so that it resolves the allocator the linker
	 * binds before any of it runs; addr = 1 says so */
	stop_current(tgid);
	if (emit_small(MT_EV_EXEC, 0, 1, 0, 0))
		cont_current(tgid); /* the daemon will not hear of it */
	return 0;
}

/*
 * ld.so's _dl_debug_state, probed for a target that executed a new program
 * until its libraries are all mapped: stop there (before relocation and the
 * libraries' constructors) for the daemon to resolve the allocator.
 */
SEC("uprobe")
int ldso_state(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (!bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	stop_current(tgid);
	if (emit_small(MT_EV_LDSO, 0, 0, 0, 0))
		cont_current(tgid);
	return 0;
}

/*
 * ld.so's _dl_debug_state in a process the DWARF walker unwinds: once the
 * linker's map is consistent again after a dlopen or dlclose, stop (before
 * the new objects' constructors run) for the daemon to load their unwind
 * tables and list their mappings; it continues the process then.
 */
SEC("uprobe")
int uw_ldso(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct mt_unwind_proc *up = bpf_map_lookup_elem(&uw_procs, &tgid);
	__s32 state = 0;

	if (!up || !bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	if (up->r_state_addr &&
	    (bpf_probe_read_user(&state, sizeof(state), (void *)up->r_state_addr) || state != 0))
		return 0; /* RT_ADD or RT_DELETE: the consistent call follows */
	stop_current(tgid);
	if (emit_small(MT_EV_LDSO, 0, 1, 0, 0))
		cont_current(tgid);
	return 0;
}

/*
 * A CPython target whose frees are probed where its allocator table
 * dispatches them (src/daemon/attach/pydispatch.c) entered a function that installs an
 * allocator: stop it there, before the table changes, for the daemon to
 * probe PyObject_Free and PyMem_Free themselves again.
 */
SEC("uprobe")
int pyalloc_set(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	/* cookie 1: the first argument is the domain; the raw one's table
	 * (PYMEM_DOMAIN_RAW, 0) is not where PyObject_Free dispatches */
	if (bpf_get_attach_cookie(ctx) == 1 && PT_REGS_PARM1(ctx) == 0)
		return 0;
	if (!bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	stop_current(tgid);
	if (emit_small(MT_EV_PYALLOC, 0, 0, 0, 0))
		cont_current(tgid); /* counted lost: its frees may go untraced */
	return 0;
}

/*
 * A followed target forked a new process (not a thread): the child inherits
 * the probes (their perf events are inherited at fork), becomes a watched,
 * followed target itself, and the daemon learns of it through one event,
 * written before the child first runs (the tracepoint fires before the
 * child is woken), so it precedes every event of the child.
 */
SEC("raw_tp/sched_process_fork")
int on_fork(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *child = (struct task_struct *)ctx->args[1];
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, ctgid, cpid;
	struct mt_target_watch *w = bpf_map_lookup_elem(&targets, &tgid);
	struct mt_target_watch cw = {.follow = 1};
	__u8 *arenas;

	if (!w || !w->follow)
		return 0;
	ctgid = BPF_CORE_READ(child, tgid);
	cpid = BPF_CORE_READ(child, pid);
	if (ctgid != cpid || ctgid == tgid)
		return 0; /* a thread */
	if (bpf_map_update_elem(&targets, &ctgid, &cw, BPF_ANY)) {
		count_lost(MT_EV_FORK);
		return 0;
	}
	/* the child has its parent's mappings until it maps others */
	if (cfg.stack_walker == MT_WALK_DWARF) {
		struct mt_unwind_proc *up = bpf_map_lookup_elem(&uw_procs, &tgid);

		if (up)
			bpf_map_update_elem(&uw_procs, &ctgid, up, BPF_ANY);
	}
	/* a forked CPython maps arenas from its first instruction too */
	arenas = bpf_map_lookup_elem(&mmaptrace, &tgid);
	if (arenas)
		bpf_map_update_elem(&mmaptrace, &ctgid, arenas, BPF_ANY);
	emit_small(MT_EV_FORK, 0, ctgid, 0, 0);
	return 0;
}

SEC("uprobe")
int free_enter(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx), addr, a2, a3;

	entry_args(ctx, cookie, &addr, &a2, &a3);
	if (!addr)
		return 0; /* free(NULL) is nothing */
	if (inside_allocator((__u32)bpf_get_current_pid_tgid(), entry_sp(ctx, cookie)))
		return 0; /* part of a realloc the return probe reports */
	/* free, or jemalloc's sdallocx/dallocx */
	emit_small(MT_EV_FREE, (__u8)MT_COOKIE_FUNC(cookie), addr, 0, 0);
	return 0;
}

/*
 * PyObject_Free/PyMem_Free, and operator delete of an interposing allocator:
 * reported at entry like free, but it also marks the thread as inside the
 * allocator until its return probe (alloc_return), so the free it may hand
 * the block on to (pymalloc's large blocks; a delete that calls free) is
 * not reported a second time. Nested in another allocator call
 * (PyObject_Realloc), it only bumps the depth: the outer call reports.
 */
SEC("uprobe")
int outer_free_enter(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 cookie = bpf_get_attach_cookie(ctx), addr, a2, a3, sp = entry_sp(ctx, cookie);
	struct inflight *in = inside_allocator(tid, sp);
	struct inflight st = {};

	if (in) {
		in->depth++;
		return 0;
	}
	entry_args(ctx, cookie, &addr, &a2, &a3);
	if (!addr)
		return 0; /* PyObject_Free(NULL), delete nullptr: nothing */
	st.func = MT_COOKIE_FUNC(cookie);
	st.sp = sp;
	st.depth = 1;
	st.ptr = addr;
	if (bpf_map_update_elem(&inflight, &tid, &st, BPF_ANY))
		count_lost(0);
	emit_small(MT_EV_FREE, (__u8)st.func, addr, 0, 0);
	return 0;
}

/*
 * The uprobe floor (make bench, MEMTRACE_BENCH_EMPTY_PROGRAMS): the same
 * probes with nothing in them, so a run measures the traps alone.
 */
SEC("uprobe")
int empty_enter(struct pt_regs *ctx)
{
	return 0;
}

SEC("uretprobe")
int empty_return(struct pt_regs *ctx)
{
	return 0;
}

/* <linux/mman.h>, which vmlinux.h does not carry */
#define MT_PROT_NONE	 0x0
#define MT_MAP_TYPE	 0x0f
#define MT_MAP_PRIVATE	 0x02
#define MT_MAP_FIXED	 0x10
#define MT_MAP_ANONYMOUS 0x20
#define MT_MAP_STACK	 0x20000
#define MT_PAGE_MASK	 4095ull

static __always_inline int mmap_traced(__u32 tgid)
{
	return mmap_targets && bpf_map_lookup_elem(&mmaptrace, &tgid);
}

static __always_inline __u64 user_sp(void)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	return PT_REGS_SP(regs);
}

/*
 * mmap of a traced target. Counted as an allocation (at exit, with the
 * address): anonymous, private, accessible (not PROT_NONE, a reservation),
 * not a thread stack (MAP_STACK: pthread_create's), and not made inside a
 * traced allocator call (glibc malloc's own mmaps are its blocks, reported
 * by malloc). A MAP_FIXED mapping replaces whatever was mapped there: that
 * range is reported unmapped first.
 */
SEC("tracepoint/syscalls/sys_enter_mmap")
int mmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), addr, len, prot, flags;
	__u32 tid = (__u32)id;

	if (!mmap_traced(id >> 32))
		return 0;
	addr = ctx->args[0];
	len = (ctx->args[1] + MT_PAGE_MASK) & ~MT_PAGE_MASK;
	prot = ctx->args[2];
	flags = ctx->args[3];
	if (!len || inside_allocator(tid, user_sp()))
		return 0;
	if ((flags & MT_MAP_FIXED) && !(addr & MT_PAGE_MASK))
		emit_small(MT_EV_FREE, MT_FN_MMAP, addr, 0, len);
	if (!(flags & MT_MAP_ANONYMOUS) || (flags & MT_MAP_TYPE) != MT_MAP_PRIVATE ||
	    (flags & MT_MAP_STACK) || prot == MT_PROT_NONE)
		return 0;
	if (bpf_map_update_elem(&mmap_pending, &tid, &len, BPF_ANY))
		count_lost(0);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_mmap")
int mmap_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), *pending, len, addr = (__u64)ctx->ret;
	__u32 tid = (__u32)id;

	if (!mmap_targets)
		return 0;
	pending = bpf_map_lookup_elem(&mmap_pending, &tid);
	if (!pending)
		return 0;
	len = *pending;
	bpf_map_delete_elem(&mmap_pending, &tid);
	if (addr >= (__u64)-4095)
		return 0; /* failed: -errno */
	if (!mmap_traced(id >> 32))
		return 0; /* turned off (detach) since the entry */
	emit_alloc(ctx, (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf()), MT_EV_ALLOC,
		   MT_FN_MMAP, addr, 0, len);
	return 0;
}

/*
 * munmap of a traced target, reported at entry (before another thread can
 * be given the range by mmap) as a release of [addr, addr + len): the daemon
 * matches it against the mmap blocks it holds, whole or in part.
 */
SEC("tracepoint/syscalls/sys_enter_munmap")
int munmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), addr, len;

	if (!mmap_traced(id >> 32))
		return 0;
	addr = ctx->args[0];
	len = (ctx->args[1] + MT_PAGE_MASK) & ~MT_PAGE_MASK;
	if (!len || (addr & MT_PAGE_MASK))
		return 0; /* the call fails with EINVAL */
	if (inside_allocator((__u32)id, user_sp()))
		return 0;
	emit_small(MT_EV_FREE, MT_FN_MMAP, addr, 0, len);
	return 0;
}
