/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Source file and line of an address in one module, through libdwfl: DWARF in
 * the file itself, or in a separate debug file found by .gnu_debuglink or by
 * build-id under /usr/lib/debug (so installing libc6-dbg names libc's lines).
 * Debug information is read lazily, on the first lookup.
 */
#ifndef MEMTRACE_DWARFLINE_H
#define MEMTRACE_DWARFLINE_H

#include <stdint.h>

struct dwarf_lines;

/* Take a duplicate of fd (the caller keeps its own); path is the file's real
 * name, used to find separate debug files. NULL if libdwfl refuses it. */
struct dwarf_lines *dwarf_lines_open(int fd, const char *path);
void dwarf_lines_close(struct dwarf_lines *d);

/* The module's DWARF (libdw's Dwarf, from the file or its separate debug
 * file), with its load bias in *bias; NULL when it has none. Owned by d. */
struct Dwarf;
struct Dwarf *dwarf_lines_dwarf(struct dwarf_lines *d, uint64_t *bias);

/*
 * File and line of the instruction at ELF virtual address vaddr. Returns 0
 * with *file (owned by d, valid until close) and *line, or -1 if unknown.
 */
int dwarf_lines_lookup(struct dwarf_lines *d, uint64_t vaddr, const char **file, int *line);

/*
 * The function symbol covering vaddr from the module's own symbol tables or
 * its separate debug file (which has the .symtab a stripped library lacks).
 * NULL if none covers it.
 */
const char *dwarf_lines_symbol(struct dwarf_lines *d, uint64_t vaddr);

/* One inlined call around an address, innermost first. */
struct dwarf_inline {
	const char *function;  /* the inlined function (may be mangled) */
	const char *caller;    /* the function it was inlined into (may be mangled) */
	const char *call_file; /* where in the caller it was called */
	int call_line;
};

/*
 * The chain of inlined calls at vaddr, innermost first: at most max entries,
 * strings owned by d. Returns how many (0 when the address is in no inlined
 * code, or without DWARF).
 */
int dwarf_lines_inlines(struct dwarf_lines *d, uint64_t vaddr, struct dwarf_inline *out, int max);

#endif
