// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unwind tables in BPF maps (see unwind_pool.h). Chunks are mmapable array
 * maps, so a table is written with memcpy; all have the same size, so the
 * verifier inlines the walker's lookups in them. Each table id owns one
 * range of slots; ranges never overlap, and a chunk lives while a range
 * touches it.
 */
#include "daemon/unwind/unwind_pool.h"
#include "common/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>

#define CHUNK_BYTES ((uint64_t)MT_UW_CHUNK_ROWS * 8)

struct chunk {
	int fd;
	void *mem;
	uint32_t users; /* tables with slots in it */
};

struct range {
	uint32_t slot, nslots; /* nslots 0: the id is free */
};

struct unwind_pool {
	int pool_fd, tables_fd;
	uint32_t max_chunks;
	uint32_t chunks_made;
	struct chunk *chunks;
	struct range ids[MT_UW_MAX_TABLES];
	uint64_t table_bytes;
};

struct unwind_pool *unwind_pool_new(int pool_fd, int tables_fd, uint64_t max_bytes)
{
	struct unwind_pool *p = xcalloc(1, sizeof(*p));

	p->pool_fd = pool_fd;
	p->tables_fd = tables_fd;
	p->max_chunks = (uint32_t)(max_bytes / CHUNK_BYTES);
	if (!p->max_chunks)
		p->max_chunks = 1;
	if (p->max_chunks > MT_UW_MAX_CHUNKS)
		p->max_chunks = MT_UW_MAX_CHUNKS;
	p->chunks = xcalloc(p->max_chunks, sizeof(*p->chunks));
	for (uint32_t i = 0; i < p->max_chunks; i++)
		p->chunks[i].fd = -1;
	return p;
}

static int chunk_get(struct unwind_pool *p, uint32_t c)
{
	struct chunk *ch = &p->chunks[c];
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE);
	int fd, rc;

	if (ch->mem) {
		ch->users++;
		return 0;
	}
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "uw_chunk", 4, 8, MT_UW_CHUNK_ROWS, &opts);
	if (fd < 0)
		return -errno;
	ch->mem = mmap(NULL, CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ch->mem == MAP_FAILED) {
		rc = -errno;
		ch->mem = NULL;
		close(fd);
		return rc;
	}
	if (bpf_map_update_elem(p->pool_fd, &c, &fd, BPF_ANY)) {
		rc = -errno;
		munmap(ch->mem, CHUNK_BYTES);
		ch->mem = NULL;
		close(fd);
		return rc;
	}
	ch->fd = fd;
	ch->users = 1;
	p->chunks_made++;
	return 0;
}

static void chunk_put(struct unwind_pool *p, uint32_t c)
{
	struct chunk *ch = &p->chunks[c];

	if (!ch->mem || --ch->users)
		return;
	bpf_map_delete_elem(p->pool_fd, &c);
	munmap(ch->mem, CHUNK_BYTES);
	close(ch->fd);
	ch->mem = NULL;
	ch->fd = -1;
	p->chunks_made--;
}

static uint64_t *slot_ptr(struct unwind_pool *p, uint32_t s)
{
	return (uint64_t *)p->chunks[s >> MT_UW_CHUNK_SHIFT].mem + (s & (MT_UW_CHUNK_ROWS - 1));
}

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* First fit among the ranges in use; 0, or -1 when nothing fits. */
static int place(const struct unwind_pool *p, uint32_t need, uint32_t *out)
{
	struct range *v = xcalloc(MT_UW_MAX_TABLES, sizeof(*v));
	uint64_t at = 0, limit = (uint64_t)p->max_chunks * MT_UW_CHUNK_ROWS;
	size_t n = 0;

	for (size_t i = 0; i < MT_UW_MAX_TABLES; i++) {
		if (p->ids[i].nslots)
			v[n++] = p->ids[i];
	}
	qsort(v, n, sizeof(*v), cmp_range);
	for (size_t i = 0; i < n; i++) {
		if (at + need <= v[i].slot)
			break;
		at = v[i].slot + (uint64_t)v[i].nslots;
	}
	free(v);
	if (at + need > limit)
		return -1;
	*out = (uint32_t)at;
	return 0;
}

int unwind_pool_load(struct unwind_pool *p, const struct unwind_table *t, uint32_t *id_out)
{
	uint64_t need = (uint64_t)t->npages + t->nrows;
	struct mt_unwind_table meta;
	uint32_t slot, c0, c1, c, id;

	if (!need || need >= (uint64_t)p->max_chunks * MT_UW_CHUNK_ROWS ||
	    place(p, (uint32_t)need, &slot))
		return -1;
	for (id = 0; id < MT_UW_MAX_TABLES && p->ids[id].nslots; id++)
		;
	if (id == MT_UW_MAX_TABLES)
		return -1;
	c0 = slot >> MT_UW_CHUNK_SHIFT;
	c1 = (uint32_t)((slot + need - 1) >> MT_UW_CHUNK_SHIFT);
	for (c = c0; c <= c1; c++) {
		if (chunk_get(p, c)) {
			while (c-- > c0)
				chunk_put(p, c);
			return -1;
		}
	}
	for (uint32_t i = 0; i < t->npages; i++)
		memcpy(slot_ptr(p, slot + i), &t->pages[i], 8);
	for (uint32_t i = 0; i < t->nrows; i++)
		memcpy(slot_ptr(p, slot + t->npages + i), &t->rows[i], 8);
	meta.pages_slot = slot;
	meta.npages = t->npages;
	meta.rows_slot = slot + t->npages;
	meta.nrows = t->nrows;
	if (bpf_map_update_elem(p->tables_fd, &id, &meta, BPF_ANY)) {
		for (c = c0; c <= c1; c++)
			chunk_put(p, c);
		return -1;
	}
	p->ids[id].slot = slot;
	p->ids[id].nslots = (uint32_t)need;
	p->table_bytes += need * 8;
	*id_out = id;
	return 0;
}

void unwind_pool_unload(struct unwind_pool *p, uint32_t id)
{
	struct mt_unwind_table none = {0};
	struct range *r;

	if (id >= MT_UW_MAX_TABLES || !p->ids[id].nslots)
		return;
	r = &p->ids[id];
	/* no table first: a walker that still has the id finds nothing */
	bpf_map_update_elem(p->tables_fd, &id, &none, BPF_ANY);
	for (uint32_t c = r->slot >> MT_UW_CHUNK_SHIFT;
	     c <= (r->slot + r->nslots - 1) >> MT_UW_CHUNK_SHIFT; c++)
		chunk_put(p, c);
	p->table_bytes -= (uint64_t)r->nslots * 8;
	r->slot = r->nslots = 0;
}

void unwind_pool_usage(const struct unwind_pool *p, uint64_t *limit, uint64_t *used,
		       uint64_t *table_bytes)
{
	*limit = (uint64_t)p->max_chunks * CHUNK_BYTES;
	*used = (uint64_t)p->chunks_made * CHUNK_BYTES;
	*table_bytes = p->table_bytes;
}

void unwind_pool_free(struct unwind_pool *p)
{
	if (!p)
		return;
	for (uint32_t c = 0; c < p->max_chunks; c++) {
		if (p->chunks[c].mem) {
			munmap(p->chunks[c].mem, CHUNK_BYTES);
			close(p->chunks[c].fd);
		}
	}
	free(p->chunks);
	free(p);
}
