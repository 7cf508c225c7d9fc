// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Allocator resolution (see allocator.h). The link map is read from the
 * target's memory with process_vm_readv, starting at the executable's
 * DT_DEBUG entry, which ld.so points at its r_debug; nothing in the target is
 * stopped or changed.
 */
#include "allocator.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "elfjump.h"
#include "elfsym.h"
#include "probesite.h"
#include "pydispatch.h"
#include "procmaps.h"
#include "pyinline.h"
#include "util.h"

#define MAX_LINK_MAP 4096

/* CPython's allocator entry points, probed with --python-allocators. */
/* An exported symbol probed as an allocator entry point of kind func. */
struct probe_symbol {
	const char *name;
	int func;
};

static const struct probe_symbol python_symbols[] = {
    {"PyObject_Malloc", MT_FN_PYMALLOC_MALLOC},	  {"PyObject_Calloc", MT_FN_PYMALLOC_CALLOC},
    {"PyObject_Realloc", MT_FN_PYMALLOC_REALLOC}, {"PyObject_Free", MT_FN_PYMALLOC_FREE},
    {"PyMem_Malloc", MT_FN_PYMALLOC_MALLOC},	  {"PyMem_Calloc", MT_FN_PYMALLOC_CALLOC},
    {"PyMem_Realloc", MT_FN_PYMALLOC_REALLOC},	  {"PyMem_Free", MT_FN_PYMALLOC_FREE},
};

/* Mangled names of every operator new variant (plain, nothrow, aligned). */
static const struct probe_symbol cxx_new_symbols[] = {
    {"_Znwm", MT_FN_NEW},
    {"_ZnwmRKSt9nothrow_t", MT_FN_NEW},
    {"_ZnwmSt11align_val_t", MT_FN_NEW},
    {"_ZnwmSt11align_val_tRKSt9nothrow_t", MT_FN_NEW},
    {"_Znam", MT_FN_NEW_ARRAY},
    {"_ZnamRKSt9nothrow_t", MT_FN_NEW_ARRAY},
    {"_ZnamSt11align_val_t", MT_FN_NEW_ARRAY},
    {"_ZnamSt11align_val_tRKSt9nothrow_t", MT_FN_NEW_ARRAY},
};

/* Every operator delete variant (plain, nothrow, aligned, sized). */
static const char *const cxx_delete_symbols[] = {
    "_ZdlPv",
    "_ZdlPvm",
    "_ZdlPvRKSt9nothrow_t",
    "_ZdlPvSt11align_val_t",
    "_ZdlPvSt11align_val_tRKSt9nothrow_t",
    "_ZdlPvmSt11align_val_t",
    "_ZdaPv",
    "_ZdaPvm",
    "_ZdaPvRKSt9nothrow_t",
    "_ZdaPvSt11align_val_t",
    "_ZdaPvSt11align_val_tRKSt9nothrow_t",
    "_ZdaPvmSt11align_val_t",
};

/* jemalloc's own API, probed where the allocator exports it. */
static const struct probe_symbol jemalloc_symbols[] = {
    {"mallocx", MT_FN_MALLOCX}, {"rallocx", MT_FN_RALLOCX}, {"sdallocx", MT_FN_DALLOCX},
    {"dallocx", MT_FN_DALLOCX}, {"xallocx", MT_FN_XALLOCX},
};

const char *allocator_func_name(int func)
{
	if (func < 0 || func >= MT_FN_COUNT)
		return "?";
	return mt_func_name((unsigned)func) ? mt_func_name((unsigned)func) : "?";
}

static int read_target(int pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	return n == (ssize_t)len ? 0 : -1;
}

static int read_auxv(int pid, uint64_t type, uint64_t *value)
{
	char path[64];
	uint64_t av[2];
	int fd, found = -1;

	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (read(fd, av, sizeof(av)) == sizeof(av) && av[0] != AT_NULL) {
		if (av[0] == type) {
			*value = av[1];
			found = 0;
			break;
		}
	}
	close(fd);
	return found;
}

