// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Probe placement (see placement.h). The instructions the kernel emulates
 * are recognized from their bytes, exactly as arch/x86/kernel/uprobes.c
 * does; everything else (lengths, operands, registers read and written)
 * comes from capstone. Invariant: a decision other than +0 holds only if
 * every check passed; any doubt keeps +0, which is always correct.
 */
#include "daemon/attach/placement.h"

#include <capstone/capstone.h>
#include <stdio.h>
#include <string.h>

/* The prefix skipped is short: a few instructions before the first push or jcc. */
#define MAX_SKIPPED_INSNS  8
#define MAX_SKIPPED_BYTES  48
#define MAX_FUNCTION_BYTES (1u << 20)

static const char *const gpr_names[GPR_COUNT] = {
    "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
    "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15",
};

const char *placement_gpr_name(unsigned gpr)
{
	return gpr < GPR_COUNT ? gpr_names[gpr] : "?";
}

void placement_need_abi(struct placement_need *need, uint8_t used, int has_return)
{
	static const uint8_t abi[PLACEMENT_MAX_ARGS] = {GPR_RDI, GPR_RSI, GPR_RDX};

	memset(need, 0, sizeof(*need));
	need->used = used;
	for (int i = 0; i < PLACEMENT_MAX_ARGS; i++) {
		need->arg_in[i] = abi[i];
		if (used & (1u << i))
			need->nargs = (uint8_t)(i + 1);
	}
	need->has_return = (uint8_t) !!has_return;
}

/* The general register a capstone register is part of, or GPR_NONE. */
static unsigned gpr_of(unsigned reg)
{
	static const struct {
		uint16_t reg;
		uint8_t gpr;
	} map[] = {
	    {X86_REG_RAX, GPR_RAX},  {X86_REG_EAX, GPR_RAX},  {X86_REG_AX, GPR_RAX},
	    {X86_REG_AL, GPR_RAX},   {X86_REG_AH, GPR_RAX},   {X86_REG_RCX, GPR_RCX},
	    {X86_REG_ECX, GPR_RCX},  {X86_REG_CX, GPR_RCX},   {X86_REG_CL, GPR_RCX},
	    {X86_REG_CH, GPR_RCX},   {X86_REG_RDX, GPR_RDX},  {X86_REG_EDX, GPR_RDX},
	    {X86_REG_DX, GPR_RDX},   {X86_REG_DL, GPR_RDX},   {X86_REG_DH, GPR_RDX},
	    {X86_REG_RBX, GPR_RBX},  {X86_REG_EBX, GPR_RBX},  {X86_REG_BX, GPR_RBX},
	    {X86_REG_BL, GPR_RBX},   {X86_REG_BH, GPR_RBX},   {X86_REG_RSP, GPR_RSP},
	    {X86_REG_ESP, GPR_RSP},  {X86_REG_SP, GPR_RSP},   {X86_REG_SPL, GPR_RSP},
	    {X86_REG_RBP, GPR_RBP},  {X86_REG_EBP, GPR_RBP},  {X86_REG_BP, GPR_RBP},
	    {X86_REG_BPL, GPR_RBP},  {X86_REG_RSI, GPR_RSI},  {X86_REG_ESI, GPR_RSI},
	    {X86_REG_SI, GPR_RSI},   {X86_REG_SIL, GPR_RSI},  {X86_REG_RDI, GPR_RDI},
	    {X86_REG_EDI, GPR_RDI},  {X86_REG_DI, GPR_RDI},   {X86_REG_DIL, GPR_RDI},
	    {X86_REG_R8, GPR_R8},    {X86_REG_R8D, GPR_R8},   {X86_REG_R8W, GPR_R8},
	    {X86_REG_R8B, GPR_R8},   {X86_REG_R9, GPR_R9},    {X86_REG_R9D, GPR_R9},
	    {X86_REG_R9W, GPR_R9},   {X86_REG_R9B, GPR_R9},   {X86_REG_R10, GPR_R10},
	    {X86_REG_R10D, GPR_R10}, {X86_REG_R10W, GPR_R10}, {X86_REG_R10B, GPR_R10},
	    {X86_REG_R11, GPR_R11},  {X86_REG_R11D, GPR_R11}, {X86_REG_R11W, GPR_R11},
	    {X86_REG_R11B, GPR_R11}, {X86_REG_R12, GPR_R12},  {X86_REG_R12D, GPR_R12},
	    {X86_REG_R12W, GPR_R12}, {X86_REG_R12B, GPR_R12}, {X86_REG_R13, GPR_R13},
	    {X86_REG_R13D, GPR_R13}, {X86_REG_R13W, GPR_R13}, {X86_REG_R13B, GPR_R13},
	    {X86_REG_R14, GPR_R14},  {X86_REG_R14D, GPR_R14}, {X86_REG_R14W, GPR_R14},
	    {X86_REG_R14B, GPR_R14}, {X86_REG_R15, GPR_R15},  {X86_REG_R15D, GPR_R15},
	    {X86_REG_R15W, GPR_R15}, {X86_REG_R15B, GPR_R15},
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (map[i].reg == reg)
			return map[i].gpr;
	}
	return GPR_NONE;
}

