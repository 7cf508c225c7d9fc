// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Probe sites in ELF files (see probesite.h). The code and the symbols as
 * code boundaries come from the module (src/daemon/elf/elfmod.c).
 * Cross-checks are conservative: a direct branch found by scanning bytes
 * (which may be a false positive inside another instruction) is enough to
 * keep a probe at +0.
 */
#include "daemon/attach/probesite.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "daemon/elf/elfmod.h"
#include "memtrace/event.h"

/* rel8 branches reach 128 bytes: the neighbourhood a short jump can come from */
#define REL8_REACH 130

/*
 * Short branches near [lo, hi]: functions around it are decoded from their
 * symbols (exactly); bytes no symbol covers are scanned for rel8 branches.
 */
static int near_branches_into(struct elf_module *m, uint64_t lo, uint64_t hi, uint64_t skip_lo,
			      uint64_t skip_hi)
{
	uint64_t from = lo > REL8_REACH ? lo - REL8_REACH : 0, to = hi + REL8_REACH;
	uint64_t at = from;

	while (at < to) {
		uint64_t start, size, end, next;
		size_t avail;
		const uint8_t *code;

		if (at >= skip_lo && at < skip_hi) {
			at = skip_hi;
			continue;
		}
		if (!elfmod_symbol_containing(m, at, &start, &size)) {
			end = start + size;
			if (!(start >= skip_lo && end <= skip_hi)) {
				code = elfmod_code(m, start, &avail);
				if (!code || avail < size ||
				    placement_branches_into(code, size, start, lo, hi, 0))
					return 1;
			}
			at = end;
			continue;
		}
		/* no symbol: scan up to the next one (or the end of the window) */
		end = !elfmod_symbol_after(m, at, &next, NULL) && next < to ? next : to;
		if (end > skip_lo && at < skip_lo)
			end = skip_lo;
		code = elfmod_code(m, at, &avail);
		if (code &&
		    placement_scan_rel8(code, avail < end - at ? avail : end - at, at, lo, hi))
			return 1;
		at = end;
	}
	return 0;
}

/* Does a direct branch or call in the file, outside [skip_lo, skip_hi), reach [lo, hi]? */
static int branches_into(struct elf_module *m, uint64_t lo, uint64_t hi, uint64_t skip_lo,
			 uint64_t skip_hi)
{
	const uint8_t *bytes;
	uint64_t vaddr;
	size_t size;

	for (size_t i = 0; !elfmod_code_section(m, i, &vaddr, &bytes, &size); i++) {
		uint64_t end = vaddr + size;

		/* the function itself was decoded exactly: scan around it */
		if (skip_lo > vaddr && skip_lo < end &&
		    placement_scan_rel32(bytes, (size_t)(skip_lo - vaddr), vaddr, lo, hi))
			return 1;
		if (skip_hi >= vaddr && skip_hi < end) {
			if (placement_scan_rel32(bytes + (skip_hi - vaddr), (size_t)(end - skip_hi),
						 skip_hi, lo, hi))
				return 1;
		} else if (!(skip_lo > vaddr && skip_lo < end) &&
			   placement_scan_rel32(bytes, size, vaddr, lo, hi)) {
			return 1;
		}
	}
	return near_branches_into(m, lo, hi, skip_lo, skip_hi);
}

/* Another symbol starting in (vaddr, vaddr + at]: the skipped code has a second entry. */
static const char *symbol_inside(struct elf_module *m, uint64_t vaddr, uint32_t at)
{
	const char *name;
	uint64_t start;

	if (!elfmod_symbol_after(m, vaddr, &start, &name) && start <= vaddr + at)
		return name;
	return NULL;
}

static void place_one(struct elf_module *m, const struct probesite_req *req, struct placement *out)
{
	uint64_t vaddr, size;
	const uint8_t *code;
	const char *other;
	size_t avail;

	char why[96];

	if (elfmod_offset_to_vaddr(m, req->offset, &vaddr)) {
		placement_entry(NULL, 0, 0, &req->need, "offset outside the file's segments", out);
		return;
	}
	code = elfmod_code(m, vaddr, &avail);
	if (elfmod_symbol_at(m, vaddr, &size, NULL)) {
		placement_entry(code, avail, vaddr, &req->need, "no sized symbol starts there",
				out);
		return;
	}
	if (!code || avail < size) {
		placement_entry(code, avail, vaddr, &req->need, "its code is not in the file", out);
		return;
	}
	placement_decide(code, size, vaddr, &req->need, out);
	if (!out->offset)
		return;
	other = symbol_inside(m, vaddr, out->offset);
	if (!other && !branches_into(m, vaddr + 1, vaddr + out->offset, vaddr, vaddr + size))
		return;
	if (other)
		snprintf(why, sizeof(why), "symbol %.50s starts inside the skipped code", other);
	else
		snprintf(why, sizeof(why), "a branch elsewhere in the file may reach +1..+%u",
			 out->offset);
	placement_entry(code, size, vaddr, &req->need, why, out);
}

