// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Offsets of CPython's structures (see pyoffsets.h): the built-in table, read
 * once from the DWARF of pyenv's release builds, CPython 3.13's
 * _Py_DebugOffsets, and the interpreter's own DWARF read at attach through
 * libdw, through src/daemon/symbols/dwarfline.c (which finds separate debug files).
 */
#include "daemon/symbols/pyoffsets.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/elf/elfmod.h"
#include "daemon/symbols/dwarfline.h"
#include "common/util.h"

static const struct py_layout layouts[] = {
    /* 3.10: PyFrameObject chain (f_back, f_code, f_lasti); no co_qualname */
    {10, 32, {0, 10, 8, 8, 176, 24, ~0u, 32, 24, 96, 0, 0}, 104, 112, 112, 40, 120, 48, 72, 16, 32},
    {11,
     40,
     {0, 11, 16, 8, 152, 56, 8, 32, 48, 56, 68, 184},
     112,
     120,
     128,
     72,
     136,
     48,
     72,
     16,
     32},
    {12, 40, {0, 12, 72, 8, 136, 56, 0, 0, 8, 56, 70, 192}, 112, 120, 128, 68, 136, 40, 56, 16, 32},
    {13,
     632,
     {0, 13, 7344, 8, 152, 72, ~0u, 0, 8, 56, 70, 200},
     112,
     120,
     128,
     68,
     136,
     40,
     56,
     16,
     32},
};

const struct py_layout *pyoffsets_table(int minor)
{
	for (size_t k = 0; k < ARRAY_SIZE(layouts); k++) {
		if ((int)layouts[k].minor == minor)
			return &layouts[k];
	}
	return NULL;
}

#define L(m) offsetof(struct py_layout, m)

static uint32_t *field(struct py_layout *l, size_t off)
{
	return (uint32_t *)((char *)l + off);
}

static uint32_t cfield(const struct py_layout *l, size_t off)
{
	return *(const uint32_t *)((const char *)l + off);
}

/* Every offset the walker and the code-object reader use, by name. */
static const struct {
	const char *name;
	size_t off;
} fields[] = {
    {"runtime.interpreters.head", L(runtime_interp_head)},
    {"interp.threads.head", L(pc.interp_threads_head)},
    {"tstate.next", L(pc.tstate_next)},
    {"tstate.thread_id", L(pc.tstate_thread_id)},
    {"tstate.frame", L(pc.tstate_frame)},
    {"cframe.current_frame", L(pc.cframe_current)},
    {"frame.code", L(pc.frame_code)},
    {"frame.previous", L(pc.frame_previous)},
    {"frame.instr", L(pc.frame_instr)},
    {"frame.owner", L(pc.frame_owner)},
    {"code.co_code_adaptive", L(pc.code_adaptive)},
    {"code.co_filename", L(co_filename)},
    {"code.co_name", L(co_name)},
    {"code.co_qualname", L(co_qualname)},
    {"code.co_firstlineno", L(co_firstlineno)},
    {"code.co_linetable", L(co_linetable)},
    {"sizeof(PyASCIIObject)", L(ascii_size)},
    {"sizeof(PyCompactUnicodeObject)", L(compact_size)},
    {"str.length", L(str_length)},
    {"str.state", L(str_state)},
};

int pyoffsets_diff(const struct py_layout *a, const struct py_layout *b, char *buf, size_t len)
{
	size_t used = 0;
	int n = 0;

	if (len)
		buf[0] = 0;
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		uint32_t x = cfield(a, fields[i].off), y = cfield(b, fields[i].off);
		int k;

		if (x == y)
			continue;
		k = snprintf(buf + used, len > used ? len - used : 0, "%s%s %d/%d", n ? ", " : "",
			     fields[i].name, (int)x, (int)y);
		if (k > 0)
			used += (size_t)k;
		n++;
	}
	return n;
}

/* ---- _Py_DebugOffsets (CPython 3.13's Include/internal/pycore_runtime.h) ---- */

/* Word indexes of the 3.13 structure: 8-byte cookie, then uint64_t fields. */
enum {
	DO_VERSION = 1,
	DO_FREE_THREADED = 2,
	DO_RUNTIME_SIZE = 3,
	DO_RUNTIME_INTERP_HEAD = 5,
	DO_INTERP_SIZE = 6,
	DO_INTERP_THREADS_HEAD = 9,
	DO_TSTATE_SIZE = 19,
	DO_TSTATE_NEXT = 21,
	DO_TSTATE_CURRENT_FRAME = 23,
	DO_TSTATE_THREAD_ID = 24,
	DO_FRAME_SIZE = 28,
	DO_FRAME_PREVIOUS = 29,
	DO_FRAME_EXECUTABLE = 30,
	DO_FRAME_INSTR_PTR = 31,
	DO_FRAME_OWNER = 33,
	DO_CODE_SIZE = 34,
	DO_CODE_FILENAME = 35,
	DO_CODE_NAME = 36,
	DO_CODE_QUALNAME = 37,
	DO_CODE_LINETABLE = 38,
	DO_CODE_FIRSTLINENO = 39,
	DO_CODE_ADAPTIVE = 43,
	DO_UNICODE_SIZE = 67,
	DO_UNICODE_STATE = 68,
	DO_UNICODE_LENGTH = 69,
	DO_UNICODE_ASCII_SIZE = 70,
	DO_WORDS = 73,
};

