/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The BPF pool that holds unwind tables (include/memtrace/unwind.h): array
 * maps of MT_UW_CHUNK_ROWS 8-byte slots, made when a table first needs one
 * and dropped when none does, up to a memory bound. A table takes a
 * contiguous range of slots (page entries, then rows), found first-fit, and
 * an id in uw_tables, written after its slots so the walker never sees a
 * table half written.
 */
#ifndef MEMTRACE_UNWIND_POOL_H
#define MEMTRACE_UNWIND_POOL_H

#include <stdint.h>

#include "daemon/unwind/unwind_table.h"

struct unwind_pool;

/* pool_fd: the array of maps (uw_pool); tables_fd: uw_tables. */
struct unwind_pool *unwind_pool_new(int pool_fd, int tables_fd, uint64_t max_bytes);
void unwind_pool_free(struct unwind_pool *p);

/* Load t; 0 with its table id, or -1 when it does not fit or a map cannot be made. */
int unwind_pool_load(struct unwind_pool *p, const struct unwind_table *t, uint32_t *id);
void unwind_pool_unload(struct unwind_pool *p, uint32_t id);

/* The bound, the bytes of maps made, the bytes of slots tables use. */
void unwind_pool_usage(const struct unwind_pool *p, uint64_t *limit, uint64_t *used,
		       uint64_t *table_bytes);

#endif
