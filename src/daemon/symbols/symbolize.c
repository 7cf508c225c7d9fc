// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Address to frame; see symbolize.h. Two sorted tables: pids (each with its
 * maps and, per mapping, the module it resolved to) and modules, keyed by
 * (device, inode) and shared by every pid. A module that failed to open is
 * cached too, with the reason, so it is tried once. Each module holds what
 * its addresses symbolized to (symcache.h): an address is looked up in the
 * symbol tables and DWARF once, whoever asks. A module lives while some
 * pid's maps (a live process, an exited one, a retired generation) map it.
 */
#include "daemon/symbols/symbolize.h"
#include "daemon/symbols/dwarfline.h"
#include "daemon/elf/elfmod.h"
#include "daemon/proc/procmaps.h"
#include "common/util.h"
#include "daemon/symbols/symcache.h"
#include "common/search.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The C++ ABI's demangler, from libstdc++ (declared here to keep this file C). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* A symbol as people read it: C++ names demangled, others as they are. */
static char *symbol_name(const char *raw)
{
	char *d;
	int status = -1;

	if (raw[0] == '_' && raw[1] == 'Z') {
		d = __cxa_demangle(raw, NULL, NULL, &status);
		if (d && !status)
			return d;
		free(d);
	}
	return xstrdup(raw);
}

struct module {
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	struct elf_module *elf;	   /* NULL when the file could not be read as ELF */
	char *error;		   /* why, when elf is NULL */
	struct dwarf_lines *lines; /* NULL without a usable file */
	struct symcache cache;	   /* what its addresses symbolized to */
	uint32_t refs;		   /* entries of pid maps that resolved to it */
};

/* A mapping that identifies one program of a pid (see symbolizer_note). */
struct anchor {
	uint32_t dev_major, dev_minor;
	uint64_t inode, start; /* inode 0: none yet */
};

struct pid_maps {
	int pid;
	struct proc_maps maps;
	struct module **modules; /* per entry of maps; NULL until looked up */
	const char **paths;	 /* per entry: its path, interned; NULL until asked */
	struct anchor anchor;	 /* from the first read of this program */
};

struct symbolizer {
	struct pid_maps *pids; /* sorted by pid */
	size_t npids;
	struct module **modules; /* sorted by (dev_major, dev_minor, inode) */
	size_t nmodules;
	struct symbolizer_stats stats;
	struct strtab strings; /* symbolizer_intern() */
	/* symbolizer_hold(): modules dropped meanwhile wait here (another
	 * thread may still read their strings) */
	pthread_mutex_t hold_lock;
	unsigned holds;
	struct module **graveyard;
	size_t ngraveyard;
	int (*current)(void *arg, int pid); /* symbolizer_set_guard */
	void *current_arg;
};

struct symbolizer *symbolizer_new(void)
{
	struct symbolizer *s = xcalloc(1, sizeof(struct symbolizer));

	pthread_mutex_init(&s->hold_lock, NULL);
	return s;
}

static void module_free(struct module *mod)
{
	elfmod_close(mod->elf);
	dwarf_lines_close(mod->lines);
	symcache_free(&mod->cache);
	free(mod->error);
	free(mod);
}

static size_t module_index(const struct symbolizer *s, uint32_t major, uint32_t minor,
			   uint64_t inode, int *found);

/* One map entry no longer resolves to mod: the last one takes it away. */
static void module_unref(struct symbolizer *s, struct module *mod)
{
	size_t i;
	int found;

	if (!mod || --mod->refs)
		return;
	i = module_index(s, mod->dev_major, mod->dev_minor, mod->inode, &found);
	if (found) {
		memmove(&s->modules[i], &s->modules[i + 1],
			(s->nmodules - i - 1) * sizeof(*s->modules));
		s->nmodules--;
	}
	s->stats.modules_dropped++;
	pthread_mutex_lock(&s->hold_lock);
	if (s->holds) {
		s->graveyard = xrealloc(s->graveyard, (s->ngraveyard + 1) * sizeof(*s->graveyard));
		s->graveyard[s->ngraveyard++] = mod;
		mod = NULL;
	}
	pthread_mutex_unlock(&s->hold_lock);
	if (mod)
		module_free(mod);
}

