/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The stack table as the views show it. A row is one stack of a target: ids
 * below the table's count are its stacks; a forked child that still holds
 * blocks it inherited (family.h) also has rows for its ancestors' stacks
 * with those blocks, ids from the table's count on, each drawn with the
 * ancestor stack's frames. A child's own stack whose frames an ancestor's
 * stack also has is one row with both: its own numbers plus what it
 * inherited. Built on a frozen core for one request (O(the stacks of the
 * families involved)); without forked children there are no extra rows and
 * every id is a stack.
 */
#ifndef MEMTRACE_VIEWROWS_H
#define MEMTRACE_VIEWROWS_H

#include <stdint.h>

#include "daemon/core/addrmap.h"
#include "daemon/core/heap.h"
#include "memtrace/counters.h"

struct tracker;
struct stack_entry;

/* What a row inherited: its live values at the fork, and whether they count now and at the peak. */
struct viewrows_base {
	uint64_t live_allocations, live_bytes;
	int now;     /* still in its heap (the child has not ended) */
	int at_peak; /* held at the moment of the current peak */
};

struct viewrows_row {
	uint32_t stack;	 /* whose frames it shows: an ancestor's stack */
	uint32_t target; /* index in the tracker's targets of the child whose row it is */
	struct viewrows_base base;
};

struct viewrows {
	uint32_t nstacks; /* the stack table's count: rows from here on are inherited */
	uint32_t pid;	  /* the children whose rows were made: this pid's (0: all) */
	int blocks;	  /* made for viewrows_blocks() too */
	struct viewrows_row *rows;
	uint32_t nrows, rows_cap;
	struct addrmap base_at;	     /* a child's own stack + 1 -> index in bases */
	struct viewrows_base *bases; /* what such a stack's row inherited */
	uint32_t nbases, bases_cap;
	struct addrmap row_of; /* (child + 1) << 32 | ancestor stack -> row id + 1 (blocks) */
};

/*
 * The rows of t's state now (which must not change until freed), of pid's
 * targets only (0: every target's); blocks: for viewrows_blocks() too. 0, or
 * -1 (no memory).
 */
int viewrows_build(const struct tracker *t, uint32_t pid, int blocks, struct viewrows *r);
void viewrows_free(struct viewrows *r);

static inline uint32_t viewrows_count(const struct viewrows *r)
{
	return r->nstacks + r->nrows;
}

/* The stack whose frames row id shows (and whose generation names them). */
uint32_t viewrows_stack(const struct viewrows *r, uint32_t id);
/* The pid whose row id is. */
uint32_t viewrows_pid(const struct tracker *t, const struct viewrows *r, uint32_t id);
/* Row id's numbers, inherited part included and its value at the peak resolved. */
struct mt_stack_counters viewrows_counters(const struct tracker *t, const struct viewrows *r,
					   uint32_t id);
/* What row id inherited (zero for rows with nothing inherited). */
struct viewrows_base viewrows_inherited(const struct viewrows *r, uint32_t id);

/*
 * Every live block of every target's heap, with the row it counts in:
 * fn(arg, id, block), each own block once and each inherited block once
 * per child that holds it. fn returns nonzero to stop.
 */
void viewrows_blocks(const struct tracker *t, const struct viewrows *r,
		     int (*fn)(void *arg, uint32_t id, const struct heap_block *b), void *arg);

#endif
