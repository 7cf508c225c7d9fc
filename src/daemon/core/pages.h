/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Memory for the accounting core's tables (the heap's shards, the stack
 * table's arrays, the stack ids): from 64 KiB on, pages mapped for each
 * table alone, grown in place or moved by the kernel (mremap) and given
 * back whole when freed; below, malloc's. A table that grows by copying in
 * malloc's heap leaves its old copies there as holes the next tables only
 * partly fill, and that stay resident (256 shards growing by a quarter free
 * tens of MB of old arrays on the way to a million blocks): at a million
 * live blocks that was a third of the daemon's growth. So when a table
 * leaves malloc's heap for pages of its own, the whole free pages inside
 * that heap go back (malloc_trim). Smaller arrays stay with malloc: a
 * mapping each, grown by mremap, costs a system call, a TLB flush and page
 * faults at every growth, which halved the ingest replay's speed on a
 * virtual machine. What is not yet touched of a mapping costs nothing.
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