/* The address of r_debug, from the executable's DT_DEBUG; 0 if not yet set. */
static uint64_t find_r_debug(int pid)
{
	uint64_t phdr_addr, phnum, bias = 0, dyn_addr = 0, i;
	Elf64_Phdr ph;
	Elf64_Dyn dyn;
	int have_bias = 0;

	if (read_auxv(pid, AT_PHDR, &phdr_addr) || read_auxv(pid, AT_PHNUM, &phnum) || phnum > 4096)
		return 0;
	for (i = 0; i < phnum; i++) {
		if (read_target(pid, phdr_addr + i * sizeof(ph), &ph, sizeof(ph)))
			return 0;
		if (ph.p_type == PT_PHDR) {
			bias = phdr_addr - ph.p_vaddr;
			have_bias = 1;
		} else if (ph.p_type == PT_DYNAMIC) {
			dyn_addr = ph.p_vaddr;
		}
	}
	if (!have_bias || !dyn_addr)
		return 0;
	dyn_addr += bias;
	for (i = 0; i < 1024; i++) {
		if (read_target(pid, dyn_addr + i * sizeof(dyn), &dyn, sizeof(dyn)))
			return 0;
		if (dyn.d_tag == DT_NULL)
			break;
		if (dyn.d_tag == DT_DEBUG)
			return dyn.d_un.d_ptr;
	}
	return 0;
}

/* A NUL-terminated string of the target; whole pages at a time when possible. */
static void read_string(int pid, uint64_t addr, char *buf, size_t size)
{
	size_t k = 0, chunk;

	while (k < size - 1) {
		chunk = 4096 - ((addr + k) & 4095);
		if (chunk > size - 1 - k)
			chunk = size - 1 - k;
		if (read_target(pid, addr + k, buf + k, chunk))
			break;
		if (memchr(buf + k, 0, chunk))
			return;
		k += chunk;
	}
	buf[k] = 0;
}

int allocator_linker_state(int pid)
{
	uint64_t r_debug = find_r_debug(pid);
	int32_t state;

	/* struct r_debug: int r_version; link_map *r_map; ElfW(Addr) r_brk;
	 * enum r_state (RT_CONSISTENT = 0, RT_ADD, RT_DELETE) */
	if (!r_debug || read_target(pid, r_debug + 24, &state, sizeof(state)))
		return -1;
	return state;
}

static char *open_path_of(int pid, const char *name)
{
	char buf[PATH_MAX + 64];

	snprintf(buf, sizeof(buf), "/proc/%d/root%s", pid, name);
	return xstrdup(buf);
}

static void push_path(char ***v, int *n, char *p)
{
	*v = xrealloc(*v, (size_t)(*n + 1) * sizeof(**v));
	(*v)[(*n)++] = p;
}

static int order_from_link_map(int pid, char ***paths)
{
	/* struct r_debug and struct link_map as laid out on LP64 */
	uint64_t r_debug = find_r_debug(pid), lm, word[5];
	char name[PATH_MAX], exe[64];
	int n = 0, i;

	if (!r_debug || read_target(pid, r_debug, word, 2 * sizeof(uint64_t)))
		return -1;
	lm = word[1];
	*paths = NULL;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	for (i = 0; lm && i < MAX_LINK_MAP; i++) {
		/* l_addr, l_name, l_ld, l_next, l_prev */
		if (read_target(pid, lm, word, sizeof(word)))
			break;
		if (i == 0) {
			push_path(paths, &n, xstrdup(exe));
		} else if (word[1]) {
			read_string(pid, word[1], name, sizeof(name));
			if (name[0] == '/')
				push_path(paths, &n, open_path_of(pid, name));
		}
		lm = word[3];
	}
	return n ? n : -1;
}

static int order_from_maps(int pid, char ***paths)
{
	struct proc_maps m;
	char exe[64];
	size_t i;
	int n = 0, j, dup;

	if (procmaps_read(pid, &m))
		return -1;
	*paths = NULL;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	push_path(paths, &n, xstrdup(exe));
	for (i = 0; i < m.n; i++) {
		char *p;

		if (!m.v[i].path || m.v[i].path[0] != '/')
			continue;
		p = open_path_of(pid, m.v[i].path);
		dup = 0;
		for (j = 0; j < n && !dup; j++)
			dup = !strcmp((*paths)[j], p);
		if (dup)
			free(p);
		else
			push_path(paths, &n, p);
	}
	procmaps_free(&m);
	return n;
}

int allocator_search_order(int pid, char ***paths)
{
	int n = order_from_link_map(pid, paths);

	if (n > 0)
		return n;
	return order_from_maps(pid, paths);
}

/* pid's ld.so: its load address and the path the daemon opens it by; -1 if none. */
static int find_ldso(int pid, uint64_t *base, char **path)
{
	struct proc_maps m;
	const struct map_entry *e;

	if (read_auxv(pid, AT_BASE, base) || !*base || procmaps_read(pid, &m))
		return -1;
	e = procmaps_find(&m, *base);
	*path = e && e->path ? open_path_of(pid, e->path) : NULL;
	procmaps_free(&m);
	return *path ? 0 : -1;
}

