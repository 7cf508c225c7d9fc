/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The kernel/user contract of the DWARF stack walker (--stack-walker dwarf):
 * the compact unwind rows userspace makes from each module's call frame
 * information (src/daemon/unwind/unwind_table.c), the pool of BPF array maps that holds
 * them, and the per-process list of mappings the walker looks a pc up in
 * (bpf/unwind.bpf.h). Included by bpf/ (with vmlinux.h) and by src/.
 */
#ifndef MEMTRACE_UNWIND_H
#define MEMTRACE_UNWIND_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/*
 * How to find the Canonical Frame Address (the caller's stack pointer) at a
 * pc, and the caller's rbp; the return address is always at CFA - 8
 * (x86-64). Rules the compact form cannot express are MT_UW_CFA_STOP: the
 * walker stops there, marked truncated, and never guesses.
 */
enum mt_uw_cfa {
	MT_UW_CFA_NONE = 0,	 /* no call frame information here: frame-pointer step */
	MT_UW_CFA_RSP = 1,	 /* CFA = rsp + off */
	MT_UW_CFA_RBP = 2,	 /* CFA = rbp + off */
	MT_UW_CFA_DEREF_RBP = 3, /* CFA = *(rbp + off): a function that realigns its stack */
	MT_UW_CFA_PLT = 4,	 /* lazy PLT stub: CFA = rsp + 8, + 8 once (pc & 15) >= off */
	MT_UW_CFA_ROOT = 5,	 /* the return address is undefined: the outermost frame */
	MT_UW_CFA_STOP = 6,	 /* not expressible (DWARF expression, ...) */
	MT_UW_CFA_SIGNAL = 7,	 /* the kernel's signal frame (libc's __restore_rt): rsp
				  * points at the interrupted registers, saved rsp at
				  * rsp + cfa_off, rip right after it, rbp at rsp + rbp_off */
};

enum mt_uw_rbp {
	MT_UW_RBP_SAME = 0,    /* the caller's rbp is this frame's */
	MT_UW_RBP_AT_CFA = 1,  /* saved at CFA + rbp_off */
	MT_UW_RBP_AT_RBP = 2,  /* saved at rbp + rbp_off (a realigned frame) */
	MT_UW_RBP_UNKNOWN = 3, /* lost: a caller that needs rbp stops the walk */
};

/*
 * One row: the rule from pc (an offset from the table's base, the module's
 * lowest covered address) up to the next row's pc. Offsets are in units of
 * 8 bytes (the stack is 8-byte aligned); for MT_UW_CFA_PLT, cfa_off is the
 * (pc & 15) threshold in bytes.
 */
struct mt_unwind_row {
	__u32 pc;
	__u8 kind;     /* enum mt_uw_cfa | enum mt_uw_rbp << 4 */
	__s8 rbp_off;  /* / 8 */
	__s16 cfa_off; /* / 8 */
};

#define MT_UW_CFA_KIND(k) ((k)&15)
#define MT_UW_RBP_KIND(k) ((k) >> 4)

/*
 * A table in the pool: page entries first, then rows. Page p covers table
 * offsets [p << page_shift, (p + 1) << page_shift); its entry, in the same
 * 8 bytes as a row, names the rows to search: every row that applies
 * somewhere in the page is in [first, first + count) (indexes into the
 * table's rows), so a lookup is one page entry and a binary search of at
 * most MT_UW_SEARCH_STEPS steps.
 */
struct mt_unwind_page {
	__u32 first;
	__u32 count;
};

#define MT_UW_PAGE_SHIFT   8 /* 256-byte pages: a handful of rows each */
#define MT_UW_SEARCH_STEPS 9 /* 2^9 > the rows one 256-byte page can hold */

/*
 * The pool: an array of MT_UW_MAX_CHUNKS array maps of MT_UW_CHUNK_ROWS
 * 8-byte slots (1 MiB each), made by the daemon as tables need them, up to
 * its --unwind-memory. Slot s is entry s % MT_UW_CHUNK_ROWS of chunk
 * s / MT_UW_CHUNK_ROWS.
 */
#define MT_UW_CHUNK_SHIFT 17
#define MT_UW_CHUNK_ROWS  (1u << MT_UW_CHUNK_SHIFT)
#define MT_UW_MAX_CHUNKS  4096 /* 4 GiB of rows at most */

/* A loaded table ("uw_tables", indexed by table id). */
struct mt_unwind_table {
	__u32 pages_slot; /* pool slot of page entry 0 */
	__u32 npages;
	__u32 rows_slot; /* pool slot of row 0 */
	__u32 nrows;
};

#define MT_UW_MAX_TABLES 4096
#define MT_UW_NO_TABLE	 0xffffffffu /* a mapping without a table: frame pointers there */

/*
 * The executable mappings of one traced process ("uw_procs", by tgid),
 * sorted by start: a pc in [start, end) is at table offset pc - bias.
 */
struct mt_unwind_map {
	__u64 start, end;
	__u64 bias;
	__u32 table; /* table id, or MT_UW_NO_TABLE */
	__u32 pad;
};

#define MT_UW_MAX_MAPS 512

struct mt_unwind_proc {
	__u32 nmaps;
	__u32 pad;
	/* address of its ld.so's r_debug.r_state, 0 when unknown: the walker's
	 * ld.so probe stops the process (dlopen, dlclose) only once consistent */
	__u64 r_state_addr;
	/* this list's number, never 0 and never reused: the daemon numbers
	 * each list it writes (a forked child's copy keeps its parent's). The
	 * walker's cache of rows is keyed by it. */
	__u64 gen;
	struct mt_unwind_map maps[MT_UW_MAX_MAPS];
};

#endif
