/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A process's mappings with what each holds resident, as /proc/PID/smaps
 * lists them (smaps.c): the maps line of each mapping, then its "Key: N kB"
 * lines and the kernel's flags of it (VmFlags: device memory, userfaultfd
 * ranges, which a leak scan must not read). Read only on request
 * (memtracectl stats --memory, leaks --unreachable): the kernel walks every
 * page table of the process to write it. The parser takes the
 * text as untrusted bytes: a mapping without its figures, a figure that is
 * not a size, mappings out of order are errors, never guessed at.
 */
#ifndef MEMTRACE_PROC_SMAPS_H
#define MEMTRACE_PROC_SMAPS_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/proc/procmaps.h"

/* The VmFlags a reader of the memory must respect (bits of smaps_entry.vmflags). */
#define SMAPS_VM_IO	1u /* io: device memory (VM_IO) */
#define SMAPS_VM_PFNMAP 2u /* pf: raw page frames (VM_PFNMAP) */
#define SMAPS_VM_UFFD	4u /* um, uw, ui: a userfaultfd serves its faults */
#define SMAPS_VM_SHARED 8u /* sh */

struct smaps_entry {
	struct map_entry map;
	uint32_t vmflags;   /* SMAPS_VM_* of its VmFlags line (0 without one) */
	uint64_t rss;	    /* Rss: resident bytes */
	uint64_t pss;	    /* Pss: resident bytes, each shared page divided among its mappers */
	uint64_t anonymous; /* Anonymous: resident anonymous pages */
	uint64_t swap;	    /* Swap: bytes of its anonymous pages swapped out */
};

struct smaps {
	struct smaps_entry *v; /* sorted by start, non-overlapping */
	size_t n;
};

/*
 * Parse len bytes of smaps text into m (overwritten). 0, or -1 with a
 * one-line reason in err, m left empty.
 */
int smaps_parse(const char *text, size_t len, struct smaps *m, char *err, size_t errlen);

/* Read and parse /proc/PID/smaps: 0, or -errno with a reason in err. */
int smaps_read(int pid, struct smaps *m, char *err, size_t errlen);

/* The mapping holding addr: its index, or -1. */
long smaps_find(const struct smaps *m, uint64_t addr);

void smaps_free(struct smaps *m);

#endif
