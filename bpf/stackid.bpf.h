/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
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
 * Included once by bpf/memtrace.bpf.c.
 */
#ifndef MEMTRACE_STACKID_BPF_H
#define MEMTRACE_STACKID_BPF_H

struct stack_id_entry {
	__u32 tgid;
	__u32 nframes;
	__u64 frames[MT_ID_FRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* an element is allocated when a stack registers */
	__uint(max_entries, MT_STACK_IDS);
	__type(key, __u64);
	__type(value, struct stack_id_entry);
} stack_ids SEC(".maps");

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
