// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Probe sites in ELF files (see probesite.h). The executable sections are
 * copied out of libelf at open, with every function symbol of .symtab and
 * .dynsym sorted by address. Cross-checks are conservative: a direct branch
 * found by scanning bytes (which may be a false positive inside another
 * instruction) is enough to keep a probe at +0.
 */
#include "daemon/attach/probesite.h"

#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/attach/allocator.h"
#include "common/util.h"
#include "common/search.h"

#define MAX_CODE_BYTES (256u << 20)
/* rel8 branches reach 128 bytes: the neighbourhood a short jump can come from */
#define REL8_REACH 130

struct code_section {
	uint64_t vaddr;
	size_t size;
	uint8_t *bytes;
};

struct code_func {
	uint64_t start, size;
	const char *name;
};

struct code_segment {
	uint64_t vaddr, offset, filesz;
};

struct codefile {
	struct code_section *sections;
	size_t nsections;
	struct code_func *funcs; /* by start, then by size (largest first) */
	size_t nfuncs;
	struct code_segment *segments;
	size_t nsegments;
	char *names;
	size_t names_len, names_cap;
};

static size_t add_name(struct codefile *f, const char *s)
{
	size_t n = strlen(s) + 1, at;

	if (f->names_len + n > f->names_cap) {
		f->names_cap = (f->names_len + n) * 2 + 4096;
		f->names = xrealloc(f->names, f->names_cap);
	}
	at = f->names_len;
	memcpy(f->names + at, s, n);
	f->names_len += n;
	return at;
}

static void read_funcs(struct codefile *f, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, size_t *cap)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n;

	if (!d || !sh->sh_entsize)
		return;
	n = d->d_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym s;
		const char *name;
		int type;

		if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		type = GELF_ST_TYPE(s.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
			continue;
		name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (*cap == f->nfuncs) {
			*cap = *cap ? 2 * *cap : 1024;
			f->funcs = xrealloc(f->funcs, *cap * sizeof(*f->funcs));
		}
		f->funcs[f->nfuncs].start = s.st_value;
		f->funcs[f->nfuncs].size = s.st_size;
		/* an offset into names until they stop moving */
		f->funcs[f->nfuncs].name = (const char *)(uintptr_t)add_name(f, name ? name : "");
		f->nfuncs++;
	}
}

static int by_start(const void *pa, const void *pb)
{
	const struct code_func *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->size > b->size ? -1 : a->size < b->size;
}

struct codefile *codefile_open(const char *path)
{
	struct codefile *f = NULL;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t phnum, cap = 0, total = 0;
	int fd;
	Elf *elf;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || !gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 ||
	    elf_getphdrnum(elf, &phnum))
		goto out;
	f = xcalloc(1, sizeof(*f));
	for (size_t i = 0; i < phnum && i < 4096; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		f->segments = xrealloc(f->segments, (f->nsegments + 1) * sizeof(*f->segments));
		f->segments[f->nsegments++] = (struct code_segment){
		    .vaddr = ph.p_vaddr, .offset = ph.p_offset, .filesz = ph.p_filesz};
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) {
			read_funcs(f, elf, scn, &sh, &cap);
			continue;
		}
		if (sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) || !sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size != sh.sh_size ||
		    total + d->d_size > MAX_CODE_BYTES)
			continue;
		total += d->d_size;
		f->sections = xrealloc(f->sections, (f->nsections + 1) * sizeof(*f->sections));
		f->sections[f->nsections].vaddr = sh.sh_addr;
		f->sections[f->nsections].size = d->d_size;
		f->sections[f->nsections].bytes = xmalloc(d->d_size);
		memcpy(f->sections[f->nsections].bytes, d->d_buf, d->d_size);
		f->nsections++;
	}
	for (size_t i = 0; i < f->nfuncs; i++)
		f->funcs[i].name = f->names + (uintptr_t)f->funcs[i].name;
	if (f->nfuncs)
		qsort(f->funcs, f->nfuncs, sizeof(*f->funcs), by_start);
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return f;
}

void codefile_close(struct codefile *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nsections; i++)
		free(f->sections[i].bytes);
	free(f->sections);
	free(f->funcs);
	free(f->segments);
	free(f->names);
	free(f);
}

/* Index of the first symbol starting at or after vaddr. */
static size_t first_from(const struct codefile *f, uint64_t vaddr)
{
	return SEARCH_FIRST(0, f->nfuncs, f->funcs[mid].start >= vaddr);
}

int codefile_function_at(const struct codefile *f, uint64_t vaddr, uint64_t *size,
			 const char **name)
{
	size_t i = first_from(f, vaddr);

	/* aliases sort largest first: the first sized one is the function */
	for (; i < f->nfuncs && f->funcs[i].start == vaddr; i++) {
		if (f->funcs[i].size) {
			*size = f->funcs[i].size;
			if (name)
				*name = f->funcs[i].name;
			return 0;
		}
	}
	return -1;
}

