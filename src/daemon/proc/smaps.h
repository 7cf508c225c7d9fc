/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A process's mappings with what each holds resident, as /proc/PID/smaps
 * lists them (smaps.c): the maps line of each mapping, then its "Key: N kB"
 * lines. Read only on request (memtracectl stats --memory): the kernel
 * walks every page table of the process to write it. The parser takes the
 * text as untrusted bytes: a mapping without its figures, a figure that is
 * not a size, mappings out of order are errors, never guessed at.
 */
#ifndef MEMTRACE_PROC_SMAPS_H
#define MEMTRACE_PROC_SMAPS_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/proc/procmaps.h"

struct smaps_entry {
	struct map_entry map;
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