static int is_gpr64(unsigned reg)
{
	switch (reg) {
	case X86_REG_RAX:
	case X86_REG_RCX:
	case X86_REG_RDX:
	case X86_REG_RBX:
	case X86_REG_RSP:
	case X86_REG_RBP:
	case X86_REG_RSI:
	case X86_REG_RDI:
	case X86_REG_R8:
	case X86_REG_R9:
	case X86_REG_R10:
	case X86_REG_R11:
	case X86_REG_R12:
	case X86_REG_R13:
	case X86_REG_R14:
	case X86_REG_R15:
		return 1;
	}
	return 0;
}

/* The 64-bit nops of arch/x86/include/asm/nops.h (x86_nops[1..8]). */
static const uint8_t kernel_nops[][8] = {
    {0x90},
    {0x66, 0x90},
    {0x0f, 0x1f, 0x00},
    {0x0f, 0x1f, 0x40, 0x00},
    {0x0f, 0x1f, 0x44, 0x00, 0x00},
    {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
    {0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00},
    {0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
};

/*
 * The kernel (6.x, x86-64) emulates: the nops above; 0x90 after 66/f3
 * prefixes; jmp rel8/rel32, call rel32, jcc rel8/rel32 (a 66 prefix is
 * refused; a segment or lock prefix makes the whole uprobe fail, so only a
 * bnd prefix is accepted here); push of a register, alone or with REX 0x41.
 */
size_t placement_emulated(const uint8_t *code, size_t len)
{
	size_t i = 0;

	for (size_t n = 1; n <= 8; n++) {
		if (len >= n && !memcmp(code, kernel_nops[n - 1], n))
			return n;
	}
	if (len >= 2 && (code[0] == 0x66 || code[0] == 0xf3) && code[1] == 0x90)
		return 2;
	if (len >= 1 && code[0] >= 0x50 && code[0] <= 0x57)
		return 1;
	if (len >= 2 && code[0] == 0x41 && code[1] >= 0x50 && code[1] <= 0x57)
		return 2;
	if (len >= 1 && code[0] == 0xf2) /* bnd */
		i = 1;
	if (len >= i + 2 && (code[i] == 0xeb || (code[i] >= 0x70 && code[i] <= 0x7f)))
		return i + 2;
	if (len >= i + 5 && (code[i] == 0xe9 || code[i] == 0xe8))
		return i + 5;
	if (len >= i + 6 && code[i] == 0x0f && code[i + 1] >= 0x80 && code[i + 1] <= 0x8f)
		return i + 6;
	return 0;
}

static csh capstone(void)
{
	static csh handle;
	static int state; /* 0: not opened, 1: open, -1: failed */

	if (!state) {
		state = cs_open(CS_ARCH_X86, CS_MODE_64, &handle) == CS_ERR_OK ? 1 : -1;
		if (state > 0)
			cs_option(handle, CS_OPT_DETAIL, CS_OPT_ON);
	}
	return state > 0 ? handle : 0;
}

/* Instructions that may be skipped: register arithmetic, moves, compares. */
static int skippable_id(unsigned id)
{
	switch (id) {
	case X86_INS_MOV:
	case X86_INS_MOVABS:
	case X86_INS_MOVZX:
	case X86_INS_MOVSX:
	case X86_INS_MOVSXD:
	case X86_INS_LEA:
	case X86_INS_TEST:
	case X86_INS_CMP:
	case X86_INS_AND:
	case X86_INS_OR:
	case X86_INS_XOR:
	case X86_INS_ADD:
	case X86_INS_SUB:
	case X86_INS_SHL:
	case X86_INS_SHR:
	case X86_INS_SAR:
	case X86_INS_NEG:
	case X86_INS_NOT:
	case X86_INS_INC:
	case X86_INS_DEC:
	case X86_INS_IMUL:
	case X86_INS_MUL:
	case X86_INS_NOP:
	case X86_INS_ENDBR64:
		return 1;
	}
	return 0;
}

/* Entry state carried across the skipped instructions. */
struct walk {
	uint16_t holds[PLACEMENT_MAX_ARGS]; /* bit g: register g holds argument i */
	uint32_t sp_words;
	uint32_t at; /* offset of the instruction looked at */
};

/*
 * Account for one skipped instruction; 0, or -1 with a reason when it may
 * not be skipped (then the probe stays where it was).
 */
static int skip_one(csh h, const cs_insn *in, struct walk *w, const struct placement_need *need,
		    char *why, size_t whylen)
{
	const cs_x86 *x = &in->detail->x86;
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;
	int copy_from = -1, copy_to = -1;
	char what[48];

	snprintf(what, sizeof(what), "%.15s at +%u", in->mnemonic, (unsigned)w->at);
	if (!skippable_id(in->id)) {
		snprintf(why, whylen, "%s is neither emulated nor skippable", what);
		return -1;
	}
	if (in->id == X86_INS_ENDBR64 || in->id == X86_INS_NOP)
		return 0; /* no effect on registers or memory */
	if (x->prefix[0] || x->prefix[3] || (x->prefix[1] && x->prefix[1] != X86_PREFIX_FS)) {
		snprintf(why, whylen, "%s has a prefix", what);
		return -1;
	}
	for (int i = 0; i < x->op_count; i++) {
		const cs_x86_op *op = &x->operands[i];

		if (op->type != X86_OP_MEM || in->id == X86_INS_LEA)
			continue;
		/* a store could clobber the return address or fault; a load is
		 * safe from module data (rip) or thread-local storage (fs) */
		if (op->access & CS_AC_WRITE) {
			snprintf(why, whylen, "%s writes memory", what);
			return -1;
		}
		if (!((op->mem.base == X86_REG_RIP && op->mem.index == X86_REG_INVALID) ||
		      op->mem.segment == X86_REG_FS)) {
			snprintf(why, whylen, "%s reads memory that may fault", what);
			return -1;
		}
	}
	if (cs_regs_access(h, in, rd, &nrd, wr, &nwr) != CS_ERR_OK) {
		snprintf(why, whylen, "%s: registers unknown", what);
		return -1;
	}
	/* mov %r64, %r64 copies an argument; anything else written destroys it */
	if (in->id == X86_INS_MOV && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
	    x->operands[1].type == X86_OP_REG && is_gpr64(x->operands[0].reg) &&
	    is_gpr64(x->operands[1].reg)) {
		copy_to = (int)gpr_of(x->operands[0].reg);
		copy_from = (int)gpr_of(x->operands[1].reg);
	}
	for (int i = 0; i < nwr; i++) {
		unsigned g = gpr_of(wr[i]);

		if (g == GPR_NONE)
			continue;
		if (g == GPR_RSP) {
			/* sub $imm, %rsp: a known stack reservation */
			if (in->id == X86_INS_SUB && x->op_count == 2 &&
			    x->operands[0].type == X86_OP_REG &&
			    x->operands[0].reg == X86_REG_RSP &&
			    x->operands[1].type == X86_OP_IMM && x->operands[1].imm > 0 &&
			    x->operands[1].imm % 8 == 0 &&
			    w->sp_words + x->operands[1].imm / 8 <= PLACEMENT_MAX_SP_WORDS &&
			    !need->has_return) {
				w->sp_words += (uint32_t)(x->operands[1].imm / 8);
				continue;
			}
			snprintf(why, whylen, "%.30s moves the stack pointer%s", what,
				 need->has_return ? " (its return probe needs the entry's)" : "");
			return -1;
		}
		for (int a = 0; a < PLACEMENT_MAX_ARGS; a++) {
			int had_source = copy_from >= 0 && (w->holds[a] & (1u << copy_from));

			if ((int)g == copy_to && had_source)
				w->holds[a] |= (uint16_t)(1u << g);
			else
				w->holds[a] &= (uint16_t) ~(1u << g);
		}
	}
	return 0;
}

static void describe(const cs_insn *in, char *buf, size_t len)
{
	snprintf(buf, len, "%.15s%s%.30s", in->mnemonic, in->op_str[0] ? " " : "", in->op_str);
}

/* A direct branch or call's target, or 0; *indirect for jmp through a register/table. */
static uint64_t branch_target(const cs_insn *in, int *indirect)
{
	const cs_x86 *x = &in->detail->x86;
	int branch = in->id == X86_INS_XBEGIN;

	*indirect = 0;
	for (int i = 0; i < in->detail->groups_count; i++) {
		uint8_t g = in->detail->groups[i];

		branch |= g == CS_GRP_JUMP || g == CS_GRP_CALL;
	}
	if (!branch || !x->op_count)
		return 0;
	if (x->operands[0].type == X86_OP_IMM)
		return (uint64_t)x->operands[0].imm;
	*indirect = in->id == X86_INS_JMP;
	return 0;
}

/* An instruction that ends the block before it (so a writer is not looked for past it). */
static int ends_block(const cs_insn *in)
{
	for (int i = 0; i < in->detail->groups_count; i++) {
		uint8_t g = in->detail->groups[i];

		if (g == CS_GRP_JUMP || g == CS_GRP_RET || g == CS_GRP_IRET || g == CS_GRP_INT)
			return 1;
	}
	return 0;
}

/* Does the instruction compute an address from a table: a memory operand with an index? */
static int indexed(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	for (int i = 0; i < x->op_count; i++) {
		if (x->operands[i].type == X86_OP_MEM &&
		    x->operands[i].mem.index != X86_REG_INVALID)
			return 1;
	}
	return 0;
}

/*
 * An indirect jmp of unknown targets: a jump table. Compilers look the
 * target up right before the jump, in the same block: an indexed load
 * (jmp *table(,%rax,8), or movslq (%rdx,%rax,4),%rax) and for PIC tables an
 * add of the table's base. A jmp through a register loaded without an index
 * (or set outside the block) or through disp(%reg) is a tail call through a
 * function pointer.
 */
static int is_jump_table(const cs_insn *insns, size_t i)
{
	const cs_x86_op *op = &insns[i].detail->x86.operands[0];
	unsigned reg;

	if (op->type == X86_OP_MEM)
		return op->mem.index != X86_REG_INVALID;
	if (op->type != X86_OP_REG)
		return 1;
	reg = gpr_of(op->reg);
	for (size_t k = i; k-- > 0 && i - k <= 6;) {
		const cs_insn *in = &insns[k];
		const cs_x86 *x = &in->detail->x86;

		if (ends_block(in))
			return 0;
		if (x->op_count >= 1 && x->operands[0].type == X86_OP_REG &&
		    gpr_of(x->operands[0].reg) == reg && (x->operands[0].access & CS_AC_WRITE)) {
			if (in->id == X86_INS_MOV && x->op_count == 2 &&
			    x->operands[1].type == X86_OP_REG) {
				reg = gpr_of(x->operands[1].reg); /* follow the copy */
				continue;
			}
			return in->id != X86_INS_MOV || indexed(in);
		}
	}
	return 0;
}

int placement_branches_into(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t lo,
			    uint64_t hi, int tables)
{
	csh h = capstone();
	cs_insn *insns = NULL;
	size_t n, i, covered = 0;
	int rc = 0;

	if (!h || !len || len > MAX_FUNCTION_BYTES)
		return -1;
	n = cs_disasm(h, code, len, vaddr, 0, &insns);
	for (i = 0; i < n; i++) {
		int indirect;
		uint64_t t = branch_target(&insns[i], &indirect);

		covered += insns[i].size;
		if ((t && t >= lo && t <= hi) || (tables && indirect && is_jump_table(insns, i)))
			rc = 1;
	}
	if (covered != len)
		rc = -1;
	if (insns)
		cs_free(insns, n);
	return rc;
}

int placement_scan_rel32(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t lo, uint64_t hi)
{
	for (size_t p = 0; p + 5 <= len; p++) {
		int32_t rel;
		size_t end;

		if (code[p] == 0xe8 || code[p] == 0xe9) {
			end = p + 5;
			memcpy(&rel, code + p + 1, 4);
		} else if (code[p] == 0x0f && p + 6 <= len && (code[p + 1] & 0xf0) == 0x80) {
			end = p + 6;
			memcpy(&rel, code + p + 2, 4);
		} else {
			continue;
		}
		uint64_t t = vaddr + end + (uint64_t)(int64_t)rel;

		if (t >= lo && t <= hi)
			return 1;
	}
	return 0;
}

int placement_scan_rel8(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t lo, uint64_t hi)
{
	for (size_t p = 0; p + 2 <= len; p++) {
		if (code[p] != 0xeb && (code[p] < 0x70 || code[p] > 0x7f) && code[p] != 0xe3 &&
		    (code[p] < 0xe0 || code[p] > 0xe2))
			continue; /* jmp, jcc, jrcxz, loop* */
		uint64_t t = vaddr + p + 2 + (uint64_t)(int64_t)(int8_t)code[p + 1];

		if (t >= lo && t <= hi)
			return 1;
	}
	return 0;
}

/* Does a direct branch or call starting at c (vaddr a, left bytes) reach target? */
static int branch_at(const uint8_t *c, size_t left, uint64_t a, uint64_t target)
{
	int32_t rel;

	if (left >= 5 && (c[0] == 0xe8 || c[0] == 0xe9)) {
		memcpy(&rel, c + 1, 4);
		return a + 5 + (uint64_t)(int64_t)rel == target;
	}
	if (left >= 6 && c[0] == 0x0f && (c[1] & 0xf0) == 0x80) {
		memcpy(&rel, c + 2, 4);
		return a + 6 + (uint64_t)(int64_t)rel == target;
	}
	if (left >= 2 && (c[0] == 0xeb || (c[0] >= 0x70 && c[0] <= 0x7f)))
		return a + 2 + (uint64_t)(int64_t)(int8_t)c[1] == target;
	return 0;
}

int placement_find_branch(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t target,
			  size_t *at)
{
	for (size_t p = 0; p < len; p++) {
		if (branch_at(code + p, len - p, vaddr + p, target)) {
			*at = p;
			return 1;
		}
	}
	return 0;
}

void placement_entry(const uint8_t *code, size_t len, uint64_t vaddr,
		     const struct placement_need *need, const char *why, struct placement *out)
{
	csh h = capstone();
	cs_insn *in = h ? cs_malloc(h) : NULL;

	memset(out, 0, sizeof(*out));
	for (int a = 0; a < PLACEMENT_MAX_ARGS; a++)
		out->arg_reg[a] = need->arg_in[a];
	snprintf(out->why, sizeof(out->why), "%s", why ? why : "");
	if (in && len && cs_disasm_iter(h, &code, &len, &vaddr, in))
		describe(in, out->insn, sizeof(out->insn));
	if (in)
		cs_free(in, 1);
}

void placement_decide(const uint8_t *code, size_t len, uint64_t vaddr,
		      const struct placement_need *need, struct placement *out)
{
	csh h = capstone();
	cs_insn *in = h ? cs_malloc(h) : NULL;
	const uint8_t *p = code;
	size_t left = len, ninsns = 0;
	uint64_t addr = vaddr;
	struct walk w = {0};
	uint8_t regs[PLACEMENT_MAX_ARGS];
	char why[96] = "", insn[48] = "";
	uint32_t at = 0;
	int found = 0;

	for (int a = 0; a < PLACEMENT_MAX_ARGS; a++) {
		regs[a] = need->arg_in[a];
		if (need->arg_in[a] < GPR_COUNT)
			w.holds[a] = (uint16_t)(1u << need->arg_in[a]);
	}
	if (!in) {
		placement_entry(code, len, vaddr, need, "no x86 decoder", out);
		return;
	}
	while (left && ninsns <= MAX_SKIPPED_INSNS && addr - vaddr <= MAX_SKIPPED_BYTES) {
		size_t emulated = placement_emulated(p, left);

		if (!cs_disasm_iter(h, &p, &left, &addr, in)) {
			snprintf(why, sizeof(why), "undecodable bytes at +%u", at);
			goto entry;
		}
		if (emulated && emulated == in->size) {
			found = 1;
			break;
		}
		w.at = at;
		if (skip_one(h, in, &w, need, why, sizeof(why)))
			goto entry;
		at += in->size;
		ninsns++;
	}
	if (!found) {
		snprintf(why, sizeof(why), "no emulated instruction in reach");
		goto entry;
	}
	if (!at)
		goto entry; /* the entry is emulated already */
	describe(in, insn, sizeof(insn));
	for (int a = 0; a < need->nargs; a++) {
		if (!(need->used & (1u << a)))
			continue;
		if (!w.holds[a]) {
			snprintf(why, sizeof(why), "argument %d is overwritten before %.40s at +%u",
				 a + 1, insn, at);
			goto entry;
		}
		/* its own register if still there, else the lowest that holds it */
		regs[a] = need->arg_in[a] < GPR_COUNT && (w.holds[a] & (1u << need->arg_in[a]))
			      ? need->arg_in[a]
			      : (uint8_t)__builtin_ctz(w.holds[a]);
	}
	switch (placement_branches_into(code, len, vaddr, vaddr + 1, vaddr + at, 1)) {
	case 0:
		break;
	case 1:
		snprintf(why, sizeof(why),
			 "a branch of the function reaches +1..+%u, or a jump table may", at);
		goto entry;
	default:
		snprintf(why, sizeof(why), "the function does not decode to its end");
		goto entry;
	}
	cs_free(in, 1);
	memset(out, 0, sizeof(*out));
	out->offset = at;
	out->sp_words = w.sp_words;
	memcpy(out->arg_reg, regs, sizeof(regs));
	memcpy(out->insn, insn, sizeof(insn));
	return;
entry:
	cs_free(in, 1);
	placement_entry(code, len, vaddr, need, why, out);
}

/* A memory operand's address, if its base is rip or a register of known value. */
static int mem_address(const cs_insn *in, const cs_x86_op *op, const uint64_t *val, uint16_t known,
		       uint64_t *addr)
{
	unsigned base;

	if (op->mem.index != X86_REG_INVALID || op->mem.segment != X86_REG_INVALID)
		return -1;
	if (op->mem.base == X86_REG_RIP) {
		*addr = in->address + in->size + (uint64_t)op->mem.disp;
		return 0;
	}
	base = gpr_of(op->mem.base);
	if (base == GPR_NONE || !(known & (1u << base)))
		return -1;
	*addr = val[base] + (uint64_t)op->mem.disp;
	return 0;
}

int placement_follow_dispatch(const uint8_t *code, size_t len, uint64_t addr,
			      int (*read)(void *ctx, uint64_t addr, uint64_t *value), void *ctx,
			      struct placement_dispatch *out)
{
	csh h = capstone();
	cs_insn *in = h ? cs_malloc(h) : NULL;
	uint64_t val[GPR_COUNT] = {0}, from[GPR_COUNT] = {0};
	uint16_t known = 0, arg0 = 1u << GPR_RDI;
	int rc = -1;

	if (!in)
		return -1;
	memset(out, 0, sizeof(*out));
	for (int n = 0; n < 16 && cs_disasm_iter(h, &code, &len, &addr, in); n++) {
		const cs_x86 *x = &in->detail->x86;
		const cs_x86_op *op0 = &x->operands[0], *op1 = &x->operands[1];
		unsigned dst, src;
		int indirect;
		uint64_t a;

		if (in->id == X86_INS_JMP && x->op_count == 1) {
			if (op0->type == X86_OP_MEM) {
				if (mem_address(in, op0, val, known, &a) ||
				    read(ctx, a, &out->target))
					break;
				out->slot = a;
			} else if (op0->type == X86_OP_REG &&
				   (src = gpr_of(op0->reg)) != GPR_NONE && (known & (1u << src))) {
				out->target = val[src];
				out->slot = from[src];
			} else {
				break;
			}
			if (!arg0)
				break;
			out->arg0_reg =
			    (uint8_t)((arg0 & (1u << GPR_RDI)) ? GPR_RDI : __builtin_ctz(arg0));
			out->rdi_from = (known & (1u << GPR_RDI)) ? from[GPR_RDI] : 0;
			rc = 0;
			break;
		}
		if (branch_target(in, &indirect) && in->id != X86_INS_JMP && in->id != X86_INS_CALL)
			continue; /* a conditional branch: the dispatch is its fall-through */
		if (in->id == X86_INS_TEST || in->id == X86_INS_CMP || in->id == X86_INS_NOP ||
		    in->id == X86_INS_ENDBR64)
			continue;
		if (in->id != X86_INS_MOV || x->op_count != 2 || op0->type != X86_OP_REG ||
		    !is_gpr64(op0->reg))
			break;
		dst = gpr_of(op0->reg);
		if (op1->type == X86_OP_REG && is_gpr64(op1->reg)) {
			src = gpr_of(op1->reg);
			val[dst] = val[src];
			from[dst] = from[src];
			known = (uint16_t)((known & ~(1u << dst)) | ((known >> src & 1u) << dst));
			arg0 = (uint16_t)((arg0 & ~(1u << dst)) | ((arg0 >> src & 1u) << dst));
			continue;
		}
		if (op1->type != X86_OP_MEM || mem_address(in, op1, val, known, &a) ||
		    read(ctx, a, &val[dst]))
			break;
		from[dst] = a;
		known |= (uint16_t)(1u << dst);
		arg0 &= (uint16_t) ~(1u << dst);
	}
	cs_free(in, 1);
	return rc;
}
