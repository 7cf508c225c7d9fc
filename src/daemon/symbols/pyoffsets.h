/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Offsets of the CPython structures the Python frame walker reads, from three
 * sources: CPython 3.13's _Py_DebugOffsets (the start of _PyRuntime, which
 * CPython fills for out-of-process tools), the interpreter's own DWARF (in the
 * file, or a separate debug file found by .gnu_debuglink or build-id), and a
 * built-in table of release builds on x86-64 for stripped interpreters. See
 * docs/python.md, "Offsets".
 */
#ifndef MEMTRACE_PYOFFSETS_H
#define MEMTRACE_PYOFFSETS_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/event.h"

struct py_layout {
	uint32_t minor;
	uint32_t runtime_interp_head; /* _PyRuntime.interpreters.head */
	struct mt_py_config pc;	      /* interp_head filled at attach */
	uint32_t co_filename, co_name, co_qualname, co_firstlineno, co_linetable;
	uint32_t ascii_size;   /* sizeof(PyASCIIObject): compact ASCII data follows */
	uint32_t compact_size; /* sizeof(PyCompactUnicodeObject) */
	uint32_t str_length;   /* PyASCIIObject.length */
	uint32_t str_state;    /* PyASCIIObject.state (interned:2, kind:3, compact:1, ascii:1) */
};

/* The built-in layout of release builds of 3.minor on x86-64, or NULL. */
const struct py_layout *pyoffsets_table(int minor);

/* Bytes of CPython 3.13's _Py_DebugOffsets (73 64-bit words). */
#define PY_DEBUG_OFFSETS_313_SIZE 584

/*
 * Parse a _Py_DebugOffsets read from the start of _PyRuntime into *l, whose
 * other fields (not in the structure: sizeof(PyCompactUnicodeObject)) are
 * kept. minor is the interpreter's version from Py_Version. Returns 0; -2 for
 * a free-threaded build (whose structures the walker does not know); or -1
 * with a one-line reason in err: too short, wrong cookie, another version (a
 * layout memtrace does not read), an offset outside its structure.
 */
int pyoffsets_from_debug(const void *blob, size_t len, int minor, struct py_layout *l, char *err,
			 size_t errlen);

/*
 * Fill *l with the offsets 3.minor's DWARF gives, from the module's own
 * debug info or its separate debug file; fields not found keep their value.
 * Returns 0 when every member looked for was found, 1 when there is no
 * DWARF, -1 with a reason in err when the DWARF lacks a structure or member.
 */
struct elf_module;
int pyoffsets_from_dwarf(const struct elf_module *m, int minor, struct py_layout *l, char *err,
			 size_t errlen);

/*
 * The fields where a and b differ, as "name a/b, ..." in buf (empty when
 * they agree). Returns how many differ.
 */
int pyoffsets_diff(const struct py_layout *a, const struct py_layout *b, char *buf, size_t len);

#endif