_Static_assert(DO_WORDS * 8 == PY_DEBUG_OFFSETS_313_SIZE, "3.13 _Py_DebugOffsets size");

int pyoffsets_from_debug(const void *blob, size_t len, int minor, struct py_layout *l, char *err,
			 size_t errlen)
{
	static const struct {
		int word, size_word; /* an offset and the size of its structure */
		size_t off;
	} map[] = {
	    {DO_RUNTIME_INTERP_HEAD, DO_RUNTIME_SIZE, L(runtime_interp_head)},
	    {DO_INTERP_THREADS_HEAD, DO_INTERP_SIZE, L(pc.interp_threads_head)},
	    {DO_TSTATE_NEXT, DO_TSTATE_SIZE, L(pc.tstate_next)},
	    {DO_TSTATE_THREAD_ID, DO_TSTATE_SIZE, L(pc.tstate_thread_id)},
	    {DO_TSTATE_CURRENT_FRAME, DO_TSTATE_SIZE, L(pc.tstate_frame)},
	    {DO_FRAME_EXECUTABLE, DO_FRAME_SIZE, L(pc.frame_code)},
	    {DO_FRAME_PREVIOUS, DO_FRAME_SIZE, L(pc.frame_previous)},
	    {DO_FRAME_INSTR_PTR, DO_FRAME_SIZE, L(pc.frame_instr)},
	    {DO_FRAME_OWNER, DO_FRAME_SIZE, L(pc.frame_owner)},
	    {DO_CODE_ADAPTIVE, DO_CODE_SIZE, L(pc.code_adaptive)},
	    {DO_CODE_FILENAME, DO_CODE_SIZE, L(co_filename)},
	    {DO_CODE_NAME, DO_CODE_SIZE, L(co_name)},
	    {DO_CODE_QUALNAME, DO_CODE_SIZE, L(co_qualname)},
	    {DO_CODE_FIRSTLINENO, DO_CODE_SIZE, L(co_firstlineno)},
	    {DO_CODE_LINETABLE, DO_CODE_SIZE, L(co_linetable)},
	    {DO_UNICODE_ASCII_SIZE, DO_UNICODE_SIZE, L(ascii_size)},
	    {DO_UNICODE_LENGTH, DO_UNICODE_SIZE, L(str_length)},
	    {DO_UNICODE_STATE, DO_UNICODE_SIZE, L(str_state)},
	};
	uint64_t w[DO_WORDS];
	struct py_layout out = *l;
	int vminor;

	if (!blob || len < 8 || memcmp(blob, "xdebugpy", 8)) {
		snprintf(err, errlen, "_PyRuntime does not start with _Py_DebugOffsets");
		return -1;
	}
	if (len < 24) {
		snprintf(err, errlen, "_Py_DebugOffsets truncated (%zu bytes)", len);
		return -1;
	}
	memcpy(w, blob, len < sizeof(w) ? len : sizeof(w));
	vminor = (int)(w[DO_VERSION] >> 16 & 0xff);
	if (w[DO_VERSION] >> 24 != 3 || vminor != minor) {
		snprintf(err, errlen,
			 "_Py_DebugOffsets of version %#llx, not of 3.%d: a layout memtrace "
			 "does not read",
			 (unsigned long long)w[DO_VERSION], minor);
		return -1;
	}
	if (minor != 13) {
		snprintf(err, errlen, "_Py_DebugOffsets of 3.%d: a layout memtrace does not read",
			 minor);
		return -1;
	}
	if (len < sizeof(w)) {
		snprintf(err, errlen, "_Py_DebugOffsets truncated (%zu of %zu bytes)", len,
			 sizeof(w));
		return -1;
	}
	if (w[DO_FREE_THREADED]) {
		snprintf(err, errlen, "a free-threaded build (_Py_DebugOffsets.free_threaded)");
		return -2;
	}
	for (size_t i = 0; i < ARRAY_SIZE(map); i++) {
		uint64_t v = w[map[i].word], size = w[map[i].size_word];

		if (size > (1u << 24) || v >= size) {
			snprintf(err, errlen,
				 "_Py_DebugOffsets: offset %llu (word %d) outside its structure "
				 "of %llu bytes",
				 (unsigned long long)v, map[i].word, (unsigned long long)size);
			return -1;
		}
		*field(&out, map[i].off) = (uint32_t)v;
	}
	out.minor = 13;
	out.pc.minor = 13;
	out.pc.cframe_current = ~0u; /* 3.13: tstate->current_frame directly */
	*l = out;
	return 0;
}

