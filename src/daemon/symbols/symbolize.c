// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Address to frame; see symbolize.h. Two sorted tables: pids (each with its
 * maps and, per mapping, the module it resolved to) and modules, keyed by
 * (device, inode) and shared by every pid. A module that failed to open is
 * cached too, with the reason, so it is tried once.
 */
#include "daemon/symbols/symbolize.h"
#include "daemon/symbols/dwarfline.h"
#include "daemon/symbols/elfsym.h"
#include "daemon/proc/procmaps.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
};

struct pid_maps {
	int pid;
	struct proc_maps maps;
	struct module **modules; /* per entry of maps; NULL until looked up */
};

struct symbolizer {
	struct pid_maps *pids; /* sorted by pid */
	size_t npids;
	struct module **modules; /* sorted by (dev_major, dev_minor, inode) */
	size_t nmodules;
};

struct symbolizer *symbolizer_new(void)
{
	return xcalloc(1, sizeof(struct symbolizer));
}

static void pid_maps_free(struct pid_maps *p)
{
	procmaps_free(&p->maps);
	free(p->modules);
	p->modules = NULL;
}

void symbolizer_free(struct symbolizer *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->npids; i++)
		pid_maps_free(&s->pids[i]);
	free(s->pids);
	for (i = 0; i < s->nmodules; i++) {
		elfmod_close(s->modules[i]->elf);
		dwarf_lines_close(s->modules[i]->lines);
		free(s->modules[i]->error);
		free(s->modules[i]);
	}
	free(s->modules);
	free(s);
}