uint64_t allocator_ldso_symbol(int pid, const char *name)
{
	uint64_t base, vaddr;
	struct elf_module *mod;
	char err[256], *path;

	if (find_ldso(pid, &base, &path))
		return 0;
	mod = elfmod_open(path, err, sizeof(err));
	free(path);
	if (!mod)
		return 0;
	if (elfmod_find_function(mod, name, 1, &vaddr, NULL))
		vaddr = 0;
	elfmod_close(mod);
	return vaddr ? base + vaddr : 0;
}

int allocator_ldso_probe(int pid, char **open_path, uint64_t *offset)
{
	uint64_t base, vaddr;
	struct elf_module *mod;
	char err[256], *path;
	int rc = -1;

	if (find_ldso(pid, &base, &path))
		return -1;
	mod = elfmod_open(path, err, sizeof(err));
	if (mod && !elfmod_find_function(mod, "_dl_debug_state", 1, &vaddr, NULL) &&
	    !elfmod_vaddr_to_offset(mod, vaddr, offset)) {
		*open_path = path;
		path = NULL;
		rc = 0;
	}
	elfmod_close(mod);
	free(path);
	return rc;
}

/* The display name of an open path: strip "/proc/PID/root", resolve exe. */
static char *display_path(int pid, const char *open_path)
{
	char prefix[64], buf[PATH_MAX];
	ssize_t n;

	snprintf(prefix, sizeof(prefix), "/proc/%d/root", pid);
	if (!strncmp(open_path, prefix, strlen(prefix)))
		return xstrdup(open_path + strlen(prefix));
	n = readlink(open_path, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = 0;
		return xstrdup(buf);
	}
	return xstrdup(open_path);
}

static void add_probe(struct allocator *a, const struct elf_module *mod, const char *name, int func,
		      int object, int dynamic_only)
{
	uint64_t vaddr, off;
	int k, ifunc;

	if (a->nprobes == (int)ARRAY_SIZE(a->probes) ||
	    elfmod_find_function(mod, name, dynamic_only, &vaddr, &ifunc))
		return;
	if (ifunc || elfmod_vaddr_to_offset(mod, vaddr, &off)) {
		a->skipped |= 1u << func;
		return;
	}
	/* glibc's aligned_alloc and memalign are one function: probe it once,
	 * or every call would count twice */
	for (k = 0; k < a->nprobes; k++) {
		if (a->probes[k].object == object && a->probes[k].offset == off)
			return;
	}
	a->probes[a->nprobes].func = func;
	a->probes[a->nprobes].object = object;
	a->probes[a->nprobes].offset = off;
	a->probes[a->nprobes].symbol = name;
	a->nprobes++;
}

static void fill_probes(struct allocator *a, const struct elf_module *mod, int dynamic_only)
{
	int f;

	for (f = 0; f < MT_FN_NEW; f++)
		add_probe(a, mod, mt_func_name((unsigned)f), f, 0, dynamic_only);
	for (f = 0; f < (int)ARRAY_SIZE(jemalloc_symbols); f++)
		add_probe(a, mod, jemalloc_symbols[f].name, jemalloc_symbols[f].func, 0,
			  dynamic_only);
}

/*
 * Probe syms in the first object of the search order that exports key (the
 * object the dynamic linker binds it to), as probe object number object.
 * Sets *open_path and *path to that object when any probe was added;
 * returns how many were.
 */
static int probe_first_exporter(struct allocator *a, int pid, char **paths, int n, const char *key,
				const struct probe_symbol *syms, size_t nsyms, int object,
				char **open_path, char **path)
{
	struct elf_module *mod;
	uint64_t vaddr;
	char why[256];
	int i, before = a->nprobes;
	size_t k;

	for (i = 0; i < n; i++) {
		mod = elfmod_open(paths[i], why, sizeof(why));
		if (!mod)
			continue;
		if (elfmod_find_function(mod, key, 1, &vaddr, NULL)) {
			elfmod_close(mod);
			continue;
		}
		for (k = 0; k < nsyms; k++)
			add_probe(a, mod, syms[k].name, syms[k].func, object, 1);
		elfmod_close(mod);
		if (a->nprobes > before) {
			*open_path = xstrdup(paths[i]);
			*path = display_path(pid, paths[i]);
		}
		break;
	}
	return a->nprobes - before;
}

