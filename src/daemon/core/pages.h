/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Memory for the accounting core's big tables (the heap's shards, the stack
 * table's arrays, the stack ids): from 64 KiB on, pages mapped for each
 * table alone, grown in place or moved by the kernel (mremap) and given back
 * whole when freed; below, malloc's. A table that grows by copying in
 * malloc's heap leaves its old copies there as holes the next tables only
 * partly fill (and glibc raises its mmap threshold after the first large
 * free, so large ones land there too): at a million live blocks that was an
 * eighth of the daemon's memory. What is not yet touched of a mapping costs
 * nothing.
 */
#ifndef MEMTRACE_PAGES_H
#define MEMTRACE_PAGES_H

#include <stddef.h>

/* n zeroed bytes, or NULL. */
void *pages_alloc(size_t n);
/* p (of n bytes) grown or shrunk to m, its contents kept and any new bytes
 * zeroed; NULL (p untouched) when memory runs out. p may be NULL (n 0). */
void *pages_realloc(void *p, size_t n, size_t m);
/* Give back p, of n bytes (NULL: nothing). */
void pages_free(void *p, size_t n);

#endif
