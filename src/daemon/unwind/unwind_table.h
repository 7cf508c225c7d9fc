/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One module's unwind table: its call frame information (.eh_frame, else
 * .debug_frame, from a separate debug file where that is all there is) read
 * through libdw's CFI interface and made into the compact rows of
 * include/memtrace/unwind.h, with the page index the BPF walker searches.
 * Rules the rows cannot express become MT_UW_CFA_STOP, never a guess. The
 * only bytes read here rather than by libdw are each FDE's address range
 * (dwarf_next_cfi hands it over encoded); that decoding is fuzzed.
 */
#ifndef MEMTRACE_UNWIND_TABLE_H
#define MEMTRACE_UNWIND_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/unwind.h"

typedef struct Elf Elf;

struct unwind_table {
	uint64_t base; /* virtual address of table offset 0 */
	uint64_t size; /* bytes covered from base */
	struct mt_unwind_row *rows;
	uint32_t nrows;
	struct mt_unwind_page *pages;
	uint32_t npages;
	const char *source; /* ".eh_frame" or ".debug_frame" */
	uint32_t fdes;	    /* FDEs read */
	uint32_t stop_rows; /* rows the walker stops at (not expressible) */
};

/*
 * Build t from elf's .eh_frame, or from the .debug_frame of elf or of
 * debug (a separate debug file; may be NULL) when elf has no .eh_frame.
 * Returns 0, or -1 with a one-line reason in err (t is then empty).
 */
int unwind_table_build(Elf *elf, Elf *debug, struct unwind_table *t, char *err, size_t errlen);

/* The same from open files (debug_fd may be -1); the descriptors stay the caller's. */
int unwind_table_build_fd(int fd, int debug_fd, struct unwind_table *t, char *err, size_t errlen);

void unwind_table_free(struct unwind_table *t);

/*
 * The row that applies at virtual address vaddr, found the way the BPF
 * walker finds it (page entry, then binary search), or NULL outside the
 * table. For tests and for checking the walker's view.
 */
const struct mt_unwind_row *unwind_table_find(const struct unwind_table *t, uint64_t vaddr);

/*
 * Decode a DWARF pointer encoding (DW_EH_PE_*) at p (at most avail bytes;
 * field_vaddr is the address of p, for pc-relative values). Returns the
 * bytes used, or 0 when the encoding is unsupported or the bytes run out.
 */
size_t unwind_decode_pointer(const uint8_t *p, size_t avail, uint8_t encoding, uint64_t field_vaddr,
			     uint64_t *out);

#endif
