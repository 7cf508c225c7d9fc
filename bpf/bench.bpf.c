// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * make bench's reference programs, an object of their own (build/bench.bpf.o,
 * its skeleton bench.skel.h), never in memtraced: only the test build
 * (make's $(O)/tests/memtraced-hooks, MEMTRACE_TEST_HOOKS) loads it, beside
 * memtrace.bpf.c's object, and attaches these programs instead of memtrace's
 * own on the same probe sites when MEMTRACE_BENCH_PROGRAMS names them
 * (tests/bench/bench.py; src/daemon/attach/probes.c): the same probes with
 * nothing in them, and a minimal ring buffer tracer.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "memtrace/event.h"
#include "nopriv.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * memtrace.bpf.c's ring buffer and lost counters: the daemon gives this
 * object the maps of the one it loaded (bpf_map__reuse_fd) before loading
 * it, so the minimal tracer's records reach the daemon like memtrace's.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 32 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MT_LOST_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

static __always_inline void count_lost(__u32 slot)
{
	__u64 *n = bpf_map_lookup_elem(&lost, &slot);

	if (n)
		__sync_fetch_and_add(n, 1);
}

/* The never-taken tail call of the programs that use a stack
 * (bpf/nopriv.bpf.h): an array of their type, always empty. The empty
 * programs use none: no private stack for them either. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} nopriv_kprobe SEC(".maps");

/*
 * The uprobe floor (make bench, MEMTRACE_BENCH_PROGRAMS=empty): the same
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

/*
 * A minimal ring buffer tracer on the same probes (make bench,
 * MEMTRACE_BENCH_PROGRAMS=minimal), what a tracer of this kind cannot do
 * without: the size stashed in a hash map keyed by thread id, one record
 * per call, no stack, no nesting, no wakeup. Its records are events the
 * daemon counts, so the bench checks it saw every call.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} minimal_sizes SEC(".maps");

static __always_inline void minimal_emit(__u8 kind, __u64 addr, __u64 size)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct mt_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);

	if (!ev) {
		count_lost(kind);
		return;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->tgid = id >> 32;
	ev->tid = (__u32)id;
	ev->stack_end = MT_STACK_NONE;
	ev->time_ns = bpf_ktime_get_ns();
	ev->addr = addr;
	ev->size = size;
	bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
}

SEC("uprobe")
int minimal_enter(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 size = PT_REGS_PARM1(ctx);

	MT_NO_PRIV_STACK(ctx, &nopriv_kprobe);
	bpf_map_update_elem(&minimal_sizes, &tid, &size, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int minimal_return(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *size = bpf_map_lookup_elem(&minimal_sizes, &tid), n;

	MT_NO_PRIV_STACK(ctx, &nopriv_kprobe);
	if (!size)
		return 0;
	n = *size;
	bpf_map_delete_elem(&minimal_sizes, &tid);
	minimal_emit(MT_EV_ALLOC, PT_REGS_RC(ctx), n);
	return 0;
}

SEC("uprobe")
int minimal_free(struct pt_regs *ctx)
{
	__u64 addr = PT_REGS_PARM1(ctx);

	MT_NO_PRIV_STACK(ctx, &nopriv_kprobe);
	if (addr)
		minimal_emit(MT_EV_FREE, addr, 0);
	return 0;
}
