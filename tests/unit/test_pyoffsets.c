// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of CPython offsets (src/daemon/symbols/pyoffsets.c): parsing 3.13's _Py_DebugOffsets
 * from crafted bytes (the values are those of pyenv's 3.13.0, read from its
 * .PyRuntime section), refused when the cookie, version or length is wrong,
 * for a free-threaded build or an offset outside its structure; and the
 * DWARF reader on this test binary's own debug info, which describes mock
 * structures with CPython's names at offsets of our choosing.
 */
#include "unit.h"

#include <stddef.h>
#include <stdint.h>

#include "daemon/elf/elfmod.h"
#include "daemon/symbols/pyoffsets.h"

/* pyenv CPython 3.13.0's _Py_DebugOffsets, words 1..72 (0 is the cookie) */
static const uint64_t do313[PY_DEBUG_OFFSETS_313_SIZE / 8] = {
    0,	  0x30d00f0, 0,	   283320, 608, 632, 194968, 7272, 7264, 7344, 7400, 7656, 7640, 7648, 16,
    7752, 0,	     7768, 7760,   304, 0,   8,	     16,   72,	 152,  160,  232,  32,	 80,   8,
    0,	  56,	     72,   70,	   208, 112, 120,    128,  136,	 68,   52,   96,   104,	 200,  16,
    8,	  416,	     24,   88,	   168, 32,  24,     16,   40,	 24,   16,   48,   32,	 40,   24,
    16,	  32,	     16,   24,	   40,	16,  32,     64,   32,	 16,   40,   240,  200};

static void blob313(uint64_t *w)
{
	memcpy(w, do313, sizeof(do313));
	memcpy(w, "xdebugpy", 8);
}

TEST(test_debug_offsets_313)
{
	uint64_t w[PY_DEBUG_OFFSETS_313_SIZE / 8];
	struct py_layout l = *pyoffsets_table(13);
	char err[256] = "", diff[512];

	blob313(w);
	l.compact_size = 56;
	CHECK(pyoffsets_from_debug(w, sizeof(w), 13, &l, err, sizeof(err)) == 0);
	/* the table was read from the same build's DWARF: they agree */
	CHECK_EQ_U64(pyoffsets_diff(pyoffsets_table(13), &l, diff, sizeof(diff)), 0);
	CHECK_STR(diff, "");
	CHECK_EQ_U64(l.runtime_interp_head, 632);
	CHECK_EQ_U64(l.pc.interp_threads_head, 7344);
	CHECK_EQ_U64(l.pc.tstate_thread_id, 152);
	CHECK_EQ_U64(l.pc.cframe_current, ~0u);
	CHECK_EQ_U64(l.pc.code_adaptive, 200);
	CHECK_EQ_U64(l.ascii_size, 40);
	CHECK_EQ_U64(l.compact_size, 56); /* not in _Py_DebugOffsets: kept */

	/* another build's offsets win, and the difference is named */
	w[24] = 160; /* thread_state.thread_id */
	w[70] = 48;  /* unicode_object.asciiobject_size */
	l = *pyoffsets_table(13);
	CHECK(pyoffsets_from_debug(w, sizeof(w), 13, &l, err, sizeof(err)) == 0);
	CHECK_EQ_U64(l.pc.tstate_thread_id, 160);
	CHECK_EQ_U64(pyoffsets_diff(pyoffsets_table(13), &l, diff, sizeof(diff)), 2);
	CHECK_STR(diff, "tstate.thread_id 152/160, sizeof(PyASCIIObject) 40/48");
}

