// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Source lines through libdwfl (see dwarfline.h). Each module gets its own
 * offline Dwfl session with the module placed at its own virtual addresses
 * (bias 0), so lookups take ELF virtual addresses directly.
 */
#include "dwarfline.h"

#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <unistd.h>

#include "util.h"

struct dwarf_lines {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	int no_debuginfo; /* a lookup found none: don't search again */
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
	return d;
}

void dwarf_lines_close(struct dwarf_lines *d)
{
	if (!d)
		return;
	dwfl_end(d->dwfl);
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

const char *dwarf_lines_symbol(struct dwarf_lines *d, uint64_t vaddr)
{
	GElf_Off off;
	GElf_Sym sym;
	const char *name;

	if (!d)
		return NULL;
	name = dwfl_module_addrinfo(d->mod, vaddr, &off, &sym, NULL, NULL, NULL);
	/* only a symbol whose extent covers the address: never a neighbour's */
	if (!name || !sym.st_size || off >= sym.st_size)
		return NULL;
	return name;
}
