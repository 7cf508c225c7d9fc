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
#include "nopriv.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile struct mt_bpf_config cfg = {
    .stack_depth = MT_MAX_FRAMES,
    .wakeup_bytes = 1 << 20,
    .inflight_mask = MT_INFLIGHT_SLOTS - 1,
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 32 << 20); /* resized by the daemon before load */
} events SEC(".maps");

/* Slot 0: calls not traced because no inflight record could be made; 1..: by kind. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MT_LOST_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/* Processes traced, and those that run probes of ours untraced: see struct
 * mt_target_watch. Room for the targets (at most --max-targets of them
 * matched) and for the workers a pre-fork server forks past the limit. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct mt_target_watch);
} targets SEC(".maps");

/*
 * Nonzero once some process runs probes of ours without being a target (a
 * --comm match's child past --max-targets carries copies of its parent's
 * probes: the kernel copies them at the fork): from then on the probes drop
 * the calls of any process that "targets" does not list as traced, before
 * any work. Until then they do not look (a target is always listed).
 */
volatile __u32 untraced_probed;

static __always_inline int not_traced(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct mt_target_watch *w;

	if (!untraced_probed)
		return 0;
	w = bpf_map_lookup_elem(&targets, &tgid);
	return !w || w->untraced;
}

#include "window.bpf.h"

/*
 * Stacks this CPU found in stack_ids (or registered there) lately, by hash,
 * direct-mapped: an entry of stack_ids never changes while the programs are
 * loaded, so a copy of one names its id as surely as the map does, and a
 * stack that repeats costs a compare instead of a hash map lookup.
 */
#define MT_KNOWN_SLOTS 16 /* a power of two */

#include "stackid.bpf.h"

struct known_stack {
	__u64 id; /* 0: empty (no stack hashes to 0) */
	struct stack_id_entry e;
};

/*
 * An allocation's event while its stages build it (bpf/stages.bpf.h): the
 * record with room for the deepest stack, the user registers its walk
 * starts from, and the window the walk reads the user stack through.
 */
struct scratch {
	__u32 busy;	  /* the thread building an event here (scratch_take); 0: free */
	__u32 set;	  /* its number */
	__u64 ip, sp, bp; /* the user registers at the allocator's return */
	/* the frame-pointer walk between its batches (walk_fp_stage) */
	__u64 fp_next, fp_prev;
	__u32 fp_n, fp_walking;
	__u64 words[sizeof(struct mt_event) / 8 + MT_MAX_FRAMES + MT_MAX_PYFRAMES];
	struct stack_window win;
	struct stack_id_entry entry; /* a stack being registered */
	struct known_stack known[MT_KNOWN_SLOTS];
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

/*
 * Per CPU, MT_SCRATCH_SETS of them, with the walkers' per-CPU state
 * (uw_state, pywalk) in as many sets. A uprobe program runs with migration
 * disabled, not preemption: on a fully preemptible kernel another task on
 * the same CPU can run our programs while one is building its event. Each
 * event takes a set with one exchange and gives it back when written; one
 * preempted in the middle leaves the next set to the task that preempted
 * it, and an event that finds every set taken is counted lost, never built
 * in a set another is using. Four: with two, Debian's 7.2 (PREEMPT(lazy))
 * found both taken now and then when twelve processes allocated at once on
 * two CPUs (3 to 22 allocations of 2,700 counted lost, tests/e2e
 * cgroup_match); a set is about 2 KiB a CPU. A power of two (scratch_find).
 */
#define MT_SCRATCH_SETS 4

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MT_SCRATCH_SETS);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/*
 * A set for tid's event: the first free one, marked with the thread's id,
 * which the later stages find it by (scratch_find). The stages of one event
 * run on one CPU (one program run: migration is disabled), and a thread
 * runs one allocator probe at a time, so the mark names one set.
 */
static __always_inline struct scratch *scratch_take(__u32 tid)
{
	struct scratch *sc;

	for (__u32 i = 0; i < MT_SCRATCH_SETS; i++) {
		__u32 k = i;

		sc = bpf_map_lookup_elem(&scratch, &k);
		if (sc && !__sync_val_compare_and_swap(&sc->busy, 0, tid)) {
			sc->set = i;
			return sc;
		}
	}
	return NULL;
}