/*
 * operator delete where operator new was found. libstdc++'s and libc++'s
 * call free, which is probed; an allocator that interposes them (jemalloc,
 * tcmalloc) frees in its sized deletes without calling free, so those are
 * probed, each as a free reported at entry that marks the thread as inside
 * the allocator (the free it may call is not counted again). A delete that
 * is only a jump to free (jemalloc's unsized ones) needs no probe of its
 * own, nor one at free's own address (tcmalloc's).
 */
static void fill_delete_probes(struct allocator *a)
{
	const char *base = strrchr(a->cxx_path, '/') ? strrchr(a->cxx_path, '/') + 1 : a->cxx_path;
	int same = a->open_path && !strcmp(a->open_path, a->cxx_open_path);
	uint64_t vaddr, off, free_vaddr;
	struct elf_module *mod;
	char why[256];
	int ifunc;

	if (!strncmp(base, "libstdc++.so", 12) || !strncmp(base, "libc++.so", 9))
		return;
	mod = elfmod_open(a->cxx_open_path, why, sizeof(why));
	if (!mod)
		return;
	if (elfmod_find_function(mod, "free", 1, &free_vaddr, NULL))
		free_vaddr = 0;
	for (size_t i = 0; i < ARRAY_SIZE(cxx_delete_symbols); i++) {
		int dup = 0;

		if (a->nprobes == (int)ARRAY_SIZE(a->probes))
			break;
		if (elfmod_find_function(mod, cxx_delete_symbols[i], 1, &vaddr, &ifunc) || ifunc ||
		    elfmod_vaddr_to_offset(mod, vaddr, &off) ||
		    elf_is_jump_to(a->cxx_open_path, vaddr, "free", free_vaddr))
			continue;
		for (int k = 0; k < a->nprobes; k++) {
			dup |= (a->probes[k].object == 1 || (same && a->probes[k].object == 0)) &&
			       a->probes[k].offset == off;
		}
		if (dup)
			continue;
		a->probes[a->nprobes++] = (struct alloc_probe){.func = MT_FN_DELETE,
							       .object = 1,
							       .offset = off,
							       .symbol = cxx_delete_symbols[i]};
	}
	elfmod_close(mod);
}

/* operator new (and delete) from the first object in search order that defines it. */
static void fill_cxx_probes(struct allocator *a, int pid, char **paths, int n)
{
	if (probe_first_exporter(a, pid, paths, n, "_Znwm", cxx_new_symbols,
				 ARRAY_SIZE(cxx_new_symbols), 1, &a->cxx_open_path, &a->cxx_path))
		fill_delete_probes(a);
}

