/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The kernel/user contract: the record every probe writes to the ring buffer
 * and the maps userspace reads. Included by bpf/memtrace.bpf.c (with
 * vmlinux.h) and by src/ (with <linux/types.h>); nothing else may go here.
 */
#ifndef MEMTRACE_EVENT_H
#define MEMTRACE_EVENT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Deepest user stack an event carries; --stack-depth may lower it. */
#define MT_MAX_FRAMES 127

/* Allocator entry points: the kind of each probe (its attach cookie), named
 * by mt_func_name(); src/daemon/attach/allocator.c maps symbols to them. */
enum mt_func {
	MT_FN_MALLOC = 0,
	MT_FN_CALLOC,
	MT_FN_REALLOC,
	MT_FN_REALLOCARRAY,
	MT_FN_FREE,
	MT_FN_POSIX_MEMALIGN,
	MT_FN_ALIGNED_ALLOC,
	MT_FN_MEMALIGN,
	MT_FN_VALLOC,
	MT_FN_PVALLOC,
	MT_FN_NEW,	 /* C++ operator new, every variant */
	MT_FN_NEW_ARRAY, /* C++ operator new[], every variant */
	/* CPython's object allocator (--python-allocators): PyObject_* and
	 * PyMem_* (both domains are pymalloc in a default build) */
	MT_FN_PYMALLOC_MALLOC,
	MT_FN_PYMALLOC_CALLOC,
	MT_FN_PYMALLOC_REALLOC,
	MT_FN_PYMALLOC_FREE,
	/* Anonymous private mmap made outside any allocator call (pymalloc's
	 * arenas in a CPython target), from the syscall tracepoints; its
	 * munmap is an MT_EV_FREE with this func and size = length unmapped.
	 * Enabled per target (the "mmaptrace" map). */
	MT_FN_MMAP,
	/* C++ operator delete, every variant, where an allocator that
	 * interposes (jemalloc, tcmalloc) frees without calling its free:
	 * reported at entry, and like pymalloc_free it marks the thread as
	 * inside the allocator until it returns */
	MT_FN_DELETE,
	/* jemalloc's non-standard API: mallocx (an allocation), rallocx (a
	 * realloc), sdallocx and dallocx (frees), xallocx (a realloc in place:
	 * it returns the block's usable size; at least the size asked for is
	 * success, reported as a realloc to the same address of that size) */
	MT_FN_MALLOCX,
	MT_FN_RALLOCX,
	MT_FN_DALLOCX,
	MT_FN_XALLOCX,
	MT_FN_COUNT
};

/*
 * The BPF cookie of an allocator probe: bits 0-7 are the enum mt_func. A
 * probe placed past the function's first instructions (src/daemon/attach/placement.c)
 * says how they moved the entry state: bits 8-15 count the 8-byte words
 * the stack grew by (the entry programs add them back to the stack
 * pointer), and with MT_COOKIE_REGS set, bits 16-27 name the register
 * holding each of the first three arguments, 4 bits each, in x86-64
 * hardware numbering (0 rax, 1 rcx, 2 rdx, 3 rbx, 5 rbp, 6 rsi, 7 rdi,
 * 8-15 r8-r15). Without it they are where the ABI puts them.
 */
#define MT_COOKIE_FUNC(c)	((__u32)(c)&0xff)
#define MT_COOKIE_SP_WORDS(c)	((__u32)((c) >> 8) & 0xff)
#define MT_COOKIE_REGS		(1ull << 28)
#define MT_COOKIE_ARG_REG(c, i) ((__u32)((c) >> (16 + 4 * (i))) & 0xf)

/*
 * One call of the allocator becomes one event, except realloc of a non-NULL
 * block, which becomes two: REALLOC_ENTER at entry (the old block is handed
 * back to the allocator here, and another thread may get its address before
 * realloc returns) and REALLOC at return (the outcome).
 */