/* The set tid's event is being built in, and its number in *set. */
static __always_inline struct scratch *scratch_find(__u32 tid, __u32 *set)
{
	struct scratch *sc;

	for (__u32 i = 0; i < MT_SCRATCH_SETS; i++) {
		__u32 k = i;

		sc = bpf_map_lookup_elem(&scratch, &k);
		if (sc && *(volatile __u32 *)&sc->busy == tid) {
			/* the number read back from the set itself, which the
			 * verifier does not know: every set is then one path to
			 * check, not one each */
			*set = *(volatile __u32 *)&sc->set & (MT_SCRATCH_SETS - 1);
			return sc;
		}
	}
	return NULL;
}

static __always_inline void scratch_give(struct scratch *sc)
{
	*(volatile __u32 *)&sc->busy = 0;
}

/* Nonzero once any event was lost (MT_EVF_LOSSES in every later event). */
volatile __u32 events_lost_once;

static __always_inline void count_lost(__u32 slot)
{
	__u64 *n = bpf_map_lookup_elem(&lost, &slot);

	if (n) /* per CPU, but a preempting task may count too */
		__sync_fetch_and_add(n, 1);
	events_lost_once = 1;
}

static __always_inline __u8 event_flags(void)
{
	return events_lost_once ? MT_EVF_LOSSES : 0;
}

static __always_inline __u64 wakeup_flag(void)
{
	/* Waking the consumer costs ~9 us per event here; the daemon polls on a
	 * short timer and is only woken when the buffer starts to fill. */
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= cfg.wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

/* A stack-less event (free, realloc entry, control): fixed size, reserved in
 * place; with the time when time is set. */
static __always_inline int emit_record(__u8 kind, __u8 func, __u64 addr, __u64 old_addr, __u64 size,
				       int time)
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
	ev->stack_flags = 0;
	ev->flags = event_flags();
	ev->time_ns = time ? bpf_ktime_get_ns() : 0;
	ev->addr = addr;
	ev->old_addr = old_addr;
	ev->size = size;
	/* a process may be stopped waiting for the daemon (exec, ld.so): wake it
	 * for those now, not at its next timer tick; nobody waits for a fork
	 * (and a wakeup would leave the forking task preempted in the fork's
	 * program: bpf/control.bpf.h, first_hook) */
	bpf_ringbuf_submit(ev, kind >= MT_EV_EXEC && kind != MT_EV_FORK ? BPF_RB_FORCE_WAKEUP
									: wakeup_flag());
	return 0;
}

/* A free, a realloc's entry, a control event: a free's time is not used
 * (one clock read per pair saved). */
static __always_inline int emit_small(__u8 kind, __u8 func, __u64 addr, __u64 old_addr, __u64 size)
{
	return emit_record(kind, func, addr, old_addr, size, kind >= MT_EV_EXEC);
}

/* An allocator call's outcome that has no stack (a realloc that failed, or
 * freed its block: size 0): timed, as any outcome. Returns 0. */
static __always_inline int emit_nostack(__u8 kind, __u8 func, __u64 addr, __u64 old_addr,
					__u64 size)
{
	emit_record(kind, func, addr, old_addr, size, 1);
	return 0;
}

#include "unwind.bpf.h"

#include "python.bpf.h"

#include "inflight.bpf.h"

static __always_inline int is_realloc(__u32 func)
{
	return func == MT_FN_REALLOC || func == MT_FN_REALLOCARRAY ||
	       func == MT_FN_PYMALLOC_REALLOC || func == MT_FN_RALLOCX || func == MT_FN_XALLOCX;
}

#include "stages.bpf.h"

/*
 * An entry probe's arguments: where the ABI puts them, or for a probe
 * placed past the function's first instructions, in the registers its
 * cookie names (include/memtrace/event.h).
 */
