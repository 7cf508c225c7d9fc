// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Detecting pymalloc inlined by indirect-call promotion (see pyinline.h).
 * Hand-written because it is one byte pattern: a disassembler library would
 * add a dependency for two x86-64 instruction forms.
 */
#include "daemon/symbols/pyinline.h"

#include <stdlib.h>
#include <string.h>

#include "daemon/elf/elfmod.h"
#include "common/util.h"

/* How far into PyObject_Malloc the promoted compare may be. */
#define PROLOGUE_BYTES 64

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * The address an instruction at code[i] compares with or loads, for the two
 * forms of promotion: "cmp $imm32, %r64" (REX.W 3D imm32, or REX.W 81 /7
 * imm32 with a register operand) in a non-PIE object, and "lea rel32(%rip),
 * %r64" (REX.W 8D modrm 00 reg 101) in a PIE one. 0 when it is neither.
 */
static uint64_t operand_at(const uint8_t *code, size_t len, size_t i, uint64_t code_vaddr)
{
	uint8_t rex, op, modrm;

	if (i + 7 > len)
		return 0;
	rex = code[i];
	if ((rex & 0xf8) != 0x48)
		return 0;
	op = code[i + 1];
	modrm = code[i + 2];
	if (op == 0x3d && !(rex & 1))
		return le32(code + i + 2);
	if (op == 0x81 && (modrm & 0xf8) == 0xf8)
		return le32(code + i + 3);
	if (op == 0x8d && (modrm & 0xc7) == 0x05)
		return code_vaddr + i + 7 + (uint64_t)(int64_t)(int32_t)le32(code + i + 3);
	return 0;
}

long pyinline_scan(const uint8_t *code, size_t len, uint64_t code_vaddr, uint64_t fn,
		   uint64_t *target)
{
	uint64_t t = 0, start, v;
	size_t i, end;
	long sites = 0;

	if (fn < code_vaddr || fn - code_vaddr >= len)
		return 0;
	start = fn - code_vaddr;
	end = start + PROLOGUE_BYTES < len ? start + PROLOGUE_BYTES : len;
	for (i = start; i < end && !t; i++) {
		v = operand_at(code, len, i, code_vaddr);
		/* pymalloc is a function of the same segment, not PyObject_Malloc */
		if (v && v != fn && v >= code_vaddr && v - code_vaddr < len)
			t = v;
	}
	if (target)
		*target = t;
	if (!t)
		return 0;
	for (i = 0; i + 7 <= len; i++) {
		if (i >= start && i < end)
			continue;
		if (operand_at(code, len, i, code_vaddr) == t)
			sites++;
	}
	return sites;
}

long pyinline_count(struct elf_module *m, uint64_t fn_vaddr)
{
	uint64_t seg_vaddr, seg_off, seg_size;
	uint8_t *buf;
	long sites;

	if (elfmod_segment_of(m, fn_vaddr, &seg_vaddr, &seg_off, &seg_size) ||
	    seg_size > (256u << 20))
		return -1;
	buf = xmalloc(seg_size ? seg_size : 1);
	sites = elfmod_pread(m, buf, seg_size, seg_off) == (ssize_t)seg_size
		    ? pyinline_scan(buf, seg_size, seg_vaddr, fn_vaddr, NULL)
		    : -1;
	free(buf);
	return sites;
}