/* Index of pid in s->pids, or where it would be inserted; *found says which. */
static size_t pid_index(const struct symbolizer *s, int pid, int *found)
{
	size_t lo = 0, hi = s->npids;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->pids[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
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

/* Replace the cached maps with fresh ones, unless the process is gone. */
static void pid_refresh(struct pid_maps *p)
{
	struct proc_maps fresh;

	if (p->pid <= 0)
		return; /* a retired generation's key: its process image is gone */
	if (procmaps_read(p->pid, &fresh) || !fresh.n) {
		procmaps_free(&fresh);
		return;
	}
	pid_maps_free(p);
	p->maps = fresh;
	p->modules = xcalloc(fresh.n, sizeof(*p->modules));
}

static int compare_key(const struct map_entry *e, const struct module *mod)
{
	if (e->dev_major != mod->dev_major)
		return e->dev_major < mod->dev_major ? -1 : 1;
	if (e->dev_minor != mod->dev_minor)
		return e->dev_minor < mod->dev_minor ? -1 : 1;
	if (e->inode != mod->inode)
		return e->inode < mod->inode ? -1 : 1;
	return 0;
}

/*
 * Open the file of mapping e as pid sees it: map_files works for deleted
 * files and other mount namespaces (but needs privilege), then the path
 * under the process's root, then the path itself. A candidate whose inode
 * is not the mapped one is some other file now at that path: skipped.
 */
static void module_open(struct module *mod, int pid, const struct map_entry *e)
{
	char reason[256] = "no way to open it";
	int i, have_elf_reason = 0;

	for (i = 0; i < 3 && !mod->elf; i++) {
		struct buf path = {0};
		struct stat st;
		int fd;

		if (i == 0)
			buf_printf(&path, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, e->start,
				   e->end);
		else if (e->deleted)
			break;
		else if (i == 1)
			buf_printf(&path, "/proc/%d/root%s", pid, e->path);
		else
			buf_printf(&path, "%s", e->path);
		fd = open((const char *)path.data, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		buf_free(&path);
		if (fd < 0) {
			if (!have_elf_reason)
				snprintf(reason, sizeof(reason), "cannot open: %s",
					 strerror(errno));
			continue;
		}
		if (fstat(fd, &st) || st.st_ino != e->inode) {
			if (!have_elf_reason)
				snprintf(reason, sizeof(reason), "the file was replaced");
		} else {
			mod->elf = elfmod_open_fd(fd, e->path, reason, sizeof(reason));
			have_elf_reason = 1;
			if (mod->elf)
				mod->lines = dwarf_lines_open(fd, e->path);
		}
		close(fd);
	}
	if (!mod->elf)
		mod->error = xstrdup(reason);
}

/* The module of entry idx of p's maps, opening and caching it if needed. */
static struct module *module_of(struct symbolizer *s, struct pid_maps *p, size_t idx)
{
	const struct map_entry *e = &p->maps.v[idx];
	struct module *mod;
	size_t lo = 0, hi = s->nmodules;

	if (p->modules[idx] || !procmaps_is_file(e))
		return p->modules[idx];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = compare_key(e, s->modules[mid]);

		if (!c) {
			p->modules[idx] = s->modules[mid];
			return s->modules[mid];
		}
		if (c > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	mod = xcalloc(1, sizeof(*mod));
	mod->dev_major = e->dev_major;
	mod->dev_minor = e->dev_minor;
	mod->inode = e->inode;
	module_open(mod, p->pid, e);
	s->modules = xrealloc(s->modules, (s->nmodules + 1) * sizeof(*s->modules));
	memmove(&s->modules[lo + 1], &s->modules[lo], (s->nmodules - lo) * sizeof(*s->modules));
	s->modules[lo] = mod;
	s->nmodules++;
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
			pid_refresh(p);
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

	pid_refresh(p);
	for (i = 0; i < p->maps.n; i++) {
		if (strchr(p->maps.v[i].perms, 'x'))
			module_of(s, p, i);
	}
}

/* One frame for addr; returns its module and ELF address when it has symbols. */
static struct module *frame_at(struct symbolizer *s, int pid, uint64_t addr, struct snap_frame *out,
			       uint64_t *vaddr_out)
{
	const struct map_entry *e = NULL;
	struct pid_maps *p;
	struct module *mod;
	uint64_t file_offset, vaddr;
	const char *name, *file;
	int line;

	memset(out, 0, sizeof(*out));
	out->address = addr;
	out->offset = addr;
	p = pid_get(s, pid, 0);
	if (p)
		e = procmaps_find(&p->maps, addr);
	if (!e || !e->path)
		return NULL;
	out->module = xstrdup(e->path);
	if (!procmaps_is_file(e)) {
		out->offset = addr - e->start;
		return NULL;
	}
	file_offset = addr - e->start + e->offset;
	out->offset = file_offset;
	mod = module_of(s, p, (size_t)(e - p->maps.v));
	if (!mod || !mod->elf || elfmod_offset_to_vaddr(mod->elf, file_offset, &vaddr))
		return NULL;
	out->offset = vaddr;
	if (elfmod_build_id(mod->elf))
		out->build_id = xstrdup(elfmod_build_id(mod->elf));
	if (!vaddr)
		return NULL;
	/* A return address follows the call; the call itself is at addr - 1. */
	name = elfmod_lookup(mod->elf, vaddr - 1, NULL);
	if (!name)
		name = dwarf_lines_symbol(mod->lines, vaddr - 1);
	if (name)
		out->function = symbol_name(name);
	if (!dwarf_lines_lookup(mod->lines, vaddr - 1, &file, &line)) {
		out->file = xstrdup(file);
		out->line = line;
	}
	*vaddr_out = vaddr;
	return mod;
}

void symbolizer_frame(struct symbolizer *s, int pid, uint64_t addr, struct snap_frame *out)
{
	uint64_t vaddr;

	frame_at(s, pid, addr, out, &vaddr);
}

size_t symbolizer_frames(struct symbolizer *s, int pid, uint64_t addr, struct snap_frame *out,
			 size_t max)
{
	struct dwarf_inline inl[SYMBOLIZER_MAX_INLINE];
	struct snap_frame base;
	struct module *mod;
	uint64_t vaddr = 0;
	int k, i;

	mod = frame_at(s, pid, addr, &base, &vaddr);
	k = mod && max > 1
		? dwarf_lines_inlines(mod->lines, vaddr - 1, inl,
				      (int)(max - 1 < ARRAY_SIZE(inl) ? max - 1 : ARRAY_SIZE(inl)))
		: 0;
	if (k <= 0) {
		out[0] = base;
		return 1;
	}
	/* innermost inlined function first, at the line the address is on; each
	 * next one out at the line that called the one before; the real
	 * function last. All share the address. */
	for (i = 0; i <= k; i++) {
		struct snap_frame *f = &out[i];
		const char *fn = i < k ? inl[i].function : NULL;

		memset(f, 0, sizeof(*f));
		f->address = base.address;
		f->offset = base.offset;
		f->module = base.module ? xstrdup(base.module) : NULL;
		f->build_id = base.build_id ? xstrdup(base.build_id) : NULL;
		f->inlined = i < k;
		if (i == 0) {
			f->file = base.file ? xstrdup(base.file) : NULL;
			f->line = base.line;
		} else if (inl[i - 1].call_file) {
			f->file = xstrdup(inl[i - 1].call_file);
			f->line = inl[i - 1].call_line;
		}
		if (fn)
			f->function = symbol_name(fn);
		else if (base.function)
			f->function = xstrdup(base.function);
		else if (inl[k - 1].caller)
			f->function = symbol_name(inl[k - 1].caller);
	}
	free(base.function);
	free(base.module);
	free(base.file);
	free(base.build_id);
	return (size_t)k + 1;
}

void symbolizer_forget(struct symbolizer *s, int pid)
{
	int found;
	size_t i = pid_index(s, pid, &found);

	if (!found)
		return;
	pid_maps_free(&s->pids[i]);
	memmove(&s->pids[i], &s->pids[i + 1], (s->npids - i - 1) * sizeof(*s->pids));
	s->npids--;
}

void symbolizer_fork(struct symbolizer *s, int parent, int child)
{
	struct pid_maps *p, *c;
	struct proc_maps copy = {0};
	struct module **mods;

	pid_refresh(pid_get(s, parent, 1));
	p = pid_get(s, parent, 0);
	if (!p->maps.n || child == parent)
		return;
	copy.v = xcalloc(p->maps.n, sizeof(*copy.v));
	for (size_t i = 0; i < p->maps.n; i++) {
		copy.v[i] = p->maps.v[i];
		copy.v[i].path = p->maps.v[i].path ? xstrdup(p->maps.v[i].path) : NULL;
	}
	copy.n = p->maps.n;
	mods = xcalloc(copy.n, sizeof(*mods));
	memcpy(mods, p->modules, copy.n * sizeof(*mods));
	c = pid_get(s, child, 1); /* p may move: not used past here */
	pid_maps_free(c);
	c->maps = copy;
	c->modules = mods;
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
		pid_maps_free(&moved);
		return;
	}
	moved.pid = key;
	s->pids = xrealloc(s->pids, (s->npids + 1) * sizeof(*s->pids));
	memmove(&s->pids[i + 1], &s->pids[i], (s->npids - i) * sizeof(*s->pids));
	s->pids[i] = moved;
	s->npids++;
}
