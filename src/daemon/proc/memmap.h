/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Where a process's resident memory is (memmap.c): its mappings (smaps.h)
 * sorted into the kinds of include/memtrace/resident.h, with the live heap
 * memtrace holds in each, so that what the allocator's regions hold beyond
 * the live heap (the heap overhead) can be told. Pure logic over parsed
 * text and block addresses: unit tested on committed samples.
 *
 * What the maps tell is all it knows: the brk heap is named; glibc's other
 * arenas have a shape of their own (64 MiB-aligned, the rest of the 64 MiB
 * reserved PROT_NONE); any other anonymous mapping that holds a live block
 * is the allocator's; a thread stack sits right above its PROT_NONE guard;
 * a file is an image when it is mapped executable somewhere, and the
 * anonymous mapping right after its writable data is its .bss. An allocator
 * region that holds no live block and has no shape of its own (a jemalloc
 * extent emptied) counts as other anonymous memory (docs/metrics.md).
 */
#ifndef MEMTRACE_PROC_MEMMAP_H
#define MEMTRACE_PROC_MEMMAP_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/proc/smaps.h"
#include "memtrace/resident.h"

/* glibc's arenas other than the main one (HEAP_MAX_SIZE on 64-bit) */
#define MEMMAP_ARENA_SIZE (64ull << 20)

struct memmap {
	const struct smaps *m;
	uint64_t *live_bytes;  /* per mapping: requested bytes of the live blocks in it */
	uint64_t *live_blocks; /* ... and how many */
	uint64_t unmapped_bytes, unmapped_blocks;
	struct memmap_file {
		uint64_t dev, inode;
	} * images; /* the files mapped executable somewhere, sorted */
	size_t nimages;
};

/* Start counting live blocks over the mappings of m (which must outlive mm). */
void memmap_init(struct memmap *mm, const struct smaps *m);
/* A live block of size bytes at addr: counted in the mapping that holds addr. */
void memmap_add_block(struct memmap *mm, uint64_t addr, uint64_t size);
/* The kind of mapping i. */
enum mt_mem_kind memmap_kind(const struct memmap *mm, size_t i);
/* Every mapping summed by kind, and the live blocks in none. */
void memmap_sum(const struct memmap *mm, struct mt_memory *out);
void memmap_free(struct memmap *mm);

#endif
