// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Following CPython's free dispatchers (see pydispatch.h). The target's
 * memory is read with process_vm_readv; every value read is checked before
 * use (it must land on a function symbol of the same file), so a target
 * still relocating or a table holding anything else gives "no", never a
 * wrong probe.
 */
#include "daemon/attach/pydispatch.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>

#include "daemon/attach/allocator.h"
#include "daemon/elf/elfmod.h"
#include "daemon/attach/placement.h"
#include "daemon/attach/probesite.h"
#include "daemon/proc/procmaps.h"
#include "common/util.h"

int pydispatch_can_hold = 1;

/* the first two take the domain first: a change of the raw domain's is ignored */
const char *const pydispatch_setters[] = {
    "PyMem_SetAllocator",
    "_PyMem_SetDefaultAllocator",
    "PyMem_SetupDebugHooks",
    "_PyMem_SetupAllocators",
    NULL,
};

/* struct PyMemAllocatorEx: ctx, malloc, calloc, realloc, free (CPython 3.5+) */
#define TABLE_FREE_AT 32

struct target_mem {
	int pid;
	uint64_t bias; /* runtime address - file virtual address */
};

static int read_word(void *ctx, uint64_t addr, uint64_t *value)
{
	const struct target_mem *t = ctx;
	struct iovec local = {.iov_base = value, .iov_len = sizeof(*value)};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = sizeof(*value)};

	return process_vm_readv(t->pid, &local, 1, &remote, 1, 0) == sizeof(*value) ? 0 : -1;
}

/* The load bias of path in pid, from a mapping of the same file (device, inode). */
static int load_bias(const struct codefile *f, int pid, const char *path, uint64_t *bias)
{
	struct proc_maps m;
	struct stat st;
	int rc = -1;

	if (stat(path, &st) || procmaps_read(pid, &m))
		return -1;
	for (size_t i = 0; i < m.n && rc; i++) {
		const struct map_entry *e = &m.v[i];
		uint64_t vaddr;

		if (e->inode != st.st_ino || e->dev_major != major(st.st_dev) ||
		    e->dev_minor != minor(st.st_dev) ||
		    codefile_offset_to_vaddr(f, e->offset, &vaddr))
			continue;
		*bias = e->start - vaddr;
		rc = 0;
	}
	procmaps_free(&m);
	return rc;
}

/* Follow the dispatcher at file offset off; its target as a file vaddr. */
static int follow(const struct codefile *f, struct target_mem *t, uint64_t off,
		  struct placement_dispatch *d, uint64_t *target)
{
	uint64_t vaddr, size;
	const uint8_t *code;
	size_t avail;

	if (codefile_offset_to_vaddr(f, off, &vaddr) || codefile_function_at(f, vaddr, &size, NULL))
		return -1;
	code = codefile_code(f, vaddr, &avail);
	if (!code || avail < size ||
	    placement_follow_dispatch(code, size, vaddr + t->bias, read_word, t, d))
		return -1;
	*target = d->target - t->bias;
	return 0;
}

/* Is [addr] inside one of the functions starting at allowed[0..n)? */
static int inside_one_of(const struct codefile *f, uint64_t addr, const uint64_t *allowed, int n)
{
	uint64_t start, size;

	if (codefile_function_containing(f, addr, &start, &size))
		return 0;
	for (int i = 0; i < n; i++) {
		if (allowed[i] == start)
			return 1;
	}
	return 0;
}

/* Direct calls and jumps to target from code outside the allowed functions. */
static int called_elsewhere(const struct codefile *f, uint64_t target, const uint64_t *allowed,
			    int n)
{
	uint64_t at = 0;

	/* each hit of the byte scan is located, then the scan resumes after it */
	while (codefile_branch_from(f, target, at, &at)) {
		if (!inside_one_of(f, at, allowed, n))
			return 1;
		at++;
	}
	return 0;
}

int pydispatch_free(int pid, const char *path, uint64_t free_off, uint64_t raw_off,
		    struct pydispatch *out, char *why, size_t whylen)
{
	struct codefile *f = codefile_open(path);
	struct target_mem t = {.pid = pid};
	struct placement_dispatch d, raw;
	uint64_t target, raw_target, size, allowed[4], table;
	const char *name;
	int rc = -1, n = 0;

