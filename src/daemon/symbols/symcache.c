// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The per-module symbol cache (see symcache.h): sites in one array indexed by
 * a hash of their address, frames of all sites in another, strings interned
 * in the cache's own string table so that dropping a module frees them.
 */
#include "daemon/symbols/symcache.h"
#include "common/util.h"

#include <stdlib.h>
#include <string.h>

void symcache_init(struct symcache *c)
{
	memset(c, 0, sizeof(*c));
}

void symcache_free(struct symcache *c)
{
	hash_index_free(&c->index);
	free(c->sites);
	free(c->frames);
	strtab_free(&c->strings);
	memset(c, 0, sizeof(*c));
}

struct site_key {
	const struct symcache *c;
	uint64_t vaddr;
};

static int site_eq(const void *arg, size_t i)
{
	const struct site_key *k = arg;

	return k->c->sites[i].vaddr == k->vaddr;
}

static uint64_t site_hash(uint64_t vaddr)
{
	return hash_mix(0x5bd1e995u, vaddr);
}

const struct sym_site *symcache_find(const struct symcache *c, uint64_t vaddr)
{
	struct site_key key = {c, vaddr};
	size_t i = hash_index_get(&c->index, site_hash(vaddr), site_eq, &key);

	return i == SIZE_MAX ? NULL : &c->sites[i];
}

const char *symcache_intern(struct symcache *c, const char *s)
{
	size_t i;

	if (!s)
		return NULL;
	i = strtab_intern(&c->strings, s, strlen(s)); /* before reading strs: it may move */
	return c->strings.strs[i];
}

const struct sym_site *symcache_put(struct symcache *c, uint64_t vaddr, int level,
				    const char *symbol, const struct sym_frame *frames, uint32_t n)
{
	struct site_key key = {c, vaddr};
	struct sym_site *site;
	int is_new;
	size_t i;

	if (n > UINT16_MAX || (level == SYM_LEVEL_NAME && n))
		return NULL;
	i = hash_index_find(&c->index, site_hash(vaddr), site_eq, &key, &is_new);
	if (is_new) {
		if (i >= c->sites_cap) {
			c->sites_cap = c->sites_cap ? 2 * c->sites_cap : 64;
			c->sites = xrealloc(c->sites, c->sites_cap * sizeof(*c->sites));
		}
		memset(&c->sites[i], 0, sizeof(c->sites[i]));
		c->sites[i].vaddr = vaddr;
	} else if (c->sites[i].level >= level) {
		return &c->sites[i];
	}
	/* a fuller site replaces a name-only one; its old frames stay unused */
	if (n && c->nframes + n > c->frames_cap) {
		while (c->nframes + n > c->frames_cap)
			c->frames_cap = c->frames_cap ? 2 * c->frames_cap : 64;
		c->frames = xrealloc(c->frames, c->frames_cap * sizeof(*c->frames));
	}
	site = &c->sites[i];
	site->symbol = symcache_intern(c, symbol);
	site->first = (uint32_t)c->nframes;
	site->nframes = (uint16_t)n;
	site->level = (uint8_t)level;
	for (uint32_t k = 0; k < n; k++) {
		struct sym_frame *f = &c->frames[c->nframes++];

		f->function = symcache_intern(c, frames[k].function);
		f->file = symcache_intern(c, frames[k].file);
		f->line = frames[k].line;
		f->inlined = frames[k].inlined;
	}
	return site;
}