enum mt_event_kind {
	MT_EV_ALLOC = 1,	 /* addr = new block, size = requested bytes */
	MT_EV_FREE = 2,		 /* addr = block released (MT_FN_MMAP: a range, size bytes) */
	MT_EV_REALLOC_ENTER = 3, /* old_addr = block being reallocated */
	MT_EV_REALLOC = 4,	 /* old_addr, addr = result (0 if NULL), size */
	MT_EV_EXEC = 5,		 /* a target executed a new program (sched_process_exec) */
	MT_EV_FORK = 6,		 /* a followed target forked: addr = the child's pid */
	MT_EV_MATCH = 7,	 /* a new program matches --comm/--exe/--cgroup; it is stopped
				  * (SIGSTOP); old_addr: MT_MATCH_MOVED_IN/OUT */
	MT_EV_LDSO = 8,		 /* a target that executed a new program reached ld.so's
				  * _dl_debug_state; it is stopped (SIGSTOP). addr = 1:
				  * a traced process's linker has mapped or unmapped
				  * objects (dlopen, dlclose; the DWARF walker's probe) */
	MT_EV_PYALLOC = 9,	 /* a CPython target is about to install an allocator
				  * (PyMem_SetAllocator...); it is stopped (SIGSTOP) */
	MT_EV_OOM = 10,		 /* the kernel's OOM killer chose tgid (oom:mark_victim); time_ns
				  * is when; tid is the task the killer ran in */
	MT_EV_KIND_COUNT
};

struct mt_event {
	__u8 kind;	  /* enum mt_event_kind */
	__u8 func;	  /* enum mt_func the target called */
	__u16 nframes;	  /* user frames that follow, innermost first */
	__u32 tgid;	  /* process */
	__u32 tid;	  /* thread */
	__u8 stack_end;	  /* enum mt_stack_end: why the frames stop */
	__u8 npyframes;	  /* Python frame words after the native frames (MT_PY_WORD) */
	__u8 stack_flags; /* MT_SF_* */
	__u8 flags;	  /* MT_EVF_* */
	/* CLOCK_MONOTONIC (bpf_ktime_get_ns) of an allocation and of a control
	 * event; 0 in a free and a realloc's entry, whose time nothing uses
	 * (a clock read per free saved) */
	__u64 time_ns;
	__u64 addr;
	__u64 old_addr;
	__u64 size;
	__u64 frames[]; /* return addresses; frames[0] is the allocator's caller;
			 * then npyframes Python frame words, innermost first;
			 * then, with MT_SF_ID, the stack id word */
};

/*
 * Known stacks as an id (stack_ids in bpf/memtrace.bpf.c). With MT_SF_ID one word follows
 * the frames: an id, never 0. With nframes > 0 the frames are registered
 * under it (the first event of that stack); with nframes == 0 the event's
 * stack is the one registered under it, which an earlier event in the ring
 * buffer carried. An id stands for one stack for as long as the programs
 * are loaded. Stacks of at most MT_ID_FRAMES native frames and no Python
 * frames, at most MT_STACK_IDS of them, are sent this way; others in full.
 * (stack_end is the walk's, as for any event.) A record may be longer than
 * its header says (a stack that could not be registered: a word of slack).
 */
#define MT_SF_ID     1
#define MT_ID_FRAMES 64
#define MT_STACK_IDS 16384

/*
 * Set in every event written after the BPF side first failed to record one
 * (a ring buffer write, or a call it could not track): from then on the
 * daemon cannot know that it saw every allocation, and a free of an address
 * freed already counts as unknown instead of nothing (tracker.c, refree).
 * Carried by the events, not read from the lost counters, so that it comes
 * before any event that may depend on the loss.
 */
#define MT_EVF_LOSSES 1

/*
 * A Python frame as one word: bit 63 set (no user address has it), bit 62
 * set on the outermost Python frame one run of the interpreter loop
 * (_PyEval_EvalFrameDefault) executes, the code object's address / 8 in
 * bits 18-61 and the instruction index (code units from the first
 * instruction) in bits 0-17. Userspace reads the code object for names and
 * resolves the line from its line table.
 */
