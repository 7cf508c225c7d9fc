/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The allocator call each thread is inside (docs/design.md, "One user call,
 * one event"), included by memtrace.bpf.c: a slot by thread id, or the
 * thread's task storage when another live thread's call holds the slot.
 */
#ifndef MEMTRACE_INFLIGHT_BPF_H
#define MEMTRACE_INFLIGHT_BPF_H

/*
 * Arguments of the allocator call a thread is inside. state: the calls
 * active (the depth: allocator entry points of this thread, 0: none) in its
 * low half, and in a slot of inflight_slots the thread that holds it in
 * the high half.
 */
struct inflight {
	__u64 state;
	__u64 start; /* a slot's holder: its task's start time (a tid is reused) */
	__u64 size;
	__u64 ptr; /* realloc: old block; posix_memalign: where the result goes */
	__u64 sp;  /* stack pointer at entry: tells nested calls from stale entries */
	__u32 func;
	__u32 spilled; /* a record in task storage, not a slot */
};

#define MT_DEPTH_MASK 0xffffffffull

/*
 * Per thread: the slot of its thread id (tid modulo the slots), found by an
 * array index the verifier inlines, a few instructions. A thread takes its
 * slot for a call with one compare-and-swap (idle to "held by this tid,
 * depth 1") and gives it back with one exchange; the slot keeps its last
 * holder, who alone may change it while a call is in flight (a thread that
 * exits or executes inside a call gives it back: inflight_drop). A slot
 * held by another live thread's call (a tid with the same residue) cannot
 * be taken: that call's record goes to the thread's task storage instead
 * (inflight below), and inflight_spilled counts such records in flight, so
 * that while it is 0 nobody looks there.
 * Task storage alone cost about 80 ns a lookup here (three a pair), the
 * slot a few.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MT_INFLIGHT_SLOTS);
	__type(key, __u32);
	__type(value, struct inflight);
} inflight_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct inflight);
} inflight SEC(".maps");

/* Records of calls in flight in task storage (not slots); calls that
 * ever went there (logged by the daemon at exit). */
volatile __s64 inflight_spilled;
volatile __u64 inflight_spills;

static __always_inline struct inflight *inflight_slot(__u32 tid)
{
	__u32 k = tid & cfg.inflight_mask & (MT_INFLIGHT_SLOTS - 1);

	return bpf_map_lookup_elem(&inflight_slots, &k);
}

/*
 * The record of the allocator call this thread is inside (depth > 0), or
 * NULL. It may be stale: a call whose return was never seen (longjmp out of
 * a signal handler); the callers tell by the stack pointer. The slot's
 * state is read in one load: its holder and depth change together.
 */
static __always_inline struct inflight *inflight_active(struct task_struct *task, __u32 tid)
{
	struct inflight *in = inflight_slot(tid);
	__u64 st;

	if (in) {
		st = *(volatile __u64 *)&in->state;
		if (st >> 32 == tid && (st & MT_DEPTH_MASK) && in->start == task->start_time)
			return in;
	}
	if (!inflight_spilled)
		return NULL;
	in = bpf_task_storage_get(&inflight, task, NULL, 0);
	return in && (in->state & MT_DEPTH_MASK) ? in : NULL;
}

/*
 * A record for a new outermost call, at depth 1: the thread's slot when it
 * is idle (or held by a thread of this tid that is gone), else its task
 * storage. NULL when none can be had (counted by the caller).
 */
static __always_inline struct inflight *inflight_begin(struct task_struct *task, __u32 tid)
{
	struct inflight *in = inflight_slot(tid);
	__u64 st;

	if (in) {
		st = *(volatile __u64 *)&in->state;
		if ((!(st & MT_DEPTH_MASK) || st >> 32 == tid) &&
		    __sync_val_compare_and_swap(&in->state, st, (__u64)tid << 32 | 1) == st) {
			in->start = task->start_time;
			in->spilled = 0;
			return in;
		}
	}
	in = bpf_task_storage_get(&inflight, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!in)
		return NULL;
	__sync_fetch_and_add(&inflight_spilled, 1);
	__sync_fetch_and_add(&inflight_spills, 1);
	in->state = 1;
	in->spilled = 1;
	return in;
}

/* The outermost call of in ended (its fields were read). */
static __always_inline void inflight_end(struct inflight *in, __u32 tid)
{
	if (in->spilled) {
		in->state = 0;
		__sync_fetch_and_add(&inflight_spilled, -1);
		return;
	}
	/* an exchange, not a store: the slot's fields were read before another
	 * thread can take it */
	__sync_lock_test_and_set(&in->state, (__u64)tid << 32);
}

/*
 * The thread leaves whatever allocator call it was in without returning:
 * it exits (a process exits while its threads are in malloc), or it
 * executes a program (a thread that is not the leader takes the leader's
 * tid and start time, and would take with them the record of a call the
 * leader died in). Its slot is given back, a record in task storage ended.
 */
static __always_inline void inflight_drop(struct task_struct *task, __u32 tid)
{
	struct inflight *in = inflight_slot(tid);
	__u64 st;

	if (in) {
		st = *(volatile __u64 *)&in->state;
		if (st >> 32 == tid && (st & MT_DEPTH_MASK))
			__sync_val_compare_and_swap(&in->state, st, (__u64)tid << 32);
	}
	if (!inflight_spilled)
		return;
	in = bpf_task_storage_get(&inflight, task, NULL, 0);
	if (in && (in->state & MT_DEPTH_MASK)) {
		in->state = 0;
		__sync_fetch_and_add(&inflight_spilled, -1);
	}
}

/*
 * Is this thread inside an allocator call already? An entry whose stack
 * pointer is below (or, for a tail call, equal to) the recorded one is nested;
 * one above it is a leftover of a call whose return was never seen.
 */
static __always_inline struct inflight *inside_allocator(struct task_struct *task, __u64 sp)
{
	struct inflight *in = inflight_active(task, (__u32)bpf_get_current_pid_tgid());

	if (in && sp <= in->sp)
		return in;
	return NULL;
}

/*
 * A call entering the allocator at sp: 1 when it is nested in a call of
 * this thread (whose depth it bumps), else 0 with *out the record of the new
 * outermost call, or NULL when none can be had (counted). A stale record is
 * the thread's own to reuse.
 */
static __always_inline int inflight_enter(struct task_struct *task, __u64 sp, struct inflight **out)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct inflight *in = inflight_active(task, tid);

	if (in && sp <= in->sp) {
		in->state++;
		return 1;
	}
	if (in) {
		in->state = (in->state & ~MT_DEPTH_MASK) | 1;
	} else {
		in = inflight_begin(task, tid);
		if (!in)
			count_lost(0);
	}
	*out = in;
	return 0;
}

#endif
