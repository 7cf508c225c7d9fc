/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The ELF side of probe placement: reads a function's code and size from
 * its file, asks placement_decide() where to probe it, and then checks what
 * one function's code cannot show: that no other symbol starts inside the
 * instructions skipped and that no direct branch elsewhere in the file
 * lands there. Decisions are cached per file (device, inode, size, mtime)
 * and offset, so a library shared by many targets is decoded once.
 */
#ifndef MEMTRACE_PROBESITE_H
#define MEMTRACE_PROBESITE_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/attach/placement.h"

struct elf_module;

/* One probe to place: the function by its file offset, and what its program reads. */
struct probesite_req {
	uint64_t offset;
	struct placement_need need;
	const char *name;  /* for the log; NULL: the symbol found there */
	const char *shown; /* the file for the log; NULL: the module's path */
};

/*
 * Place n probes of the file m (NULL: it could not be read): out[i]
 * answers req[i], and each new decision is logged once. A function that
 * cannot be read or checked keeps its probe at +0, with the reason in why.
 * MEMTRACE_PROBE_AT_ENTRY=1 in the environment keeps every probe at +0 (the
 * naive placement, for comparison).
 */
void probesite_place(struct elf_module *m, const struct probesite_req *req, size_t n,
		     struct placement *out);

/* What the BPF program of a probe of func reads, and whether it has a return probe. */
void probesite_need(int func, struct placement_need *need);

/* The BPF cookie of a probe of func placed at p (include/memtrace/event.h). */
uint64_t probesite_cookie(int func, const struct placement *p);

/* MEMTRACE_PROBE_AT_ENTRY is set: every probe at its function's entry, as before. */
int probesite_at_entry(void);

/* Empty the cache (tests). */
void probesite_forget(void);

#endif
