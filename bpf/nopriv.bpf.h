/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * No program of ours runs on a private stack (docs/design.md, "No private
 * stack for our programs"). Since 6.13 the verifier, with the x86 JIT,
 * gives a kprobe, tracepoint or raw tracepoint program whose function needs
 * 64 bytes of stack or more a stack of its own per CPU instead of the
 * task's, unless some function of the program has a tail call
 * (kernel/bpf/verifier.c, check_max_stack_depth). A uprobe's programs run
 * with migration disabled but preemptible: a program preempted on a CPU
 * has its stack written over by the next run of the same program there.
 *
 * Each program without a tail call of its own starts with this one: never
 * taken (no_priv_stack_trap is 0 in the object and the daemon never sets
 * it; the verifier reads it from the frozen .rodata and does not even
 * follow the branch), but in the program's instructions, where the kernel
 * looks for one. Were it taken, the slot is past the end of every program
 * array: the call falls through. tests/unit/test_nopriv.c checks every
 * program of the objects has a tail call.
 */
#ifndef MEMTRACE_NOPRIV_BPF_H
#define MEMTRACE_NOPRIV_BPF_H

const volatile __u32 no_priv_stack_trap = 0;

#define MT_NO_PRIV_STACK_SLOT 0xffffffffu

/* prog_array: a program array of the program's own type (a tail call only
 * reaches programs of the caller's type, and the kernel refuses a program
 * that uses an array another type owns). */
#define MT_NO_PRIV_STACK(ctx, prog_array)                                                          \
	do {                                                                                       \
		if (no_priv_stack_trap)                                                            \
			bpf_tail_call(ctx, prog_array, MT_NO_PRIV_STACK_SLOT);                     \
	} while (0)

#endif