void symbolizer_hold(struct symbolizer *s)
{
	pthread_mutex_lock(&s->hold_lock);
	s->holds++;
	pthread_mutex_unlock(&s->hold_lock);
}

void symbolizer_release(struct symbolizer *s)
{
	struct module **dead = NULL;
	size_t n = 0;

	pthread_mutex_lock(&s->hold_lock);
	if (!--s->holds) {
		dead = s->graveyard;
		n = s->ngraveyard;
		s->graveyard = NULL;
		s->ngraveyard = 0;
	}
	pthread_mutex_unlock(&s->hold_lock);
	/* no one's: they left the tables when they were dropped */
	for (size_t i = 0; i < n; i++)
		module_free(dead[i]);
	free(dead);
}

static void pid_maps_free(struct symbolizer *s, struct pid_maps *p)
{
	for (size_t i = 0; p->modules && i < p->maps.n; i++)
		module_unref(s, p->modules[i]);
	procmaps_free(&p->maps);
	free(p->modules);
	free(p->paths);
	p->modules = NULL;
	p->paths = NULL;
}

void symbolizer_free(struct symbolizer *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->npids; i++)
		pid_maps_free(s, &s->pids[i]);
	free(s->pids);
	for (i = 0; i < s->nmodules; i++)
		module_free(s->modules[i]); /* none left: each went with its last map entry */
	free(s->modules);
	for (i = 0; i < s->ngraveyard; i++)
		module_free(s->graveyard[i]);
	free(s->graveyard);
	pthread_mutex_destroy(&s->hold_lock);
	strtab_free(&s->strings);
	free(s);
}

void symbolizer_set_guard(struct symbolizer *s, int (*current)(void *arg, int pid), void *arg)
{
	s->current = current;
	s->current_arg = arg;
}

void symbolizer_get_stats(const struct symbolizer *s, struct symbolizer_stats *out)
{
	*out = s->stats;
	out->modules = s->nmodules;
}

const char *symbolizer_intern(struct symbolizer *s, const char *str)
{
	size_t i;

	if (!str)
		return NULL;
	i = strtab_intern(&s->strings, str, strlen(str)); /* before reading strs: it may move */
	return s->strings.strs[i];
}

/* Index of pid in s->pids, or where it would be inserted; *found says which. */
static size_t pid_index(const struct symbolizer *s, int pid, int *found)
{
	size_t lo = SEARCH_FIRST(0, s->npids, s->pids[mid].pid >= pid);

	*found = lo < s->npids && s->pids[lo].pid == pid;
	return lo;
}

/* The entry of pid (valid until the next insertion or removal), or NULL. */
static struct pid_maps *pid_get(struct symbolizer *s, int pid, int create)
{
	int found;
	size_t i = pid_index(s, pid, &found);

	if (found)
		return &s->pids[i];
	if (!create)
		return NULL;
	s->pids = xrealloc(s->pids, (s->npids + 1) * sizeof(*s->pids));
	memmove(&s->pids[i + 1], &s->pids[i], (s->npids - i) * sizeof(*s->pids));
	s->npids++;
	memset(&s->pids[i], 0, sizeof(s->pids[i]));
	s->pids[i].pid = pid;
	return &s->pids[i];
}

/* The lowest executable file mapping of m: the program's own, as a rule. */
static struct anchor anchor_of(const struct proc_maps *m)
{
	struct anchor a = {0};

	for (size_t i = 0; i < m->n; i++) {
		const struct map_entry *e = &m->v[i];

		if (procmaps_is_file(e) && e->inode && strchr(e->perms, 'x')) {
			a = (struct anchor){e->dev_major, e->dev_minor, e->inode, e->start};
			break;
		}
	}
	return a;
}

static int maps_hold(const struct proc_maps *m, const struct anchor *a)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct map_entry *e = &m->v[i];

		if (e->start == a->start && e->inode == a->inode && e->dev_major == a->dev_major &&
		    e->dev_minor == a->dev_minor)
			return 1;
	}
	return 0;
}

/* Does /proc/PID still show the program p's events come from? */
static int pid_current(const struct symbolizer *s, const struct pid_maps *p)
{
	return !s->current || s->current(s->current_arg, p->pid);
}

