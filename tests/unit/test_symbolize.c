// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of the ELF reader and the symbolizer, on this test program and
 * the libc it runs with: real return addresses turned into names, libc's
 * malloc found by name and by address, unmapped and non-ELF mappings given
 * no name, and broken ELF files refused without crashing.
 */
#include "daemon/elf/elfmod.h"
#include "daemon/proc/procmaps.h"
#include "daemon/proc/process.h"
#include "daemon/symbols/symbolize.h"
#include "unit.h"
#include "common/util.h"

#include <dlfcn.h>
#include <elf.h>
#include <endian.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Functions to find by address; not static, so they are in .symtab and .dynsym alike. */
uint64_t symbolize_test_callee(void);
int symbolize_test_caller(void);

static uint64_t callee_return_address;
static int caller_call_line;

__attribute__((noinline)) uint64_t symbolize_test_callee(void)
{
	callee_return_address = (uint64_t)(uintptr_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
	return callee_return_address;
}

/* The call is not in tail position, so its return address lies in this function. */
__attribute__((noinline)) int symbolize_test_caller(void)
{
	volatile uint64_t r = (caller_call_line = __LINE__, symbolize_test_callee());

	return (int)(r & 1) + 1;
}

static char tmpdir[4096];
static char exe_path[4096];

static void frame_free(struct snap_frame *f)
{
	free(f->function);
	free(f->module);
	free(f->file);
	free(f->build_id);
}

static void *read_all(const char *path, size_t *len)
{
	struct buf b = {0};
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	for (;;) {
		buf_reserve(&b, 65536);
		n = read(fd, b.data + b.len, b.cap - b.len);
		if (n <= 0)
			break;
		b.len += (size_t)n;
	}
	close(fd);
	*len = b.len;
	return b.data;
}

static int write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int ok;

	if (fd < 0)
		return -1;
	ok = write(fd, data, len) == (ssize_t)len;
	return close(fd) == 0 && ok ? 0 : -1;
}

/* The path of the libc this program runs with, from its maps. */
static char *libc_path(void)
{
	struct proc_maps m;
	char *path = NULL;
	size_t i;

	if (procmaps_read(getpid(), &m))
		return NULL;
	for (i = 0; i < m.n && !path; i++) {
		const char *base = m.v[i].path ? strrchr(m.v[i].path, '/') : NULL;

		if (base && procmaps_is_file(&m.v[i]) &&
		    (!strncmp(base, "/libc.so", 8) || !strncmp(base, "/libc-", 6)))
			path = xstrdup(m.v[i].path);
	}
	procmaps_free(&m);
	return path;
}

TEST(elf_self)
{
	char err[256] = "";
	struct elf_module *m = elfmod_open("/proc/self/exe", err, sizeof(err));
	uint64_t callee, caller, start = 0, off;
	const char *name, *build_id;
	int ifunc = -1;
	size_t i;

	CHECK(m != NULL);
	if (!m) {
		fprintf(stderr, "elfmod_open: %s\n", err);
		return;
	}
	CHECK(elfmod_has_interp(m));
	CHECK(elfmod_find_function(m, "symbolize_test_callee", 0, &callee, &ifunc) == 0);
	CHECK(ifunc == 0);
	CHECK(elfmod_find_function(m, "symbolize_test_caller", 0, &caller, NULL) == 0);
	CHECK(callee != caller);
	CHECK(elfmod_find_function(m, "no_such_function_anywhere", 0, &off, NULL) == -1);
	/* callee_return_address is an object, not a function. */
	CHECK(elfmod_find_function(m, "callee_return_address", 0, &off, NULL) == -1);

	name = elfmod_lookup(m, callee, &start);
	CHECK_STR(name, "symbolize_test_callee");
	CHECK_EQ_U64(start, callee);
	name = elfmod_lookup(m, callee + 1, &start);
	CHECK_STR(name, "symbolize_test_callee");
	CHECK_EQ_U64(start, callee);
	CHECK(elfmod_lookup(m, 0, NULL) == NULL);
	CHECK(elfmod_lookup(m, UINT64_MAX, NULL) == NULL);

	CHECK(elfmod_vaddr_to_offset(m, callee, &off) == 0);
	CHECK(elfmod_offset_to_vaddr(m, off, &start) == 0);
	CHECK_EQ_U64(start, callee);
	CHECK(elfmod_vaddr_to_offset(m, UINT64_MAX - 1, &off) == -1);

	build_id = elfmod_build_id(m);
	if (build_id) {
		CHECK(strlen(build_id) >= 2 && strlen(build_id) % 2 == 0);
		for (i = 0; build_id[i]; i++)
			CHECK(strchr("0123456789abcdef", build_id[i]) != NULL);
	}
	CHECK(strlen(elfmod_path(m)) > 0);
	elfmod_close(m);
}

