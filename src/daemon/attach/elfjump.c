// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Thunk detection (see elfjump.h): two x86-64 instruction patterns decoded
 * by hand (the module, src/daemon/elf/elfmod.c, gives the bytes and the
 * relocations; no disassembler library is worth a dependency for two
 * opcodes).
 */
#include "daemon/attach/elfjump.h"

#include <elf.h>
#include <string.h>

#include "daemon/elf/elfmod.h"

static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};

static size_t skip_endbr(const uint8_t *code, size_t len)
{
	return len >= sizeof(endbr64) && !memcmp(code, endbr64, sizeof(endbr64)) ? sizeof(endbr64)
										 : 0;
}

uint64_t x86_jump_target(const uint8_t *code, size_t len, uint64_t vaddr)
{
	size_t i = skip_endbr(code, len);
	int32_t rel32;

	if (len >= i + 5 && code[i] == 0xe9) {
		memcpy(&rel32, code + i + 1, sizeof(rel32));
		return vaddr + i + 5 + (uint64_t)(int64_t)rel32;
	}
	if (len >= i + 2 && code[i] == 0xeb)
		return vaddr + i + 2 + (uint64_t)(int64_t)(int8_t)code[i + 1];
	return 0;
}

uint64_t x86_slot_jump(const uint8_t *code, size_t len, uint64_t vaddr)
{
	size_t i = skip_endbr(code, len);
	int32_t disp;

	if (len > i && code[i] == 0xf2) /* bnd */
		i++;
	if (len >= i + 6 && code[i] == 0xff && code[i + 1] == 0x25) {
		memcpy(&disp, code + i + 2, sizeof(disp));
		return vaddr + i + 6 + (uint64_t)(int64_t)disp;
	}
	return 0;
}

int elf_is_jump_to(struct elf_module *m, uint64_t vaddr, const char *callee, uint64_t callee_vaddr)
{
	uint64_t target, slot;
	const uint8_t *code;
	size_t n;
	int yes = 0;

	if (!m || elfmod_machine(m) != EM_X86_64)
		return 0;
	/* a few hops: a static libstdc++'s sized delete jumps to the unsized
	 * one, which jumps to free */
	for (int hop = 0; hop < 4 && !yes; hop++) {
		code = elfmod_code(m, vaddr, &n);
		slot = x86_slot_jump(code, n, vaddr); /* jmp *callee@GOTPCREL(%rip) */
		target = slot ? 0 : x86_jump_target(code, n, vaddr);
		if (target && callee_vaddr && target == callee_vaddr)
			yes = 1;
		else if (slot)
			yes = elfmod_slot_binds(m, slot, callee);
		if (yes || !target)
			break;
		vaddr = target; /* a PLT stub, or another function */
	}
	return yes;
}