/* Does any entry of m (sorted, non-overlapping) overlap [start, end)? */
static int maps_overlap(const struct proc_maps *m, uint64_t start, uint64_t end)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) { /* the first entry ending past start */
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].end <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->n && m->v[lo].start < end;
}

/* One entry of a pid's maps with what hangs off it, for sorting. */
struct pid_entry {
	struct map_entry e;
	struct module *mod;
	const char *path;
};

static int compare_entry(const void *a, const void *b)
{
	const struct pid_entry *x = a, *y = b;

	return x->e.start < y->e.start ? -1 : x->e.start > y->e.start;
}

/*
 * Replace the cached maps with fresh ones, unless the process is gone or is
 * no longer the program they are for (symbolizer_note). A file still mapped
 * keeps its module (and what its addresses symbolized to). An executable
 * file no longer mapped (a library closed) stays in the maps until another
 * mapping takes its addresses: the stacks taken while it was mapped still
 * name it; its module goes with its last entry.
 */
static void pid_refresh(struct symbolizer *s, struct pid_maps *p)
{
	struct proc_maps fresh;
	struct pid_entry *v;
	size_t n = 0;

	if (p->pid <= 0)
		return; /* a retired generation's key: its process image is gone */
	if (!pid_current(s, p))
		return;
	if (procmaps_read(p->pid, &fresh) || !fresh.n || !pid_current(s, p) ||
	    (p->anchor.inode && !maps_hold(&fresh, &p->anchor))) {
		procmaps_free(&fresh);
		return;
	}
	if (!p->anchor.inode)
		p->anchor = anchor_of(&fresh);
	v = xcalloc(fresh.n + p->maps.n, sizeof(*v));
	for (size_t i = 0; i < fresh.n; i++) {
		const struct map_entry *e = &fresh.v[i];

		v[n].e = *e;
		for (size_t k = 0; p->modules && k < p->maps.n; k++) {
			struct module *m = p->modules[k];

			if (m && m->dev_major == e->dev_major && m->dev_minor == e->dev_minor &&
			    m->inode == e->inode && procmaps_is_file(e)) {
				v[n].mod = m;
				m->refs++;
				break;
			}
		}
		n++;
	}
	for (size_t k = 0; k < p->maps.n; k++) {
		struct map_entry *e = &p->maps.v[k];

		if (!procmaps_is_file(e) || !strchr(e->perms, 'x') ||
		    maps_overlap(&fresh, e->start, e->end))
			continue;
		v[n].e = *e;
		e->path = NULL; /* moved */
		v[n].mod = p->modules ? p->modules[k] : NULL;
		if (v[n].mod)
			v[n].mod->refs++;
		v[n].path = p->paths ? p->paths[k] : NULL;
		n++;
	}
	free(fresh.v); /* its paths moved to v */
	qsort(v, n, sizeof(*v), compare_entry);
	pid_maps_free(s, p);
	p->maps.v = xcalloc(n ? n : 1, sizeof(*p->maps.v));
	p->maps.n = n;
	p->modules = xcalloc(n ? n : 1, sizeof(*p->modules));
	p->paths = xcalloc(n ? n : 1, sizeof(*p->paths));
	for (size_t i = 0; i < n; i++) {
		p->maps.v[i] = v[i].e;
		p->modules[i] = v[i].mod;
		p->paths[i] = v[i].path;
	}
	free(v);
}

static int compare_key(uint32_t major, uint32_t minor, uint64_t inode, const struct module *mod)
{
	if (major != mod->dev_major)
		return major < mod->dev_major ? -1 : 1;
	if (minor != mod->dev_minor)
		return minor < mod->dev_minor ? -1 : 1;
	if (inode != mod->inode)
		return inode < mod->inode ? -1 : 1;
	return 0;
}

/* Index of the module with this key in s->modules, or where it would go. */
static size_t module_index(const struct symbolizer *s, uint32_t major, uint32_t minor,
			   uint64_t inode, int *found)
{
	size_t lo =
	    SEARCH_FIRST(0, s->nmodules, compare_key(major, minor, inode, s->modules[mid]) <= 0);

	*found = lo < s->nmodules && !compare_key(major, minor, inode, s->modules[lo]);
	return lo;
}