TEST(elf_libc_malloc)
{
	char err[256] = "", *path = libc_path();
	struct elf_module *m;
	uint64_t vaddr, off, back, start = 0;
	int ifunc = -1;

	CHECK(path != NULL);
	if (!path)
		return;
	m = elfmod_open(path, err, sizeof(err));
	CHECK(m != NULL);
	if (!m) {
		fprintf(stderr, "elfmod_open %s: %s\n", path, err);
		free(path);
		return;
	}
	CHECK(elfmod_is_dyn(m));
	CHECK(elfmod_find_function(m, "malloc", 1, &vaddr, &ifunc) == 0);
	CHECK(vaddr != 0);
	CHECK(ifunc == 0);
	CHECK(elfmod_vaddr_to_offset(m, vaddr, &off) == 0);
	CHECK(elfmod_offset_to_vaddr(m, off, &back) == 0);
	CHECK_EQ_U64(back, vaddr);
	/* Of malloc's aliases (__libc_malloc, ...) the public name is shown. */
	CHECK_STR(elfmod_lookup(m, vaddr, &start), "malloc");
	CHECK_EQ_U64(start, vaddr);
	/* calloc is a weak alias of the global __libc_calloc: still the public name. */
	CHECK(elfmod_find_function(m, "calloc", 1, &vaddr, NULL) == 0);
	CHECK_STR(elfmod_lookup(m, vaddr, NULL), "calloc");
	CHECK(elfmod_find_function(m, "free", 1, &vaddr, NULL) == 0);
	CHECK(elfmod_find_function(m, "no_such_function_anywhere", 1, &vaddr, NULL) == -1);
#ifdef __x86_64__
	CHECK(elfmod_find_function(m, "memcpy", 1, &vaddr, &ifunc) == 0);
	CHECK(ifunc == 1);
#endif
	CHECK(elfmod_build_id(m) != NULL);
	elfmod_close(m);
	free(path);
}

/* A real return address in this program becomes its caller's name and offset. */
TEST(symbolize_return_address)
{
	struct symbolizer *s = symbolizer_new();
	struct elf_module *m = elfmod_open("/proc/self/exe", NULL, 0);
	uint64_t ret, caller = 0, callee = 0, addrs[2];
	struct snap_frame f;

	CHECK(m != NULL);
	if (!m) {
		symbolizer_free(s);
		return;
	}
	CHECK(elfmod_find_function(m, "symbolize_test_caller", 0, &caller, NULL) == 0);
	CHECK(elfmod_find_function(m, "symbolize_test_callee", 0, &callee, NULL) == 0);
	CHECK(symbolize_test_caller() > 0);
	ret = callee_return_address;
	addrs[0] = ret;
	addrs[1] = (uint64_t)(uintptr_t)&symbolize_test_callee + 1;
	symbolizer_note(s, getpid(), addrs, 2);

	symbolizer_frame(s, getpid(), ret, &f);
	CHECK_EQ_U64(f.address, ret);
	CHECK_STR(f.function, "symbolize_test_caller");
	CHECK_STR(f.module, exe_path);
	/* Same segment, so ELF addresses differ as runtime ones do. */
	CHECK_EQ_U64(f.offset, caller + (ret - (uint64_t)(uintptr_t)&symbolize_test_caller));
	/* DWARF (the tests are built with -g) names the line of the call */
	CHECK(f.file && strstr(f.file, "test_symbolize.c"));
	CHECK_EQ_U64(f.line, caller_call_line);
	frame_free(&f);

	symbolizer_frame(s, getpid(), addrs[1], &f);
	CHECK_STR(f.function, "symbolize_test_callee");
	CHECK_EQ_U64(f.offset, callee + 1);
	frame_free(&f);

	/* Returning to a function's first byte means the call was in what precedes it. */
	symbolizer_frame(s, getpid(), (uint64_t)(uintptr_t)&symbolize_test_callee, &f);
	CHECK(!f.function || strcmp(f.function, "symbolize_test_callee"));
	CHECK_EQ_U64(f.offset, callee);
	frame_free(&f);

	/* Forgotten maps: the address is unknown again. */
	symbolizer_forget(s, getpid());
	symbolizer_frame(s, getpid(), ret, &f);
	CHECK(f.module == NULL && f.function == NULL);
	CHECK_EQ_U64(f.offset, ret);
	frame_free(&f);
	symbolizer_forget(s, getpid());

	elfmod_close(m);
	symbolizer_free(s);
}

/* A forked child reaped before its maps were read resolves through the
 * parent's, as the symbolizer knew them at the fork (not re-read); a pid
 * never forked resolves nothing, nor a child of a parent whose maps were
 * never read. */
