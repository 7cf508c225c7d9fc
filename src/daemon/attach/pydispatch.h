/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * CPython's PyObject_Free and PyMem_Free only dispatch: they load the
 * allocator table's context into rdi and jump through its free pointer,
 * four instructions none of which the kernel emulates. The function they
 * reach (pymalloc's _PyObject_Free) starts "test %rsi,%rsi; je": probed
 * there it costs one trap instead of two. This module reads the live table
 * from the target's memory to find that function, and decides whether
 * probing it counts exactly the calls of the dispatchers.
 */
#ifndef MEMTRACE_PYDISPATCH_H
#define MEMTRACE_PYDISPATCH_H

#include <stddef.h>
#include <stdint.h>

struct pydispatch {
	uint64_t offset;  /* file offset of the function dispatched to */
	uint8_t arg0_reg; /* enum placement_gpr holding the pointer at its entry */
	char name[48];	  /* its symbol */
};

struct elf_module;

/*
 * The function the free dispatcher at file offset free_off of the file m
 * (mapped in pid) reaches through the live table, when probing it instead is
 * exact: it is in the same file, is not the raw domain's free as well
 * (raw_off: PyMem_RawFree, whose calls are not counted), and no code of the
 * file calls or jumps to it directly except the table's own malloc, calloc
 * and realloc (reached only through their probed dispatchers, so nested).
 * 0, or -1 with the reason in why.
 */
int pydispatch_free(int pid, struct elf_module *m, uint64_t free_off, uint64_t raw_off,
		    struct pydispatch *out, char *why, size_t whylen);

/* Functions that install an allocator, probed while a free is dispatched. */
extern const char *const pydispatch_setters[];

/*
 * Set by the daemon: it can stop and continue its targets (CAP_KILL), which
 * the setter probes need; without it frees are probed at the dispatchers.
 */
extern int pydispatch_can_hold;

#endif