int codefile_function_containing(const struct codefile *f, uint64_t vaddr, uint64_t *start,
				 uint64_t *size)
{
	size_t i = first_from(f, vaddr + 1);
	/* symbols are short: look back a bounded way for one that spans vaddr */
	for (size_t k = 0; i > 0 && k < 4096; k++) {
		const struct code_func *fn = &f->funcs[--i];

		if (fn->size && fn->start <= vaddr && vaddr - fn->start < fn->size) {
			*start = fn->start;
			*size = fn->size;
			return 0;
		}
	}
	return -1;
}

const uint8_t *codefile_code(const struct codefile *f, uint64_t vaddr, size_t *avail)
{
	for (size_t i = 0; i < f->nsections; i++) {
		const struct code_section *s = &f->sections[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->size) {
			*avail = s->size - (size_t)(vaddr - s->vaddr);
			return s->bytes + (vaddr - s->vaddr);
		}
	}
	*avail = 0;
	return NULL;
}

int codefile_vaddr_to_offset(const struct codefile *f, uint64_t vaddr, uint64_t *off)
{
	for (size_t i = 0; i < f->nsegments; i++) {
		const struct code_segment *s = &f->segments[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz) {
			*off = s->offset + (vaddr - s->vaddr);
			return 0;
		}
	}
	return -1;
}

int codefile_offset_to_vaddr(const struct codefile *f, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < f->nsegments; i++) {
		const struct code_segment *s = &f->segments[i];

		if (off >= s->offset && off - s->offset < s->filesz) {
			*vaddr = s->vaddr + (off - s->offset);
			return 0;
		}
	}
	return -1;
}

/*
 * Short branches near [lo, hi]: functions around it are decoded from their
 * symbols (exactly); bytes no symbol covers are scanned for rel8 branches.
 */
static int near_branches_into(const struct codefile *f, uint64_t lo, uint64_t hi, uint64_t skip_lo,
			      uint64_t skip_hi)
{
	uint64_t from = lo > REL8_REACH ? lo - REL8_REACH : 0, to = hi + REL8_REACH;
	uint64_t at = from;

	while (at < to) {
		uint64_t start, size, end;
		size_t avail;
		const uint8_t *code;

		if (at >= skip_lo && at < skip_hi) {
			at = skip_hi;
			continue;
		}
		if (!codefile_function_containing(f, at, &start, &size)) {
			end = start + size;
			if (!(start >= skip_lo && end <= skip_hi)) {
				code = codefile_code(f, start, &avail);
				if (!code || avail < size ||
				    placement_branches_into(code, size, start, lo, hi, 0))
					return 1;
			}
			at = end;
			continue;
		}
		/* no symbol: scan up to the next one (or the end of the window) */
		size_t next = first_from(f, at + 1);
		end = next < f->nfuncs && f->funcs[next].start < to ? f->funcs[next].start : to;
		if (end > skip_lo && at < skip_lo)
			end = skip_lo;
		code = codefile_code(f, at, &avail);
		if (code &&
		    placement_scan_rel8(code, avail < end - at ? avail : end - at, at, lo, hi))
			return 1;
		at = end;
	}
	return 0;
}

int codefile_branches_into(const struct codefile *f, uint64_t lo, uint64_t hi, uint64_t skip_lo,
			   uint64_t skip_hi)
{
	for (size_t i = 0; i < f->nsections; i++) {
		const struct code_section *s = &f->sections[i];
		uint64_t end = s->vaddr + s->size;

		/* the function itself was decoded exactly: scan around it */
		if (skip_lo > s->vaddr && skip_lo < end &&
		    placement_scan_rel32(s->bytes, (size_t)(skip_lo - s->vaddr), s->vaddr, lo, hi))
			return 1;
		if (skip_hi >= s->vaddr && skip_hi < end) {
			if (placement_scan_rel32(s->bytes + (skip_hi - s->vaddr),
						 (size_t)(end - skip_hi), skip_hi, lo, hi))
				return 1;
		} else if (!(skip_lo > s->vaddr && skip_lo < end) &&
			   placement_scan_rel32(s->bytes, s->size, s->vaddr, lo, hi)) {
			return 1;
		}
	}
	return near_branches_into(f, lo, hi, skip_lo, skip_hi);
}

/* Does a direct branch or call starting at c (vaddr a, left bytes) reach target? */
static int branch_at(const uint8_t *c, size_t left, uint64_t a, uint64_t target)
{
	int32_t rel;

	if (left >= 5 && (c[0] == 0xe8 || c[0] == 0xe9)) {
		memcpy(&rel, c + 1, 4);
		return a + 5 + (uint64_t)(int64_t)rel == target;
	}
	if (left >= 6 && c[0] == 0x0f && (c[1] & 0xf0) == 0x80) {
		memcpy(&rel, c + 2, 4);
		return a + 6 + (uint64_t)(int64_t)rel == target;
	}
	if (left >= 2 && (c[0] == 0xeb || (c[0] >= 0x70 && c[0] <= 0x7f)))
		return a + 2 + (uint64_t)(int64_t)(int8_t)c[1] == target;
	return 0;
}

