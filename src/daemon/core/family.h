/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Process families: a forked child's heap begins as its parent's at the
 * moment of the fork, shared, not copied. The child's view of its heap is
 * its own blocks and stacks, plus its parent's view as of the fork, less the
 * inherited blocks it has freed since. A fork costs O(1); what the child
 * changes costs it one side-table entry per inherited block it frees, and
 * what the parent changes afterwards costs the parent one entry per block or
 * stack it changes while a child still shares them:
 *
 *   - epochs: the tracker counts forks (t->forks); a child forked at epoch
 *     e sees what its parent held at e;
 *   - births: a parent's blocks born after its first fork, with the epoch
 *     of their birth (the others are older than any fork);
 *   - ghosts: a parent's blocks that left its heap after a fork that shares
 *     them: a ghost born at b and gone at d is visible to forks at epochs e
 *     with b < e <= d;
 *   - tombstones: the inherited blocks a child freed, with the epoch;
 *   - history: a parent's stack saves its live values the first time it
 *     changes after a fork, so that the child's per-stack numbers are those
 *     of the fork (the peak epoch's trick, per fork).
 *
 * When a child's generation ends (exit, exec, detach), the inherited blocks
 * it still holds leave its heap (inherited_released: they were never its
 * allocations, and its address space is gone); once no child holds on to a
 * parent's view, the parent's side tables are dropped. Part of the
 * tracker (tracker.h): tracker.c does the accounting, this file keeps and
 * answers the sharing.
 */
#ifndef MEMTRACE_FAMILY_H
#define MEMTRACE_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/core/addrmap.h"
#include "daemon/core/heap.h"

struct tracker;
struct tracker_target;

struct family_ghost {
	uint64_t addr, size, time_ns;
	uint32_t stack;
	uint32_t birth, death; /* visible to forks at epochs e, birth < e <= death */
	uint32_t prev;	       /* the previous ghost at this address + 1; 0: none */
};

/* A stack's live values before its first change after a fork at epoch. */
struct family_hist {
	uint32_t epoch; /* they held for forks at epochs up to this one */
	uint32_t prev;	/* the older record + 1; 0: none */
	uint64_t live_allocations, live_bytes;
};

/* Inherited blocks a child freed, by the stack of its own they were counted on. */
struct family_ifree {
	uint32_t stack;
	uint64_t count, bytes;
};

struct family {
	/* as a parent */
	struct addrmap births;	 /* live blocks born after its first fork: addr -> epoch */
	struct addrmap ghost_at; /* addr -> newest ghost + 1 */
	struct family_ghost *ghosts;
	uint32_t nghosts, ghosts_cap;
	struct family_hist *hist;
	uint32_t nhist, hist_cap;
	uint32_t *hist_stacks; /* stacks that have records, to forget them */
	uint32_t nhist_stacks, hist_stacks_cap;
	/* as a child */
	struct addrmap tombs;	 /* inherited blocks it freed: addr -> epoch */
	struct addrmap ifree_at; /* own stack + 1 -> index in ifree */
	struct family_ifree *ifree;
	uint32_t nifree, ifree_cap;
};

/* child (just added, empty) was forked by parent now: link them (O(1)). 0, or -1 (no memory). */
int family_fork(struct tracker *t, struct tracker_target *parent, struct tracker_target *child);

/* Own block addr of tt was just added to its heap. */
void family_born(struct tracker *t, struct tracker_target *tt, uint64_t addr);
/* Own block b of tt left its heap (freed, missed, unmapped, or resized). */
void family_gone(struct tracker *t, struct tracker_target *tt, const struct heap_block *b);

/*
 * Does tt's view hold an inherited block at addr (one its parent or an
 * earlier ancestor held when tt was forked, not freed by tt since)? 1 and
 * the block in *out (its stack is the ancestor's), or 0.
 */
int family_inherited(const struct tracker *t, const struct tracker_target *tt, uint64_t addr,
		     struct heap_block *out);
/* tt freed (or lost) the inherited block at addr, counted on its own stack. */
void family_took(struct tracker *t, struct tracker_target *tt, uint64_t addr, uint32_t stack,
		 uint64_t size);

/*
 * The next two only for a tt that forked (tt->last_fork), and family_peak_moved
 * only while a released child holds the peak (t->peak_holders): the tracker
 * tests that itself, so a process that never forked never comes here.
 */
/* Before stack s of tt changes its live values: keep them for tt's forks. */
void family_stack_save(struct tracker *t, const struct tracker_target *tt, uint32_t s);
/* Stack s of tt was just made. */
void family_stack_new(struct tracker *t, const struct tracker_target *tt, uint32_t s);

/*
 * tt's generation ended: its inherited blocks leave its heap. Calls
 * undo(arg, stack, count, bytes) for each of its stacks that counted frees
 * of inherited blocks, so that the caller gives back the live values those
 * took; then drops what no one needs any more.
 */
void family_release(struct tracker *t, struct tracker_target *tt,
		    void (*undo)(void *arg, uint32_t stack, uint64_t count, uint64_t bytes),
		    void *arg);
/* The global peak moved (a new peak, or reset-peak): released children no
 * longer count in it (t->peak_holders, above). */
void family_peak_moved(struct tracker *t);

/* Free tt's side tables, with the tracker (before its stacks). */
void family_free(struct tracker *t, struct tracker_target *tt);

/* Bytes of side tables, for the figures. */
size_t family_bytes(const struct tracker *t);

#endif
