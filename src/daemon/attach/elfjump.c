// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Thunk detection (see elfjump.h): two x86-64 instruction patterns decoded
 * by hand (libelf reads the bytes and the relocations; no disassembler
 * library is worth a dependency for two opcodes).
 */
#include "daemon/attach/elfjump.h"

#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

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

/* Up to len bytes of the loaded code at vaddr (from the section holding it). */
static size_t read_code(Elf *elf, uint64_t vaddr, uint8_t *buf, size_t len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		size_t at, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || vaddr < sh.sh_addr ||
		    vaddr - sh.sh_addr >= sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		at = (size_t)(vaddr - sh.sh_addr);
		if (!d || !d->d_buf || at >= d->d_size)
			return 0;
		n = d->d_size - at < len ? d->d_size - at : len;
		memcpy(buf, (const uint8_t *)d->d_buf + at, n);
		return n;
	}
	return 0;
}

/* Does a relocation bind the slot at vaddr to the symbol named name? */
static int slot_binds(Elf *elf, uint64_t slot, const char *name)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh, symsh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Scn *symscn;
		Elf_Data *d, *syms;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		symscn = elf_getscn(elf, sh.sh_link);
		d = elf_getdata(scn, NULL);
		if (!symscn || !gelf_getshdr(symscn, &symsh) || !d)
			continue;
		syms = elf_getdata(symscn, NULL);
		n = d->d_size / sh.sh_entsize;
		for (size_t i = 0; i < n && syms; i++) {
			GElf_Rela r;
			GElf_Sym sym;
			const char *s;
			uint32_t type;

			if (!gelf_getrela(d, (int)i, &r) || r.r_offset != slot)
				continue;
			type = (uint32_t)GELF_R_TYPE(r.r_info);
			if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
				continue;
			if (!gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym))
				continue;
			s = elf_strptr(elf, symsh.sh_link, sym.st_name);
			if (s && !strcmp(s, name))
				return 1;
		}
	}
	return 0;
}

int elf_is_jump_to(const char *path, uint64_t vaddr, const char *callee, uint64_t callee_vaddr)
{
	uint8_t code[16];
	uint64_t target, slot;
	GElf_Ehdr eh;
	size_t n;
	int fd, yes = 0;
	Elf *elf;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || !gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64)
		goto out;
	/* a few hops: a static libstdc++'s sized delete jumps to the unsized
	 * one, which jumps to free */
	for (int hop = 0; hop < 4 && !yes; hop++) {
		n = read_code(elf, vaddr, code, sizeof(code));
		slot = x86_slot_jump(code, n, vaddr); /* jmp *callee@GOTPCREL(%rip) */
		target = slot ? 0 : x86_jump_target(code, n, vaddr);
		if (target && callee_vaddr && target == callee_vaddr)
			yes = 1;
		else if (slot)
			yes = slot_binds(elf, slot, callee);
		if (yes || !target)
			break;
		vaddr = target; /* a PLT stub, or another function */
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return yes;
}