int codefile_branch_from(const struct codefile *f, uint64_t target, uint64_t from, uint64_t *at)
{
	for (size_t i = 0; i < f->nsections; i++) {
		const struct code_section *s = &f->sections[i];
		uint64_t start = from > s->vaddr ? from : s->vaddr, end = s->vaddr + s->size;

		for (uint64_t a = start; a < end; a++) {
			if (branch_at(s->bytes + (a - s->vaddr), (size_t)(end - a), a, target)) {
				*at = a;
				return 1;
			}
		}
	}
	return 0;
}

/* Another symbol starting in (vaddr, vaddr + at]: the skipped code has a second entry. */
static const char *symbol_inside(const struct codefile *f, uint64_t vaddr, uint32_t at)
{
	size_t i = first_from(f, vaddr + 1);

	if (i < f->nfuncs && f->funcs[i].start <= vaddr + at)
		return f->funcs[i].name;
	return NULL;
}

static void place_one(const struct codefile *f, const struct probesite_req *req,
		      struct placement *out)
{
	uint64_t vaddr, size;
	const uint8_t *code;
	const char *other;
	size_t avail;

	char why[96];

	if (codefile_offset_to_vaddr(f, req->offset, &vaddr)) {
		placement_entry(NULL, 0, 0, &req->need, "offset outside the file's segments", out);
		return;
	}
	code = codefile_code(f, vaddr, &avail);
	if (codefile_function_at(f, vaddr, &size, NULL)) {
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
	other = symbol_inside(f, vaddr, out->offset);
	if (!other &&
	    !codefile_branches_into(f, vaddr + 1, vaddr + out->offset, vaddr, vaddr + size))
		return;
	if (other)
		snprintf(why, sizeof(why), "symbol %.50s starts inside the skipped code", other);
	else
		snprintf(why, sizeof(why), "a branch elsewhere in the file may reach +1..+%u",
			 out->offset);
	placement_entry(code, size, vaddr, &req->need, why, out);
}

/* One line per decision, when it is made (once per file and function). */
static void log_decision(const struct codefile *f, const char *path,
			 const struct probesite_req *req, const struct placement *p)
{
	const char *shown = req->shown ? req->shown : path;
	const char *name = "?", *base = strrchr(shown, '/') ? strrchr(shown, '/') + 1 : shown;
	uint64_t vaddr, size;
	char regs[64] = "";

	if (req->name)
		name = req->name;
	else if (!codefile_offset_to_vaddr(f, req->offset, &vaddr))
		codefile_function_at(f, vaddr, &size, &name);
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

void probesite_place(const char *path, const struct probesite_req *req, size_t n,
		     struct placement *out)
{
	int at_entry = probesite_at_entry();
	struct codefile *f = NULL;
	struct stat st;
	int have_stat = path && stat(path, &st) == 0;

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
		if (!f)
			f = path ? codefile_open(path) : NULL;
		if (!f) {
			placement_entry(NULL, 0, 0, &req[i].need, "not an x86-64 ELF file",
					&out[i]);
			continue;
		}
		place_one(f, &req[i], &out[i]);
		log_decision(f, path, &req[i], &out[i]);
		if (have_stat)
			cache_add(&st, &req[i], &out[i]);
	}
	codefile_close(f);
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

static int undecided(const struct alloc_probe *p)
{
	return !p->place.insn[0] && !p->place.why[0];
}

void probesite_place_allocator(struct allocator *a)
{
	struct probesite_req req[ARRAY_SIZE(a->probes)];
	struct placement out[ARRAY_SIZE(a->probes)];
	int idx[ARRAY_SIZE(a->probes)];

	for (int object = 0; object < 3; object++) {
		const char *path = NULL;
		size_t n = 0;

		for (int i = 0; i < a->nprobes; i++) {
			struct alloc_probe *p = &a->probes[i];

			if (p->object != object || !undecided(p))
				continue;
			path = allocator_probe_open_path(a, p);
			req[n].offset = p->offset;
			req[n].name = p->dispatched ? p->via_target : p->symbol;
			req[n].shown = allocator_probe_path(a, p);
			probesite_need(p->func, &req[n].need);
			if (p->dispatched)
				req[n].need.arg_in[0] = p->arg0_reg;
			idx[n++] = i;
		}
		if (!n)
			continue;
		probesite_place(path, req, n, out);
		for (size_t k = 0; k < n; k++)
			a->probes[idx[k]].place = out[k];
	}
}
