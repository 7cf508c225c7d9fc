// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Source lines through libdwfl (see dwarfline.h). Each module gets its own
 * offline Dwfl session with the module placed at its own virtual addresses
 * (bias 0), so lookups take ELF virtual addresses directly.
 */
#include "daemon/symbols/dwarfline.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/elf/elfmod.h"
#include "common/util.h"

struct dwarf_lines {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	int no_debuginfo;	    /* a lookup found none: don't search again */
	int have_symbols;	    /* symbols was built (it may still be NULL) */
	struct elf_module *symbols; /* the function symbols libdwfl found, sorted by address */
	char *path;
};

static char *debuginfo_path;

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

struct dwarf_lines *dwarf_lines_open(int fd, const char *path)
{
	struct dwarf_lines *d;
	int dupfd = dup(fd);

	if (dupfd < 0)
		return NULL;
	d = xcalloc(1, sizeof(*d));
	d->dwfl = dwfl_begin(&callbacks);
	if (!d->dwfl) {
		close(dupfd);
		free(d);
		return NULL;
	}
	/* base 0 added to p_vaddr: the module sits at its own addresses */
	d->mod = dwfl_report_elf(d->dwfl, path, path, dupfd, 0, true);
	if (!d->mod) {
		close(dupfd);
		dwfl_end(d->dwfl);
		free(d);
		return NULL;
	}
	dwfl_report_end(d->dwfl, NULL, NULL);
	d->path = xstrdup(path);
	return d;
}

struct Dwarf *dwarf_lines_dwarf(struct dwarf_lines *d, uint64_t *bias)
{
	Dwarf_Addr b = 0;
	Dwarf *dw = dwfl_module_getdwarf(d->mod, &b);

	*bias = b;
	return dw;
}

void dwarf_lines_close(struct dwarf_lines *d)
{
	if (!d)
		return;
	dwfl_end(d->dwfl);
	elfmod_close(d->symbols);
	free(d->path);
	free(d);
}

int dwarf_lines_lookup(struct dwarf_lines *d, uint64_t vaddr, const char **file, int *line)
{
	Dwarf_Addr bias;
	Dwfl_Line *l;
	const char *src;
	int lineno = 0;

	if (!d || d->no_debuginfo)
		return -1;
	if (!dwfl_module_getdwarf(d->mod, &bias)) {
		d->no_debuginfo = 1;
		return -1;
	}
	/* the module sits at its own addresses: no bias to add */
	l = dwfl_module_getsrc(d->mod, vaddr);
	if (!l)
		return -1;
	src = dwfl_lineinfo(l, NULL, &lineno, NULL, NULL, NULL);
	if (!src || lineno <= 0)
		return -1;
	*file = src;
	*line = lineno;
	return 0;
}

/*
 * libdwfl's own lookup (dwfl_module_addrinfo) walks every symbol: read them
 * once instead, the sized functions, into the sorted table elfmod.c looks
 * up by binary search.
 */
static void build_symbols(struct dwarf_lines *d)
{
	struct elfmod_symbol *v;
	int n = dwfl_module_getsymtab(d->mod), k = 0;

	d->have_symbols = 1;
	if (n <= 0)
		return;
	v = xcalloc((size_t)n, sizeof(*v));
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name =
		    dwfl_module_getsym_info(d->mod, i, &sym, &addr, NULL, NULL, NULL);

		if (!name || !*name || !sym.st_size || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    sym.st_shndx == SHN_UNDEF)
			continue;
		v[k++] = (struct elfmod_symbol){.start = addr,
						.size = sym.st_size,
						.name = name,
						.bind = (uint8_t)GELF_ST_BIND(sym.st_info)};
	}
	d->symbols = elfmod_from_symbols(d->path, v, (size_t)k);
	free(v);
}

const char *dwarf_lines_symbol(struct dwarf_lines *d, uint64_t vaddr)
{
	if (!d)
		return NULL;
	if (!d->have_symbols)
		build_symbols(d);
	/* only a symbol whose extent covers the address: never a neighbour's */
	return d->symbols ? elfmod_lookup(d->symbols, vaddr, NULL) : NULL;
}

/* The name of a scope DIE as people read it: its linkage name when it has
 * one (mangled; the caller demangles), else its plain name. */
static const char *die_function_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name;

	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	return name ? name : dwarf_diename(die);
}

int dwarf_lines_inlines(struct dwarf_lines *d, uint64_t vaddr, struct dwarf_inline *out, int max)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu, *scopes = NULL;
	Dwarf_Files *files = NULL;
	Dwarf_Attribute attr;
	Dwarf_Word w;
	int n, i, k = 0;

	if (!d || d->no_debuginfo)
		return 0;
	cu = dwfl_module_addrdie(d->mod, vaddr, &bias);
	if (!cu)
		return 0;
	n = dwarf_getscopes(cu, vaddr - bias, &scopes);
	if (n <= 0)
		return 0;
	dwarf_getsrcfiles(cu, &files, NULL);
	/* scopes run innermost first; each inlined subroutine is called from the
	 * next function scope out */
	for (i = 0; i < n && k < max; i++) {
		int tag = dwarf_tag(&scopes[i]);
		int j;

		if (tag == DW_TAG_subprogram)
			break;
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		out[k].function = die_function_name(&scopes[i]);
		out[k].call_file = NULL;
		out[k].call_line = 0;
		if (files &&
		    dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &attr), &w) == 0)
			out[k].call_file = dwarf_filesrc(files, w, NULL, NULL);
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &w) == 0)
			out[k].call_line = (int)w;
		/* the caller: the next inlined subroutine or subprogram out */
		out[k].caller = NULL;
		for (j = i + 1; j < n; j++) {
			int t = dwarf_tag(&scopes[j]);

			if (t == DW_TAG_inlined_subroutine || t == DW_TAG_subprogram) {
				out[k].caller = die_function_name(&scopes[j]);
				break;
			}
		}
		k++;
	}
	free(scopes);
	return k;
}
