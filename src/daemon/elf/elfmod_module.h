/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Inside the ELF reader: what an open module holds, shared by elfmod.c
 * (open, segments, function symbols) and elfcode.c (what is read on first
 * use). Not for other files: they see struct elf_module through elfmod.h.
 */
#ifndef MEMTRACE_ELFMOD_MODULE_H
#define MEMTRACE_ELFMOD_MODULE_H

#include <stddef.h>
#include <stdint.h>
#include <gelf.h>

/* A defined symbol of .symtab or .dynsym: a function, or only a code boundary. */
struct elf_func {
	uint64_t start;
	uint64_t size;
	const char *name;
	size_t name_off;  /* into the names buffer while it still grows */
	size_t seq;	  /* its place in the file (section order, then index) */
	uint8_t function; /* STT_FUNC or STT_GNU_IFUNC with a name; else STT_NOTYPE or unnamed */
	uint8_t ifunc;
	uint8_t bind;	 /* STB_* */
	uint8_t dynamic; /* from .dynsym */
	uint8_t hidden;	 /* .dynsym entry of a non-default symbol version */
};

struct elf_segment {
	uint64_t vaddr;
	uint64_t offset;
	uint64_t filesz;
};

struct elf_code {
	uint64_t vaddr;
	size_t size;
	const uint8_t *bytes; /* libelf's, while the file is open */
};

/* A symbol as a code boundary (elfmod_symbol_at and the like). */
struct elf_start {
	uint64_t start, size;
	const char *name;
	size_t seq;
};

struct elf_module {
	char *path;
	int shared; /* in the table of elfmod_open_shared: closed by elfmod_trim_shared */
	char *build_id;
	int is_dyn;
	int has_interp;
	unsigned machine;
	struct elf_segment *segments;
	size_t nsegments;
	struct elf_func *funcs; /* defined symbols: .symtab ones, then .dynsym ones */
	size_t nfuncs;
	struct elf_func *by_addr; /* sized functions of one table, by start */
	uint64_t *max_end;	  /* max_end[i]: the largest end in by_addr[0..i] */
	size_t naddr;
	char *names;

	/* the file, until elfmod_release_file */
	int fd;	   /* -1 from memory or let go */
	Elf *elf;  /* NULL when let go */
	char *mem; /* elfmod_open_mem's copy of the bytes */
	size_t mem_len;

	/* read on first use */
	int code_read;
	struct elf_code *code;
	size_t ncode;
	int starts_built;
	struct elf_start *starts; /* by start, then by size (largest first) */
	size_t nstarts;
};

#endif