/* Read the file of mapping e as pid sees it (procmaps_open_file), or say why not. */
static void module_open(struct module *mod, int pid, const struct map_entry *e)
{
	char reason[256];
	int fd = procmaps_open_file(pid, e, reason, sizeof(reason));

	if (fd >= 0) {
		mod->elf = elfmod_open_fd(fd, e->path, reason, sizeof(reason));
		close(fd);
	}
	if (!mod->elf) {
		mod->error = xstrdup(reason);
		return;
	}
	/* libdwfl reads on its own from the module's file; the module keeps
	 * what it read, not the file */
	mod->lines = dwarf_lines_open(elfmod_fd(mod->elf), e->path);
	elfmod_release_file(mod->elf);
}

/* The module of entry idx of p's maps, opening and caching it if needed. */
static struct module *module_of(struct symbolizer *s, struct pid_maps *p, size_t idx)
{
	const struct map_entry *e = &p->maps.v[idx];
	struct module *mod;
	size_t lo;
	int found;

	if (p->modules[idx] || !procmaps_is_file(e))
		return p->modules[idx];
	lo = module_index(s, e->dev_major, e->dev_minor, e->inode, &found);
	if (found) {
		mod = s->modules[lo];
		mod->refs++;
		p->modules[idx] = mod;
		return mod;
	}
	mod = xcalloc(1, sizeof(*mod));
	mod->dev_major = e->dev_major;
	mod->dev_minor = e->dev_minor;
	mod->inode = e->inode;
	symcache_init(&mod->cache);
	module_open(mod, p->pid, e);
	s->stats.modules_opened++;
	s->modules = xrealloc(s->modules, (s->nmodules + 1) * sizeof(*s->modules));
	memmove(&s->modules[lo + 1], &s->modules[lo], (s->nmodules - lo) * sizeof(*s->modules));
	s->modules[lo] = mod;
	s->nmodules++;
	mod->refs = 1;
	p->modules[idx] = mod;
	return mod;
}

void symbolizer_note(struct symbolizer *s, int pid, const uint64_t *addrs, size_t n)
{
	struct pid_maps *p;
	size_t i;

	if (!n)
		return;
	p = pid_get(s, pid, 1);
	for (i = 0; i < n; i++) {
		if (!procmaps_find(&p->maps, addrs[i])) {
			pid_refresh(s, p);
			break;
		}
	}
	for (i = 0; i < n; i++) {
		const struct map_entry *e = procmaps_find(&p->maps, addrs[i]);

		if (e)
			module_of(s, p, (size_t)(e - p->maps.v));
	}
}

void symbolizer_note_process(struct symbolizer *s, int pid)
{
	struct pid_maps *p = pid_get(s, pid, 1);
	size_t i;

	pid_refresh(s, p);
	for (i = 0; i < p->maps.n; i++) {
		if (strchr(p->maps.v[i].perms, 'x'))
			module_of(s, p, i);
	}
}

/* Where a return address of a pid is. */
struct location {
	const struct map_entry *e; /* NULL outside every mapping */
	const char *path;	   /* e's path, interned */
	struct module *mod;	   /* the file's module, when it was read as ELF */
	uint64_t offset;	   /* as snap_frame.offset */
	uint64_t vaddr;		   /* its ELF virtual address; 0 when it has none */
};

static void locate(struct symbolizer *s, int pid, uint64_t addr, struct location *loc)
{
	struct pid_maps *p = pid_get(s, pid, 0);
	const struct map_entry *e = p ? procmaps_find(&p->maps, addr) : NULL;
	struct module *mod;
	uint64_t file_offset, vaddr;

	memset(loc, 0, sizeof(*loc));
	loc->offset = addr;
	if (!e || !e->path)
		return;
	loc->e = e;
	if (!p->paths[e - p->maps.v])
		p->paths[e - p->maps.v] = symbolizer_intern(s, e->path);
	loc->path = p->paths[e - p->maps.v];
	if (!procmaps_is_file(e)) {
		loc->offset = addr - e->start;
		return;
	}
	file_offset = addr - e->start + e->offset;
	loc->offset = file_offset;
	mod = module_of(s, p, (size_t)(e - p->maps.v));
	if (!mod || !mod->elf || elfmod_offset_to_vaddr(mod->elf, file_offset, &vaddr))
		return;
	loc->mod = mod;
	loc->offset = vaddr;
	loc->vaddr = vaddr;
}