TEST(symbolize_forked_child)
{
	struct symbolizer *s = symbolizer_new();
	uint64_t addr = (uint64_t)(uintptr_t)&symbolize_test_callee + 1;
	struct snap_frame f;
	pid_t child = fork();

	if (child == 0)
		_exit(0);
	CHECK(child > 0);
	if (child <= 0) {
		symbolizer_free(s);
		return;
	}
	waitpid(child, NULL, 0); /* gone: /proc/CHILD/maps no longer exists */
	symbolizer_note(s, child, &addr, 1);
	symbolizer_frame(s, child, addr, &f);
	CHECK(f.function == NULL);
	frame_free(&f);
	symbolizer_forget(s, child);

	symbolizer_fork(s, getpid(), child); /* nothing known of the parent */
	symbolizer_note(s, child, &addr, 1);
	symbolizer_frame(s, child, addr, &f);
	CHECK(f.function == NULL);
	frame_free(&f);
	symbolizer_forget(s, child);

	symbolizer_note_process(s, getpid());
	symbolizer_fork(s, getpid(), child);
	symbolizer_note(s, child, &addr, 1);
	symbolizer_frame(s, child, addr, &f);
	CHECK_STR(f.function, "symbolize_test_callee");
	CHECK_STR(f.module, exe_path);
	frame_free(&f);
	symbolizer_free(s);
}

static int guard_answer;
static int guard_calls;

static int test_guard(void *arg, int pid)
{
	(void)arg;
	(void)pid;
	guard_calls++;
	return guard_answer;
}

/* A guard that says the pid is no longer the program its stacks came from:
 * its maps are not read, the frame stays unnamed. */
TEST(symbolize_guard_refuses)
{
	struct symbolizer *s = symbolizer_new();
	uint64_t addr = (uint64_t)(uintptr_t)&symbolize_test_callee + 1;
	struct snap_frame f;

	symbolizer_set_guard(s, test_guard, NULL);
	guard_answer = 0;
	guard_calls = 0;
	symbolizer_note(s, getpid(), &addr, 1);
	CHECK(guard_calls >= 1);
	symbolizer_frame(s, getpid(), addr, &f);
	CHECK(f.function == NULL && f.module == NULL);
	frame_free(&f);

	guard_answer = 1; /* asked before and after the read */
	guard_calls = 0;
	symbolizer_note(s, getpid(), &addr, 1);
	CHECK_EQ_U64(guard_calls, 2);
	symbolizer_frame(s, getpid(), addr, &f);
	CHECK_STR(f.function, "symbolize_test_callee");
	frame_free(&f);
	symbolizer_free(s);
}

/*
 * A child that executed another program (sleep) has other maps than the
 * parent's it started with: read for an address outside them, they are not
 * kept (the lowest executable mapping, the parent's program, is gone), so
 * the address stays unnamed instead of being named from sleep's maps.
 */
