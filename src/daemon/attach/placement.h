/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Where to put an entry probe in a function. A uprobe costs one trap when
 * the kernel emulates the probed instruction (push of a register, direct
 * jmp, call or jcc, nop) and two when it must single-step it out of line
 * (docs/design.md). placement_decide() decodes a function's first
 * instructions with capstone and moves the probe forward to the first
 * emulated one when that is provably the same as probing the entry: the
 * instructions skipped are straight-line, touch no memory that can fault,
 * leave the arguments in known registers, move the stack pointer by a known
 * amount, and nothing in the function branches into them. Pure: bytes in,
 * decision out (the ELF side is in probesite.c).
 */
#ifndef MEMTRACE_PLACEMENT_H
#define MEMTRACE_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

/* x86-64 general registers in hardware order (rax 0 ... r15 15). */
enum placement_gpr {
	GPR_RAX,
	GPR_RCX,
	GPR_RDX,
	GPR_RBX,
	GPR_RSP,
	GPR_RBP,
	GPR_RSI,
	GPR_RDI,
	GPR_R8,
	GPR_R9,
	GPR_R10,
	GPR_R11,
	GPR_R12,
	GPR_R13,
	GPR_R14,
	GPR_R15,
	GPR_COUNT,
	GPR_NONE = 0xff,
};

#define PLACEMENT_MAX_ARGS 3
/* Stack words the BPF cookie can carry (8 bits, include/memtrace/event.h). */
#define PLACEMENT_MAX_SP_WORDS 255

/* What the probe's BPF program needs at the probe. */
struct placement_need {
	uint8_t nargs;			    /* it reads arguments 0 .. nargs-1 (0-3) */
	uint8_t used;			    /* bit i: argument i is read */
	uint8_t arg_in[PLACEMENT_MAX_ARGS]; /* register of argument i at entry (rdi, rsi,
					     * rdx; a dispatched-to function: rsi first) */
	uint8_t has_return;		    /* a return probe shares the place: the stack
					     * pointer must be the entry's */
};

struct placement {
	uint32_t offset;		     /* bytes from the function's start */
	uint32_t sp_words;		     /* 8-byte words pushed or reserved before it */
	uint8_t arg_reg[PLACEMENT_MAX_ARGS]; /* register holding argument i there */
	char insn[48];			     /* the probed instruction ("js 0x1cf450") */
	char why[96];			     /* at +0: why not further; else empty */
};

/* Fill need for the usual ABI: arguments in rdi, rsi, rdx; used is a mask. */
void placement_need_abi(struct placement_need *need, uint8_t used, int has_return);

/*
 * Decide where to probe the function of len bytes at vaddr (its whole
 * code: the symbol's size). Always succeeds: out->offset is 0 (with the
 * reason in out->why) when no later place is safe.
 */
void placement_decide(const uint8_t *code, size_t len, uint64_t vaddr,
		      const struct placement_need *need, struct placement *out);

/* Probe at the entry (+0) for the reason why; the entry's instruction named. */
void placement_entry(const uint8_t *code, size_t len, uint64_t vaddr,
		     const struct placement_need *need, const char *why, struct placement *out);

/*
 * Is the instruction at code (len bytes available) one the kernel emulates
 * at a uprobe? Returns its length, or 0. (arch/x86/kernel/uprobes.c:
 * branch_setup_xol_ops and push_setup_xol_ops; docs/design.md.)
 */
size_t placement_emulated(const uint8_t *code, size_t len);

/*
 * Conservative scans of code that is not decoded: does any byte position of
 * code (at vaddr) start a direct branch or call whose target is in
 * [lo, hi]? rel32 forms (e8, e9, 0f 8x) for placement_scan_rel32, rel8
 * forms (eb, 7x) for placement_scan_rel8. A hit may be a false positive
 * (data, or the middle of another instruction): callers then keep +0.
 */
int placement_scan_rel32(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t lo, uint64_t hi);
int placement_scan_rel8(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t lo, uint64_t hi);

/*
 * The first byte position of code (at vaddr) where a direct call, jmp or
 * jcc (rel32 or rel8) reaching target may start: 1 with its index in *at,
 * or 0. A byte scan, like the two above.
 */
int placement_find_branch(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t target,
			  size_t *at);

/*
 * Decode the function at vaddr linearly: 1 if one of its direct branches or
 * calls targets [lo, hi] or, with tables, it has an indirect jump of
 * unknown targets (a jump table: its targets are the function's own code),
 * 0 if none, -1 if it cannot be decoded to its end.
 */
int placement_branches_into(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t lo,
			    uint64_t hi, int tables);

/*
 * A dispatcher: a function that loads a pointer from memory and jumps
 * through it (CPython's PyObject_Free: "mov _PyObject(%rip),%rdi; jmp
 * *_PyObject+32(%rip)", or through _PyRuntime's address first). Followed
 * from its entry at runtime address addr, reading the target's memory with
 * read (8 bytes at a runtime address; 0 or -1) and taking every conditional
 * branch's fall-through. Returns 0 with the jump's target, the address of
 * the slot it was loaded from, and the register holding the first argument
 * (from rdi) there; -1 if the code is anything else.
 */
struct placement_dispatch {
	uint64_t target;   /* where it jumps (runtime address) */
	uint64_t slot;	   /* the memory the target was read from */
	uint64_t rdi_from; /* the memory rdi was last loaded from (the context), or 0 */
	uint8_t arg0_reg;  /* the register holding the first argument at the jump */
};
int placement_follow_dispatch(const uint8_t *code, size_t len, uint64_t addr,
			      int (*read)(void *ctx, uint64_t addr, uint64_t *value), void *ctx,
			      struct placement_dispatch *out);

/* "rdi", "rsi", ... for a register of enum placement_gpr. */
const char *placement_gpr_name(unsigned gpr);

#endif