static __always_inline void entry_args(struct pt_regs *ctx, __u64 cookie, __u64 *a1, __u64 *a2,
				       __u64 *a3)
{
	__u64 r[16], di = ctx->di, si = ctx->si, dx = ctx->dx;

	/* the ABI's three loaded once, before any branch: clang would make a
	 * choice between ctx fields one load through a computed ctx pointer,
	 * which the verifier refuses */
	asm volatile("" : "+r"(di), "+r"(si), "+r"(dx));
	if (!(cookie & MT_COOKIE_REGS)) {
		/* where the ABI puts them: nearly every probe */
		*a1 = di;
		*a2 = si;
		*a3 = dx;
		return;
	}
	/* a placed probe that names registers: every one read, then picked by
	 * index, for the same reason */
	r[0] = ctx->ax;
	r[1] = ctx->cx;
	r[2] = dx;
	r[3] = ctx->bx;
	r[4] = ctx->sp;
	r[5] = ctx->bp;
	r[6] = si;
	r[7] = di;
	r[8] = ctx->r8;
	r[9] = ctx->r9;
	r[10] = ctx->r10;
	r[11] = ctx->r11;
	r[12] = ctx->r12;
	r[13] = ctx->r13;
	r[14] = ctx->r14;
	r[15] = ctx->r15;
	*a1 = r[MT_COOKIE_ARG_REG(cookie, 0)];
	*a2 = r[MT_COOKIE_ARG_REG(cookie, 1)];
	*a3 = r[MT_COOKIE_ARG_REG(cookie, 2)];
}

/* The stack pointer at the function's entry, whatever the probe's place. */
static __always_inline __u64 entry_sp(struct pt_regs *ctx, __u64 cookie)
{
	return PT_REGS_SP(ctx) + 8ull * MT_COOKIE_SP_WORDS(cookie);
}

SEC("uprobe")
int alloc_enter(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 sp = entry_sp(ctx, cookie);
	struct inflight *in, st = {};
	__u64 n, m, a1, a2, a3;

	MT_NO_PRIV_STACK(ctx, &stages);
	if (not_traced())
		return 0; /* its return probe finds no call in flight */
	if (inflight_enter(bpf_get_current_task_btf(), sp, &in) || !in)
		return 0; /* nested, or not traced (counted) */
	/* all arguments read up front: the verifier rejects the ctx pointer
	 * arithmetic clang makes of reads inside the switch */
	entry_args(ctx, cookie, &a1, &a2, &a3);
	st.func = MT_COOKIE_FUNC(cookie);
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
	in->func = st.func;
	in->size = st.size;
	in->ptr = st.ptr;
	in->sp = sp;
	if (is_realloc(st.func) && st.ptr)
		emit_small(MT_EV_REALLOC_ENTER, st.func, 0, st.ptr, 0);
	return 0;
}

SEC("uretprobe")
int alloc_return(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct inflight *in = inflight_active(bpf_get_current_task_btf(), tid);
	struct inflight st;
	__u64 addr, old = 0;
	__u8 kind = MT_EV_ALLOC;

	if (!in)
		return 0;
	if ((in->state & MT_DEPTH_MASK) > 1) {
		in->state--;
		return 0;
	}
	st.func = in->func;
	st.size = in->size;
	st.ptr = in->ptr;
	inflight_end(in, tid);
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

	if (!addr) /* a realloc that failed, or freed (size 0): no stack */
		return emit_nostack(kind, st.func, addr, old, st.size);
	return stages_begin(ctx, &stages, kind, st.func, addr, old, st.size, PT_REGS_IP(ctx),
			    PT_REGS_SP(ctx), PT_REGS_FP(ctx));
}

#include "control.bpf.h"

SEC("uprobe")
int free_enter(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx), addr, a2, a3;

	MT_NO_PRIV_STACK(ctx, &stages);
	entry_args(ctx, cookie, &addr, &a2, &a3);
	if (!addr || not_traced())
		return 0; /* free(NULL) is nothing */
	if (inside_allocator(bpf_get_current_task_btf(), entry_sp(ctx, cookie)))
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
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 cookie = bpf_get_attach_cookie(ctx), addr, a2, a3, sp = entry_sp(ctx, cookie);
	struct inflight *in = NULL;

	MT_NO_PRIV_STACK(ctx, &stages);
	if (not_traced())
		return 0;
	entry_args(ctx, cookie, &addr, &a2, &a3);
	if (!addr) {
		/* PyObject_Free(NULL), delete nullptr: nothing, but nested in
		 * another call its return probe still ends one level */
		in = inside_allocator(task, sp);
		if (in)
			in->state++;
		return 0;
	}
	if (inflight_enter(task, sp, &in))
		return 0;
	if (in) {
		in->func = MT_COOKIE_FUNC(cookie);
		in->sp = sp;
		in->ptr = addr;
		in->size = 0;
	}
	emit_small(MT_EV_FREE, (__u8)MT_COOKIE_FUNC(cookie), addr, 0, 0);
	return 0;
}

#include "mmap.bpf.h"