TEST(symbolize_other_program_refused)
{
	struct symbolizer *s = symbolizer_new();
	uint64_t addr = (uint64_t)(uintptr_t)&symbolize_test_callee + 1, outside;
	uint64_t self_image[2], child_image[2];
	struct proc_maps m = {0}, self = {0};
	struct snap_frame f;
	int fds[2];
	pid_t child;
	char c;

	CHECK(pipe(fds) == 0);
	child = fork();
	if (child == 0) {
		close(fds[0]);
		dup2(fds[1], 1);
		execl("/bin/sh", "sh", "-c", "echo x; exec sleep 30", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	CHECK(child > 0);
	if (child <= 0) {
		symbolizer_free(s);
		return;
	}
	CHECK(read(fds[0], &c, 1) == 1); /* sh runs: its exec of sleep follows */
	/*
	 * Until /proc shows sleep loaded: the exe link changes when the exec
	 * begins, the image (start of code) only once the ELF loader has
	 * mapped the program, so wait for both.
	 */
	memset(child_image, 0, sizeof(child_image));
	for (int i = 0; i < 500; i++) {
		char exe[64], target[256] = "";
		ssize_t n;

		snprintf(exe, sizeof(exe), "/proc/%d/exe", child);
		n = readlink(exe, target, sizeof(target) - 1);
		if (n > 0 && strstr(target, "sleep") && process_image(child, child_image) == 0 &&
		    child_image[0] && child_image[1])
			break;
		usleep(10000);
	}
	/* another program, another image (what an attach checks across its reads) */
	CHECK(process_image(getpid(), self_image) == 0);
	CHECK(self_image[0] && self_image[1] && child_image[0] && child_image[1]);
	CHECK(memcmp(self_image, child_image, sizeof(self_image)) != 0);
	symbolizer_note_process(s, getpid());
	symbolizer_fork(s, getpid(), child);
	/* an address in the child's maps now (sleep's) but in none of ours */
	CHECK(procmaps_read(child, &m) == 0);
	CHECK(procmaps_read(getpid(), &self) == 0);
	outside = 0;
	for (size_t i = 0; i < m.n && !outside; i++) {
		if (strchr(m.v[i].perms, 'x') && procmaps_is_file(&m.v[i]) &&
		    !procmaps_find(&self, m.v[i].start))
			outside = m.v[i].start + 1;
	}
	procmaps_free(&m);
	procmaps_free(&self);
	CHECK(outside != 0);
	symbolizer_note(s, child, &outside, 1);
	symbolizer_frame(s, child, outside, &f);
	CHECK(f.module == NULL && f.function == NULL);
	frame_free(&f);
	symbolizer_note(s, child, &addr, 1); /* the parent's program's frames still resolve */
	symbolizer_frame(s, child, addr, &f);
	CHECK_STR(f.function, "symbolize_test_callee");
	frame_free(&f);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	close(fds[0]);
	symbolizer_free(s);
}

/* libc's malloc, located by name in the file, is found again at run time by address. */
TEST(symbolize_libc)
{
	char *path = libc_path();
	struct symbolizer *s = symbolizer_new();
	struct elf_module *m = path ? elfmod_open(path, NULL, 0) : NULL;
	const struct map_entry *e = NULL;
	struct proc_maps maps = {0};
	uint64_t vaddr = 0, off = 0, runtime, ret;
	struct snap_frame f;
	void *libc;
	size_t i;

	CHECK(m != NULL);
	if (!m)
		goto out;
	CHECK(elfmod_find_function(m, "malloc", 1, &vaddr, NULL) == 0);
	CHECK(elfmod_vaddr_to_offset(m, vaddr, &off) == 0);
	CHECK(procmaps_read(getpid(), &maps) == 0);
	for (i = 0; i < maps.n && !e; i++) {
		const struct map_entry *c = &maps.v[i];

		if (c->path && !strcmp(c->path, path) && off >= c->offset &&
		    off - c->offset < c->end - c->start)
			e = c;
	}
	CHECK(e != NULL);
	if (!e)
		goto out;
	runtime = e->start + (off - e->offset);
	/* dlsym on libc's own handle gets its malloc even when ASan interposes one. */
	libc = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	CHECK(libc != NULL);
	if (libc) {
		CHECK_EQ_U64((uintptr_t)dlsym(libc, "malloc"), runtime);
		dlclose(libc);
	}
	ret = runtime + 1;
	symbolizer_note(s, getpid(), &ret, 1);
	symbolizer_frame(s, getpid(), ret, &f);
	CHECK_STR(f.function, "malloc");
	CHECK_STR(f.module, path);
	CHECK_EQ_U64(f.offset, vaddr + 1);
	frame_free(&f);
out:
	procmaps_free(&maps);
	elfmod_close(m);
	symbolizer_free(s);
	free(path);
}

TEST(symbolize_no_mapping)
{
	struct symbolizer *s = symbolizer_new();
	long page = sysconf(_SC_PAGESIZE);
	char *anon =
	    mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t addr = (uint64_t)(uintptr_t)anon + 16;
	struct snap_frame f;

	CHECK(anon != MAP_FAILED);
	if (anon == MAP_FAILED) {
		symbolizer_free(s);
		return;
	}
	/* Never noted: nothing known. */
	symbolizer_frame(s, getpid(), addr, &f);
	CHECK(f.function == NULL && f.module == NULL);
	CHECK_EQ_U64(f.offset, addr);
	frame_free(&f);

	symbolizer_note(s, getpid(), &addr, 1);
	symbolizer_frame(s, getpid(), addr, &f);
	CHECK_EQ_U64(f.address, addr);
	CHECK(f.function == NULL);
	CHECK(f.module == NULL);
	CHECK_EQ_U64(f.offset, addr);
	frame_free(&f);

	addr = 8; /* the zero page is never mapped */
	symbolizer_note(s, getpid(), &addr, 1);
	symbolizer_frame(s, getpid(), addr, &f);
	CHECK(f.function == NULL && f.module == NULL);
	CHECK_EQ_U64(f.offset, 8);
	frame_free(&f);

	/* A pid that does not exist: the note finds nothing, nothing breaks. */
	symbolizer_note(s, 0x7ffffffe, &addr, 1);
	symbolizer_frame(s, 0x7ffffffe, addr, &f);
	CHECK(f.function == NULL && f.module == NULL);
	frame_free(&f);

	munmap(anon, (size_t)page);
	symbolizer_free(s);
}

/* A mapped file that is not ELF: module and file offset, no function, tried once. */
TEST(symbolize_not_elf)
{
	struct symbolizer *s = symbolizer_new();
	long page = sysconf(_SC_PAGESIZE);
	char path[4200], *data = xcalloc(2, (size_t)page);
	uint64_t addr;
	struct snap_frame f;
	char *map = MAP_FAILED;
	int fd, round;

	snprintf(path, sizeof(path), "%s/not an elf", tmpdir);
	memcpy(data, "just text\n", 10);
	CHECK(write_file(path, data, 2 * (size_t)page) == 0);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	if (fd >= 0) {
		map = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE, fd, page);
		close(fd);
	}
	CHECK(map != MAP_FAILED);
	if (map == MAP_FAILED)
		goto out;
	addr = (uint64_t)(uintptr_t)map + 0x20;
	for (round = 0; round < 2; round++) {
		symbolizer_note(s, getpid(), &addr, 1);
		symbolizer_frame(s, getpid(), addr, &f);
		CHECK(f.function == NULL);
		CHECK_STR(f.module, path);
		CHECK_EQ_U64(f.offset, (uint64_t)page + 0x20);
		frame_free(&f);
	}
	munmap(map, (size_t)page);
out:
	unlink(path);
	free(data);
	symbolizer_free(s);
}

/*
 * A deleted copy of this program, mapped: the name is found only through
 * /proc/PID/map_files (root only), never through whatever is at the path.
 */
TEST(symbolize_deleted_copy)
{
	struct symbolizer *s = symbolizer_new();
	struct elf_module *m = elfmod_open("/proc/self/exe", NULL, 0);
	long page = sysconf(_SC_PAGESIZE);
	char path[4200], link[4400];
	uint64_t callee = 0, off = 0, addr;
	size_t len = 0;
	void *data = read_all("/proc/self/exe", &len);
	char *map = MAP_FAILED;
	struct snap_frame f;
	int fd, via_map_files;

	CHECK(m && data);
	if (!m || !data)
		goto out;
	CHECK(elfmod_find_function(m, "symbolize_test_callee", 0, &callee, NULL) == 0);
	CHECK(elfmod_vaddr_to_offset(m, callee, &off) == 0);
	snprintf(path, sizeof(path), "%s/deleted copy", tmpdir);
	CHECK(write_file(path, data, len) == 0);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	if (fd < 0)
		goto out;
	map = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE, fd,
		   (off_t)(off & ~(uint64_t)(page - 1)));
	close(fd);
	/* Something else at the path now, which must not be read for the mapping. */
	CHECK(unlink(path) == 0);
	CHECK(write_file(path, "not the mapped file", 19) == 0);
	CHECK(map != MAP_FAILED);
	if (map == MAP_FAILED)
		goto out;
	snprintf(link, sizeof(link), "/proc/self/map_files/%lx-%lx", (unsigned long)map,
		 (unsigned long)map + (unsigned long)page);
	fd = open(link, O_RDONLY);
	via_map_files = fd >= 0;
	if (fd >= 0)
		close(fd);

	addr = (uint64_t)(uintptr_t)map + (off & (uint64_t)(page - 1)) + 1;
	symbolizer_note(s, getpid(), &addr, 1);
	symbolizer_frame(s, getpid(), addr, &f);
	CHECK_STR(f.module, path);
	if (via_map_files) {
		CHECK_STR(f.function, "symbolize_test_callee");
		CHECK_EQ_U64(f.offset, callee + 1);
	} else {
		CHECK(f.function == NULL);
		CHECK_EQ_U64(f.offset, off + 1);
	}
	frame_free(&f);
	munmap(map, (size_t)page);
out:
	unlink(path);
	free(data);
	elfmod_close(m);
	symbolizer_free(s);
}

