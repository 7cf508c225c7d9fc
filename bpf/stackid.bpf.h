/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A stack's id (stack_ids, bpf/stages.bpf.h): its hash, and the compare and
 * copy of its frames (included by memtrace.bpf.c). A header of its own so
 * that tests/unit/test_walk.c compiles it in user space (tests/unit/bpfshim.h).
 */
#ifndef MEMTRACE_STACKID_BPF_H
#define MEMTRACE_STACKID_BPF_H

struct stack_id_entry {
	__u32 tgid;
	__u32 nframes;
	__u64 frames[MT_ID_FRAMES];
};

/* The id of a stack: a hash of all of it, never 0. */
static __always_inline __u64 stack_hash(__u32 tgid, const __u64 *frames, __u32 n)
{
	__u64 h = ((__u64)tgid << 32 | n) * 0x9e3779b97f4a7c15ull;

#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < MT_ID_FRAMES; i++) {
		if (i >= n)
			break;
		h = (h ^ frames[i]) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return h ? h : 1;
}

/* Does e hold exactly this stack? */
static __always_inline int stack_entry_is(const struct stack_id_entry *e, __u32 tgid,
					  const __u64 *frames, __u32 n)
{
	if (e->tgid != tgid || e->nframes != n)
		return 0;
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < MT_ID_FRAMES; i++) {
		if (i >= n)
			break;
		if (e->frames[i] != frames[i])
			return 0;
	}
	return 1;
}

static __always_inline void stack_entry_fill(struct stack_id_entry *e, __u32 tgid,
					     const __u64 *frames, __u32 n)
{
	e->tgid = tgid;
	e->nframes = n;
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < MT_ID_FRAMES; i++) {
		if (i >= n)
			break;
		e->frames[i] = frames[i];
	}
}

#endif
