/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What one module's addresses symbolize to, each address looked up once: a
 * table from an ELF virtual address to its site, the frames a return address
 * there stands for (the inlined calls around it, innermost first, then the
 * function itself), with every string held once. The symbolizer keeps one
 * per module (file identity, not pid) and drops it with the module.
 * Invariant: an address is added at most once; what it maps to never changes.
 */
#ifndef MEMTRACE_SYMCACHE_H
#define MEMTRACE_SYMCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "common/strtab.h"

/* One frame of a site. Strings belong to the cache (NULL when unknown). */
struct sym_frame {
	const char *function; /* demangled */
	const char *file;
	int64_t line;	 /* 0 when unknown */
	uint8_t inlined; /* an inlined call, inside the next frame of the site */
};

/* What a site holds: the symbol only, or its frames from DWARF too. */
enum sym_level {
	SYM_LEVEL_NAME = 1, /* symbol only, no frames */
	SYM_LEVEL_FULL = 2,
};

struct sym_site {
	uint64_t vaddr;
	const char *symbol; /* the function symbol containing it (demangled), or NULL */
	uint32_t first;	    /* index of its first frame in the cache's frame array */
	uint16_t nframes;   /* 0 at SYM_LEVEL_NAME */
	uint8_t level;	    /* enum sym_level */
};

struct symcache {
	struct hash_index index; /* by vaddr: index into sites */
	struct sym_site *sites;
	size_t sites_cap;
	struct sym_frame *frames;
	size_t nframes, frames_cap;
	struct strtab strings;
};

void symcache_init(struct symcache *c);
void symcache_free(struct symcache *c);

/* The site at vaddr, or NULL when not cached. Valid until the next symcache_put. */
const struct sym_site *symcache_find(const struct symcache *c, uint64_t vaddr);

/*
 * Cache the site at vaddr: its symbol and n frames (n <= UINT16_MAX; none at
 * SYM_LEVEL_NAME; strings copied), replacing a site of a lower level.
 * Returns the cached site (valid until the next symcache_put), or the
 * existing one when it is at least as full.
 */
const struct sym_site *symcache_put(struct symcache *c, uint64_t vaddr, int level,
				    const char *symbol, const struct sym_frame *frames, uint32_t n);

/* The frames of a site. */
static inline const struct sym_frame *symcache_frames(const struct symcache *c,
						      const struct sym_site *site)
{
	return &c->frames[site->first];
}

/* A string held by the cache, equal to s (NULL for NULL). */
const char *symcache_intern(struct symcache *c, const char *s);

static inline size_t symcache_count(const struct symcache *c)
{
	return c->index.count;
}

#endif
