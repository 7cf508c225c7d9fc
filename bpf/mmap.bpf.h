/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Anonymous mmaps a traced target makes outside its allocator (CPython's
 * pymalloc arenas): the mmap and munmap syscall tracepoints, for the targets
 * in "mmaptrace".
 * Included once by bpf/memtrace.bpf.c, after the maps and helpers it uses.
 */
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

	MT_NO_PRIV_STACK(ctx, &stages_tp);
	if (!mmap_traced(id >> 32))
		return 0;
	addr = ctx->args[0];
	len = (ctx->args[1] + MT_PAGE_MASK) & ~MT_PAGE_MASK;
	prot = ctx->args[2];
	flags = ctx->args[3];
	if (!len || inside_allocator(bpf_get_current_task_btf(), user_sp()))
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
	struct pt_regs *regs;

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
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	return stages_begin(ctx, &stages_tp, MT_EV_ALLOC, MT_FN_MMAP, addr, 0, len,
			    PT_REGS_IP(regs), PT_REGS_SP(regs), PT_REGS_FP(regs));
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

	MT_NO_PRIV_STACK(ctx, &stages_tp);
	if (!mmap_traced(id >> 32))
		return 0;
	addr = ctx->args[0];
	len = (ctx->args[1] + MT_PAGE_MASK) & ~MT_PAGE_MASK;
	if (!len || (addr & MT_PAGE_MASK))
		return 0; /* the call fails with EINVAL */
	if (inside_allocator(bpf_get_current_task_btf(), user_sp()))
		return 0;
	emit_small(MT_EV_FREE, MT_FN_MMAP, addr, 0, len);
	return 0;
}
