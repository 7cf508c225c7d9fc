// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Sorting mappings into kinds (memmap.h). The rules are tried in order, the
 * first that holds decides; each says in a comment which layout it knows.
 */
#include "daemon/proc/memmap.h"
#include "common/util.h"

#include <stdlib.h>
#include <string.h>

static uint64_t file_dev(const struct map_entry *e)
{
	return (uint64_t)e->dev_major << 32 | e->dev_minor;
}

static int compare_file(const void *a, const void *b)
{
	const struct memmap_file *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->inode < y->inode ? -1 : x->inode > y->inode;
}

void memmap_init(struct memmap *mm, const struct smaps *m)
{
	memset(mm, 0, sizeof(*mm));
	mm->m = m;
	mm->live_bytes = xcalloc(m->n ? m->n : 1, sizeof(*mm->live_bytes));
	mm->live_blocks = xcalloc(m->n ? m->n : 1, sizeof(*mm->live_blocks));
	mm->images = xcalloc(m->n ? m->n : 1, sizeof(*mm->images));
	/* a library's data and read-only segments are its image as much as its code */
	for (size_t i = 0; i < m->n; i++) {
		const struct map_entry *e = &m->v[i].map;

		if (e->perms[2] == 'x' && procmaps_is_file(e))
			mm->images[mm->nimages++] = (struct memmap_file){file_dev(e), e->inode};
	}
	qsort(mm->images, mm->nimages, sizeof(*mm->images), compare_file);
}

void memmap_add_block(struct memmap *mm, uint64_t addr, uint64_t size)
{
	long i = smaps_find(mm->m, addr);

	if (i < 0) {
		mm->unmapped_blocks++;
		mm->unmapped_bytes += size;
		return;
	}
	mm->live_blocks[i]++;
	mm->live_bytes[i] += size;
}

static int has_prefix(const char *s, const char *prefix)
{
	return s && !strncmp(s, prefix, strlen(prefix));
}

/* No file behind it: no path, or a name given with prctl(PR_SET_VMA_ANON_NAME). */
static int anonymous(const struct map_entry *e)
{
	return !e->path || has_prefix(e->path, "[anon:");
}

static int is_rw(const struct map_entry *e)
{
	return e->perms[0] == 'r' && e->perms[1] == 'w';
}

static int is_reserved(const struct map_entry *e)
{
	return anonymous(e) && !strcmp(e->perms, "---p");
}

/*
 * glibc's new_heap(): a 64 MiB reservation at a 64 MiB boundary, its start
 * made read-write as the arena grows, the rest PROT_NONE. So the read-write
 * part starts at the boundary, and with the reserved rest right after it
 * spans exactly 64 MiB.
 */
static int arena_start(const struct smaps *m, size_t i)
{
	const struct map_entry *e = &m->v[i].map, *next;
	uint64_t size = e->end - e->start;

	if (!anonymous(e) || !is_rw(e) || e->start % MEMMAP_ARENA_SIZE || size > MEMMAP_ARENA_SIZE)
		return 0;
	if (size == MEMMAP_ARENA_SIZE)
		return 1;
	if (i + 1 >= m->n)
		return 0;
	next = &m->v[i + 1].map;
	return is_reserved(next) && next->start == e->end &&
	       next->end - e->start == MEMMAP_ARENA_SIZE;
}

/* The reserved rest of an arena. */
static int arena_rest(const struct smaps *m, size_t i)
{
	const struct map_entry *e = &m->v[i].map, *prev;

	if (!i || !is_reserved(e))
		return 0;
	prev = &m->v[i - 1].map;
	return prev->end == e->start && arena_start(m, i - 1);
}

/*
 * A thread stack as glibc's allocate_stack() (and musl's) make it: one
 * mapping whose lowest pages are made PROT_NONE as a guard, so a read-write
 * mapping right above a reserved one. The guard counts with its stack.
 */