/* One line per decision, when it is made (once per file and function). */
static void log_decision(struct elf_module *m, const struct probesite_req *req,
			 const struct placement *p)
{
	const char *shown = req->shown ? req->shown : elfmod_path(m);
	const char *name = "?", *base = strrchr(shown, '/') ? strrchr(shown, '/') + 1 : shown;
	uint64_t vaddr, size;
	char regs[64] = "";

	if (req->name)
		name = req->name;
	else if (!elfmod_offset_to_vaddr(m, req->offset, &vaddr))
		elfmod_symbol_at(m, vaddr, &size, &name);
	for (int i = 0; i < req->need.nargs && p->offset; i++) {
		if (p->arg_reg[i] != req->need.arg_in[i] && (req->need.used & (1u << i)))
			snprintf(regs + strlen(regs), sizeof(regs) - strlen(regs),
				 ", argument %d in %s", i + 1, placement_gpr_name(p->arg_reg[i]));
	}
	if (p->offset)
		log_msg("probe on %s in %s at +%u (%s)%s%s", name, base, p->offset, p->insn,
			p->sp_words ? ", stack pointer compensated" : "", regs);
	else
		log_msg("probe on %s in %s at +0 (%s)%s%s", name, base, p->insn,
			p->why[0] ? ": " : "", p->why);
}

/* Decisions already made: (file identity, offset, need) -> placement. */
struct cached {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	uint64_t offset;
	struct placement_need need;
	struct placement place;
};

static struct cached *cache;
static size_t ncache;

#define CACHE_MAX 1024

static struct cached *cache_find(const struct stat *st, const struct probesite_req *req)
{
	for (size_t i = 0; i < ncache; i++) {
		struct cached *c = &cache[i];

		if (c->dev == st->st_dev && c->ino == st->st_ino && c->size == st->st_size &&
		    c->mtime.tv_sec == st->st_mtim.tv_sec &&
		    c->mtime.tv_nsec == st->st_mtim.tv_nsec && c->offset == req->offset &&
		    !memcmp(&c->need, &req->need, sizeof(c->need)))
			return c;
	}
	return NULL;
}

static void cache_add(const struct stat *st, const struct probesite_req *req,
		      const struct placement *p)
{
	struct cached *c;

	if (ncache == CACHE_MAX)
		ncache = 0; /* start over: only a host with many allocators gets here */
	if (!cache)
		cache = xcalloc(CACHE_MAX, sizeof(*cache));
	c = &cache[ncache++];
	c->dev = st->st_dev;
	c->ino = st->st_ino;
	c->size = st->st_size;
	c->mtime = st->st_mtim;
	c->offset = req->offset;
	c->need = req->need;
	c->place = *p;
}

void probesite_forget(void)
{
	free(cache);
	cache = NULL;
	ncache = 0;
}

int probesite_at_entry(void)
{
	const char *env = getenv("MEMTRACE_PROBE_AT_ENTRY");

	return env && strcmp(env, "0") != 0;
}

void probesite_place(struct elf_module *m, const struct probesite_req *req, size_t n,
		     struct placement *out)
{
	int at_entry = probesite_at_entry();
	int usable = m && elfmod_machine(m) == EM_X86_64;
	struct stat st;
	int have_stat = usable && elfmod_fd(m) >= 0 && fstat(elfmod_fd(m), &st) == 0;

	for (size_t i = 0; i < n; i++) {
		struct cached *c;

		if (at_entry) {
			placement_entry(NULL, 0, 0, &req[i].need, "MEMTRACE_PROBE_AT_ENTRY is set",
					&out[i]);
			continue;
		}
		c = have_stat ? cache_find(&st, &req[i]) : NULL;
		if (c) {
			out[i] = c->place;
			continue;
		}
		if (!usable) {
			placement_entry(NULL, 0, 0, &req[i].need, "not an x86-64 ELF file",
					&out[i]);
			continue;
		}
		place_one(m, &req[i], &out[i]);
		log_decision(m, &req[i], &out[i]);
		if (have_stat)
			cache_add(&st, &req[i], &out[i]);
	}
}

void probesite_need(int func, struct placement_need *need)
{
	uint8_t used = 1;
	int has_return = func != MT_FN_FREE && func != MT_FN_DALLOCX;

	switch (func) {
	case MT_FN_CALLOC:
	case MT_FN_PYMALLOC_CALLOC:
	case MT_FN_REALLOC:
	case MT_FN_PYMALLOC_REALLOC:
	case MT_FN_RALLOCX:
	case MT_FN_XALLOCX:
		used = 3;
		break;
	case MT_FN_REALLOCARRAY:
		used = 7;
		break;
	case MT_FN_POSIX_MEMALIGN:
		used = 5;
		break;
	case MT_FN_ALIGNED_ALLOC:
	case MT_FN_MEMALIGN:
		used = 2;
		break;
	}
	placement_need_abi(need, used, has_return);
}

uint64_t probesite_cookie(int func, const struct placement *p)
{
	static const uint8_t abi[PLACEMENT_MAX_ARGS] = {GPR_RDI, GPR_RSI, GPR_RDX};
	uint64_t cookie = (uint64_t)(func & 0xff) | (uint64_t)(p->sp_words & 0xff) << 8;

	if (memcmp(p->arg_reg, abi, sizeof(abi))) {
		cookie |= MT_COOKIE_REGS;
		for (int i = 0; i < PLACEMENT_MAX_ARGS; i++)
			cookie |= (uint64_t)(p->arg_reg[i] & 0xf) << (16 + 4 * i);
	}
	return cookie;
}