/*
 * Look vaddr up in mod's symbol tables (and, for SYM_LEVEL_FULL, its DWARF:
 * source line and inlined calls) and cache what it gives. The symbol is
 * looked up at vaddr - 1: a return address follows its call instruction.
 */
static const struct sym_site *site_fill(struct symbolizer *s, struct module *mod, uint64_t vaddr,
					int level)
{
	struct dwarf_inline inl[SYMBOLIZER_MAX_INLINE];
	struct sym_frame fr[SYMBOLIZER_MAX_INLINE + 1];
	char *names[SYMBOLIZER_MAX_INLINE + 1] = {0};
	const struct sym_site *site;
	const char *name, *file = NULL;
	char *symbol = NULL;
	int line = 0, k = 0, i;
	uint32_t n = 0;

	name = elfmod_lookup(mod->elf, vaddr - 1, NULL);
	if (!name)
		name = dwarf_lines_symbol(mod->lines, vaddr - 1);
	if (name)
		symbol = symbol_name(name);
	if (level == SYM_LEVEL_FULL) {
		if (dwarf_lines_lookup(mod->lines, vaddr - 1, &file, &line))
			file = NULL, line = 0;
		k = dwarf_lines_inlines(mod->lines, vaddr - 1, inl, (int)ARRAY_SIZE(inl));
		if (k <= 0) {
			fr[0] = (struct sym_frame){.function = symbol, .file = file, .line = line};
			n = 1;
		}
		/* innermost inlined function first, at the line the address is on;
		 * each next one out at the line that called the one before; the
		 * real function last */
		for (i = 0; k > 0 && i <= k; i++) {
			struct sym_frame *f = &fr[i];

			memset(f, 0, sizeof(*f));
			f->inlined = i < k;
			if (i == 0) {
				f->file = file;
				f->line = line;
			} else if (inl[i - 1].call_file) {
				f->file = inl[i - 1].call_file;
				f->line = inl[i - 1].call_line;
			}
			if (i < k)
				f->function = names[i] = symbol_name(inl[i].function);
			else if (symbol)
				f->function = symbol;
			else if (inl[k - 1].caller)
				f->function = names[i] = symbol_name(inl[k - 1].caller);
			n++;
		}
	}
	site = symcache_put(&mod->cache, vaddr, level, symbol, fr, n);
	for (i = 0; i <= k; i++)
		free(names[i]);
	free(symbol);
	s->stats.lookups++;
	return site;
}

/* The site of loc at least at level, from the cache when it is there. */
static const struct sym_site *site_of(struct symbolizer *s, const struct location *loc, int level)
{
	const struct sym_site *site;

	if (!loc->mod || !loc->vaddr)
		return NULL;
	site = symcache_find(&loc->mod->cache, loc->vaddr);
	if (site && site->level >= level) {
		s->stats.hits++;
		return site;
	}
	return site_fill(s, loc->mod, loc->vaddr, level);
}

static void frame_base(const struct location *loc, uint64_t addr, struct snap_frame *out)
{
	memset(out, 0, sizeof(*out));
	out->address = addr;
	out->offset = loc->offset;
	if (loc->e)
		out->module = (char *)loc->path;
	if (loc->mod)
		out->build_id = (char *)elfmod_build_id(loc->mod->elf);
}

size_t symbolizer_frames_interned(struct symbolizer *s, int pid, uint64_t addr,
				  struct snap_frame *out, size_t max)
{
	const struct sym_site *site;
	const struct sym_frame *fr;
	struct location loc;
	size_t n, i;

	locate(s, pid, addr, &loc);
	frame_base(&loc, addr, &out[0]);
	site = site_of(s, &loc, SYM_LEVEL_FULL);
	if (!site || !site->nframes)
		return 1;
	fr = symcache_frames(&loc.mod->cache, site);
	n = site->nframes < max ? site->nframes : max;
	for (i = 0; i < n; i++) {
		if (i)
			out[i] = out[0];
		out[i].function = (char *)fr[i].function;
		out[i].file = (char *)fr[i].file;
		out[i].line = fr[i].line;
		out[i].inlined = fr[i].inlined;
	}
	return n;
}