TEST(test_debug_offsets_refused)
{
	uint64_t w[PY_DEBUG_OFFSETS_313_SIZE / 8];
	const struct py_layout *t = pyoffsets_table(13);
	struct py_layout l = *t;
	char err[256], diff[512];

	blob313(w);
	memcpy(w, "xdebugpz", 8);
	err[0] = 0;
	CHECK(pyoffsets_from_debug(w, sizeof(w), 13, &l, err, sizeof(err)) == -1);
	CHECK_STR(err, "_PyRuntime does not start with _Py_DebugOffsets");
	CHECK(pyoffsets_from_debug(NULL, 0, 13, &l, err, sizeof(err)) == -1);

	blob313(w);
	CHECK(pyoffsets_from_debug(w, 4, 13, &l, err, sizeof(err)) == -1);
	CHECK(pyoffsets_from_debug(w, 16, 13, &l, err, sizeof(err)) == -1);
	CHECK(pyoffsets_from_debug(w, sizeof(w) - 8, 13, &l, err, sizeof(err)) == -1);
	CHECK_STR(err, "_Py_DebugOffsets truncated (576 of 584 bytes)");

	/* Py_Version said 3.13, the structure another version */
	w[1] = 0x30c00f0;
	CHECK(pyoffsets_from_debug(w, sizeof(w), 13, &l, err, sizeof(err)) == -1);
	CHECK(strstr(err, "not of 3.13") != NULL);
	/* 3.14's structure has another layout: not read as 3.13's */
	w[1] = 0x30e00f0;
	CHECK(pyoffsets_from_debug(w, sizeof(w), 14, &l, err, sizeof(err)) == -1);
	CHECK_STR(err, "_Py_DebugOffsets of 3.14: a layout memtrace does not read");

	blob313(w);
	w[2] = 1;
	CHECK(pyoffsets_from_debug(w, sizeof(w), 13, &l, err, sizeof(err)) == -2);
	CHECK(strstr(err, "free-threaded") != NULL);

	blob313(w);
	w[24] = 304; /* thread_id at the end of a 304-byte PyThreadState */
	CHECK(pyoffsets_from_debug(w, sizeof(w), 13, &l, err, sizeof(err)) == -1);
	CHECK(strstr(err, "outside its structure") != NULL);
	blob313(w);
	w[19] = (uint64_t)1 << 40; /* a size no PyThreadState has */
	CHECK(pyoffsets_from_debug(w, sizeof(w), 13, &l, err, sizeof(err)) == -1);

	/* nothing refused changed the layout */
	CHECK_EQ_U64(pyoffsets_diff(t, &l, diff, sizeof(diff)), 0);
}

TEST(test_table)
{
	CHECK(pyoffsets_table(9) == NULL);
	CHECK(pyoffsets_table(14) == NULL);
	for (int m = 10; m <= 13; m++) {
		CHECK(pyoffsets_table(m) != NULL);
		CHECK_EQ_U64(pyoffsets_table(m)->minor, m);
		CHECK_EQ_U64(pyoffsets_table(m)->pc.minor, m);
		CHECK_EQ_U64(pyoffsets_table(m)->str_length, 16);
		CHECK_EQ_U64(pyoffsets_table(m)->str_state, 32);
	}
}

/*
 * Mock CPython 3.12 structures, named as CPython names them, at offsets no
 * CPython has: the DWARF reader must find these (in this binary's DWARF,
 * built with -g) rather than echo the table.
 */
struct _ts {
	char pad0[24];
	struct _ts *next; /* 24 */
	char pad1[40];
	void *cframe; /* 72 */
	char pad2[16];
	unsigned long thread_id; /* 96 */
};
struct pythreads {
	long next_unique_id;
	struct _ts *head; /* 8 */
};
struct _is {
	char pad[100];
	struct pythreads threads; /* 104: head at 112 */
};
struct pyinterpreters {
	void *mutex;
	struct _is *head; /* 8 */
};
struct pyruntimestate {
	char pad[48];
	struct pyinterpreters interpreters; /* 48: head at 56 */
};
struct _PyCFrame {
	void *pad;
	void *current_frame; /* 8 */
};
typedef struct _PyInterpreterFrame {
	void *pad;
	void *f_code;	     /* 8 */
	void *previous;	     /* 16 */
	void *prev_instr;    /* 24 */
	int stacktop;	     /* 32 */
	unsigned short pad2; /* 36 */
	char owner;	     /* 38 */
} _PyInterpreterFrame;	     /* typedef of the same name */
struct PyCodeObject {
	char pad[16];
	void *co_filename;  /* 16 */
	void *co_name;	    /* 24 */
	void *co_qualname;  /* 32 */
	void *co_linetable; /* 40 */
	int co_firstlineno; /* 48 */
	char pad2[12];
	char co_code_adaptive[8]; /* 64 */
};
typedef struct {
	char pad[24];
	long length; /* 24 */
	char pad1[8];
	struct {
		unsigned int interned : 2;
		unsigned int kind : 3;
	} state; /* 40 */
	char pad2[4];
} PyASCIIObject; /* 48 */ /* anonymous: found through the typedef */
typedef struct {
	PyASCIIObject _base;
	char pad[24];
} PyCompactUnicodeObject;