#define MT_MAX_PYFRAMES	 64
#define MT_PY_WORD	 (1ull << 63)
#define MT_PY_GROUP_END	 (1ull << 62)
#define MT_PY_INSTR_BITS 18
#define MT_PY_CODE(w)	 ((((w) >> MT_PY_INSTR_BITS) & ((1ull << 44) - 1)) << 3)
#define MT_PY_INSTR(w)	 ((w) & ((1ull << MT_PY_INSTR_BITS) - 1))

/*
 * Where a CPython target keeps its thread states and frames (per tgid, in
 * the "pyconf" map; set by the daemon for Python targets only). Offsets are
 * of the interpreter at hand (src/daemon/symbols/pyoffsets.c: _Py_DebugOffsets, DWARF or
 * a table).
 */
struct mt_py_config {
	__u64 interp_head; /* address of _PyRuntime.interpreters.head */
	__u32 minor;	   /* 10, 11, 12, 13 */
	__u32 interp_threads_head;
	__u32 tstate_next;
	__u32 tstate_thread_id; /* pthread_self(): the thread's fsbase */
	__u32 tstate_frame;	/* frame (3.10), cframe (3.11, 3.12), current_frame (3.13) */
	__u32 cframe_current;	/* _PyCFrame.current_frame; ~0 when tstate_frame is direct */
	__u32 frame_code;
	__u32 frame_previous;
	__u32 frame_instr;   /* f_lasti (3.10, an int), prev_instr (3.11, 3.12), instr_ptr (3.13) */
	__u32 frame_owner;   /* owner (3.12+: 3 = C stack shim), or is_entry (3.11) */
	__u32 code_adaptive; /* co_code_adaptive: the first instruction */
};

/* Why an event's stack ends where it does. */
enum mt_stack_end {
	MT_STACK_COMPLETE = 0, /* the frame-pointer chain ended with 0: the root */
	MT_STACK_DEPTH = 1,    /* the depth limit was reached */
	MT_STACK_BROKEN = 2,   /* a frame pointer left the stack: a module without them */
	MT_STACK_NONE = 3,     /* no stack (frees, realloc entries) */
	MT_STACK_KERNEL = 4,   /* captured by bpf_get_stack: end reason unknown */
	/* the DWARF walker (--stack-walker dwarf) */
	MT_STACK_TRUNCATED = 5, /* a rule it cannot follow (a DWARF
				 * expression) or a frame it could not read */
	MT_STACK_OUTERMOST = 6, /* the call frame information says this is the
				 * first frame (_start, a thread's start): whole */
};

/* How the BPF side captures user stacks (cfg.stack_walker). */
enum mt_stack_walker {
	MT_WALK_FP = 0,	    /* our bounded frame-pointer walk (default) */
	MT_WALK_KERNEL = 1, /* bpf_get_stack(BPF_F_USER_STACK) */
	MT_WALK_DWARF = 2,  /* call frame information (unwind tables), frame pointers
			     * where a module has none (bpf/unwind.bpf.h) */
	MT_WALK_CALLER = 3, /* the call site alone: no walk (the last fallback when a
			     * kernel's verifier refuses both walkers) */
};

/*
 * The stages an allocation's event goes through after its return probe
 * (bpf/stages.bpf.h), each a program of its own reached by a tail call
 * through the "stages" program array ("stages_tp" for the mmap tracepoint's
 * events): so that the verifier checks each on its own, with room to spare
 * on every kernel. The daemon fills the slots after load (probes.c).
 */
enum mt_stage {
	MT_STAGE_WALK = 0,    /* the native stack: the walker chosen (walk_*) */
	MT_STAGE_PYTHON = 1,  /* a CPython target's Python frames */
	MT_STAGE_EMIT = 2,    /* the record, as a stack id or in full, into the ring buffer */
	MT_STAGE_WALK_FP = 3, /* the frame-pointer walk (walk_fp): the DWARF walker's for a
			       * process without unwind tables (yet) */
	MT_STAGE_COUNT
};