/*
 * A small ELF built in memory with symbols placed to test the lookup rules:
 * a function nested in another, aliases, and symbols that must never match
 * (zero size, undefined, data). One PT_LOAD maps file offset 0 at 0x1000.
 */
struct synth_symbol {
	const char *name;
	uint64_t value, size;
	int type, bind, defined;
};

static const struct synth_symbol synth_symbols[] = {
    {"big", 0x1000, 0x100, STT_FUNC, STB_GLOBAL, 1},
    {"inner", 0x1010, 0x10, STT_FUNC, STB_LOCAL, 1},
    {"_alias_b", 0x1200, 0x10, STT_FUNC, STB_GLOBAL, 1},
    {"alias_a", 0x1200, 0x10, STT_FUNC, STB_WEAK, 1},
    {"zero", 0x1300, 0, STT_FUNC, STB_GLOBAL, 1},
    {"undef", 0x1400, 0x10, STT_FUNC, STB_GLOBAL, 0},
    {"object", 0x1500, 0x10, STT_OBJECT, STB_GLOBAL, 1},
    {"resolver", 0x1600, 0x10, STT_GNU_IFUNC, STB_GLOBAL, 1},
};

#define SYNTH_STRTAB 0x100
#define SYNTH_SYMTAB 0x180
#define SYNTH_SHDRS  0x300
#define SYNTH_SIZE   (SYNTH_SHDRS + 3 * sizeof(Elf64_Shdr))