static int stack_above_guard(const struct memmap *mm, size_t i)
{
	const struct map_entry *e = &mm->m->v[i].map, *prev;

	if (!i || !anonymous(e) || !is_rw(e) || mm->live_blocks[i] || arena_start(mm->m, i))
		return 0;
	prev = &mm->m->v[i - 1].map;
	return is_reserved(prev) && prev->end == e->start && !arena_rest(mm->m, i - 1);
}

static int image(const struct memmap *mm, const struct map_entry *e)
{
	struct memmap_file key = {file_dev(e), e->inode};

	return procmaps_is_file(e) &&
	       bsearch(&key, mm->images, mm->nimages, sizeof(key), compare_file) != NULL;
}

/* An image's .bss past its file: anonymous, right after its writable data segment. */
static int image_bss(const struct memmap *mm, size_t i)
{
	const struct map_entry *e = &mm->m->v[i].map, *prev;

	if (!i || !is_rw(e))
		return 0;
	prev = &mm->m->v[i - 1].map;
	return prev->end == e->start && is_rw(prev) && prev->perms[3] == 'p' && image(mm, prev);
}

/* Memory the kernel counts as shared memory (RssShmem) when it is resident. */
static int shared_memory(const struct map_entry *e)
{
	if (has_prefix(e->path, "[anon_shmem:") || has_prefix(e->path, "/SYSV") ||
	    has_prefix(e->path, "/memfd:") || has_prefix(e->path, "/dev/shm/"))
		return 1;
	/* MAP_SHARED | MAP_ANONYMOUS is a shmem file the kernel names /dev/zero */
	return e->perms[3] == 's' && (anonymous(e) || !strcmp(e->path, "/dev/zero"));
}

enum mt_mem_kind memmap_kind(const struct memmap *mm, size_t i)
{
	const struct map_entry *e = &mm->m->v[i].map;

	if (e->path && !strcmp(e->path, "[heap]"))
		return MT_MEM_BRK_HEAP;
	if (e->path && (!strcmp(e->path, "[stack]") || has_prefix(e->path, "[stack:")))
		return MT_MEM_THREAD_STACK;
	if (shared_memory(e))
		return MT_MEM_SHARED_MEMORY;
	if (anonymous(e)) {
		if (arena_start(mm->m, i) || arena_rest(mm->m, i))
			return MT_MEM_ARENA;
		if (mm->live_blocks[i])
			return MT_MEM_ALLOCATOR_MMAP;
		if (stack_above_guard(mm, i) || (i + 1 < mm->m->n && stack_above_guard(mm, i + 1) &&
						 mm->m->v[i + 1].map.start == e->end))
			return MT_MEM_THREAD_STACK;
		return image_bss(mm, i) ? MT_MEM_IMAGE : MT_MEM_ANONYMOUS;
	}
	/* [vdso], [vvar], [vsyscall], [uprobes]; anon_inode: (BPF maps, perf buffers) */
	if (e->path[0] == '[' || has_prefix(e->path, "anon_inode:"))
		return MT_MEM_KERNEL;
	return image(mm, e) ? MT_MEM_IMAGE : MT_MEM_FILE;
}

void memmap_sum(const struct memmap *mm, struct mt_memory *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < mm->m->n; i++) {
		const struct smaps_entry *s = &mm->m->v[i];
		struct mt_mem_figures *f = &out->kinds[memmap_kind(mm, i)];

		f->mappings++;
		f->virtual_bytes += s->map.end - s->map.start;
		f->resident_bytes += s->rss;
		f->swap_bytes += s->swap;
		f->live_allocations += mm->live_blocks[i];
		f->live_bytes += mm->live_bytes[i];
	}
	out->unmapped_allocations = mm->unmapped_blocks;
	out->unmapped_bytes = mm->unmapped_bytes;
}

void memmap_free(struct memmap *mm)
{
	free(mm->live_bytes);
	free(mm->live_blocks);
	free(mm->images);
	memset(mm, 0, sizeof(*mm));
}
