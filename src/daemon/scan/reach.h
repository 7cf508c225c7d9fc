/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Which live blocks of a stopped process a pointer reaches: conservative
 * marking as LeakSanitizer (compiler-rt's lsan_common) and valgrind's
 * memcheck do it, on a copy of the block table and the words of the
 * process's memory. Pure logic, no I/O (tests/unit/test_reach.c).
 *
 * The caller hands over the target's live blocks (address, size, stack),
 * then feeds memory as it reads it: reach_scan() takes any range of the
 * process (registers through reach_scan_root()) and tells the words that lie
 * inside a live block (an edge from that block to what the word points into)
 * from those that do not (a root: a stack, a global, TLS, a block allocated
 * before tracing began, the allocator's own memory). A word points into a
 * block when its value is the block's first byte (a start pointer) or any
 * byte after it (an interior pointer).
 *
 * reach_mark() then propagates, valgrind's way: a block is *reachable* when a
 * chain of start pointers leads to it from a root, *possible* when every chain
 * that reaches it has an interior pointer somewhere, unreached otherwise.
 * reach_classify() names the unreached blocks as LSan does: *indirect* when
 * another unreached block points into it (the rest of a lost list; every
 * block of a lost ring), *direct* otherwise. reach_ignore() makes blocks
 * roots (LSan's suppressed leaks: what they hold is not reported either).
 *
 * Invariants: blocks are sorted by address; those in the index never
 * overlap (two live blocks that overlap mean a free was not seen: both are
 * taken as reachable and counted, never reported); a block's state only
 * rises (unreached < possible < reachable), so marking ends after at most
 * two visits of each block.
 */
#ifndef MEMTRACE_SCAN_REACH_H
#define MEMTRACE_SCAN_REACH_H

#include <stddef.h>
#include <stdint.h>

enum reach_state {
	REACH_UNREACHED = 0,
	REACH_POSSIBLE = 1,  /* reached only through an interior pointer somewhere */
	REACH_REACHABLE = 2, /* a chain of start pointers from a root */
};

/* What a block is, once classified. */
enum reach_kind {
	REACH_KIND_DIRECT = 0,	 /* unreached, and no unreached block points into it */
	REACH_KIND_INDIRECT = 1, /* unreached, pointed to by another unreached block */
	REACH_KIND_POSSIBLE = 2, /* possible, above */
	REACH_KIND_REACHABLE = 3,
	REACH_KIND_SUPPRESSED = 4, /* a leak whose stack a suppression matched */
	REACH_KIND_COUNT
};

/* Blocks flags (reach.flags). */
#define REACH_F_OVERLAP	   1u /* overlaps another live block: never reported */
#define REACH_F_UNREAD	   2u /* its memory could not be read: never reported */
#define REACH_F_SUPPRESSED 4u /* reach_ignore()d */

struct reach_block {
	uint64_t addr;
	uint64_t size;	/* requested bytes */
	uint32_t stack; /* the caller's: reach only carries it */
};

struct reach_index; /* page -> blocks, reach.c */

struct reach {
	struct reach_block *blocks; /* sorted by address */
	uint32_t n;
	uint32_t cap; /* blocks there is room for (reach_prepare) */
	struct reach_block *sort_tmp;
	uint8_t *state;		    /* enum reach_state per block */
	uint8_t *flags;		    /* REACH_F_* per block */
	uint8_t *kind;		    /* enum reach_kind per block, after reach_classify() */
	uint64_t min_addr, max_end; /* of the indexed blocks: a quick test for non-pointers */
	struct reach_index *index;
	/* edges from blocks: (src << 32) | (dst << 1) | interior, in the order scanned */
	uint64_t *edges;
	size_t nedges, edges_cap;
	uint64_t *first;     /* reach_mark(): edges of block i are edges[first[i], first[i+1]) */
	uint32_t *stack_buf; /* the marking's work list */
	int nomem;	     /* an allocation failed: the result must not be used */
	/* figures */
	uint64_t words_scanned, root_words, overlapping;
};

/*
 * Take blocks[0..n) (the array becomes r's, freed by reach_free). 0, or -1
 * when out of memory.
 */
int reach_init(struct reach *r, struct reach_block *blocks, uint32_t n);

/*
 * Or in two steps, so that a stopped process does not wait for new memory
 * (a first touch of a page costs 30-60 us on some virtual machines): make
 * room for up to cap blocks, every page touched, and get the array to fill;
 * then reach_load() the first n (n <= cap) once they are copied. NULL, or
 * -1, when out of memory (reach_free still applies).
 */
struct reach_block *reach_prepare(struct reach *r, uint32_t cap);
int reach_load(struct reach *r, uint32_t n);
void reach_free(struct reach *r);

/* The block a value points into (start or interior), or -1; *start tells which. */
int64_t reach_find(const struct reach *r, uint64_t value, int *start);

/*
 * Scan len bytes of the process at address addr (any alignment: words are
 * the 8-byte aligned ones wholly inside). Words inside a block are its
 * edges, the others are roots. Ranges may come in any order, each once.
 */
void reach_scan(struct reach *r, uint64_t addr, const void *bytes, size_t len);

/* Words that are roots wherever they come from: registers. */
void reach_scan_root(struct reach *r, const uint64_t *words, size_t n);

/* The block containing addr (a thread's stack pointer) is reachable. */
void reach_mark_containing(struct reach *r, uint64_t addr);

/* Blocks overlapping [start, end) could not be read: never reported. */
void reach_unread(struct reach *r, uint64_t start, uint64_t end);

/* Propagate the roots' marks along the edges (again after reach_ignore). */
int reach_mark(struct reach *r);

/* Block i is a root from now on (a suppressed leak); call reach_mark() after. */
void reach_ignore(struct reach *r, uint32_t i);

/* Name each block (r->kind): after reach_mark(). */
int reach_classify(struct reach *r);

/* Blocks and bytes of each kind. */
struct reach_totals {
	uint64_t blocks[REACH_KIND_COUNT], bytes[REACH_KIND_COUNT];
};
void reach_totals(const struct reach *r, struct reach_totals *out);

/* One entry of the report: the blocks of one stack and one leak kind. */
struct reach_entry {
	uint32_t stack;
	uint8_t kind; /* enum reach_kind: direct, indirect or possible */
	uint64_t blocks, bytes;
};

/*
 * The leaks by (stack, kind): direct ones first, then indirect, then
 * possible (LeakSanitizer's order), each kind most bytes first (then
 * blocks, then the stack number): *out is malloc'd. Returns the number of
 * entries, or -1 when out of memory.
 */
int64_t reach_entries(const struct reach *r, struct reach_entry **out);

#endif