/* defined, so that the compiler describes them */
struct pyruntimestate mock_runtime;
struct _is mock_interp;
struct _PyCFrame mock_cframe;
_PyInterpreterFrame mock_frame;
struct PyCodeObject mock_code;
PyCompactUnicodeObject mock_str;

TEST(test_dwarf)
{
	struct py_layout l = *pyoffsets_table(12), before;
	char err[256] = "", diff[1024];
	struct elf_module *self = elfmod_open("/proc/self/exe", err, sizeof(err)), *bare;
	int rc;

	CHECK(self != NULL);
	if (!self)
		return;
	rc = pyoffsets_from_dwarf(self, 12, &l, err, sizeof(err));

	if (rc == 1)
		fprintf(stderr,
			"test_dwarf: no DWARF in /proc/self/exe: build the tests with -g\n");
	CHECK(rc == 0);
	CHECK_EQ_U64(l.minor, 12);
	CHECK_EQ_U64(l.runtime_interp_head, offsetof(struct pyruntimestate, interpreters.head));
	CHECK_EQ_U64(l.pc.interp_threads_head, offsetof(struct _is, threads.head));
	CHECK_EQ_U64(l.pc.tstate_next, offsetof(struct _ts, next));
	CHECK_EQ_U64(l.pc.tstate_thread_id, offsetof(struct _ts, thread_id));
	CHECK_EQ_U64(l.pc.tstate_frame, offsetof(struct _ts, cframe));
	CHECK_EQ_U64(l.pc.cframe_current, offsetof(struct _PyCFrame, current_frame));
	CHECK_EQ_U64(l.pc.frame_code, offsetof(_PyInterpreterFrame, f_code));
	CHECK_EQ_U64(l.pc.frame_previous, offsetof(_PyInterpreterFrame, previous));
	CHECK_EQ_U64(l.pc.frame_instr, offsetof(_PyInterpreterFrame, prev_instr));
	CHECK_EQ_U64(l.pc.frame_owner, offsetof(_PyInterpreterFrame, owner));
	CHECK_EQ_U64(l.pc.code_adaptive, offsetof(struct PyCodeObject, co_code_adaptive));
	CHECK_EQ_U64(l.co_filename, offsetof(struct PyCodeObject, co_filename));
	CHECK_EQ_U64(l.co_name, offsetof(struct PyCodeObject, co_name));
	CHECK_EQ_U64(l.co_qualname, offsetof(struct PyCodeObject, co_qualname));
	CHECK_EQ_U64(l.co_firstlineno, offsetof(struct PyCodeObject, co_firstlineno));
	CHECK_EQ_U64(l.co_linetable, offsetof(struct PyCodeObject, co_linetable));
	CHECK_EQ_U64(l.ascii_size, sizeof(PyASCIIObject));
	CHECK_EQ_U64(l.compact_size, sizeof(PyCompactUnicodeObject));
	CHECK_EQ_U64(l.str_length, offsetof(PyASCIIObject, length));
	CHECK_EQ_U64(l.str_state, offsetof(PyASCIIObject, state));
	CHECK_EQ_U64(pyoffsets_diff(pyoffsets_table(12), &l, diff, sizeof(diff)), 20);

	/* 3.13 wants _ts.current_frame, which the mock lacks: refused, unchanged */
	before = l = *pyoffsets_table(13);
	CHECK(pyoffsets_from_dwarf(self, 13, &l, err, sizeof(err)) == -1);
	CHECK_STR(err, "the DWARF has no _ts.current_frame");
	CHECK_EQ_U64(pyoffsets_diff(&before, &l, diff, sizeof(diff)), 0);
	/* 3.10 wants struct _frame, which this binary does not define */
	l = *pyoffsets_table(10);
	CHECK(pyoffsets_from_dwarf(self, 10, &l, err, sizeof(err)) == -1);
	CHECK_STR(err, "the DWARF has no definition of _frame");
	/* a file without DWARF, and a module that let go of its file */
	bare = elfmod_open("tests/unit/data/unwind_rules.so", err, sizeof(err));
	CHECK(bare != NULL);
	if (bare)
		CHECK(pyoffsets_from_dwarf(bare, 12, &l, err, sizeof(err)) == 1);
	elfmod_close(bare);
	elfmod_release_file(self);
	CHECK(pyoffsets_from_dwarf(self, 12, &l, err, sizeof(err)) == 1);
	elfmod_close(self);
}

UNIT_MAIN()
