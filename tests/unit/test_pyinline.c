// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of the pymalloc-inlined fingerprint: synthetic code with the two
 * forms of promoted indirect calls (cmp $imm32 in non-PIE code, lea
 * rip-relative in PIE code), an out-of-line wrapper that only jumps through
 * the pointer, and targets outside the segment.
 */
#include "unit.h"

#include "daemon/symbols/pyinline.h"

#include <string.h>

#define BASE 0x400000u

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = v & 0xff;
	p[1] = v >> 8 & 0xff;
	p[2] = v >> 16 & 0xff;
	p[3] = v >> 24 & 0xff;
}

/* cmp $t, %rax (48 3d imm32) at code[at] */
static void cmp_rax(uint8_t *code, size_t at, uint32_t t)
{
	code[at] = 0x48;
	code[at + 1] = 0x3d;
	put32(code + at + 2, t);
}

/* cmp $t, %rdx (48 81 fa imm32) */
static void cmp_rdx(uint8_t *code, size_t at, uint32_t t)
{
	code[at] = 0x48;
	code[at + 1] = 0x81;
	code[at + 2] = 0xfa;
	put32(code + at + 3, t);
}

/* lea t(%rip), %rdx (48 8d 15 rel32) */
static void lea_rdx(uint8_t *code, size_t at, uint64_t vaddr, uint64_t t)
{
	code[at] = 0x48;
	code[at + 1] = 0x8d;
	code[at + 2] = 0x15;
	put32(code + at + 3, (uint32_t)(t - (vaddr + at + 7)));
}

TEST(test_nonpie_promoted)
{
	static uint8_t code[4096];
	uint64_t t;

	memset(code, 0x90, sizeof(code));
	/* PyObject_Malloc at +0x100 compares with pymalloc at +0x200 */
	cmp_rax(code, 0x100 + 10, BASE + 0x200);
	cmp_rax(code, 0x400, BASE + 0x200);
	cmp_rdx(code, 0x500, BASE + 0x200);
	cmp_rax(code, 0x600, BASE + 0x300); /* another function: not counted */
	CHECK_EQ_U64(pyinline_scan(code, sizeof(code), BASE, BASE + 0x100, &t), 2);
	CHECK_EQ_U64(t, BASE + 0x200);
}

TEST(test_pie_promoted)
{
	static uint8_t code[4096];
	uint64_t t;

	memset(code, 0xcc, sizeof(code));
	lea_rdx(code, 0x100 + 4, BASE, BASE + 0x800);
	lea_rdx(code, 0x20, BASE, BASE + 0x800);
	lea_rdx(code, 0xf00, BASE, BASE + 0x800);
	lea_rdx(code, 0xe00, BASE, BASE + 0x900);
	CHECK_EQ_U64(pyinline_scan(code, sizeof(code), BASE, BASE + 0x100, &t), 2);
	CHECK_EQ_U64(t, BASE + 0x800);
}

TEST(test_out_of_line)
{
	static uint8_t code[4096];
	static const uint8_t wrapper[] = {
	    0x48, 0x8b, 0x05, 0x10, 0x20, 0x00, 0x00, /* mov _PyObject(%rip), %rax */
	    0x48, 0x8b, 0xb8, 0xb0, 0x00, 0x00, 0x00, /* mov 0xb0(%rax), %rdi */
	    0xff, 0xa0, 0xb8, 0x00, 0x00, 0x00,	      /* jmp *0xb8(%rax) */
	};
	uint64_t t = 1;

	memset(code, 0x90, sizeof(code));
	memcpy(code + 0x100, wrapper, sizeof(wrapper));
	CHECK_EQ_U64(pyinline_scan(code, sizeof(code), BASE, BASE + 0x100, &t), 0);
	CHECK_EQ_U64(t, 0);
	/* a compare with something outside the segment is not pymalloc */
	cmp_rax(code, 0x100 + 30, 0x100);
	cmp_rax(code, 0x400, 0x100);
	CHECK_EQ_U64(pyinline_scan(code, sizeof(code), BASE, BASE + 0x100, &t), 0);
	/* nor one with PyObject_Malloc itself */
	cmp_rax(code, 0x100 + 30, BASE + 0x100);
	CHECK_EQ_U64(pyinline_scan(code, sizeof(code), BASE, BASE + 0x100, &t), 0);
}

TEST(test_bounds)
{
	static uint8_t code[64];

	memset(code, 0x90, sizeof(code));
	CHECK_EQ_U64(pyinline_scan(code, sizeof(code), BASE, BASE - 1, NULL), 0);
	CHECK_EQ_U64(pyinline_scan(code, sizeof(code), BASE, BASE + 64, NULL), 0);
	/* an instruction cut by the end of the segment is not read past it */
	code[59] = 0x48;
	code[60] = 0x3d;
	CHECK_EQ_U64(pyinline_scan(code, sizeof(code), BASE, BASE + 50, NULL), 0);
}

UNIT_MAIN()