/* Keys of the per-CPU "lost" array: failed ring buffer writes, by kind. */
/* (The "targets" map: tgid -> struct mt_target_watch, filled by the daemon.) */
/* Slot 0 and kinds 1 to 7 (snapshots carry 8; their names are MT_LOST_KINDS
 * in counters.h, checked against these at compile time); a lost MT_EV_LDSO
 * counts as MT_EV_EXEC, the exec it belongs to, a lost MT_EV_PYALLOC in slot
 * 0: calls that may go untraced. A lost MT_EV_OOM is counted apart, in the
 * BPF global oom_lost (the daemon logs it); slot 0 only names a slot here. */
#define MT_LOST_SLOTS 8
#define MT_LOST_SLOT(kind)                                                                         \
	((kind) == MT_EV_LDSO				  ? MT_EV_EXEC                             \
	 : (kind) == MT_EV_PYALLOC || (kind) == MT_EV_OOM ? 0                                      \
							  : (kind))

/* Value of the "targets" hash map: the exec tracepoint reports only these
 * tgids, and counts their execs here too, so an exec whose ring buffer event
 * was lost is still seen (the daemon reads this on its timer). */
struct mt_target_watch {
	__u64 execs;
	__u32 follow;	/* its children become targets (MT_EV_FORK): --follow-forks, or a
			 * --comm/--exe match's (they run the same program) */
	__u16 matched;	/* it matched --comm/--exe, or a match forked it: counts in
			 * max_matches, and stops being traced at an exec of a program
			 * that does not match (without --follow-forks) */
	__u16 untraced; /* MT_UNTRACED_*: not a target, but it runs probes of ours */
};

/*
 * Processes the allocator probes fire in that are not targets; their calls
 * are dropped in BPF (once untraced_probed is set, the probes look each
 * process up in "targets").
 */
enum {
	/* a match's child refused at the limit (or whose fork event was lost):
	 * it runs copies of its parent's probes, which go at its exec */
	MT_UNTRACED_COPIES = 1,
	/* a match that executed a program that does not match: its own probes
	 * stay on it while children forked before the exec run copies of them */
	MT_UNTRACED_OWN = 2,
};

/* MT_EV_EXEC's old_addr: the program executed does not match (the process is
 * marked MT_UNTRACED_OWN and not stopped). */
#define MT_EXEC_UNMATCHED 1

/* MT_EV_MATCH's old_addr, --cgroup/--unit: a running process was moved into
 * the cgroup (not stopped: attach as to a running process), or a traced one
 * out of it (marked MT_UNTRACED_OWN: its calls count no more). 0: a new
 * program matched at its exec, stopped there. */
#define MT_MATCH_MOVED_IN  1
#define MT_MATCH_MOVED_OUT 2

/* Read-only configuration the daemon sets before load (.rodata). */
struct mt_bpf_config {
	__u32 stack_depth;  /* frames to capture, <= MT_MAX_FRAMES */
	__u32 stack_walker; /* enum mt_stack_walker */
	__u64 wakeup_bytes; /* wake the consumer once this much is queued */
	/* whole-host mode (--comm / --exe): programs executed that match */
	char match_comm[16]; /* comm to match; "" = none */
	__u64 match_dev;     /* kernel dev_t (major << 20 | minor) of --exe; 0 = none */
	__u64 match_ino;
	__u32 match_follow;  /* --follow-forks: a match's children stay traced whatever
			      * they execute */
	__u32 max_matches;   /* matched targets alive at once, at most */
	__u32 hold_exec;     /* stop a target at its exec until resolved (the
			      * daemon can continue it: CAP_KILL) */
	__u32 stack_ids;     /* send known stacks as ids (MT_SF_ID) */
	__u32 inflight_mask; /* in-flight slots - 1 (bpf/inflight.bpf.h), at most
			      * MT_INFLIGHT_SLOTS - 1 */
};

/* Threads' in-flight records reached by tid modulo this (a power of two,
 * above the kernel's default pid_max); fewer only for tests
 * (MEMTRACE_INFLIGHT_SLOTS). */
#define MT_INFLIGHT_SLOTS 65536

#endif