/* ---- DWARF -------------------------------------------------------------- */

static const struct {
	size_t off;
	int from, to;	    /* minor versions */
	const char *type;   /* struct tag or typedef name */
	const char *member; /* dotted path; NULL: the type's size */
} specs[] = {
    {L(runtime_interp_head), 10, 13, "pyruntimestate", "interpreters.head"},
    {L(pc.interp_threads_head), 10, 10, "_is", "tstate_head"},
    {L(pc.interp_threads_head), 11, 13, "_is", "threads.head"},
    {L(pc.tstate_next), 10, 13, "_ts", "next"},
    {L(pc.tstate_thread_id), 10, 13, "_ts", "thread_id"},
    {L(pc.tstate_frame), 10, 10, "_ts", "frame"},
    {L(pc.tstate_frame), 11, 12, "_ts", "cframe"},
    {L(pc.tstate_frame), 13, 13, "_ts", "current_frame"},
    {L(pc.cframe_current), 11, 12, "_PyCFrame", "current_frame"},
    {L(pc.frame_code), 10, 10, "_frame", "f_code"},
    {L(pc.frame_code), 11, 12, "_PyInterpreterFrame", "f_code"},
    {L(pc.frame_code), 13, 13, "_PyInterpreterFrame", "f_executable"},
    {L(pc.frame_previous), 10, 10, "_frame", "f_back"},
    {L(pc.frame_previous), 11, 13, "_PyInterpreterFrame", "previous"},
    {L(pc.frame_instr), 10, 10, "_frame", "f_lasti"},
    {L(pc.frame_instr), 11, 12, "_PyInterpreterFrame", "prev_instr"},
    {L(pc.frame_instr), 13, 13, "_PyInterpreterFrame", "instr_ptr"},
    {L(pc.frame_owner), 11, 11, "_PyInterpreterFrame", "is_entry"},
    {L(pc.frame_owner), 12, 13, "_PyInterpreterFrame", "owner"},
    {L(pc.code_adaptive), 11, 13, "PyCodeObject", "co_code_adaptive"},
    {L(co_filename), 10, 13, "PyCodeObject", "co_filename"},
    {L(co_name), 10, 13, "PyCodeObject", "co_name"},
    {L(co_qualname), 10, 10, "PyCodeObject", "co_name"}, /* 3.10 has no co_qualname */
    {L(co_qualname), 11, 13, "PyCodeObject", "co_qualname"},
    {L(co_firstlineno), 10, 13, "PyCodeObject", "co_firstlineno"},
    {L(co_linetable), 10, 13, "PyCodeObject", "co_linetable"},
    {L(ascii_size), 10, 13, "PyASCIIObject", NULL},
    {L(compact_size), 10, 13, "PyCompactUnicodeObject", NULL},
    {L(str_length), 10, 13, "PyASCIIObject", "length"},
    {L(str_state), 10, 13, "PyASCIIObject", "state"},
};

#define MAX_TYPES 16

struct type_set {
	const char *name[MAX_TYPES];
	Dwarf_Die die[MAX_TYPES];
	int found[MAX_TYPES];
	int n, nfound;
};

/* Through typedefs and qualifiers to the type itself. */
static int peel(Dwarf_Die *die)
{
	Dwarf_Attribute attr;

	for (int i = 0; i < 16; i++) {
		int tag = dwarf_tag(die);

		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type &&
		    tag != DW_TAG_volatile_type)
			return tag == DW_TAG_structure_type &&
				       !dwarf_hasattr(die, DW_AT_declaration)
				   ? 0
				   : -1;
		if (!dwarf_attr_integrate(die, DW_AT_type, &attr) || !dwarf_formref_die(&attr, die))
			return -1;
	}
	return -1;
}

/* The top-level type DIEs of every unit of dw that are in ts and not found yet. */
static void scan(Dwarf *dw, struct type_set *ts)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (ts->nfound < ts->n && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, child;

		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &child) == 0) {
			do {
				int tag = dwarf_tag(&child);
				const char *name;

				if (tag != DW_TAG_structure_type && tag != DW_TAG_typedef)
					continue;
				name = dwarf_diename(&child);
				if (!name)
					continue;
				for (int i = 0; i < ts->n; i++) {
					Dwarf_Die d = child;

					if (ts->found[i] || strcmp(name, ts->name[i]) || peel(&d))
						continue;
					ts->die[i] = d;
					ts->found[i] = 1;
					ts->nfound++;
				}
			} while (ts->nfound < ts->n && dwarf_siblingof(&child, &child) == 0);
		}
		off = next;
	}
}