	if (!f) {
		snprintf(why, whylen, "cannot read %s", path);
		return -1;
	}
	if (load_bias(f, pid, path, &t.bias)) {
		snprintf(why, whylen, "not mapped in pid %d", pid);
		goto out;
	}
	if (follow(f, &t, free_off, &d, &target)) {
		snprintf(why, whylen, "not a dispatcher through memory");
		goto out;
	}
	if (codefile_function_at(f, target, &size, &name)) {
		snprintf(why, whylen, "its table points outside the file's functions");
		goto out;
	}
	/* the table is PyMemAllocatorEx: the context the dispatcher passes is its first word */
	table = d.slot - TABLE_FREE_AT;
	if (!d.slot || d.rdi_from != table) {
		snprintf(why, whylen, "the dispatch is not through an allocator table");
		goto out;
	}
	if (raw_off && !follow(f, &t, raw_off, &raw, &raw_target) && raw_target == target) {
		snprintf(why, whylen, "%.40s is the raw domain's free too", name);
		goto out;
	}
	allowed[n++] = target;
	for (int k = 1; k <= 3; k++) { /* the table's malloc, calloc, realloc */
		uint64_t fn;

		if (!read_word(&t, table + 8 * (uint64_t)k, &fn))
			allowed[n++] = fn - t.bias;
	}
	if (called_elsewhere(f, target, allowed, n)) {
		snprintf(why, whylen, "%.40s is called directly, not only through the table", name);
		goto out;
	}
	if (codefile_vaddr_to_offset(f, target, &out->offset))
		goto out;
	out->arg0_reg = d.arg0_reg;
	snprintf(out->name, sizeof(out->name), "%s", name);
	rc = 0;
out:
	codefile_close(f);
	return rc;
}

/* The functions of the CPython object that install an allocator, for their probes. */
static void find_setters(struct allocator *a)
{
	struct elf_module *mod;
	char err[256];

	mod = elfmod_open(a->py_open_path, err, sizeof(err));
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
	elfmod_close(mod);
}

void pydispatch_apply(int pid, struct allocator *a)
{
	struct elf_module *mod;
	uint64_t raw_vaddr, raw_off = 0;
	char err[256], why[128];
	int i, k;

	if (!a->py_open_path || probesite_at_entry() || !pydispatch_can_hold)
		return;
	/* the setters must be there to be probed: PyMem_SetAllocator for later
	 * changes and _PyMem_SetupAllocators for the one at start-up
	 * (PYTHONMALLOC, -X dev), which a program held at exec has ahead */
	find_setters(a);
	if (!(a->npy_setters && a->py_setter_found[0] && a->py_setter_found[3])) {
		log_msg("pid %d: PyObject_Free probed itself: the functions that install an "
			"allocator are not all in %s's symbols",
			pid, a->py_path ? a->py_path : a->py_open_path);
		a->npy_setters = 0;
		return;
	}
	mod = elfmod_open(a->py_open_path, err, sizeof(err));
	if (mod && !elfmod_find_function(mod, "PyMem_RawFree", 1, &raw_vaddr, NULL))
		elfmod_vaddr_to_offset(mod, raw_vaddr, &raw_off);
	elfmod_close(mod);
	for (i = 0; i < a->nprobes; i++) {
		struct alloc_probe *p = &a->probes[i];
		struct pydispatch d;

		if (p->object != 2 || p->func != MT_FN_PYMALLOC_FREE || p->dispatched)
			continue;
		if (pydispatch_free(pid, a->py_open_path, p->offset, raw_off, &d, why,
				    sizeof(why))) {
			log_msg("pid %d: %s probed itself: %s", pid, p->symbol, why);
			continue;
		}
		if (a->npy_dispatchers < (int)ARRAY_SIZE(a->py_dispatchers))
			a->py_dispatchers[a->npy_dispatchers++] = *p;
		for (k = 0; k < i; k++) {
			if (a->probes[k].object == 2 && a->probes[k].offset == d.offset)
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

int pydispatch_undo(struct allocator *a)
{
	int n = 0;

	for (int i = 0; i < a->npy_dispatchers && a->nprobes < (int)ARRAY_SIZE(a->probes); i++) {
		a->probes[a->nprobes] = a->py_dispatchers[i];
		memset(&a->probes[a->nprobes].place, 0, sizeof(a->probes[a->nprobes].place));
		a->nprobes++;
		n++;
	}
	a->npy_dispatchers = 0;
	if (n)
		probesite_place_allocator(a);
	return n;
}
