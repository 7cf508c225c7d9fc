// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Allocator resolution (see allocator.h): the object of the target that
 * defines the malloc it binds, found in the link map's search order
 * (proc/linkmap.c), and the probe table for it: which functions, where in
 * them (probesite.c), CPython's frees followed to where they dispatch
 * (pydispatch.c). Each file is opened once per call, one module
 * (elf/elfmod.c) that every step reads. Nothing in the target is stopped or
 * changed.
 */
#include "daemon/attach/allocator.h"
#include "memtrace/counters.h"
#include "memtrace/snapshot.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "daemon/attach/elfjump.h"
#include "daemon/attach/probesite.h"
#include "daemon/attach/pydispatch.h"
#include "daemon/elf/elfmod.h"
#include "daemon/proc/linkmap.h"
#include "daemon/symbols/pyinline.h"

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

/*
 * The files one call reads: the search order (the daemon's paths to the
 * target's objects), each opened when first read and kept to the end of
 * the call, and an object's file outside it (opened by its open_path).
 */
struct files {
	char **paths;
	int n;
	struct elf_module **mods;
	uint8_t *tried;
	struct elf_module *own[ALLOC_NOBJECTS];
	uint8_t own_tried[ALLOC_NOBJECTS];
};

/* The search order of pid; 0, or -1 (errno) when its maps cannot be read. */
static int files_of(struct files *f, int pid)
{
	memset(f, 0, sizeof(*f));
	f->n = linkmap_search_order(pid, &f->paths);
	if (f->n < 0) {
		f->n = 0;
		return -1;
	}
	f->mods = xcalloc((size_t)f->n + 1, sizeof(*f->mods));
	f->tried = xcalloc((size_t)f->n + 1, 1);
	return 0;
}

/* The same over paths (taken over). */
static void files_from(struct files *f, char **paths, int n)
{
	memset(f, 0, sizeof(*f));
	f->paths = paths;
	f->n = n;
	f->mods = xcalloc((size_t)n + 1, sizeof(*f->mods));
	f->tried = xcalloc((size_t)n + 1, 1);
}

static void files_done(struct files *f)
{
	for (int i = 0; i < f->n; i++) {
		elfmod_close(f->mods[i]);
		free(f->paths[i]);
	}
	for (int k = 0; k < ALLOC_NOBJECTS; k++)
		elfmod_close(f->own[k]);
	free(f->paths);
	free(f->mods);
	free(f->tried);
	memset(f, 0, sizeof(*f));
}

/* The i-th object of the search order as a module, or NULL when it is not ELF. */
static struct elf_module *file_at(struct files *f, int i)
{
	char why[256];

	if (!f->tried[i]) {
		f->tried[i] = 1;
		f->mods[i] = elfmod_open_shared(f->paths[i], why, sizeof(why));
	}
	return f->mods[i];
}

/* The file of object k of a, or NULL. */
static struct elf_module *file_of(struct files *f, const struct allocator *a, enum alloc_object k)
{
	const char *path = a->obj[k].open_path;
	char why[256];

	if (!path)
		return NULL;
	for (int i = 0; i < f->n; i++) {
		if (!strcmp(f->paths[i], path))
			return file_at(f, i);
	}
	if (!f->own_tried[k]) {
		f->own_tried[k] = 1;
		f->own[k] = elfmod_open_shared(path, why, sizeof(why));
	}
	return f->own[k];
}

static void add_probe(struct allocator *a, const struct elf_module *mod, const char *name, int func,
		      enum alloc_object object, int dynamic_only)
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
		add_probe(a, mod, c_symbols[f].name, c_symbols[f].func, ALLOC_OBJ_MALLOC,
			  dynamic_only);
	for (f = 0; f < ARRAY_SIZE(jemalloc_symbols); f++)
		add_probe(a, mod, jemalloc_symbols[f].name, jemalloc_symbols[f].func,
			  ALLOC_OBJ_MALLOC, dynamic_only);
}

/*
 * Probe syms in the first object of the search order that exports key (the
 * object the dynamic linker binds it to), as object k. Sets a->obj[k] to
 * that object when any probe was added; returns how many were.
 */
