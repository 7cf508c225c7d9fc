/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The memory mappings of a process, as listed by /proc/PID/maps. The parser
 * treats the text as untrusted bytes: every field is checked, and the result
 * is sorted by address with no overlaps so lookups can binary search.
 */
#ifndef MEMTRACE_PROCMAPS_H
#define MEMTRACE_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>

struct map_entry {
	uint64_t start, end; /* [start, end) in the process */
	uint64_t offset;     /* file offset mapped at start */
	uint64_t inode;	     /* 0 for anonymous and pseudo mappings */
	uint32_t dev_major, dev_minor;
	char perms[5]; /* "r-xp" */
	int deleted;   /* the kernel appended " (deleted)"; path has it removed */
	char *path;    /* "/usr/lib/...", "[heap]", ...; NULL for anonymous */
};

struct proc_maps {
	struct map_entry *v; /* sorted by start, non-overlapping */
	size_t n;
};

/*
 * Parse len bytes of maps text (need not be NUL terminated) into m, which is
 * overwritten. Returns 0, or -1 with errno EINVAL on malformed text (m is
 * left empty) or ENOMEM.
 */
int procmaps_parse(const char *text, size_t len, struct proc_maps *m);

/*
 * Parse one line (without its newline) into e, which is overwritten; e->path
 * is malloc'd when the line names one (free it). 0, or -1 when malformed.
 * For the files that list mappings in the maps form (smaps, smaps_rollup).
 */
int procmaps_parse_line(const char *line, size_t len, struct map_entry *e);

struct buf;
/* The whole of a /proc text file (its size reads as 0) appended to b: 0 or -errno. */
int procmaps_read_text(const char *path, struct buf *b);

/* Read and parse /proc/PID/maps into m. Returns 0 or -errno. */
int procmaps_read(int pid, struct proc_maps *m);

/* The mapping containing addr, or NULL. */
const struct map_entry *procmaps_find(const struct proc_maps *m, uint64_t addr);

/* A mapping of a file on disk (not anonymous, not "[heap]" or "[vdso]"). */
int procmaps_is_file(const struct map_entry *e);

/*
 * Open the file of mapping e as pid sees it: /proc/PID/map_files (a file
 * deleted or replaced on disk, another mount namespace; needs privilege),
 * then the path under the process's root, then the path itself. A
 * candidate whose inode is not the mapped one is another file now at that
 * path: skipped. A read-only descriptor, or -1 with a one-line reason
 * (without the path) in why.
 */
int procmaps_open_file(int pid, const struct map_entry *e, char *why, size_t whylen);

void procmaps_free(struct proc_maps *m);

#endif
