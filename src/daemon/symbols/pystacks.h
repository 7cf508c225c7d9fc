/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Python frames of CPython targets (3.10 to 3.13): where the BPF walker
 * finds them (struct mt_py_config, from 3.13's _Py_DebugOffsets, the
 * interpreter's DWARF or a table of release builds: src/daemon/symbols/pyoffsets.h), and turning
 * the frame words it emits (MT_PY_WORD) into function, file and line. Code objects are read from
 * the target's memory (process_vm_readv, nothing in it changes) when a stack is first seen, and
 * cached per (pid, code address).
 */
#ifndef MEMTRACE_PYSTACKS_H
#define MEMTRACE_PYSTACKS_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/event.h"
#include "memtrace/snapshot.h"

struct pystacks;

struct pystacks *pystacks_new(void);
void pystacks_free(struct pystacks *ps);

/*
 * If pid is a CPython this knows, fill *pc and remember the pid's layout;
 * *desc gets "CPython 3.12 (PATH), offsets from DWARF" (or "from
 * _Py_DebugOffsets", "from the built-in table for 3.12"). Returns 0, with in
 * why a line to log when not empty (sources that disagree, or one that could
 * not be used); 1 when pid is not a CPython (no loaded object exports
 * _PyRuntime); or -1 with a reason in why (a version without a table, a
 * free-threaded build).
 */
int pystacks_config(struct pystacks *ps, int pid, struct mt_py_config *pc, char *desc,
		    size_t desclen, char *why, size_t whylen);

/* Read and cache the code objects of the Python words among words[0..n). */
void pystacks_note(struct pystacks *ps, int pid, const uint64_t *words, size_t n);

/*
 * Fill *out for a Python word of pid: function (qualified name), file and
 * line, address and offset 0 and module NULL, which is how every reader
 * tells a Python frame. Strings are malloc'd. A code object that could not
 * be read gives function "<unknown code object>".
 */
void pystacks_frame(struct pystacks *ps, int pid, uint64_t word, struct snap_frame *out);

/*
 * Line of the instruction at index instr (code units) from a code object's
 * line table: minor 11+ is the location table of CPython 3.11+. -1 when the
 * instruction has no line or lies outside the table.
 */
int64_t pystacks_line(const uint8_t *table, size_t len, int64_t firstlineno, uint64_t instr);
/* The same for CPython 3.10's line table (PEP 626 (byte delta, line delta) pairs). */
int64_t pystacks_line310(const uint8_t *table, size_t len, int64_t firstlineno, uint64_t instr);

/* What is known of pid's code objects now belongs to key (see symbolizer_rename). */
void pystacks_rename(struct pystacks *ps, int pid, int key);

/* child was forked from parent: the same interpreter, at the same addresses. */
void pystacks_fork(struct pystacks *ps, int parent, int child);

#endif
