/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One ELF executable or shared object, read once: its function symbols, its
 * PT_LOAD segments (to convert file offsets to virtual addresses) and its
 * build-id. The file is closed after opening; malformed files give an error,
 * never a crash. Used by the symbolizer and by the allocator probe resolver.
 */
#ifndef MEMTRACE_ELFSYM_H
#define MEMTRACE_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

struct elf_module;

/*
 * Open an ELF executable or shared object (ET_EXEC or ET_DYN). On failure
 * return NULL and put a one-line reason, without the path, in err.
 */
struct elf_module *elfmod_open(const char *path, char *err, size_t errlen);
/* The same from an open descriptor, which stays the caller's to close. */
struct elf_module *elfmod_open_fd(int fd, const char *path, char *err, size_t errlen);
/* The same from bytes in memory (copied; for tests and fuzzing). */
struct elf_module *elfmod_open_mem(const void *data, size_t len, const char *path, char *err,
				   size_t errlen);
void elfmod_close(struct elf_module *m);

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

/* Convert through the PT_LOAD segments' file images. 0, or -1 if outside. */
int elfmod_vaddr_to_offset(const struct elf_module *m, uint64_t vaddr, uint64_t *off);
int elfmod_offset_to_vaddr(const struct elf_module *m, uint64_t off, uint64_t *vaddr);
/* The PT_LOAD segment holding vaddr: its address, file offset and file size. */
int elfmod_segment_of(const struct elf_module *m, uint64_t vaddr, uint64_t *seg_vaddr,
		      uint64_t *seg_offset, uint64_t *seg_filesz);

int elfmod_has_interp(const struct elf_module *m); /* PT_INTERP: dynamically linked program */
int elfmod_is_dyn(const struct elf_module *m);	   /* e_type == ET_DYN */

/* The GNU build-id as lowercase hex, or NULL when the file has none. */
const char *elfmod_build_id(const struct elf_module *m);

#endif
