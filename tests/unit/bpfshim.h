/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the BPF headers of the stack walkers (bpf/window.bpf.h,
 * bpf/unwind.bpf.h, bpf/stackid.bpf.h) need to compile as user-space C, so
 * that a unit test runs the very functions the kernel runs
 * (tests/unit/test_walk.c): the kernel's types from the UAPI headers instead
 * of vmlinux.h, libbpf's section and map-definition macros as plain C (a map
 * definition becomes a global variable, whose address names the map), and
 * the helpers the walkers call. bpf_loop is a plain loop; the test defines
 * bpf_map_lookup_elem over its fake maps and bpf_probe_read_user over the
 * memory it recorded.
 */
#ifndef MEMTRACE_BPFSHIM_H
#define MEMTRACE_BPFSHIM_H

#include <linux/bpf.h> /* BPF_MAP_TYPE_*, BPF_F_* */
#include <linux/types.h>
#include <stddef.h> /* NULL */

#define SEC(name)
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#define __noinline __attribute__((noinline))

/* libbpf's (bpf/bpf_helpers.h): a map definition's fields as types */
#define __uint(name, val)  int(*name)[val]
#define __type(name, val)  __typeof__(val) *name
#define __array(name, val) __typeof__(val) *name[]

/* the test's fake maps: the map's address (&uw_procs, ...) names it */
void *bpf_map_lookup_elem(void *map, const void *key);

/* the test's recorded memory: 0, or a negative error with dst zeroed */
long bpf_probe_read_user(void *dst, __u32 size, const void *unsafe_ptr);

/* bpf/unwind.bpf.h's mask in BPF assembly, as C */
#define MT_MASK_127(idx) ((idx) &= 127)

/* The kernel's bpf_loop: calls cb(0..nr_loops - 1, ctx) until it returns 1;
 * returns the calls made. */
static inline long bpf_loop(__u32 nr_loops, long (*cb)(__u64 index, void *ctx), void *ctx,
			    __u64 flags)
{
	__u32 i;

	(void)flags;
	for (i = 0; i < nr_loops && i < (1u << 23);) {
		if (cb(i++, ctx))
			break;
	}
	return (long)i;
}

#endif