static int probe_first_exporter(struct allocator *a, int pid, struct files *f, const char *key,
				const struct probe_symbol *syms, size_t nsyms, enum alloc_object k)
{
	struct elf_module *mod;
	uint64_t vaddr;
	int i, before = a->nprobes;
	size_t s;

	for (i = 0; i < f->n; i++) {
		mod = file_at(f, i);
		if (!mod || elfmod_find_function(mod, key, 1, &vaddr, NULL))
			continue;
		for (s = 0; s < nsyms; s++)
			add_probe(a, mod, syms[s].name, syms[s].func, k, 1);
		if (a->nprobes > before) {
			a->obj[k].open_path = xstrdup(f->paths[i]);
			a->obj[k].path = linkmap_display_path(pid, f->paths[i]);
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
static void fill_delete_probes(struct allocator *a, struct files *f)
{
	const struct alloc_file *cxx = &a->obj[ALLOC_OBJ_CXX], *c = &a->obj[ALLOC_OBJ_MALLOC];
	const char *base = strrchr(cxx->path, '/') ? strrchr(cxx->path, '/') + 1 : cxx->path;
	int same = c->open_path && !strcmp(c->open_path, cxx->open_path);
	uint64_t vaddr, off, free_vaddr;
	struct elf_module *mod;
	int ifunc;

	if (!strncmp(base, "libstdc++.so", 12) || !strncmp(base, "libc++.so", 9))
		return;
	mod = file_of(f, a, ALLOC_OBJ_CXX);
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
		    elf_is_jump_to(mod, vaddr, "free", free_vaddr))
			continue;
		for (int k = 0; k < a->nprobes; k++) {
			dup |= (a->probes[k].object == ALLOC_OBJ_CXX ||
				(same && a->probes[k].object == ALLOC_OBJ_MALLOC)) &&
			       a->probes[k].offset == off;
		}
		if (dup)
			continue;
		a->probes[a->nprobes++] = (struct alloc_probe){.func = MT_FN_DELETE,
							       .object = ALLOC_OBJ_CXX,
							       .offset = off,
							       .symbol = cxx_delete_symbols[i]};
	}
}

static int undecided(const struct alloc_probe *p)
{
	return !p->place.insn[0] && !p->place.why[0];
}

/*
 * Place every probe of a whose place is not decided yet (place.insn
 * empty), object by object; probesite_place() logs each new decision once.
 */
static void place_probes(struct allocator *a, struct files *f)
{
	struct probesite_req req[ARRAY_SIZE(a->probes)];
	struct placement out[ARRAY_SIZE(a->probes)];
	int idx[ARRAY_SIZE(a->probes)];

	for (int k = 0; k < ALLOC_NOBJECTS; k++) {
		size_t n = 0;

		for (int i = 0; i < a->nprobes; i++) {
			struct alloc_probe *p = &a->probes[i];

			if (p->object != (enum alloc_object)k || !undecided(p))
				continue;
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
		probesite_place(probesite_at_entry() ? NULL : file_of(f, a, (enum alloc_object)k),
				req, n, out);
		for (size_t i = 0; i < n; i++)
			a->probes[idx[i]].place = out[i];
	}
}

/* The allocator: the first object of the search order defining malloc and free. */
static int resolve_in(int pid, struct files *f, struct allocator *a, char *err, size_t errlen)
{
	int i, rc = -1, dynamic_only;
	struct elf_module *mod;
	uint64_t vaddr;

	for (i = 0; i < f->n && rc; i++) {
		mod = file_at(f, i);
		if (!mod)
			continue;
		/* A dynamic executable interposes only what it exports; a static
		 * one calls its own malloc, named in .symtab. */
		dynamic_only = i > 0 || elfmod_has_interp(mod);
		if (!elfmod_find_function(mod, "malloc", dynamic_only, &vaddr, NULL) &&
		    !elfmod_find_function(mod, "free", dynamic_only, &vaddr, NULL)) {
			fill_probes(a, mod, dynamic_only);
			if (a->nprobes) {
				a->obj[ALLOC_OBJ_MALLOC].open_path = xstrdup(f->paths[i]);
				a->obj[ALLOC_OBJ_MALLOC].path =
				    linkmap_display_path(pid, f->paths[i]);
				rc = 0;
			}
		}
	}
	if (!rc) {
		/* operator new (and delete) from the first object in search order
		 * that defines it */
		if (probe_first_exporter(a, pid, f, "_Znwm", cxx_new_symbols,
					 ARRAY_SIZE(cxx_new_symbols), ALLOC_OBJ_CXX))
			fill_delete_probes(a, f);
		place_probes(a, f);
	}
	files_done(f);
	if (rc)
		snprintf(err, errlen, "no loaded object of pid %d defines malloc and free", pid);
	return rc;
}

int allocator_resolve(int pid, struct allocator *a, char *err, size_t errlen)
{
	struct files f;

	memset(a, 0, sizeof(*a));
	if (files_of(&f, pid)) {
		snprintf(err, errlen, "cannot read the memory map of pid %d: %s", pid,
			 strerror(errno ? errno : ESRCH));
		return -1;
	}
	return resolve_in(pid, &f, a, err, errlen);
}

int allocator_resolve_at_exec(int pid, struct allocator *a, char *err, size_t errlen)
{
	struct files f;
	char **paths = NULL;
	int n = linkmap_exec_order(pid, &paths, err, errlen);

	if (n < 0)
		return -1;
	if (n == 0)
		return allocator_resolve(pid, a, err, errlen); /* static: all there is */
	memset(a, 0, sizeof(*a));
	files_from(&f, paths, n);
	return resolve_in(pid, &f, a, err, errlen);
}

/* The functions of the CPython object that install an allocator, for their probes. */
static void find_setters(struct allocator *a, struct elf_module *mod)
{
	a->npy_setters = 0;
	for (int i = 0; mod && pydispatch_setters[i]; i++) {
		uint64_t vaddr, off;

		a->py_setter_found[i] = 0;
		if (a->npy_setters < (int)ARRAY_SIZE(a->py_setters) &&
		    !elfmod_find_function(mod, pydispatch_setters[i], 0, &vaddr, NULL) &&
		    !elfmod_vaddr_to_offset(mod, vaddr, &off)) {
			a->py_setter_found[i] = 1;
			a->py_setter_domain[a->npy_setters] = i < 2;
			a->py_setters[a->npy_setters++] = off;
		}
	}
}

/*
 * For each CPython free probe of a (PyObject_Free, PyMem_Free) whose
 * dispatch pydispatch_free() can follow in pid, probe the function it
 * reaches instead (once, when both reach the same one); logs each choice.
 */
static void follow_python_frees(int pid, struct allocator *a, struct files *f)
{
	const struct alloc_file *py = &a->obj[ALLOC_OBJ_PYTHON];
	struct elf_module *mod;
	uint64_t raw_vaddr, raw_off = 0;
	char why[128];
	int i, k;

	if (!py->open_path || probesite_at_entry() || !pydispatch_can_hold)
		return;
	mod = file_of(f, a, ALLOC_OBJ_PYTHON);
	/* the setters must be there to be probed: PyMem_SetAllocator for later
	 * changes and _PyMem_SetupAllocators for the one at start-up
	 * (PYTHONMALLOC, -X dev), which a program held at exec has ahead */
	find_setters(a, mod);
	if (!(a->npy_setters && a->py_setter_found[0] && a->py_setter_found[3])) {
		log_msg("pid %d: PyObject_Free probed itself: the functions that install an "
			"allocator are not all in %s's symbols",
			pid, py->path ? py->path : py->open_path);
		a->npy_setters = 0;
		return;
	}
	if (!elfmod_find_function(mod, "PyMem_RawFree", 1, &raw_vaddr, NULL))
		elfmod_vaddr_to_offset(mod, raw_vaddr, &raw_off);
	for (i = 0; i < a->nprobes; i++) {
		struct alloc_probe *p = &a->probes[i];
		struct pydispatch d;

		if (p->object != ALLOC_OBJ_PYTHON || p->func != MT_FN_PYMALLOC_FREE ||
		    p->dispatched)
			continue;
		if (pydispatch_free(pid, mod, p->offset, raw_off, &d, why, sizeof(why))) {
			log_msg("pid %d: %s probed itself: %s", pid, p->symbol, why);
			continue;
		}
		if (a->npy_dispatchers < (int)ARRAY_SIZE(a->py_dispatchers))
			a->py_dispatchers[a->npy_dispatchers++] = *p;
		for (k = 0; k < i; k++) {
			if (a->probes[k].object == ALLOC_OBJ_PYTHON &&
			    a->probes[k].offset == d.offset)
				break;
		}
		if (k < i) { /* PyMem_Free reaches the same function as PyObject_Free */
			log_msg("pid %d: %s dispatches to %s, probed already", pid, p->symbol,
				d.name);
			memmove(p, p + 1, (size_t)(a->nprobes - i - 1) * sizeof(*p));
			a->nprobes--;
			i--;
			continue;
		}
		log_msg("pid %d: %s dispatches to %s, probed there (the pointer in %s)", pid,
			p->symbol, d.name, placement_gpr_name(d.arg0_reg));
		p->offset = d.offset;
		p->dispatched = 1;
		p->arg0_reg = d.arg0_reg;
		snprintf(p->via_target, sizeof(p->via_target), "%s", d.name);
		memset(&p->place, 0, sizeof(p->place)); /* to be placed at its new offset */
	}
	if (!a->npy_dispatchers)
		a->npy_setters = 0; /* nothing to undo: no need to stop it */
}

int allocator_resolve_python(int pid, struct allocator *a)
{
	struct files f;
	int added;

	files_of(&f, pid);
	added = probe_first_exporter(a, pid, &f, "PyObject_Malloc", python_symbols,
				     ARRAY_SIZE(python_symbols), ALLOC_OBJ_PYTHON);
	if (added) {
		follow_python_frees(pid, a, &f);
		place_probes(a, &f);
	}
	files_done(&f);
	return added;
}

int allocator_undo_python_dispatch(struct allocator *a)
{
	struct files f = {0};
	int n = 0;

	for (int i = 0; i < a->npy_dispatchers && a->nprobes < (int)ARRAY_SIZE(a->probes); i++) {
		a->probes[a->nprobes] = a->py_dispatchers[i];
		memset(&a->probes[a->nprobes].place, 0, sizeof(a->probes[a->nprobes].place));
		a->nprobes++;
		n++;
	}
	a->npy_dispatchers = 0;
	if (n) {
		place_probes(a, &f);
		files_done(&f);
	}
	return n;
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
	char note[1024], *shown;
	struct elf_module *mod = NULL;
	struct files f;
	uint64_t vaddr;
	long sites = 0;
	int i;

	files_of(&f, pid);
	for (i = 0; i < f.n; i++) {
		mod = file_at(&f, i);
		if (mod && !elfmod_find_function(mod, "PyObject_Malloc", 1, &vaddr, NULL))
			break;
	}
	note[0] = 0;
	if (i < f.n && (sites = pyinline_count(mod, vaddr)) > 0 && !pymalloc_disabled(pid)) {
		shown = linkmap_display_path(pid, f.paths[i]);
		snprintf(
		    note, sizeof(note),
		    "pymalloc is inlined at %ld call sites of %s: object allocations bypass "
		    "PyObject_Malloc and are not traced; for object-level tracing restart it "
		    "with PYTHONMALLOC=malloc, or use a CPython build that calls its allocator "
		    "out of line",
		    sites, shown);
		free(shown);
	}
	files_done(&f);
	return note[0] ? xstrdup(note) : NULL;
}

const char *allocator_probe_open_path(const struct allocator *a, const struct alloc_probe *p)
{
	return a->obj[p->object].open_path;
}

const char *allocator_probe_path(const struct allocator *a, const struct alloc_probe *p)
{
	return a->obj[p->object].path;
}

void allocator_probe_sites(const struct allocator *a, struct snapshot *s, struct snap_target *out)
{
	int n = a->nprobes < SNAPSHOT_MAX_SITES ? a->nprobes : SNAPSHOT_MAX_SITES;

	out->sites = n ? xcalloc((size_t)n, sizeof(*out->sites)) : NULL;
	for (int i = 0; i < n; i++) {
		const struct alloc_probe *p = &a->probes[i];
		struct snap_probe_site *ps = &out->sites[out->nsites++];
		const char *obj = allocator_probe_path(a, p);

		ps->function = snapshot_strdup(s, p->dispatched ? p->via_target
						  : p->symbol	? p->symbol
								: allocator_func_name(p->func));
		ps->via = p->dispatched && p->symbol ? snapshot_strdup(s, p->symbol) : NULL;
		ps->object = snapshot_strdup(s, obj);
		ps->offset = p->offset;
		ps->at = p->place.offset;
		ps->instruction = p->place.insn[0] ? snapshot_strdup(s, p->place.insn) : NULL;
		ps->why = p->place.why[0] ? snapshot_strdup(s, p->place.why) : NULL;
	}
}

void allocator_free(struct allocator *a)
{
	if (!a)
		return;
	for (int k = 0; k < ALLOC_NOBJECTS; k++) {
		free(a->obj[k].path);
		free(a->obj[k].open_path);
	}
	memset(a, 0, sizeof(*a));
}

int allocator_frees_twice(const struct allocator *a)
{
	const struct alloc_file *f = &a->obj[ALLOC_OBJ_MALLOC];
	const char *base = f->path ? strrchr(f->path, '/') : NULL;
	struct elf_module *mod;
	char err[256];
	uint64_t vaddr;
	int twice;

	if (!f->path || !f->open_path)
		return 0;
	base = base ? base + 1 : f->path;
	if (!strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5))
		return 1;
	mod = elfmod_open_shared(f->open_path, err, sizeof(err));
	twice = mod && !elfmod_find_function(mod, "tcache_thread_shutdown", 0, &vaddr, NULL);
	elfmod_close(mod);
	return twice;
}
