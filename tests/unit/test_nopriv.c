// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * No BPF program of ours may be given a private stack (bpf/nopriv.bpf.h,
 * docs/design.md "No private stack for our programs"): the kernel gives none
 * to a program with a tail call in any of its functions, so every program of
 * memtrace.bpf.o and bench.bpf.o must have one in its own instructions, or
 * use no stack at all (no r10, no function of its own: depth 0, below the
 * kernel's 64 bytes whatever it does). Read from the objects as built, with
 * libbpf, before any load: what the kernel's verifier is given.
 */
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "unit.h"

#ifndef MT_BPF_OBJS_DIR
#define MT_BPF_OBJS_DIR "build"
#endif

/* 1: a tail call among insns; 0: none, but no stack either (no r10 and no
 * call or reference to a function of the object); -1: neither. */
static int nopriv_rule(const struct bpf_insn *insns, size_t n)
{
	int stack = 0;

	for (size_t i = 0; i < n; i++) {
		const struct bpf_insn *in = &insns[i];

		if (in->code == (BPF_JMP | BPF_CALL) && in->src_reg == 0 &&
		    in->imm == BPF_FUNC_tail_call)
			return 1;
		if (in->dst_reg == BPF_REG_10 || in->src_reg == BPF_REG_10)
			stack = 1;
		if (in->code == (BPF_JMP | BPF_CALL) && in->src_reg == BPF_PSEUDO_CALL)
			stack = 1; /* a function of its own: its stack counts */
		if (in->code == (BPF_LD | BPF_IMM | BPF_DW) && in->src_reg == BPF_PSEUDO_FUNC)
			stack = 1; /* a callback (bpf_loop) */
	}
	return stack ? -1 : 0;
}

/* The rule on programs made by hand: it can fail. */
TEST(rule)
{
	const struct bpf_insn empty[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	const struct bpf_insn stack[] = {
	    {.code = BPF_STX | BPF_MEM | BPF_DW,
	     .dst_reg = BPF_REG_10,
	     .src_reg = BPF_REG_1,
	     .off = -8},
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	const struct bpf_insn subprog[] = {
	    {.code = BPF_JMP | BPF_CALL, .src_reg = BPF_PSEUDO_CALL, .imm = 1},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	const struct bpf_insn tail[] = {
	    {.code = BPF_STX | BPF_MEM | BPF_DW,
	     .dst_reg = BPF_REG_10,
	     .src_reg = BPF_REG_1,
	     .off = -8},
	    {.code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_tail_call},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	/* a call to a function of the object numbered 12 is not a tail call */
	const struct bpf_insn pseudo12[] = {
	    {.code = BPF_STX | BPF_MEM | BPF_DW,
	     .dst_reg = BPF_REG_10,
	     .src_reg = BPF_REG_1,
	     .off = -8},
	    {.code = BPF_JMP | BPF_CALL, .src_reg = BPF_PSEUDO_CALL, .imm = BPF_FUNC_tail_call},
	    {.code = BPF_JMP | BPF_EXIT},
	};

	CHECK(nopriv_rule(empty, 2) == 0);
	CHECK(nopriv_rule(stack, 3) == -1);
	CHECK(nopriv_rule(subprog, 2) == -1);
	CHECK(nopriv_rule(tail, 3) == 1);
	CHECK(nopriv_rule(pseudo12, 3) == -1);
}

/* Every program of the object at path follows the rule; returns how many it
 * has, and sets *seen bit i for each name of want[] found. */
static int check_object(const char *path, const char *const *want, unsigned *seen)
{
	struct bpf_object *obj = bpf_object__open_file(path, NULL);
	struct bpf_program *prog;
	int n = 0;

	if (!obj) {
		fprintf(stderr, "cannot open %s (make %s)\n", path, path);
		CHECK(obj != NULL);
		return 0;
	}
	bpf_object__for_each_program(prog, obj)
	{
		const char *name = bpf_program__name(prog);
		int r = nopriv_rule(bpf_program__insns(prog), bpf_program__insn_cnt(prog));

		if (r < 0)
			fprintf(
			    stderr,
			    "%s: program %s (%s) uses a stack and has no tail call: the kernel "
			    "may give it a private stack (bpf/nopriv.bpf.h, MT_NO_PRIV_STACK)\n",
			    path, name, bpf_program__section_name(prog));
		CHECK(r >= 0);
		for (unsigned i = 0; want[i]; i++)
			if (!strcmp(want[i], name))
				*seen |= 1u << i;
		n++;
	}
	bpf_object__close(obj);
	return n;
}

TEST(memtrace_programs)
{
	/* one of each kind, so that a wrong object cannot pass by having none */
	const char *const want[] = {
	    "alloc_enter", "alloc_return", "free_enter", "stage_emit", "stage_emit_tp",
	    "walk_dwarf",  "on_exec",	   "mmap_enter", "ldso_state", NULL};
	unsigned seen = 0;

	CHECK(check_object(MT_BPF_OBJS_DIR "/memtrace.bpf.o", want, &seen) >= 20);
	CHECK_EQ_U64(seen, (1u << 9) - 1);
}

TEST(bench_programs)
{
	const char *const want[] = {"empty_enter", "minimal_enter", "minimal_return",
				    "minimal_free", NULL};
	unsigned seen = 0;

	CHECK(check_object(MT_BPF_OBJS_DIR "/bench.bpf.o", want, &seen) >= 4);
	CHECK_EQ_U64(seen, (1u << 4) - 1);
}

UNIT_MAIN()
