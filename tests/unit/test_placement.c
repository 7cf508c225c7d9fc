// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of probe placement on byte sequences: the first instructions of
 * real allocator functions (glibc, jemalloc, tcmalloc, mimalloc, libstdc++,
 * pyenv CPython 3.10-3.13, Debian's python3.11), each cut at an instruction
 * boundary and ended with ret; then adversarial prologues (a branch back
 * into the skipped code, an argument overwritten, endbr64, a stack
 * reservation with and without a return probe, memory that may fault, a
 * jump table, unknown and undecodable instructions); the kernel's emulated
 * forms; the dispatcher follower over a fake memory; the byte scans; and the
 * ELF side on the machine's libc: free placed on an emulated instruction
 * past its entry, the same answer twice (cached), and +0 when asked to.
 */
#include "daemon/elf/elfmod.h"
#include "daemon/attach/placement.h"
#include "daemon/attach/probesite.h"
#include "unit.h"

#include <stdlib.h>
#include <unistd.h>

#define RET 0xc3

/* Decide for code at 0x1000 with the ABI's registers. */
static struct placement decide(const uint8_t *code, size_t len, uint8_t used, int has_return)
{
	struct placement_need need;
	struct placement p;

	placement_need_abi(&need, used, has_return);
	placement_decide(code, len, 0x1000, &need, &p);
	return p;
}

TEST(glibc)
{
	/* free: test %rdi,%rdi; je (emulated); push %rbp; lea -0x10(%rdi),%rsi */
	static const uint8_t free_[] = {0x48, 0x85, 0xff, 0x0f, 0x84, 0xbf, 0x00, 0x00,
					0x00, 0x55, 0x48, 0x8d, 0x77, 0xf0, RET};
	/* malloc: push %r12 (emulated at the entry) */
	static const uint8_t malloc_[] = {0x41, 0x54, 0x55, 0x53, 0x48, 0x89, 0xfb, RET};
	/* posix_memalign: cmpb $0,x(%rip) (single-stepped); push %r12 */
	static const uint8_t memalign[] = {0x80, 0x3d, 0x01, 0x02, 0x14, 0x00, 0x00,
					   0x41, 0x54, 0x49, 0x89, 0xd4, RET};
	/* reallocarray: mov %rsi,%rax; mul %rdx; mov %rax,%rsi; jo: n and m are gone */
	static const uint8_t reallocarray[] = {0x48, 0x89, 0xf0, 0x48, 0xf7, 0xe2,
					       0x48, 0x89, 0xc6, 0x70, 0x05, RET};
	struct placement p;

	p = decide(free_, sizeof(free_), 1, 0);
	CHECK_EQ_U64(p.offset, 3);
	CHECK_EQ_U64(p.arg_reg[0], GPR_RDI);
	CHECK_EQ_U64(p.sp_words, 0);
	CHECK_STR(p.insn, "je 0x10c8");
	p = decide(malloc_, sizeof(malloc_), 1, 1);
	CHECK_EQ_U64(p.offset, 0);
	CHECK_STR(p.insn, "push r12");
	CHECK_STR(p.why, "");
	p = decide(memalign, sizeof(memalign), 5, 1);
	CHECK_EQ_U64(p.offset, 7);
	CHECK_EQ_U64(p.arg_reg[0], GPR_RDI);
	CHECK_EQ_U64(p.arg_reg[2], GPR_RDX);
	p = decide(reallocarray, sizeof(reallocarray), 7, 1);
	CHECK_EQ_U64(p.offset, 0);
	CHECK(strstr(p.why, "argument 2 is overwritten") != NULL);
	/* the same bytes for a program that reads the first argument only */
	p = decide(reallocarray, sizeof(reallocarray), 1, 1);
	CHECK_EQ_U64(p.offset, 9);
}

TEST(interposers)
{
	/* jemalloc malloc: cmp $0x1000,%rdi; ja */
	static const uint8_t je_malloc[] = {0x48, 0x81, 0xff, 0x00, 0x10, 0x00, 0x00,
					    0x0f, 0x87, 0x93, 0x00, 0x00, 0x00, RET};
	/* jemalloc free: loads through a register before anything emulated */
	static const uint8_t je_free[] = {0x48, 0x89, 0xf8, 0x48, 0x8b, 0x15, 0x0e,
					  0x53, 0x0a, 0x00, 0x48, 0x89, 0xf9, 0x48,
					  0x8b, 0x04, 0xc2, 0x74, 0x02, RET};
	/* tcmalloc malloc: mov x(%rip),%rax; test %rax,%rax; jne */
	static const uint8_t tc_malloc[] = {0x48, 0x8b, 0x05, 0x59, 0xab, 0x00, 0x00,
					    0x48, 0x85, 0xc0, 0x75, 0x75, RET};
	/* mimalloc malloc: mov x(%rip),%rax; mov %rdi,%rsi; mov %fs:(%rax),%rdi;
	 * cmp $0x400,%rsi; ja: the size is in rsi by then */
	static const uint8_t mi_malloc[] = {0x48, 0x8b, 0x05, 0x49, 0xb4, 0x00, 0x00, 0x48,
					    0x89, 0xfe, 0x64, 0x48, 0x8b, 0x38, 0x48, 0x81,
					    0xfe, 0x00, 0x04, 0x00, 0x00, 0x77, 0x29, RET};
	/* mimalloc free: mov %rdi,%rcx; test %rdi,%rdi; je */
	static const uint8_t mi_free[] = {0x48, 0x89, 0xf9, 0x48, 0x85, 0xff, 0x74, 0x5d, RET};
	/* libstdc++ operator new: endbr64; test; mov $1,%eax; push %rbx */
	static const uint8_t znwm[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x85, 0xff,
				       0xb8, 0x01, 0x00, 0x00, 0x00, 0x53, RET};
	/* its nothrow variant: endbr64; sub $8,%rsp; call: the return probe
	 * needs the entry's stack pointer */
	static const uint8_t znwm_nothrow[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec,
					       0x08, 0xe8, 0x13, 0x03, 0xff, 0xff, RET};
	struct placement p;

	p = decide(je_malloc, sizeof(je_malloc), 1, 1);
	CHECK_EQ_U64(p.offset, 7);
	p = decide(je_free, sizeof(je_free), 1, 0);
	CHECK_EQ_U64(p.offset, 0);
	CHECK(strstr(p.why, "may fault") != NULL);
	p = decide(tc_malloc, sizeof(tc_malloc), 1, 1);
	CHECK_EQ_U64(p.offset, 10);
	p = decide(mi_malloc, sizeof(mi_malloc), 1, 1);
	CHECK_EQ_U64(p.offset, 21);
	CHECK_EQ_U64(p.arg_reg[0], GPR_RSI);
	p = decide(mi_free, sizeof(mi_free), 1, 0);
	CHECK_EQ_U64(p.offset, 6);
	CHECK_EQ_U64(p.arg_reg[0], GPR_RDI);
	p = decide(znwm, sizeof(znwm), 1, 1);
	CHECK_EQ_U64(p.offset, 12);
	p = decide(znwm_nothrow, sizeof(znwm_nothrow), 1, 1);
	CHECK_EQ_U64(p.offset, 0);
	CHECK(strstr(p.why, "stack pointer") != NULL);
	/* without a return probe, the reservation is known: 1 word */
	p = decide(znwm_nothrow, sizeof(znwm_nothrow), 1, 0);
	CHECK_EQ_U64(p.offset, 8);
	CHECK_EQ_U64(p.sp_words, 1);
	/* one the cookie cannot carry (sub $0x1000,%rsp: 512 words) keeps the entry */
	static const uint8_t big_frame[] = {0x48, 0x81, 0xec, 0x00, 0x10,
					    0x00, 0x00, 0x74, 0x00, RET};
	p = decide(big_frame, sizeof(big_frame), 1, 0);
	CHECK_EQ_U64(p.offset, 0);
}

TEST(cpython)
{
	/* 3.10 PyObject_Free: mov %rdi,%rsi; mov x(%rip),%rdi; jmp *y(%rip) */
	static const uint8_t free310[] = {0x48, 0x89, 0xfe, 0x48, 0x8b, 0x3d, 0x06, 0x83,
					  0x27, 0x00, 0xff, 0x25, 0x20, 0x83, 0x27, 0x00};
	/* 3.11 PyObject_Malloc: mov %rdi,%rsi; test %rdi,%rdi; js */
	static const uint8_t malloc311[] = {0x48, 0x89, 0xfe, 0x48, 0x85, 0xff, 0x78, 0x10, RET};
	/* 3.12 PyObject_Free: mov _PyRuntime@GOT,%rax; mov %rdi,%rsi;
	 * mov 0xb0(%rax),%rdi; jmp *0xd0(%rax) */
	static const uint8_t free312[] = {0x48, 0x8b, 0x05, 0x19, 0x48, 0x37, 0x00, 0x48,
					  0x89, 0xfe, 0x48, 0x8b, 0xb8, 0xb0, 0x00, 0x00,
					  0x00, 0xff, 0xa0, 0xd0, 0x00, 0x00, 0x00};
	/* 3.12 _PyObject_Free(ctx, p): test %rsi,%rsi; je; push %r12 */
	static const uint8_t pyfree312[] = {0x48, 0x85, 0xf6, 0x0f, 0x84, 0xb7,
					    0x00, 0x00, 0x00, 0x41, 0x54, RET};
	/* 3.13 PyObject_Realloc: mov %rsi,%rdx; test %rsi,%rsi; js */
	static const uint8_t realloc313[] = {0x48, 0x89, 0xf2, 0x48, 0x85, 0xf6, 0x78, 0x20, RET};
	/* Debian 3.11 PyObject_Free (pymalloc inlined): two table loads, a compare,
	 * jne to the slow path */
	static const uint8_t free_debian[] = {0x48, 0x8b, 0x05, 0x09, 0x96, 0x45, 0x00, 0x48, 0x8b,
					      0x15, 0xe2, 0x95, 0x45, 0x00, 0x48, 0x3d, 0xe0, 0x0f,
					      0x50, 0x00, 0x0f, 0x85, 0xb4, 0x01, 0x00, 0x00, RET};
	/* Debian 3.11 PyObject_Calloc: test %rsi,%rsi; je */
	static const uint8_t calloc_debian[] = {0x48, 0x85, 0xf6, 0x74, 0x18, RET};
	struct placement_need need;
	struct placement p;

	p = decide(free310, sizeof(free310), 1, 1);
	CHECK_EQ_U64(p.offset, 0);
	CHECK(strstr(p.why, "jmp at +10") != NULL);
	p = decide(malloc311, sizeof(malloc311), 1, 1);
	CHECK_EQ_U64(p.offset, 6);
	CHECK_EQ_U64(p.arg_reg[0], GPR_RDI);
	CHECK_STR(p.insn, "js 0x1018");
	p = decide(free312, sizeof(free312), 1, 1);
	CHECK_EQ_U64(p.offset, 0);
	CHECK(strstr(p.why, "may fault") != NULL);
	/* reached by the dispatcher's jmp, the pointer in rsi */
	placement_need_abi(&need, 1, 1);
	need.arg_in[0] = GPR_RSI;
	placement_decide(pyfree312, sizeof(pyfree312), 0x1000, &need, &p);
	CHECK_EQ_U64(p.offset, 3);
	CHECK_EQ_U64(p.arg_reg[0], GPR_RSI);
	p = decide(realloc313, sizeof(realloc313), 3, 1);
	CHECK_EQ_U64(p.offset, 6);
	CHECK_EQ_U64(p.arg_reg[1], GPR_RSI); /* the copy in rdx is not needed */
	p = decide(free_debian, sizeof(free_debian), 1, 1);
	CHECK_EQ_U64(p.offset, 20);
	p = decide(calloc_debian, sizeof(calloc_debian), 3, 1);
	CHECK_EQ_U64(p.offset, 3);
}

TEST(branch_back_into_skipped_code)
{
	/* test %rdi,%rdi; je +2; nopl; jmp back to the je (+3): the probe
	 * there would fire twice per call */
	static const uint8_t to_je[] = {0x48, 0x85, 0xff, 0x74, 0x02, 0x90, 0x90, 0xeb, 0xfa, RET};
	/* ... and to +1, inside the skipped test */
	static const uint8_t to_middle[] = {0x48, 0x85, 0xff, 0x74, 0x00, 0xe9,
					    0xf7, 0xff, 0xff, 0xff, RET};
	/* ... a call to +2 */
	static const uint8_t call_in[] = {0x48, 0x85, 0xff, 0x74, 0x00, 0xe8,
					  0xf8, 0xff, 0xff, 0xff, RET};
	/* a jump back to the entry itself is fine: the probe is after it */
	static const uint8_t to_entry[] = {0x48, 0x85, 0xff, 0x74, 0x02, 0xeb, 0xf9, RET};
	struct placement p;

	p = decide(to_je, sizeof(to_je), 1, 0);
	CHECK_EQ_U64(p.offset, 0);
	CHECK(strstr(p.why, "branch") != NULL);
	p = decide(to_middle, sizeof(to_middle), 1, 0);
	CHECK_EQ_U64(p.offset, 0);
	p = decide(call_in, sizeof(call_in), 1, 0);
	CHECK_EQ_U64(p.offset, 0);
	p = decide(to_entry, sizeof(to_entry), 1, 0);
	CHECK_EQ_U64(p.offset, 3);
}

TEST(arguments)
{
	/* xor %edi,%edi; je: the first argument is gone */
	static const uint8_t clobber[] = {0x31, 0xff, 0x74, 0x00, RET};
	/* mov %edi,%esi (32 bits, not a copy); xor %edi,%edi; je */
	static const uint8_t half_copy[] = {0x89, 0xfe, 0x31, 0xff, 0x74, 0x00, RET};
	/* mov %rdi,%rbx; xor %edi,%edi; je: it is in rbx */
	static const uint8_t moved[] = {0x48, 0x89, 0xfb, 0x31, 0xff, 0x74, 0x00, RET};
	/* mov %rsi,%rdi; je: the second argument overwrote the first */
	static const uint8_t swapped[] = {0x48, 0x89, 0xf7, 0x74, 0x00, RET};
	struct placement p;

	p = decide(clobber, sizeof(clobber), 1, 1);
	CHECK_EQ_U64(p.offset, 0);
	CHECK(strstr(p.why, "argument 1") != NULL);
	p = decide(clobber, sizeof(clobber), 2, 1); /* reads only the second */
	CHECK_EQ_U64(p.offset, 2);
	p = decide(half_copy, sizeof(half_copy), 1, 1);
	CHECK_EQ_U64(p.offset, 0);
	p = decide(moved, sizeof(moved), 1, 1);
	CHECK_EQ_U64(p.offset, 5);
	CHECK_EQ_U64(p.arg_reg[0], GPR_RBX);
	p = decide(swapped, sizeof(swapped), 3, 1);
	CHECK_EQ_U64(p.offset, 0);
	p = decide(swapped, sizeof(swapped), 2, 1); /* the second is still in rsi */
	CHECK_EQ_U64(p.offset, 3);
	CHECK_EQ_U64(p.arg_reg[1], GPR_RSI);
}

TEST(endbr64)
{
	/* endbr64; push %rbp: the push */
	static const uint8_t endbr_push[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, RET};
	/* endbr64 alone before ret: nothing emulated in reach */
	static const uint8_t endbr_ret[] = {0xf3, 0x0f, 0x1e, 0xfa, RET};
	struct placement p;

	p = decide(endbr_push, sizeof(endbr_push), 1, 1);
	CHECK_EQ_U64(p.offset, 4);
	CHECK_STR(p.insn, "push rbp");
	p = decide(endbr_ret, sizeof(endbr_ret), 1, 1);
	CHECK_EQ_U64(p.offset, 0);
	CHECK_STR(p.insn, "endbr64");
}

TEST(unsafe_prefixes)
{
	/* mov %rdi,(%rsp); je: a store (it could be the return address) */
	static const uint8_t store[] = {0x48, 0x89, 0x3c, 0x24, 0x74, 0x00, RET};
	/* mov (%rdi),%rax; je: a load that may fault */
	static const uint8_t load[] = {0x48, 0x8b, 0x07, 0x74, 0x00, RET};
	/* ud2 */
	static const uint8_t ud2[] = {0x0f, 0x0b, 0x74, 0x00, RET};
	/* an undecodable byte */
	static const uint8_t bad[] = {0x06, 0x74, 0x00, RET};
	/* div %rcx can fault */
	static const uint8_t div[] = {0x48, 0xf7, 0xf1, 0x74, 0x00, RET};
	/* lock add: a prefix */
	static const uint8_t lock[] = {0xf0, 0x48, 0x01, 0xc8, 0x74, 0x00, RET};
	/* ds-prefixed je (a branch hint): the kernel refuses the probe, skipping it is
	 * no better: stays at the entry */
	static const uint8_t hinted[] = {0x48, 0x85, 0xff, 0x3e, 0x74, 0x00, RET};
	/* lea (%rdi,%rsi,8),%rax does not touch memory */
	static const uint8_t lea[] = {0x48, 0x8d, 0x04, 0xf7, 0x74, 0x00, RET};
	struct placement p;

	p = decide(store, sizeof(store), 1, 1);
	CHECK_EQ_U64(p.offset, 0);
	CHECK(strstr(p.why, "writes memory") != NULL);
	p = decide(load, sizeof(load), 1, 1);
	CHECK_EQ_U64(p.offset, 0);
	p = decide(ud2, sizeof(ud2), 1, 1);
	CHECK_EQ_U64(p.offset, 0);
	CHECK(strstr(p.why, "neither emulated nor skippable") != NULL);
	p = decide(bad, sizeof(bad), 1, 1);
	CHECK_EQ_U64(p.offset, 0);
	CHECK(strstr(p.why, "undecodable") != NULL);
	p = decide(div, sizeof(div), 1, 1);
	CHECK_EQ_U64(p.offset, 0);
	p = decide(lock, sizeof(lock), 1, 1);
	CHECK_EQ_U64(p.offset, 0);
	p = decide(hinted, sizeof(hinted), 1, 1);
	CHECK_EQ_U64(p.offset, 0);
	p = decide(lea, sizeof(lea), 1, 1);
	CHECK_EQ_U64(p.offset, 4);
}

TEST(jump_tables)
{
	/* test; je; then a PIC jump table: lea; movslq (%rdx,%rax,4),%rax; add; jmp *%rax */
	static const uint8_t table[] = {0x48, 0x85, 0xff, 0x74, 0x0f, 0x48, 0x8d, 0x15,
					0x00, 0x00, 0x00, 0x00, 0x48, 0x63, 0x04, 0x82,
					0x48, 0x01, 0xd0, 0xff, 0xe0, RET};
	/* ... a tail call through a loaded pointer is fine: mov 8(%rax),%rax; jmp *%rax */
	static const uint8_t pointer[] = {0x48, 0x85, 0xff, 0x74, 0x06, 0x48,
					  0x8b, 0x40, 0x08, 0xff, 0xe0, RET};
	/* ... and jmp *table(,%rax,8) is a table */
	static const uint8_t absolute[] = {0x48, 0x85, 0xff, 0x74, 0x07, 0xff, 0x24,
					   0xc5, 0x00, 0x10, 0x00, 0x00, RET};
	struct placement p;

	p = decide(table, sizeof(table), 1, 0);
	CHECK_EQ_U64(p.offset, 0);
	CHECK(strstr(p.why, "jump table") != NULL);
	p = decide(pointer, sizeof(pointer), 1, 0);
	CHECK_EQ_U64(p.offset, 3);
	p = decide(absolute, sizeof(absolute), 1, 0);
	CHECK_EQ_U64(p.offset, 0);
}

TEST(truncated)
{
	/* the function's last instruction is cut: it cannot be decoded to its end */
	static const uint8_t cut[] = {0x48, 0x85, 0xff, 0x74, 0x00, 0x48, 0x8b};
	struct placement p;

	p = decide(cut, sizeof(cut), 1, 0);
	CHECK_EQ_U64(p.offset, 0);
	p = decide(cut, 0, 1, 0);
	CHECK_EQ_U64(p.offset, 0);
}

TEST(emulated_forms)
{
	static const struct {
		uint8_t bytes[8];
		size_t len, want;
	} cases[] = {
	    {{0x90}, 1, 1},
	    {{0x66, 0x90}, 2, 2},
	    {{0xf3, 0x90}, 2, 2}, /* pause: prefix + 90 */
	    {{0x0f, 0x1f, 0x00}, 3, 3},
	    {{0x0f, 0x1f, 0x44, 0x00, 0x00}, 5, 5},
	    {{0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00}, 6, 6},
	    {{0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00}, 8, 8},
	    {{0x55}, 1, 1},
	    {{0x41, 0x57}, 2, 2},
	    {{0x48, 0x55}, 2, 0}, /* rex.W push: not the kernel's forms */
	    {{0xeb, 0x10}, 2, 2},
	    {{0x74, 0x10}, 2, 2},
	    {{0x0f, 0x84, 0, 0, 0, 0}, 6, 6},
	    {{0xe9, 0, 0, 0, 0}, 5, 5},
	    {{0xe8, 0, 0, 0, 0}, 5, 5},
	    {{0xf2, 0xe9, 0, 0, 0, 0}, 6, 6}, /* bnd jmp */
	    {{0x66, 0xe9, 0, 0}, 4, 0},	      /* 16-bit: refused by the kernel */
	    {{0x3e, 0x74, 0x10}, 3, 0},	      /* ds prefix: the probe would fail */
	    {{0x48, 0x85, 0xff}, 3, 0},
	    {{0xff, 0xe0}, 2, 0}, /* jmp *%rax: single-stepped */
	    {{0xc3}, 1, 0},
	    {{0xe9, 0, 0}, 3, 0}, /* cut */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t got = placement_emulated(cases[i].bytes, cases[i].len);

		if (got != cases[i].want)
			fprintf(stderr, "case %zu: %zu, want %zu\n", i, got, cases[i].want);
		CHECK_EQ_U64(got, cases[i].want);
	}
}

/* A fake target memory: 8-byte words at addresses. */
struct fake_mem {
	uint64_t addr[4], value[4];
	int n;
};

static int fake_read(void *ctx, uint64_t addr, uint64_t *value)
{
	const struct fake_mem *m = ctx;

	for (int i = 0; i < m->n; i++) {
		if (m->addr[i] == addr) {
			*value = m->value[i];
			return 0;
		}
	}
	return -1;
}

TEST(dispatch)
{
	/* 3.10: mov %rdi,%rsi; mov 0x278306(%rip),%rdi; jmp *0x278320(%rip), at 0x113d70 */
	static const uint8_t d310[] = {0x48, 0x89, 0xfe, 0x48, 0x8b, 0x3d, 0x06, 0x83,
				       0x27, 0x00, 0xff, 0x25, 0x20, 0x83, 0x27, 0x00};
	/* 3.12: mov x(%rip),%rax; mov %rdi,%rsi; mov 0xb0(%rax),%rdi; jmp *0xd0(%rax) */
	static const uint8_t d312[] = {0x48, 0x8b, 0x05, 0x19, 0x48, 0x37, 0x00, 0x48,
				       0x89, 0xfe, 0x48, 0x8b, 0xb8, 0xb0, 0x00, 0x00,
				       0x00, 0xff, 0xa0, 0xd0, 0x00, 0x00, 0x00};
	/* 3.12 PyObject_Realloc's tail: test/js before, a jmp *%rax after loading it */
	static const uint8_t d_reg[] = {0x48, 0x85, 0xf6, 0x78, 0x10, 0x48, 0x8b,
					0x05, 0x00, 0x10, 0x00, 0x00, 0x48, 0x8b,
					0x80, 0xc8, 0x00, 0x00, 0x00, 0xff, 0xe0};
	/* not a dispatcher: a call */
	static const uint8_t call[] = {0xe8, 0x00, 0x00, 0x00, 0x00, 0xc3};
	struct fake_mem m310 = {{0x113d7a + 0x278306, 0x113d80 + 0x278320}, {0x5000, 0x7777}, 2};
	struct fake_mem m312 = {
	    {0x1cf4e7 + 0x374819, 0x9000 + 0xb0, 0x9000 + 0xd0}, {0x9000, 0x5000, 0x8888}, 3};
	struct fake_mem mreg = {{0x2000 + 0x100c, 0xa000 + 0xc8}, {0xa000, 0x4444}, 2};
	struct placement_dispatch d;

	CHECK(!placement_follow_dispatch(d310, sizeof(d310), 0x113d70, fake_read, &m310, &d));
	CHECK_EQ_U64(d.target, 0x7777);
	CHECK_EQ_U64(d.slot, 0x113d80 + 0x278320);
	CHECK_EQ_U64(d.rdi_from, 0x113d7a + 0x278306);
	CHECK_EQ_U64(d.arg0_reg, GPR_RSI);
	CHECK(!placement_follow_dispatch(d312, sizeof(d312), 0x1cf4e0, fake_read, &m312, &d));
	CHECK_EQ_U64(d.target, 0x8888);
	CHECK_EQ_U64(d.slot, 0x9000 + 0xd0);
	CHECK_EQ_U64(d.rdi_from, 0x9000 + 0xb0);
	CHECK_EQ_U64(d.arg0_reg, GPR_RSI);
	CHECK(!placement_follow_dispatch(d_reg, sizeof(d_reg), 0x2000, fake_read, &mreg, &d));
	CHECK_EQ_U64(d.target, 0x4444);
	CHECK_EQ_U64(d.slot, 0xa000 + 0xc8);
	CHECK_EQ_U64(d.arg0_reg, GPR_RDI);
	/* memory that cannot be read, and code that is no dispatcher */
	m312.n = 1;
	CHECK(placement_follow_dispatch(d312, sizeof(d312), 0x1cf4e0, fake_read, &m312, &d));
	CHECK(placement_follow_dispatch(call, sizeof(call), 0x1000, fake_read, &m310, &d));
}

TEST(byte_scans)
{
	/* e8 rel32 at 0x1000 to 0x1105, jcc rel32 at 0x1005 to 0x1106 */
	static const uint8_t rel32[] = {0xe8, 0x00, 0x01, 0x00, 0x00, 0x0f,
					0x84, 0xfb, 0x00, 0x00, 0x00};
	/* jmp rel8 at 0x2000 to 0x2010, jne at 0x2002 to 0x1ff4 */
	static const uint8_t rel8[] = {0xeb, 0x0e, 0x75, 0xf0};

	CHECK(placement_scan_rel32(rel32, sizeof(rel32), 0x1000, 0x1105, 0x1105));
	CHECK(placement_scan_rel32(rel32, sizeof(rel32), 0x1000, 0x1106, 0x1106));
	CHECK(!placement_scan_rel32(rel32, sizeof(rel32), 0x1000, 0x1107, 0x2000));
	CHECK(!placement_scan_rel32(rel32, 4, 0x1000, 0x1105, 0x1105)); /* cut */
	CHECK(placement_scan_rel8(rel8, sizeof(rel8), 0x2000, 0x2010, 0x2010));
	CHECK(placement_scan_rel8(rel8, sizeof(rel8), 0x2000, 0x1ff0, 0x1ff4));
	CHECK(!placement_scan_rel8(rel8, sizeof(rel8), 0x2000, 0x2011, 0x2020));
}

TEST(real_libc)
{
	static const char *const paths[] = {"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6"};
	const char *path = NULL;
	struct elf_module *m;
	struct probesite_req req[2] = {{0}};
	struct placement out[2], again[2];
	uint64_t vaddr;
	char err[256];

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) && !path; i++)
		path = access(paths[i], R_OK) == 0 ? paths[i] : NULL;
	if (!path) {
		printf("SKIP real_libc: no libc.so.6 at the usual paths\n");
		return;
	}
	m = elfmod_open(path, err, sizeof(err));
	CHECK(m != NULL);
	if (!m)
		return;
	CHECK(!elfmod_find_function(m, "free", 1, &vaddr, NULL));
	CHECK(!elfmod_vaddr_to_offset(m, vaddr, &req[0].offset));
	CHECK(!elfmod_find_function(m, "malloc", 1, &vaddr, NULL));
	CHECK(!elfmod_vaddr_to_offset(m, vaddr, &req[1].offset));
	placement_need_abi(&req[0].need, 1, 0);
	placement_need_abi(&req[1].need, 1, 1);
	probesite_place(m, req, 2, out);
	/* glibc's free has started with test %rdi,%rdi; je for years: placed past it */
	CHECK(out[0].offset > 0);
	CHECK(strncmp(out[0].insn, "j", 1) == 0 || strncmp(out[0].insn, "push", 4) == 0);
	CHECK(out[1].insn[0] != 0);
	probesite_place(m, req, 2, again);
	CHECK(!memcmp(out, again, sizeof(out)));
	setenv("MEMTRACE_PROBE_AT_ENTRY", "1", 1);
	probesite_place(m, req, 1, again);
	unsetenv("MEMTRACE_PROBE_AT_ENTRY");
	CHECK_EQ_U64(again[0].offset, 0);
	CHECK(strstr(again[0].why, "MEMTRACE_PROBE_AT_ENTRY") != NULL);
	/* a file that could not be read: every probe at its entry, saying why */
	probesite_place(NULL, req, 1, again);
	CHECK_EQ_U64(again[0].offset, 0);
	CHECK(strstr(again[0].why, "not an x86-64 ELF file") != NULL);
	elfmod_close(m);
	probesite_forget();
}

UNIT_MAIN()
