/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Feeding the memory of a stopped process to the marking (reach.h): which
 * memory may hold the pointers that keep blocks alive, read in large
 * batches with process_vm_readv.
 *
 * Roots are the registers of every thread (general and vector registers),
 * each thread's stack from its stack pointer less the 128-byte red zone to
 * the end of its mapping, and every other mapping the program may have
 * written: writable or not, anonymous or copied on write from a file,
 * private or shared. That covers the writable segments of every module, TLS
 * (the main thread's in an anonymous mapping, the others' at the top of
 * their stacks), and the allocator's own memory: blocks allocated before
 * tracing began are roots, so what they point to stays reachable; and the
 * pointers the kernel keeps for the process (proc/kroots.h). Pages
 * never touched (zero, or the file's own bytes) are skipped, from
 * PAGEMAP_SCAN (/proc/PID/pagemap; its plain entries on older kernels).
 * Device memory and ranges a userfaultfd serves are never read (a fault
 * there could wait on a thread that is stopped) and are counted.
 */
#ifndef MEMTRACE_SCAN_MEMSCAN_H
#define MEMTRACE_SCAN_MEMSCAN_H

#include <stddef.h>
#include <stdint.h>

struct reach;

struct memscan_thread {
	uint64_t sp;
	const uint64_t *words; /* its registers as words (general, then vector) */
	size_t nwords;
};

struct memscan_stats {
	uint64_t bytes_scanned;	   /* bytes of memory read and scanned (registers included) */
	uint64_t bytes_unreadable; /* bytes that may hold pointers and could not be read */
	uint64_t mappings;	   /* mappings with something scanned */
	uint64_t blocks_unread;	   /* live blocks whose memory could not be read */
};

/* Bytes read per batch: the buffer memscan_run() reads into. */
#define MEMSCAN_BUFFER (4u << 20)

/*
 * Feed r the memory of stopped process pid, read through buf (MEMSCAN_BUFFER
 * bytes, touched beforehand: the process stands still meanwhile). expired(arg)
 * is asked between batches: nonzero stops the scan (the stop's deadline
 * passed). 0, or -1 with a one-line reason in err.
 */
int memscan_run(struct reach *r, int pid, const struct memscan_thread *threads, size_t nthreads,
		uint8_t *buf, int (*expired)(void *arg), void *arg, struct memscan_stats *st,
		char *err, size_t errlen);

/* The red zone below a thread's stack pointer that leaf functions use (x86-64 ABI). */
#define MEMSCAN_RED_ZONE 128

#endif