const char *symbolizer_symbol(struct symbolizer *s, int pid, uint64_t addr, const char **module)
{
	const struct sym_site *site;
	struct location loc;

	locate(s, pid, addr, &loc);
	if (module)
		*module = loc.path;
	site = site_of(s, &loc, SYM_LEVEL_NAME);
	return site ? site->symbol : NULL;
}

static char *dup_or_null(const char *str)
{
	return str ? xstrdup(str) : NULL;
}

static void frame_own(struct snap_frame *f)
{
	f->function = dup_or_null(f->function);
	f->module = dup_or_null(f->module);
	f->file = dup_or_null(f->file);
	f->build_id = dup_or_null(f->build_id);
}

void symbolizer_frame(struct symbolizer *s, int pid, uint64_t addr, struct snap_frame *out)
{
	struct snap_frame fr[SYMBOLIZER_MAX_INLINE + 1];
	const struct sym_site *site;
	struct location loc;

	/* the function containing the address, at the address's own line */
	symbolizer_frames_interned(s, pid, addr, fr, ARRAY_SIZE(fr));
	*out = fr[0];
	out->inlined = 0;
	locate(s, pid, addr, &loc);
	site = site_of(s, &loc, SYM_LEVEL_NAME);
	out->function = site ? (char *)site->symbol : NULL;
	frame_own(out);
}

size_t symbolizer_frames(struct symbolizer *s, int pid, uint64_t addr, struct snap_frame *out,
			 size_t max)
{
	size_t n = symbolizer_frames_interned(s, pid, addr, out, max);

	for (size_t i = 0; i < n; i++)
		frame_own(&out[i]);
	return n;
}

void symbolizer_forget(struct symbolizer *s, int pid)
{
	int found;
	size_t i = pid_index(s, pid, &found);

	if (!found)
		return;
	pid_maps_free(s, &s->pids[i]);
	memmove(&s->pids[i], &s->pids[i + 1], (s->npids - i - 1) * sizeof(*s->pids));
	s->npids--;
}

void symbolizer_fork(struct symbolizer *s, int parent, int child)
{
	struct pid_maps *p, *c;
	struct proc_maps copy = {0};
	struct module **mods;
	const char **paths;
	struct anchor anchor;

	p = pid_get(s, parent, 0);
	if (!p || !p->maps.n || child == parent)
		return;
	copy.v = xcalloc(p->maps.n, sizeof(*copy.v));
	for (size_t i = 0; i < p->maps.n; i++) {
		copy.v[i] = p->maps.v[i];
		copy.v[i].path = p->maps.v[i].path ? xstrdup(p->maps.v[i].path) : NULL;
	}
	copy.n = p->maps.n;
	mods = xcalloc(copy.n, sizeof(*mods));
	memcpy(mods, p->modules, copy.n * sizeof(*mods));
	paths = xcalloc(copy.n, sizeof(*paths));
	memcpy(paths, p->paths, copy.n * sizeof(*paths));
	anchor = p->anchor; /* the same program, at the same addresses */
	for (size_t i = 0; i < copy.n; i++) {
		if (mods[i])
			mods[i]->refs++;
	}
	c = pid_get(s, child, 1); /* p may move: not used past here */
	pid_maps_free(s, c);
	c->maps = copy;
	c->modules = mods;
	c->paths = paths;
	c->anchor = anchor;
}

void symbolizer_rename(struct symbolizer *s, int pid, int key)
{
	struct pid_maps moved;
	size_t i;
	int found;

	i = pid_index(s, pid, &found);
	if (!found)
		return;
	moved = s->pids[i];
	memmove(&s->pids[i], &s->pids[i + 1], (s->npids - i - 1) * sizeof(*s->pids));
	s->npids--;
	i = pid_index(s, key, &found);
	if (found) { /* never: keys are handed out once */
		pid_maps_free(s, &moved);
		return;
	}
	moved.pid = key;
	s->pids = xrealloc(s->pids, (s->npids + 1) * sizeof(*s->pids));
	memmove(&s->pids[i + 1], &s->pids[i], (s->npids - i) * sizeof(*s->pids));
	s->pids[i] = moved;
	s->npids++;
}
