// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Allocator resolution (see allocator.h): the object of the target that
 * defines the malloc it binds, found in the link map's search order
 * (proc/linkmap.c), and the probe table for it. Nothing in the target is
 * stopped or changed.
 */
#include "daemon/attach/allocator.h"
#include "memtrace/counters.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "daemon/attach/elfjump.h"
#include "daemon/elf/elfmod.h"
#include "daemon/attach/probesite.h"
#include "daemon/attach/pydispatch.h"
#include "daemon/proc/linkmap.h"
#include "daemon/proc/procmaps.h"
#include "daemon/symbols/pyinline.h"
#include "common/util.h"

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

/* The C allocator API, probed in the object that defines malloc. */
static const struct probe_symbol c_symbols[] = {
    {"malloc", MT_FN_MALLOC},
    {"calloc", MT_FN_CALLOC},
    {"realloc", MT_FN_REALLOC},
    {"reallocarray", MT_FN_REALLOCARRAY},
    {"free", MT_FN_FREE},
    {"posix_memalign", MT_FN_POSIX_MEMALIGN},
    {"aligned_alloc", MT_FN_ALIGNED_ALLOC},
    {"memalign", MT_FN_MEMALIGN},
    {"valloc", MT_FN_VALLOC},
    {"pvalloc", MT_FN_PVALLOC},
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
	size_t f;

	for (f = 0; f < ARRAY_SIZE(c_symbols); f++)
		add_probe(a, mod, c_symbols[f].name, c_symbols[f].func, 0, dynamic_only);
	for (f = 0; f < ARRAY_SIZE(jemalloc_symbols); f++)
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
			*path = linkmap_display_path(pid, paths[i]);
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
				a->path = linkmap_display_path(pid, paths[i]);
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
	n = linkmap_search_order(pid, &paths);
	if (n < 0) {
		snprintf(err, errlen, "cannot read the memory map of pid %d: %s", pid,
			 strerror(errno ? errno : ESRCH));
		return -1;
	}
	return resolve_in(pid, paths, n, a, err, errlen);
}

int allocator_resolve_at_exec(int pid, struct allocator *a, char *err, size_t errlen)
{
	char **paths = NULL;
	int n = linkmap_exec_order(pid, &paths, err, errlen);

	if (n < 0)
		return -1;
	if (n == 0)
		return allocator_resolve(pid, a, err, errlen); /* static: all there is */
	memset(a, 0, sizeof(*a));
	return resolve_in(pid, paths, n, a, err, errlen);
}

int allocator_resolve_python(int pid, struct allocator *a)
{
	char **paths = NULL;
	int n, i, added;

	n = linkmap_search_order(pid, &paths);
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

	n = linkmap_search_order(pid, &paths);
	for (i = 0; i < n; i++) {
		mod = elfmod_open(paths[i], why, sizeof(why));
		if (!mod)
			continue;
		if (elfmod_find_function(mod, "PyObject_Malloc", 1, &vaddr, NULL)) {
			elfmod_close(mod);
			continue;
		}
		sites = pyinline_count(mod, vaddr);
		elfmod_close(mod);
		break;
	}
	note[0] = 0;
	if (i < n && sites > 0 && !pymalloc_disabled(pid)) {
		shown = linkmap_display_path(pid, paths[i]);
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
