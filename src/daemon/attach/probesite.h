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

/* An ELF file's executable code and function symbols, read once. */
struct codefile;

struct codefile *codefile_open(const char *path);
void codefile_close(struct codefile *f);
/* The function symbol starting at vaddr: 0 with its size and name, or -1. */
int codefile_function_at(const struct codefile *f, uint64_t vaddr, uint64_t *size,
			 const char **name);
/* The function symbol containing vaddr: 0 with its start and size, or -1. */
int codefile_function_containing(const struct codefile *f, uint64_t vaddr, uint64_t *start,
				 uint64_t *size);
/* The bytes of an executable section from vaddr on (*avail of them), or NULL. */
const uint8_t *codefile_code(const struct codefile *f, uint64_t vaddr, size_t *avail);
int codefile_vaddr_to_offset(const struct codefile *f, uint64_t vaddr, uint64_t *off);
int codefile_offset_to_vaddr(const struct codefile *f, uint64_t off, uint64_t *vaddr);
/* Does a direct branch or call in the file, outside [skip_lo, skip_hi), reach [lo, hi]? */
int codefile_branches_into(const struct codefile *f, uint64_t lo, uint64_t hi, uint64_t skip_lo,
			   uint64_t skip_hi);

/*
 * The first byte position at or after from (a vaddr) where a direct call,
 * jmp or jcc reaching target may start (a byte scan: 1 with *at, or 0).
 */
int codefile_branch_from(const struct codefile *f, uint64_t target, uint64_t from, uint64_t *at);

/* One probe to place: the function by its file offset, and what its program reads. */
struct probesite_req {
	uint64_t offset;
	struct placement_need need;
	const char *name;  /* for the log; NULL: the symbol found there */
	const char *shown; /* the file for the log; NULL: path */
};

/*
 * Place n probes of the file at path: out[i] answers req[i]. A function
 * that cannot be read or checked keeps its probe at +0, with the reason in
 * why. MEMTRACE_PROBE_AT_ENTRY=1 in the environment keeps every probe at +0
 * (the naive placement, for comparison).
 */
void probesite_place(const char *path, const struct probesite_req *req, size_t n,
		     struct placement *out);

/*
 * Place every probe of a whose place is not decided yet (place.insn
 * empty), object by object; logs each new decision once.
 */
struct allocator;
void probesite_place_allocator(struct allocator *a);

/* What the BPF program of a probe of func reads, and whether it has a return probe. */
void probesite_need(int func, struct placement_need *need);

/* The BPF cookie of a probe of func placed at p (include/memtrace/event.h). */
uint64_t probesite_cookie(int func, const struct placement *p);

/* MEMTRACE_PROBE_AT_ENTRY is set: every probe at its function's entry, as before. */
int probesite_at_entry(void);

/* Empty the cache (tests). */
void probesite_forget(void);

#endif
