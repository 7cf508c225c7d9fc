// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Following CPython's free dispatchers (see pydispatch.h). The target's
 * memory is read with process_vm_readv; every value read is checked before
 * use (it must land on a function symbol of the same file), so a target
 * still relocating or a table holding anything else gives "no", never a
 * wrong probe.
 */
#include "daemon/attach/pydispatch.h"

#include <elf.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>

#include "daemon/attach/placement.h"
#include "daemon/elf/elfmod.h"
#include "daemon/proc/procmaps.h"

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

/* The load bias of the module in pid, from a mapping of the same file (device, inode). */
static int load_bias(struct elf_module *m, int pid, uint64_t *bias)
{
	struct proc_maps maps;
	struct stat st;
	int rc = -1;

	if (elfmod_fd(m) < 0 || fstat(elfmod_fd(m), &st) || procmaps_read(pid, &maps))
		return -1;
	for (size_t i = 0; i < maps.n && rc; i++) {
		const struct map_entry *e = &maps.v[i];
		uint64_t vaddr;

		if (e->inode != st.st_ino || e->dev_major != major(st.st_dev) ||
		    e->dev_minor != minor(st.st_dev) ||
		    elfmod_offset_to_vaddr(m, e->offset, &vaddr))
			continue;
		*bias = e->start - vaddr;
		rc = 0;
	}
	procmaps_free(&maps);
	return rc;
}

/* Follow the dispatcher at file offset off; its target as a file vaddr. */
static int follow(struct elf_module *m, struct target_mem *t, uint64_t off,
		  struct placement_dispatch *d, uint64_t *target)
{
	uint64_t vaddr, size;
	const uint8_t *code;
	size_t avail;

	if (elfmod_offset_to_vaddr(m, off, &vaddr) || elfmod_symbol_at(m, vaddr, &size, NULL))
		return -1;
	code = elfmod_code(m, vaddr, &avail);
	if (!code || avail < size ||
	    placement_follow_dispatch(code, size, vaddr + t->bias, read_word, t, d))
		return -1;
	*target = d->target - t->bias;
	return 0;
}

/* Is [addr] inside one of the functions starting at allowed[0..n)? */
static int inside_one_of(struct elf_module *m, uint64_t addr, const uint64_t *allowed, int n)
{
	uint64_t start, size;

	if (elfmod_symbol_containing(m, addr, &start, &size))
		return 0;
	for (int i = 0; i < n; i++) {
		if (allowed[i] == start)
			return 1;
	}
	return 0;
}

/* Direct calls and jumps to target from code outside the allowed functions. */
static int called_elsewhere(struct elf_module *m, uint64_t target, const uint64_t *allowed, int n)
{
	const uint8_t *bytes;
	uint64_t vaddr;
	size_t size, at;

	for (size_t i = 0; !elfmod_code_section(m, i, &vaddr, &bytes, &size); i++) {
		/* each hit of the byte scan is located, then the scan resumes after it */
		for (size_t from = 0;
		     from < size &&
		     placement_find_branch(bytes + from, size - from, vaddr + from, target, &at);
		     from += at + 1) {
			if (!inside_one_of(m, vaddr + from + at, allowed, n))
				return 1;
		}
	}
	return 0;
}

int pydispatch_free(int pid, struct elf_module *m, uint64_t free_off, uint64_t raw_off,
		    struct pydispatch *out, char *why, size_t whylen)
{
	struct target_mem t = {.pid = pid};
	struct placement_dispatch d, raw;
	uint64_t target, raw_target, size, allowed[4], table;
	const char *name;
	int n = 0;

	if (!m || elfmod_machine(m) != EM_X86_64) {
		snprintf(why, whylen, "cannot read %s", m ? elfmod_path(m) : "its file");
		return -1;
	}
	if (load_bias(m, pid, &t.bias)) {
		snprintf(why, whylen, "not mapped in pid %d", pid);
		return -1;
	}
	if (follow(m, &t, free_off, &d, &target)) {
		snprintf(why, whylen, "not a dispatcher through memory");
		return -1;
	}
	if (elfmod_symbol_at(m, target, &size, &name)) {
		snprintf(why, whylen, "its table points outside the file's functions");
		return -1;
	}
	/* the table is PyMemAllocatorEx: the context the dispatcher passes is its first word */
	table = d.slot - TABLE_FREE_AT;
	if (!d.slot || d.rdi_from != table) {
		snprintf(why, whylen, "the dispatch is not through an allocator table");
		return -1;
	}
	if (raw_off && !follow(m, &t, raw_off, &raw, &raw_target) && raw_target == target) {
		snprintf(why, whylen, "%.40s is the raw domain's free too", name);
		return -1;
	}
	allowed[n++] = target;
	for (int k = 1; k <= 3; k++) { /* the table's malloc, calloc, realloc */
		uint64_t fn;

		if (!read_word(&t, table + 8 * (uint64_t)k, &fn))
			allowed[n++] = fn - t.bias;
	}
	if (called_elsewhere(m, target, allowed, n)) {
		snprintf(why, whylen, "%.40s is called directly, not only through the table", name);
		return -1;
	}
	if (elfmod_vaddr_to_offset(m, target, &out->offset))
		return -1;
	out->arg0_reg = d.arg0_reg;
	snprintf(out->name, sizeof(out->name), "%s", name);
	return 0;
}
