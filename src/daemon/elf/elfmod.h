/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The daemon's one ELF reader: an executable or shared object opened once
 * and shared by everything that reads it (naming frames, finding the
 * allocator's functions, placing probes, following jumps and dispatchers,
 * CPython's symbols and DWARF). One module holds the file (descriptor and
 * libelf handle), its PT_LOAD segments (file offsets <-> virtual
 * addresses), its function symbols, its build-id, and, on first use, its
 * code and its symbols as code boundaries. Malformed files give an error,
 * never a crash.
 */
#ifndef MEMTRACE_ELFMOD_H
#define MEMTRACE_ELFMOD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct elf_module;

/*
 * Open an ELF executable or shared object (ET_EXEC or ET_DYN). On failure
 * return NULL and put a one-line reason, without the path, in err.
 */
struct elf_module *elfmod_open(const char *path, char *err, size_t errlen);
/* The same from an open descriptor, which stays the caller's (the module keeps a copy). */
struct elf_module *elfmod_open_fd(int fd, const char *path, char *err, size_t errlen);
/* The same from bytes in memory (copied; for tests and fuzzing). */
struct elf_module *elfmod_open_mem(const void *data, size_t len, const char *path, char *err,
				   size_t errlen);
void elfmod_close(struct elf_module *m);

/*
 * elfmod_open, shared: a file opened this way is opened once while the
 * event loop's step lasts, however many callers read it (the allocator's
 * search, CPython's note and frame layout, ld.so's symbols, all in one
 * attach). elfmod_close lets go of it; elfmod_trim_shared, on the loop,
 * closes those no one holds. Only for modules used and closed within the
 * step, and never released (elfmod_release_file).
 */
struct elf_module *elfmod_open_shared(const char *path, char *err, size_t errlen);
void elfmod_trim_shared(void);
/* Modules in the shared table now (for tests). */
size_t elfmod_shared_count(void);

/*
 * Let go of the file (descriptor, libelf handle, code read): what open read
 * stays (segments, function symbols, build-id). For a module kept long
 * (the symbolizer's); code, dynamic symbols, relocations and bytes of the
 * file are then no longer available.
 */
void elfmod_release_file(struct elf_module *m);

/* The module's descriptor (for libdw, which reads on its own), or -1. */
int elfmod_fd(const struct elf_module *m);
/* Its libelf handle (for libdw's call frame information), or NULL once let go. */
struct Elf;
struct Elf *elfmod_libelf(const struct elf_module *m);

/* A function symbol from elsewhere (a separate debug file as libdwfl reads it). */
struct elfmod_symbol {
	uint64_t start, size;
	const char *name; /* copied */
	uint8_t bind;	  /* STB_* */
};

/*
 * A module holding only these function symbols, for elfmod_lookup(): the
 * same sorted table and the same choice among aliases as a file's own.
 */
struct elf_module *elfmod_from_symbols(const char *path, const struct elfmod_symbol *syms,
				       size_t n);

/* The path given at open. */
const char *elfmod_path(const struct elf_module *m);

/*
 * The function symbol containing vaddr (start <= vaddr < start + size), from
 * .symtab when it has functions, else .dynsym. Returns its name (owned by m)
 * and its start in *sym_start (may be NULL), or NULL when no symbol contains
 * vaddr. Of aliases, the public name is preferred ("malloc", not
 * "__libc_malloc").
 */
const char *elfmod_lookup(const struct elf_module *m, uint64_t vaddr, uint64_t *sym_start);

/*
 * A defined function symbol by exact name; dynamic_only searches only
 * .dynsym and only default versions (what the dynamic linker binds to),
 * otherwise .symtab then .dynsym. Returns 0 with its address in *vaddr and
 * whether it is STT_GNU_IFUNC in *is_ifunc (may be NULL), or -1 if absent.
 */
int elfmod_find_function(const struct elf_module *m, const char *name, int dynamic_only,
			 uint64_t *vaddr, int *is_ifunc);

/*
 * The value of a defined .dynsym symbol of any type (a function or an
 * object such as CPython's _PyRuntime), the first of that name: 0 with
 * *value, or -1 (absent, or the file let go).
 */
int elfmod_dynamic_value(struct elf_module *m, const char *name, uint64_t *value);

/* Convert through the PT_LOAD segments' file images. 0, or -1 if outside. */
int elfmod_vaddr_to_offset(const struct elf_module *m, uint64_t vaddr, uint64_t *off);
int elfmod_offset_to_vaddr(const struct elf_module *m, uint64_t off, uint64_t *vaddr);
/* The i-th PT_LOAD segment (in file order): 0, or -1 past the last. */
int elfmod_segment(const struct elf_module *m, size_t i, uint64_t *seg_vaddr, uint64_t *seg_offset,
		   uint64_t *seg_filesz);
/* The PT_LOAD segment holding vaddr: its address, file offset and file size. */
int elfmod_segment_of(const struct elf_module *m, uint64_t vaddr, uint64_t *seg_vaddr,
		      uint64_t *seg_offset, uint64_t *seg_filesz);

int elfmod_has_interp(const struct elf_module *m);   /* PT_INTERP: dynamically linked program */
int elfmod_is_dyn(const struct elf_module *m);	     /* e_type == ET_DYN */
unsigned elfmod_machine(const struct elf_module *m); /* e_machine (EM_X86_64, ...) */

/* The GNU build-id as lowercase hex, or NULL when the file has none. */
const char *elfmod_build_id(const struct elf_module *m);

/* len bytes of the file at offset off (as pread: the count read, or -1). */
ssize_t elfmod_pread(struct elf_module *m, void *buf, size_t len, uint64_t off);

/* ---- read on first use, from the file kept open (elfcode.c) ---------- */

/*
 * The code: the executable sections (SHT_PROGBITS with SHF_EXECINSTR, at
 * most 256 MiB in all), read on first use. elfmod_code gives the bytes from
 * vaddr to the end of its section (*avail of them), or NULL;
 * elfmod_code_section the i-th section (0 while i is one, else -1).
 */
const uint8_t *elfmod_code(struct elf_module *m, uint64_t vaddr, size_t *avail);
int elfmod_code_section(struct elf_module *m, size_t i, uint64_t *vaddr, const uint8_t **bytes,
			size_t *size);

/*
 * The symbols as code boundaries: every defined function, IFUNC or untyped
 * symbol of .symtab and .dynsym at a nonzero address, named or not (where
 * probes go, another symbol starting inside code is a second entry).
 * elfmod_symbol_at: the function starting at vaddr (of aliases the largest;
 * 0 with its size and name, or -1 when none with a size starts there).
 * elfmod_symbol_containing: a sized one containing vaddr (0 with its start
 * and size, or -1). elfmod_symbol_after: the first starting above vaddr (0
 * with its start and name, or -1).
 */
int elfmod_symbol_at(struct elf_module *m, uint64_t vaddr, uint64_t *size, const char **name);
int elfmod_symbol_containing(struct elf_module *m, uint64_t vaddr, uint64_t *start, uint64_t *size);
int elfmod_symbol_after(struct elf_module *m, uint64_t vaddr, uint64_t *start, const char **name);

/*
 * Does a relocation of the file (R_X86_64_JUMP_SLOT or GLOB_DAT) bind the
 * slot at vaddr slot to the symbol named name? 1 yes, 0 no.
 */
int elfmod_slot_binds(struct elf_module *m, uint64_t slot, const char *name);

#endif
