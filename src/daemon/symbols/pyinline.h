/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Does a CPython build inline pymalloc into its callers? PyObject_Malloc
 * calls the allocator through a function pointer (_PyObject.malloc), which
 * PGO/LTO builds such as Debian's python3.11 "promote": each call site
 * compares the pointer with pymalloc's own function and, when equal, runs an
 * inlined copy of pymalloc. Those sites never call PyObject_Malloc, so probes
 * on it see almost nothing. The compare is the fingerprint: PyObject_Malloc
 * starts with one (cmp $T or lea T(%rip) then cmp), and every other site that
 * compares with the same T is an inlined copy.
 */
#ifndef MEMTRACE_PYINLINE_H
#define MEMTRACE_PYINLINE_H

#include <stddef.h>
#include <stdint.h>

/*
 * code: bytes of the executable segment loaded at code_vaddr; fn: the address
 * of PyObject_Malloc in it. Returns the number of call sites outside
 * PyObject_Malloc with pymalloc inlined (0: the build calls it out of line),
 * and pymalloc's own address in *target when found (may be NULL).
 */
long pyinline_scan(const uint8_t *code, size_t len, uint64_t code_vaddr, uint64_t fn,
		   uint64_t *target);

/*
 * The same for the object m (the executable or libpythonX.Y.so) whose
 * PyObject_Malloc is at fn_vaddr (ELF address), over the segment holding
 * it. -1 if unreadable.
 */
struct elf_module;
long pyinline_count(struct elf_module *m, uint64_t fn_vaddr);

#endif