static uint8_t *synth_elf(void)
{
	uint8_t *image = xcalloc(1, SYNTH_SIZE);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)image;
	Elf64_Phdr *ph = (Elf64_Phdr *)(image + sizeof(*eh));
	Elf64_Sym *sym = (Elf64_Sym *)(image + SYNTH_SYMTAB);
	Elf64_Shdr *sh = (Elf64_Shdr *)(image + SYNTH_SHDRS);
	size_t i, str = 1;

	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = __BYTE_ORDER == __LITTLE_ENDIAN ? ELFDATA2LSB : ELFDATA2MSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_shoff = SYNTH_SHDRS;
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = 3;
	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R | PF_X;
	ph->p_vaddr = 0x1000;
	ph->p_filesz = ph->p_memsz = SYNTH_SIZE;
	ph->p_align = 0x1000;
	for (i = 0; i < ARRAY_SIZE(synth_symbols); i++) {
		const struct synth_symbol *s = &synth_symbols[i];
		Elf64_Sym *out = &sym[i + 1];

		out->st_name = (uint32_t)str;
		out->st_info = ELF64_ST_INFO(s->bind, s->type);
		out->st_shndx = s->defined ? 1 : SHN_UNDEF;
		out->st_value = s->value;
		out->st_size = s->size;
		strcpy((char *)image + SYNTH_STRTAB + str, s->name);
		str += strlen(s->name) + 1;
	}
	sh[1].sh_type = SHT_SYMTAB;
	sh[1].sh_offset = SYNTH_SYMTAB;
	sh[1].sh_size = (ARRAY_SIZE(synth_symbols) + 1) * sizeof(*sym);
	sh[1].sh_link = 2;
	sh[1].sh_info = 1;
	sh[1].sh_addralign = 8;
	sh[1].sh_entsize = sizeof(*sym);
	sh[2].sh_type = SHT_STRTAB;
	sh[2].sh_offset = SYNTH_STRTAB;
	sh[2].sh_size = str;
	sh[2].sh_addralign = 1;
	return image;
}

TEST(elf_lookup_rules)
{
	static const struct {
		uint64_t vaddr;
		const char *name; /* NULL: no symbol may be given */
		uint64_t start;
	} lookups[] = {
	    {0xfff, NULL, 0},
	    {0x1000, "big", 0x1000},
	    {0x100f, "big", 0x1000},
	    {0x1010, "inner", 0x1010},
	    {0x101f, "inner", 0x1010},
	    {0x1020, "big", 0x1000},
	    {0x10ff, "big", 0x1000},
	    {0x1100, NULL, 0},
	    {0x11ff, NULL, 0},
	    {0x1200, "alias_a", 0x1200},
	    {0x120f, "alias_a", 0x1200},
	    {0x1210, NULL, 0},
	    {0x1300, NULL, 0},
	    {0x1405, NULL, 0},
	    {0x1505, NULL, 0},
	    {0x1605, "resolver", 0x1600},
	    {UINT64_MAX, NULL, 0},
	};
	uint8_t *image = synth_elf();
	char err[256] = "";
	struct elf_module *m = elfmod_open_mem(image, SYNTH_SIZE, "synthetic", err, sizeof(err));
	uint64_t v = 0, start;
	int ifunc = -1;
	size_t i;

	CHECK(m != NULL);
	if (!m) {
		fprintf(stderr, "synthetic ELF refused: %s\n", err);
		free(image);
		return;
	}
	for (i = 0; i < ARRAY_SIZE(lookups); i++) {
		const char *name;

		start = 0;
		name = elfmod_lookup(m, lookups[i].vaddr, &start);
		if (lookups[i].name) {
			CHECK_STR(name, lookups[i].name);
			CHECK_EQ_U64(start, lookups[i].start);
		} else {
			if (name)
				fprintf(stderr, "0x%" PRIx64 " looked up as %s\n", lookups[i].vaddr,
					name);
			CHECK(name == NULL);
		}
	}
	CHECK(elfmod_find_function(m, "zero", 0, &v, &ifunc) == 0);
	CHECK_EQ_U64(v, 0x1300);
	CHECK(ifunc == 0);
	CHECK(elfmod_find_function(m, "resolver", 0, &v, &ifunc) == 0);
	CHECK(ifunc == 1);
	CHECK(elfmod_find_function(m, "_alias_b", 0, &v, NULL) == 0);
	CHECK_EQ_U64(v, 0x1200);
	CHECK(elfmod_find_function(m, "undef", 0, &v, NULL) == -1);
	CHECK(elfmod_find_function(m, "object", 0, &v, NULL) == -1);
	CHECK(elfmod_find_function(m, "big", 1, &v, NULL) == -1); /* no .dynsym */
	CHECK(elfmod_vaddr_to_offset(m, 0x1010, &v) == 0);
	CHECK_EQ_U64(v, 0x10);
	CHECK(elfmod_offset_to_vaddr(m, 0x10, &v) == 0);
	CHECK_EQ_U64(v, 0x1010);
	CHECK(elfmod_vaddr_to_offset(m, 0xfff, &v) == -1);
	CHECK(elfmod_vaddr_to_offset(m, 0x1000 + SYNTH_SIZE, &v) == -1);
	CHECK(elfmod_offset_to_vaddr(m, SYNTH_SIZE, &v) == -1);
	CHECK(elfmod_is_dyn(m));
	CHECK(!elfmod_has_interp(m));
	CHECK(elfmod_build_id(m) == NULL);
	elfmod_close(m);
	free(image);
}