static int member_offset(Dwarf_Die *member, uint64_t *off)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;
	Dwarf_Op *ops;
	size_t nops;

	if (!dwarf_attr(member, DW_AT_data_member_location, &attr))
		return -1;
	if (dwarf_formudata(&attr, &v) == 0) {
		*off = v;
		return 0;
	}
	/* DWARF 2 style: DW_OP_plus_uconst N */
	if (dwarf_getlocation(&attr, &ops, &nops) == 0 && nops == 1 &&
	    ops[0].atom == DW_OP_plus_uconst) {
		*off = ops[0].number;
		return 0;
	}
	return -1;
}

/* The offset of a dotted member path in the structure *st. */
static int path_offset(Dwarf_Die st, const char *path, uint64_t *out)
{
	uint64_t total = 0;
	char name[64];

	while (*path) {
		const char *dot = strchr(path, '.');
		size_t n = dot ? (size_t)(dot - path) : strlen(path);
		Dwarf_Die child;
		Dwarf_Attribute attr;
		uint64_t off;
		int found = 0;

		if (n >= sizeof(name))
			return -1;
		memcpy(name, path, n);
		name[n] = 0;
		if (dwarf_child(&st, &child) != 0)
			return -1;
		do {
			const char *cn;

			if (dwarf_tag(&child) != DW_TAG_member)
				continue;
			cn = dwarf_diename(&child);
			if (cn && !strcmp(cn, name)) {
				found = 1;
				break;
			}
		} while (dwarf_siblingof(&child, &child) == 0);
		if (!found || member_offset(&child, &off))
			return -1;
		total += off;
		path += n;
		if (*path == '.') {
			path++;
			if (!dwarf_attr_integrate(&child, DW_AT_type, &attr) ||
			    !dwarf_formref_die(&attr, &st) || peel(&st))
				return -1;
		}
	}
	*out = total;
	return 0;
}

int pyoffsets_from_dwarf(const struct elf_module *m, int minor, struct py_layout *l, char *err,
			 size_t errlen)
{
	struct type_set ts = {0};
	struct py_layout out = *l;
	struct dwarf_lines *dl;
	uint64_t bias;
	Dwarf *dw, *alt;
	int rc = 1;

	for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
		int k;

		if (minor < specs[i].from || minor > specs[i].to)
			continue;
		for (k = 0; k < ts.n && strcmp(ts.name[k], specs[i].type); k++)
			;
		if (k == ts.n && ts.n < MAX_TYPES)
			ts.name[ts.n++] = specs[i].type;
	}
	if (!ts.n)
		return 1;
	/* the debug file search of file:line lookups, on the module's file */
	dl = elfmod_fd(m) >= 0 ? dwarf_lines_open(elfmod_fd(m), elfmod_path(m)) : NULL;
	if (!dl)
		return 1;
	dw = dwarf_lines_dwarf(dl, &bias);
	if (!dw)
		goto out;
	scan(dw, &ts);
	alt = dwarf_getalt(dw); /* dwz: shared types in the .gnu_debugaltlink file */
	if (alt)
		scan(alt, &ts);
	if (!ts.nfound)
		goto out; /* DWARF without CPython's types: as good as none */
	rc = -1;
	for (int k = 0; k < ts.n; k++) {
		if (!ts.found[k]) {
			snprintf(err, errlen, "the DWARF has no definition of %s", ts.name[k]);
			goto out;
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
		uint64_t v = 0;
		Dwarf_Word size;
		int k;

		if (minor < specs[i].from || minor > specs[i].to)
			continue;
		for (k = 0; k < ts.n && strcmp(ts.name[k], specs[i].type); k++)
			;
		if (k == ts.n)
			goto member_fail; /* more types than MAX_TYPES: not reached */
		if (!specs[i].member) {
			Dwarf_Attribute a;

			if (!dwarf_attr(&ts.die[k], DW_AT_byte_size, &a) ||
			    dwarf_formudata(&a, &size))
				goto member_fail;
			v = size;
		} else if (path_offset(ts.die[k], specs[i].member, &v)) {
			goto member_fail;
		}
		if (v > UINT32_MAX - 1)
			goto member_fail;
		*field(&out, specs[i].off) = (uint32_t)v;
		continue;
	member_fail:
		snprintf(err, errlen, "the DWARF has no %s.%s", specs[i].type,
			 specs[i].member ? specs[i].member : "size");
		goto out;
	}
	out.minor = (uint32_t)minor;
	out.pc.minor = (uint32_t)minor;
	*l = out;
	rc = 0;
out:
	dwarf_lines_close(dl);
	return rc;
}