/* The allocator: the first object of paths (search order) defining malloc and free. */
static int resolve_in(int pid, char **paths, int n, struct allocator *a, char *err, size_t errlen)
{
	char why[256];
	int i, rc = -1, dynamic_only;
	struct elf_module *mod;
	uint64_t vaddr;

	for (i = 0; i < n && rc; i++) {
		mod = elfmod_open(paths[i], why, sizeof(why));
		if (!mod)
			continue;
		/* A dynamic executable interposes only what it exports; a static
		 * one calls its own malloc, named in .symtab. */
		dynamic_only = i > 0 || elfmod_has_interp(mod);
		if (!elfmod_find_function(mod, "malloc", dynamic_only, &vaddr, NULL) &&
		    !elfmod_find_function(mod, "free", dynamic_only, &vaddr, NULL)) {
			fill_probes(a, mod, dynamic_only);
			if (a->nprobes) {
				a->open_path = xstrdup(paths[i]);
				a->path = display_path(pid, paths[i]);
				rc = 0;
			}
		}
		elfmod_close(mod);
	}
	if (!rc) {
		fill_cxx_probes(a, pid, paths, n);
		probesite_place_allocator(a);
	}
	for (i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	if (rc)
		snprintf(err, errlen, "no loaded object of pid %d defines malloc and free", pid);
	return rc;
}

int allocator_resolve(int pid, struct allocator *a, char *err, size_t errlen)
{
	char **paths = NULL;
	int n;

	memset(a, 0, sizeof(*a));
	n = allocator_search_order(pid, &paths);
	if (n < 0) {
		snprintf(err, errlen, "cannot read the memory map of pid %d: %s", pid,
			 strerror(errno ? errno : ESRCH));
		return -1;
	}
	return resolve_in(pid, paths, n, a, err, errlen);
}

int allocator_resolve_at_exec(int pid, struct allocator *a, char *err, size_t errlen)
{
	char **paths = NULL, *dir, *slash, exe[64], lib[PATH_MAX];
	struct proc_maps m;
	const struct map_entry *e;
	uint64_t base;
	int n = 0;

	if (read_auxv(pid, AT_BASE, &base) || !base)
		return allocator_resolve(pid, a, err, errlen); /* static: all there is */
	memset(a, 0, sizeof(*a));
	if (procmaps_read(pid, &m)) {
		snprintf(err, errlen, "cannot read the memory map of pid %d: %s", pid,
			 strerror(errno ? errno : ESRCH));
		return -1;
	}
	e = procmaps_find(&m, base);
	if (!e || !e->path || e->path[0] != '/') {
		procmaps_free(&m);
		snprintf(err, errlen, "pid %d: its dynamic linker is not a mapped file", pid);
		return -1;
	}
	/* glibc installs ld.so and libc.so.6 side by side */
	dir = xstrdup(e->path);
	procmaps_free(&m);
	slash = strrchr(dir, '/');
	*slash = 0;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	push_path(&paths, &n, xstrdup(exe));
	if (snprintf(lib, sizeof(lib), "%s/libc.so.6", dir) >= (int)sizeof(lib))
		lib[0] = 0; /* no such path: the search falls back to allocator_resolve() */
	push_path(&paths, &n, open_path_of(pid, lib));
	free(dir);
	return resolve_in(pid, paths, n, a, err, errlen);
}

int allocator_resolve_python(int pid, struct allocator *a)
{
	char **paths = NULL;
	int n, i, added;

	n = allocator_search_order(pid, &paths);
	added = probe_first_exporter(a, pid, paths, n, "PyObject_Malloc", python_symbols,
				     ARRAY_SIZE(python_symbols), 2, &a->py_open_path, &a->py_path);
	if (added) {
		pydispatch_apply(pid, a);
		probesite_place_allocator(a);
	}
	for (i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return added;
}

/* Does the target's environment hold PYTHONMALLOC=malloc (pymalloc off)? */
static int pymalloc_disabled(int pid)
{
	char path[64], *buf = NULL, *p;
	size_t cap = 0, len = 0;
	ssize_t n;
	int fd, off = 0;

	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	do {
		if (len + 4096 > cap) {
			cap = cap ? 2 * cap : 16384;
			buf = xrealloc(buf, cap + 1);
		}
		n = read(fd, buf + len, cap - len);
		if (n > 0)
			len += (size_t)n;
	} while (n > 0 && len < (1u << 22));
	close(fd);
	if (!buf)
		return 0;
	buf[len] = 0;
	for (p = buf; p < buf + len; p += strlen(p) + 1) {
		if (!strcmp(p, "PYTHONMALLOC=malloc") || !strcmp(p, "PYTHONMALLOC=malloc_debug"))
			off = 1;
	}
	free(buf);
	return off;
}

char *allocator_python_note(int pid)
{
	char **paths = NULL, why[256], note[1024], *shown;
	struct elf_module *mod;
	uint64_t vaddr;
	long sites = 0;
	int n, i;

	n = allocator_search_order(pid, &paths);
	for (i = 0; i < n; i++) {
		mod = elfmod_open(paths[i], why, sizeof(why));
		if (!mod)
			continue;
		if (elfmod_find_function(mod, "PyObject_Malloc", 1, &vaddr, NULL)) {
			elfmod_close(mod);
			continue;
		}
		elfmod_close(mod);
		sites = pyinline_count(paths[i], vaddr);
		break;
	}
	note[0] = 0;
	if (i < n && sites > 0 && !pymalloc_disabled(pid)) {
		shown = display_path(pid, paths[i]);
		snprintf(
		    note, sizeof(note),
		    "pymalloc is inlined at %ld call sites of %s: object allocations bypass "
		    "PyObject_Malloc and are not traced; for object-level tracing restart it "
		    "with PYTHONMALLOC=malloc, or use a CPython build that calls its allocator "
		    "out of line",
		    sites, shown);
		free(shown);
	}
	for (i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return note[0] ? xstrdup(note) : NULL;
}

const char *allocator_probe_open_path(const struct allocator *a, const struct alloc_probe *p)
{
	return p->object == 2 ? a->py_open_path : p->object ? a->cxx_open_path : a->open_path;
}

const char *allocator_probe_path(const struct allocator *a, const struct alloc_probe *p)
{
	return p->object == 2 ? a->py_path : p->object ? a->cxx_path : a->path;
}

void allocator_free(struct allocator *a)
{
	free(a->py_path);
	free(a->py_open_path);
	free(a->path);
	free(a->open_path);
	free(a->cxx_path);
	free(a->cxx_open_path);
	memset(a, 0, sizeof(*a));
}