/* Every byte of the synthetic file set to a few values: open and query never crash. */
TEST(elf_synthetic_mutations)
{
	static const uint8_t values[] = {0x00, 0xff, 0x7f, 0x80, 0x01, 0x10};
	uint8_t *image = synth_elf(), *copy = xmalloc(SYNTH_SIZE);
	size_t at, k, opened = 0;
	uint64_t v;

	for (at = 0; at < SYNTH_SIZE; at++) {
		for (k = 0; k < ARRAY_SIZE(values); k++) {
			struct elf_module *m;

			memcpy(copy, image, SYNTH_SIZE);
			copy[at] = values[k];
			m = elfmod_open_mem(copy, SYNTH_SIZE, "mutant", NULL, 0);
			if (!m)
				continue;
			opened++;
			elfmod_lookup(m, 0x1020, NULL);
			elfmod_lookup(m, 0x1605, NULL);
			elfmod_find_function(m, "resolver", 0, &v, NULL);
			elfmod_vaddr_to_offset(m, 0x1010, &v);
			elfmod_offset_to_vaddr(m, 0x10, &v);
			elfmod_close(m);
		}
	}
	CHECK(opened > 0);
	free(copy);
	free(image);
}

TEST(elf_refuses_bad_files)
{
	static const char text[] = "#!/bin/sh\necho this is not ELF\n";
	char err[256], path[4200];
	size_t len = 0, cuts[12], i;
	char *data = read_all("/proc/self/exe", &len);
	struct elf_module *m;

	CHECK(data != NULL && len > 8192);
	if (!data || len <= 8192)
		goto out;
	snprintf(path, sizeof(path), "%s/bad", tmpdir);

	CHECK(write_file(path, text, sizeof(text) - 1) == 0);
	err[0] = '\0';
	CHECK(elfmod_open(path, err, sizeof(err)) == NULL);
	CHECK_STR(err, "not an ELF file");

	err[0] = '\0';
	CHECK(elfmod_open(tmpdir, err, sizeof(err)) == NULL);
	CHECK_STR(err, "not a regular file");

	err[0] = '\0';
	CHECK(unlink(path) == 0);
	CHECK(elfmod_open(path, err, sizeof(err)) == NULL);
	CHECK_STR(err, "cannot open: No such file or directory");

	/* Truncated copies: every one refused with a reason. */
	cuts[0] = 0, cuts[1] = 1, cuts[2] = 4, cuts[3] = 16, cuts[4] = 52, cuts[5] = 63;
	cuts[6] = 64, cuts[7] = 100, cuts[8] = 1000, cuts[9] = 4096, cuts[10] = len / 2;
	cuts[11] = len - 1;
	for (i = 0; i < ARRAY_SIZE(cuts); i++) {
		err[0] = '\0';
		m = elfmod_open_mem(data, cuts[i], "cut", err, sizeof(err));
		if (m)
			fprintf(stderr, "accepted ELF cut at %zu bytes\n", cuts[i]);
		CHECK(m == NULL);
		CHECK(err[0] != '\0' && !strchr(err, '\n'));
		elfmod_close(m);
	}
	CHECK(write_file(path, data, len / 2) == 0);
	err[0] = '\0';
	CHECK(elfmod_open(path, err, sizeof(err)) == NULL);
	CHECK(err[0] != '\0');
	unlink(path);

	/* The whole image from memory works. */
	m = elfmod_open_mem(data, len, "whole", err, sizeof(err));
	CHECK(m != NULL);
	elfmod_close(m);
out:
	free(data);
}

