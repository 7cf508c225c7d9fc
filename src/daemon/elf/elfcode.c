// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What only some of the ELF reader's users read, on first use, from the
 * file the module keeps open: the code (probe placement, jump following),
 * the symbols as code boundaries (where a function starts and ends, its
 * neighbour), a .dynsym symbol's value and the relocation that binds a
 * slot (CPython's allocator table). See elfmod.h for each function.
 */
#include "daemon/elf/elfmod.h"
#include "daemon/elf/elfmod_module.h"
#include "common/util.h"
#include "common/search.h"

#include <gelf.h>
#include <stdlib.h>
#include <string.h>

/* Code read on first use: at most this much in all. */
#define MAX_CODE_BYTES (256u << 20)

/* The executable sections, as libelf reads them (once; its buffers stay until release). */
static void read_code(struct elf_module *m)
{
	Elf_Scn *scn = NULL;
	size_t total = 0;

	if (m->code_read)
		return;
	m->code_read = 1;
	while (m->elf && (scn = elf_nextscn(m->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || !sh.sh_size ||
		    sh.sh_size > MAX_CODE_BYTES - total)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size != sh.sh_size)
			continue;
		total += d->d_size;
		m->code = xrealloc(m->code, (m->ncode + 1) * sizeof(*m->code));
		m->code[m->ncode++] =
		    (struct elf_code){.vaddr = sh.sh_addr, .size = d->d_size, .bytes = d->d_buf};
	}
}

const uint8_t *elfmod_code(struct elf_module *m, uint64_t vaddr, size_t *avail)
{
	read_code(m);
	for (size_t i = 0; i < m->ncode; i++) {
		const struct elf_code *c = &m->code[i];

		if (vaddr >= c->vaddr && vaddr - c->vaddr < c->size) {
			*avail = c->size - (size_t)(vaddr - c->vaddr);
			return c->bytes + (vaddr - c->vaddr);
		}
	}
	*avail = 0;
	return NULL;
}

int elfmod_code_section(struct elf_module *m, size_t i, uint64_t *vaddr, const uint8_t **bytes,
			size_t *size)
{
	read_code(m);
	if (i >= m->ncode)
		return -1;
	*vaddr = m->code[i].vaddr;
	*bytes = m->code[i].bytes;
	*size = m->code[i].size;
	return 0;
}

/* By start, then by size (largest first), then as they come in the file. */
static int compare_starts(const void *pa, const void *pb)
{
	const struct elf_start *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static void build_starts(struct elf_module *m)
{
	if (m->starts_built)
		return;
	m->starts_built = 1;
	m->starts = xcalloc(m->nfuncs ? m->nfuncs : 1, sizeof(*m->starts));
	for (size_t i = 0; i < m->nfuncs; i++) {
		const struct elf_func *f = &m->funcs[i];

		if (f->start)
			m->starts[m->nstarts++] = (struct elf_start){
			    .start = f->start, .size = f->size, .name = f->name, .seq = f->seq};
	}
	qsort(m->starts, m->nstarts, sizeof(*m->starts), compare_starts);
}

/* Index of the first boundary at or after vaddr. */
static size_t first_from(const struct elf_module *m, uint64_t vaddr)
{
	return SEARCH_FIRST(0, m->nstarts, m->starts[mid].start >= vaddr);
}

int elfmod_symbol_at(struct elf_module *m, uint64_t vaddr, uint64_t *size, const char **name)
{
	size_t i;

	build_starts(m);
	/* aliases sort largest first: the first sized one is the function */
	for (i = first_from(m, vaddr); i < m->nstarts && m->starts[i].start == vaddr; i++) {
		if (m->starts[i].size) {
			*size = m->starts[i].size;
			if (name)
				*name = m->starts[i].name;
			return 0;
		}
	}
	return -1;
}

int elfmod_symbol_containing(struct elf_module *m, uint64_t vaddr, uint64_t *start, uint64_t *size)
{
	size_t i;

	build_starts(m);
	i = first_from(m, vaddr + 1);
	/* symbols are short: look back a bounded way for one that spans vaddr */
	for (size_t k = 0; i > 0 && k < 4096; k++) {
		const struct elf_start *s = &m->starts[--i];

		if (s->size && s->start <= vaddr && vaddr - s->start < s->size) {
			*start = s->start;
			*size = s->size;
			return 0;
		}
	}
	return -1;
}

int elfmod_symbol_after(struct elf_module *m, uint64_t vaddr, uint64_t *start, const char **name)
{
	size_t i;

	build_starts(m);
	i = first_from(m, vaddr + 1);
	if (i >= m->nstarts)
		return -1;
	*start = m->starts[i].start;
	if (name)
		*name = m->starts[i].name;
	return 0;
}

int elfmod_dynamic_value(struct elf_module *m, const char *name, uint64_t *value)
{
	Elf_Scn *scn = NULL;

	while (m->elf && (scn = elf_nextscn(m->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			n = elf_strptr(m->elf, sh.sh_link, sym.st_name);
			if (n && !strcmp(n, name)) {
				*value = sym.st_value;
				return 0;
			}
		}
	}
	return -1;
}

int elfmod_slot_binds(struct elf_module *m, uint64_t slot, const char *name)
{
	Elf_Scn *scn = NULL;

	while (m->elf && (scn = elf_nextscn(m->elf, scn))) {
		GElf_Shdr sh, symsh;
		Elf_Scn *symscn;
		Elf_Data *d, *syms;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		symscn = elf_getscn(m->elf, sh.sh_link);
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
			s = elf_strptr(m->elf, symsh.sh_link, sym.st_name);
			if (s && !strcmp(s, name))
				return 1;
		}
	}
	return 0;
}
