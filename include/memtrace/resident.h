/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Resident memory beside the heap (docs/metrics.md, "Resident memory"), its
 * names defined once. MT_RESIDENT lists what is sampled of a process with
 * the timeline (the kernel's split of its resident set, and what
 * smaps_rollup adds); MT_MEM_KINDS the kinds of mapping a breakdown sorts
 * its mappings into, and MT_MEM_FIELDS what is summed per kind. The
 * structs, the parsers of /proc (src/daemon/proc/rss.c), the snapshot's wire
 * order, stats text and JSON and the Prometheus names come from these tables.
 */
#ifndef MEMTRACE_RESIDENT_H
#define MEMTRACE_RESIDENT_H

#include <stddef.h>
#include <stdint.h>

/* Which /proc file a resident figure comes from. */
enum mt_resident_source {
	MT_FROM_STATUS, /* /proc/PID/status: the kernel's counters (what top shows) */
	MT_FROM_ROLLUP, /* /proc/PID/smaps_rollup: a walk of the page tables */
};

/*
 * X(field, name, Prometheus name, source, key, help). The wire order is the
 * table's: new figures go at the end. Every value is in bytes (the files say
 * kB).
 */
#define MT_RESIDENT(X)                                                                             \
	X(resident_bytes, "resident_bytes", "memtrace_resident_bytes", MT_FROM_STATUS, "VmRSS",    \
	  "Resident memory (VmRSS): anonymous, file and shared memory pages mapped.")              \
	X(resident_anon_bytes, "resident_anon_bytes", "memtrace_resident_anon_bytes",              \
	  MT_FROM_STATUS, "RssAnon", "Resident anonymous pages (RssAnon).")                        \
	X(resident_file_bytes, "resident_file_bytes", "memtrace_resident_file_bytes",              \
	  MT_FROM_STATUS, "RssFile", "Resident pages of mapped files (RssFile).")                  \
	X(resident_shmem_bytes, "resident_shmem_bytes", "memtrace_resident_shmem_bytes",           \
	  MT_FROM_STATUS, "RssShmem", "Resident shared memory pages (RssShmem).")                  \
	X(swap_bytes, "swap_bytes", "memtrace_swap_bytes", MT_FROM_STATUS, "VmSwap",               \
	  "Anonymous pages swapped out (VmSwap).")                                                 \
	X(pss_bytes, "pss_bytes", "memtrace_pss_bytes", MT_FROM_ROLLUP, "Pss",                     \
	  "Proportional set size: resident pages, each shared page divided among its mappers.")    \
	X(lazyfree_bytes, "lazyfree_bytes", "memtrace_lazyfree_bytes", MT_FROM_ROLLUP, "LazyFree", \
	  "Resident pages given back with MADV_FREE, still counted until reclaimed.")

struct mt_resident {
#define MT_RESIDENT_FIELD(field, ...) uint64_t field;
	MT_RESIDENT(MT_RESIDENT_FIELD)
#undef MT_RESIDENT_FIELD
};

struct mt_resident_desc {
	const char *name;	/* as in docs/metrics.md, text and JSON */
	size_t offset;		/* in struct mt_resident */
	const char *prometheus; /* metric name (a gauge) */
	enum mt_resident_source source;
	const char *key; /* the line of that file, without its colon */
	const char *help;
};

extern const struct mt_resident_desc mt_resident_descs[];
enum {
#define MT_RESIDENT_ONE(...) +1
	MT_NRESIDENT = 0 MT_RESIDENT(MT_RESIDENT_ONE)
#undef MT_RESIDENT_ONE
};

static inline uint64_t mt_resident_get(const struct mt_resident *r, size_t i)
{
	return *(const uint64_t *)((const char *)r + mt_resident_descs[i].offset);
}

static inline void mt_resident_set(struct mt_resident *r, size_t i, uint64_t v)
{
	*(uint64_t *)((char *)r + mt_resident_descs[i].offset) = v;
}

/* out += r, figure by figure (totals over processes: shared pages count in each). */
void mt_resident_add(struct mt_resident *out, const struct mt_resident *r);

/*
 * The kinds of mapping (X(id, name, heap, help)); heap: the allocator's heap
 * regions, whose resident bytes the live heap is compared with. The order is
 * the wire order: new kinds go at the end.
 */
#define MT_MEM_KINDS(X)                                                                            \
	X(BRK_HEAP, "brk_heap", 1, "the brk heap ([heap]): glibc's main arena")                    \
	X(ARENA, "arena", 1, "glibc's other arenas: 64 MiB-aligned anonymous heaps")               \
	X(ALLOCATOR_MMAP, "allocator_mmap", 1,                                                     \
	  "other anonymous mappings holding live blocks (large blocks, allocator chunks)")         \
	X(THREAD_STACK, "thread_stack", 0, "[stack], and anonymous mappings above a guard page")   \
	X(ANONYMOUS, "anonymous", 0, "other private anonymous mappings")                           \
	X(SHARED_MEMORY, "shared_memory", 0, "shared anonymous memory, tmpfs, SysV shm, memfd")    \
	X(IMAGE, "image", 0, "executable and library files mapped, and their .bss")                \
	X(FILE, "file", 0, "other file mappings")                                                  \
	X(KERNEL, "kernel", 0, "the kernel's own: [vdso], [vvar], [vsyscall], anon_inode: mappings")

enum mt_mem_kind {
#define MT_MEM_KIND_ENUM(id, ...) MT_MEM_##id,
	MT_MEM_KINDS(MT_MEM_KIND_ENUM)
#undef MT_MEM_KIND_ENUM
	    MT_MEM_KIND_COUNT
};

/* X(field): what a breakdown sums per kind, in wire order. */
#define MT_MEM_FIELDS(X)                                                                           \
	X(mappings)                                                                                \
	X(virtual_bytes)                                                                           \
	X(resident_bytes)                                                                          \
	X(swap_bytes)                                                                              \
	X(live_allocations)                                                                        \
	X(live_bytes)

struct mt_mem_figures {
#define MT_MEM_FIELD(field) uint64_t field;
	MT_MEM_FIELDS(MT_MEM_FIELD)
#undef MT_MEM_FIELD
};

enum {
#define MT_MEM_FIELD_ONE(field) +1
	MT_NMEM_FIELDS = 0 MT_MEM_FIELDS(MT_MEM_FIELD_ONE)
#undef MT_MEM_FIELD_ONE
};

struct mt_mem_kind_desc {
	const char *name;
	int heap;
	const char *help;
};

extern const struct mt_mem_kind_desc mt_mem_kind_descs[MT_MEM_KIND_COUNT];
extern const char *const mt_mem_field_names[MT_NMEM_FIELDS];

/* A process's mappings by kind, with the live heap memtrace holds in each. */
struct mt_memory {
	struct mt_mem_figures kinds[MT_MEM_KIND_COUNT];
	/* live blocks whose address is in no mapping (their free was missed) */
	uint64_t unmapped_allocations, unmapped_bytes;
};

static inline uint64_t *mt_mem_field(struct mt_mem_figures *f, size_t i)
{
	return (uint64_t *)f + i;
}

/*
 * The heap regions (the kinds marked heap) summed: their resident bytes,
 * the live bytes in them, and heap_overhead = resident - live, which is
 * negative when live blocks were never touched.
 */
struct mt_heap_summary {
	uint64_t resident_bytes;
	uint64_t live_bytes;
	int64_t overhead_bytes;
};
void mt_memory_heap(const struct mt_memory *m, struct mt_heap_summary *out);

#endif