/* Random damage to headers and tables: open and query must never crash. */
TEST(elf_mutations)
{
	uint64_t state = 0x243f6a8885a308d3ull, v;
	size_t len = 0, iter, k;
	char *data = read_all("/proc/self/exe", &len), *copy;
	int opened = 0;

	CHECK(data != NULL && len > 8192);
	if (!data || len <= 8192) {
		free(data);
		return;
	}
	copy = xmalloc(len);
	for (iter = 0; iter < 400; iter++) {
		struct elf_module *m;
		char err[256];

		memcpy(copy, data, len);
		for (k = 0; k < 1 + iter % 8; k++) {
			size_t at;

			state ^= state << 13;
			state ^= state >> 7;
			state ^= state << 17;
			/* Mostly the ELF and program headers and the section headers at the end. */
			at = state % 3 == 0   ? (state >> 8) % 4096
			     : state % 3 == 1 ? len - 1 - (state >> 8) % 4096
					      : (state >> 8) % len;
			copy[at] = (char)(state >> 48);
		}
		m = elfmod_open_mem(copy, len, "mutant", err, sizeof(err));
		if (!m)
			continue;
		opened++;
		elfmod_lookup(m, state >> 20, NULL);
		elfmod_lookup(m, 0x1000, NULL);
		elfmod_find_function(m, "main", 0, &v, NULL);
		elfmod_find_function(m, "malloc", 1, &v, NULL);
		elfmod_vaddr_to_offset(m, state >> 30, &v);
		elfmod_offset_to_vaddr(m, state >> 30, &v);
		elfmod_build_id(m);
		elfmod_close(m);
	}
	CHECK(opened > 0); /* most single-byte changes are harmless */
	free(copy);
	free(data);
}

/* Copy the file at from to a new file at to (0, or -1). */
static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, rc = -1;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	while (out >= 0 && (n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, (size_t)n) != n)
			goto out;
	}
	rc = out >= 0 && n == 0 ? 0 : -1;
out:
	if (out >= 0)
		close(out);
	close(in);
	return rc;
}

/* elfmod_open_shared: one module per file while held or until trimmed; a
 * file replaced at the same path is opened anew; trim closes the unheld. */
TEST(elf_open_shared)
{
	char dir[] = "/tmp/memtrace-elfshared-XXXXXX", path[64], err[256];
	struct elf_module *a, *b, *c, *other;
	struct stat st;

	elfmod_trim_shared();
	CHECK(elfmod_shared_count() == 0);
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/copy", dir);
	CHECK(copy_file("/proc/self/exe", path) == 0);
	a = elfmod_open_shared(path, err, sizeof(err));
	b = elfmod_open_shared(path, err, sizeof(err));
	CHECK(a != NULL && a == b);
	other = elfmod_open_shared("/proc/self/exe", err, sizeof(err));
	CHECK(other != NULL && other != a);
	CHECK(elfmod_shared_count() == 2);
	elfmod_close(a);
	elfmod_trim_shared(); /* b still holds it */
	CHECK(elfmod_shared_count() == 2);
	CHECK(elfmod_path(b) != NULL && !strcmp(elfmod_path(b), path));
	elfmod_close(b);
	/* replaced on disk (a new inode at the same path): not the old module */
	CHECK(stat(path, &st) == 0);
	CHECK(unlink(path) == 0);
	CHECK(copy_file("/proc/self/exe", path) == 0);
	c = elfmod_open_shared(path, err, sizeof(err));
	CHECK(c != NULL && c != a);
	CHECK(elfmod_shared_count() == 3);
	elfmod_close(c);
	elfmod_close(other);
	elfmod_trim_shared();
	CHECK(elfmod_shared_count() == 0);
	/* a file that cannot be opened: NULL and a reason, nothing kept */
	snprintf(path, sizeof(path), "%s/missing", dir);
	err[0] = 0;
	CHECK(elfmod_open_shared(path, err, sizeof(err)) == NULL && err[0]);
	CHECK(elfmod_shared_count() == 0);
	snprintf(path, sizeof(path), "%s/copy", dir);
	unlink(path);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	int rc;
	ssize_t n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);

	if (n <= 0) {
		perror("readlink /proc/self/exe");
		return 1;
	}
	exe_path[n] = '\0';
	snprintf(tmpdir, sizeof(tmpdir), "%s/memtrace-unit-XXXXXX", tmp);
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	rc = UNIT_RUN(argc, argv);
	rmdir(tmpdir);
	return rc;
}
