/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The mappings of a process with what /proc/PID/smaps adds to maps: the
 * kernel's flags of each (VmFlags: device memory, userfaultfd ranges) and
 * its resident and swapped bytes. A leak scan reads memory by it (scan/).
 * The text is parsed as untrusted bytes, like procmaps.c's.
 */
#ifndef MEMTRACE_SMAPS_H
#define MEMTRACE_SMAPS_H

#include <stddef.h>
#include <stdint.h>

/* VmFlags a reader of the memory must respect (bits of smap.vmflags). */
#define SMAP_IO	       1u /* io: device memory (VM_IO) */
#define SMAP_PFNMAP    2u /* pf: raw page frames (VM_PFNMAP) */
#define SMAP_UFFD      4u /* um, uw, ui: a userfaultfd handles its faults */
#define SMAP_SHARED    8u /* sh */
#define SMAP_READ      16u
#define SMAP_WRITE     32u
#define SMAP_FILE      64u  /* a file (or shared memory) is mapped, not anonymous memory */
#define SMAP_SPECIAL   128u /* [vvar], [vdso], [vsyscall]: the kernel's, never the program's */
#define SMAP_NAMEDANON 256u /* [heap], [stack], [anon:NAME]: anonymous memory with a name */

struct smap {
	uint64_t start, end;
	uint32_t flags;		  /* SMAP_* */
	uint64_t rss, swap, anon; /* bytes: resident, swapped, anonymous (copied on write) */
	char name[64];		  /* the path or pseudo name, cut to fit ("" when anonymous) */
};

struct smaps {
	struct smap *v; /* in address order, non-overlapping */
	size_t n;
};

/* Parse len bytes of smaps text into m (overwritten). 0, or -1 (EINVAL: malformed; ENOMEM). */
int smaps_parse(const char *text, size_t len, struct smaps *m);

/* Read and parse /proc/PID/smaps. 0 or -errno. */
int smaps_read(int pid, struct smaps *m);

void smaps_free(struct smaps *m);

#endif
