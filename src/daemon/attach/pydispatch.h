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

/*
 * The function the free dispatcher at file offset free_off of path (mapped
 * in pid) reaches through the live table, when probing it instead is
 * exact: it is in the same file, is not the raw domain's free as well
 * (raw_off: PyMem_RawFree, whose calls are not counted), and no code of the
 * file calls or jumps to it directly except the table's own malloc, calloc
 * and realloc (reached only through their probed dispatchers, so nested).
 * 0, or -1 with the reason in why.
 */
int pydispatch_free(int pid, const char *path, uint64_t free_off, uint64_t raw_off,
		    struct pydispatch *out, char *why, size_t whylen);

/*
 * For each CPython free probe of a (PyObject_Free, PyMem_Free) whose
 * dispatch pydispatch_free() can follow in pid, probe the function it
 * reaches instead (once, when both reach the same one); logs each choice.
 */
struct allocator;
void pydispatch_apply(int pid, struct allocator *a);

/*
 * The program is about to install an allocator (its thread is stopped in
 * PyMem_SetAllocator or the like: their probes, a->py_setters, are there
 * while a free is probed where it dispatches to): probe the dispatchers
 * PyObject_Free and PyMem_Free themselves again, keeping the probes on the
 * functions they reached (a free in flight there finishes counted once,
 * nested). Returns how many probes were added (0: nothing to do).
 */
int pydispatch_undo(struct allocator *a);

/* Functions that install an allocator, probed while a free is dispatched. */
extern const char *const pydispatch_setters[];

/*
 * Set by the daemon: it can stop and continue its targets (CAP_KILL), which
 * the setter probes need; without it frees are probed at the dispatchers.
 */
extern int pydispatch_can_hold;

#endif
