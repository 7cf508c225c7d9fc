// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A target's dynamic linker as seen from outside: its auxiliary vector
 * (AT_BASE), ld.so's r_debug (found through the executable's DT_DEBUG) and
 * the link map it publishes, which is the search order the linker binds
 * symbols in; and _dl_debug_state, which ld.so calls whenever that map
 * changes. Read with process_vm_readv; every pointer from the target is
 * checked, none trusted.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "daemon/proc/linkmap.h"
#include "daemon/proc/procmaps.h"
#include "daemon/elf/elfmod.h"
#include "common/util.h"

#define MAX_LINK_MAP 4096

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

int linkmap_state(int pid)
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

/* Is path the file mapping e maps (by inode: overlayfs may show another
 * device in the maps than stat gives)? */
static int names_mapped_file(const char *path, const struct map_entry *e)
{
	struct stat st;

	return !stat(path, &st) && st.st_ino == e->inode;
}

/*
 * The path the daemon opens the file of mapping e by. The maps show a path
 * as the reader sees it: the target's own path when it lives in another
 * mount namespace (a container), ours when it only changed its root (a
 * chroot, or a server that chrooted itself after loading its libraries).
 * So: the path under the process's root, then the path itself, whichever
 * is that file; else /proc/PID/map_files, which is always that file (a
 * library deleted or replaced on disk, or a root we cannot reach by path).
 * *under_root says which form was taken (1: under the root, 0: as is,
 * -1: map_files).
 */
static char *mapping_open_path(int pid, const struct map_entry *e, int *under_root)
{
	char buf[128];
	char *p;

	if (e->path && e->path[0] == '/' && !e->deleted) {
		p = open_path_of(pid, e->path);
		if (names_mapped_file(p, e)) {
			*under_root = 1;
			return p;
		}
		free(p);
		if (names_mapped_file(e->path, e)) {
			*under_root = 0;
			return xstrdup(e->path);
		}
	}
	*under_root = -1;
	snprintf(buf, sizeof(buf), "/proc/%d/map_files/%llx-%llx", pid,
		 (unsigned long long)e->start, (unsigned long long)e->end);
	return xstrdup(buf);
}

static void push_path(char ***v, int *n, char *p)
{
	*v = xrealloc(*v, (size_t)(*n + 1) * sizeof(**v));
	(*v)[(*n)++] = p;
}

/*
 * The path to open a link map entry's object by: its name under the
 * process's root when that is the file mapped where the object's dynamic
 * section (l_ld) is; else the mapping's own path (a process that chrooted
 * after loading its libraries names files its root no longer holds; a
 * library found through a relative path, LD_PRELOAD=./lib.so, is named
 * relative to a directory we do not know). NULL: nothing to open (the
 * vDSO, which is no file).
 */
static char *link_map_open_path(int pid, const char *name, uint64_t l_ld, struct proc_maps *m,
				int *have_maps)
{
	const struct map_entry *e;
	char *p = name[0] == '/' ? open_path_of(pid, name) : NULL;
	int form;

	if (!*have_maps)
		*have_maps = procmaps_read(pid, m) ? -1 : 1;
	e = *have_maps > 0 ? procmaps_find(m, l_ld) : NULL;
	if (!e || !e->inode || !e->path || (p && names_mapped_file(p, e)))
		return p;
	free(p);
	return mapping_open_path(pid, e, &form);
}

static int order_from_link_map(int pid, char ***paths)
{
	/* struct r_debug and struct link_map as laid out on LP64 */
	uint64_t r_debug = find_r_debug(pid), lm, word[5];
	char name[PATH_MAX], exe[64];
	struct proc_maps m;
	int n = 0, i, have_maps = 0;

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
			char *p;

			read_string(pid, word[1], name, sizeof(name));
			p = name[0] ? link_map_open_path(pid, name, word[2], &m, &have_maps) : NULL;
			if (p)
				push_path(paths, &n, p);
		}
		lm = word[3];
	}
	if (have_maps > 0)
		procmaps_free(&m);
	return n ? n : -1;
}

static int order_from_maps(int pid, char ***paths)
{
	struct proc_maps m;
	const struct map_entry **first = NULL; /* each file's first mapping */
	char exe[64];
	size_t i, j, nfirst = 0;
	int n = 0;

	if (procmaps_read(pid, &m))
		return -1;
	*paths = NULL;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	push_path(paths, &n, xstrdup(exe));
	for (i = 0; i < m.n; i++) {
		const struct map_entry *e = &m.v[i];
		int form;

		if (!e->path || e->path[0] != '/')
			continue;
		for (j = 0; j < nfirst; j++)
			if (first[j]->inode == e->inode && !strcmp(first[j]->path, e->path))
				break;
		if (j < nfirst)
			continue;
		first = xrealloc(first, (nfirst + 1) * sizeof(*first));
		first[nfirst++] = e;
		push_path(paths, &n, mapping_open_path(pid, e, &form));
	}
	free(first);
	procmaps_free(&m);
	return n;
}

int linkmap_search_order(int pid, char ***paths)
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
	int form;

	if (read_auxv(pid, AT_BASE, base) || !*base || procmaps_read(pid, &m))
		return -1;
	e = procmaps_find(&m, *base);
	*path = e && e->path ? mapping_open_path(pid, e, &form) : NULL;
	procmaps_free(&m);
	return *path ? 0 : -1;
}

uint64_t linkmap_ldso_symbol(int pid, const char *name)
{
	uint64_t base, vaddr;
	struct elf_module *mod;
	char err[256], *path;

	if (find_ldso(pid, &base, &path))
		return 0;
	mod = elfmod_open_shared(path, err, sizeof(err));
	free(path);
	if (!mod)
		return 0;
	if (elfmod_find_function(mod, name, 1, &vaddr, NULL))
		vaddr = 0;
	elfmod_close(mod);
	return vaddr ? base + vaddr : 0;
}

int linkmap_ldso_probe(int pid, char **open_path, uint64_t *offset)
{
	uint64_t base, vaddr;
	struct elf_module *mod;
	char err[256], *path;
	int rc = -1;

	if (find_ldso(pid, &base, &path))
		return -1;
	mod = elfmod_open_shared(path, err, sizeof(err));
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
char *linkmap_display_path(int pid, const char *open_path)
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

int linkmap_exec_order(int pid, char ***paths, char *err, size_t errlen)
{
	char *dir, *slash, exe[64], lib[PATH_MAX];
	struct proc_maps m;
	const struct map_entry *e;
	uint64_t base;
	int n = 0, form;

	*paths = NULL;
	if (read_auxv(pid, AT_BASE, &base) || !base)
		return 0;
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
	/* glibc installs ld.so and libc.so.6 side by side: the libc beside
	 * ld.so's path in the form that opened ld.so (under the root, or as the
	 * maps show it after a chroot) */
	dir = mapping_open_path(pid, e, &form);
	if (form < 0) {
		free(dir);
		dir = open_path_of(pid, e->path);
	}
	procmaps_free(&m);
	slash = strrchr(dir, '/');
	*slash = 0;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	push_path(paths, &n, xstrdup(exe));
	if (snprintf(lib, sizeof(lib), "%s/libc.so.6", dir) >= (int)sizeof(lib))
		lib[0] = 0; /* no such path: the search falls back to the whole map */
	push_path(paths, &n, xstrdup(lib));
	free(dir);
	return n;
}
