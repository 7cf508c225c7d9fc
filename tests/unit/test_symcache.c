// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of the symbol cache: the per-module table itself (a site is
 * added once, a name-only site is completed later), then the symbolizer on
 * this process: each distinct return address is looked up in symbol tables
 * and DWARF once however often it is asked for, and a module's cache goes
 * with the module when no pid maps it any more (dlclose, then a re-read of
 * the maps; a forgotten pid).
 */
#include "daemon/symbols/symcache.h"
#include "daemon/symbols/symbolize.h"
#include "unit.h"
#include "common/util.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

TEST(symcache_put_find)
{
	struct symcache c;
	struct sym_frame fr[2] = {
	    {.function = "inner", .file = "a.c", .line = 3, .inlined = 1},
	    {.function = "outer", .file = "a.c", .line = 9},
	};
	const struct sym_site *site;

	symcache_init(&c);
	CHECK(!symcache_find(&c, 0x1000));
	site = symcache_put(&c, 0x1000, SYM_LEVEL_NAME, "outer", NULL, 0);
	CHECK(site && site->level == SYM_LEVEL_NAME && !site->nframes);
	CHECK_STR(symcache_find(&c, 0x1000)->symbol, "outer");
	/* a name-only site is completed, not duplicated */
	site = symcache_put(&c, 0x1000, SYM_LEVEL_FULL, "outer", fr, 2);
	CHECK(site && site->level == SYM_LEVEL_FULL && site->nframes == 2);
	CHECK_EQ_U64(symcache_count(&c), 1);
	CHECK_STR(symcache_frames(&c, site)[0].function, "inner");
	CHECK(symcache_frames(&c, site)[0].inlined);
	CHECK_STR(symcache_frames(&c, site)[1].function, "outer");
	CHECK_EQ_U64(symcache_frames(&c, site)[1].line, 9);
	/* strings are the cache's own, held once */
	CHECK(symcache_frames(&c, site)[0].file == symcache_frames(&c, site)[1].file);
	CHECK(symcache_frames(&c, site)[1].function == site->symbol);
	/* a lower level never replaces a fuller site */
	site = symcache_put(&c, 0x1000, SYM_LEVEL_NAME, "other", NULL, 0);
	CHECK_STR(site->symbol, "outer");
	CHECK_EQ_U64(site->nframes, 2);
	for (uint64_t a = 0; a < 5000; a++)
		symcache_put(&c, 0x2000 + 16 * a, SYM_LEVEL_FULL, "f", fr, 1);
	CHECK_EQ_U64(symcache_count(&c), 5001);
	CHECK_EQ_U64(symcache_find(&c, 0x2000 + 16 * 4999)->vaddr, 0x2000 + 16 * 4999);
	CHECK_STR(symcache_find(&c, 0x1000)->symbol, "outer");
	symcache_free(&c);
}

/* Functions with return addresses to symbolize. */
uint64_t symcache_test_callee(void);
uint64_t symcache_test_caller(int which);

__attribute__((noinline)) uint64_t symcache_test_callee(void)
{
	uint64_t ra = (uint64_t)(uintptr_t)__builtin_return_address(0);

	__asm__ volatile("" ::: "memory");
	return ra;
}

/* Two call sites: two distinct return addresses. */
__attribute__((noinline)) uint64_t symcache_test_caller(int which)
{
	volatile uint64_t first = symcache_test_callee();
	volatile uint64_t second = symcache_test_callee();

	return which ? second : first;
}

TEST(one_lookup_per_address)
{
	struct symbolizer *s = symbolizer_new();
	struct snap_frame f[SYMBOLIZER_MAX_INLINE + 1];
	struct symbolizer_stats st;
	uint64_t addrs[2] = {symcache_test_caller(0), symcache_test_caller(1)};
	const char *first_function = NULL;

	CHECK(addrs[0] != addrs[1]);
	symbolizer_note(s, getpid(), addrs, 2);
	for (int round = 0; round < 1000; round++) {
		for (int k = 0; k < 2; k++) {
			size_t n =
			    symbolizer_frames_interned(s, getpid(), addrs[k], f, ARRAY_SIZE(f));

			CHECK(n >= 1);
			CHECK_STR(f[n - 1].function, "symcache_test_caller");
			if (!first_function)
				first_function = f[n - 1].function;
			/* the same interned string every time */
			CHECK(f[n - 1].function == first_function);
		}
	}
	symbolizer_get_stats(s, &st);
	CHECK_EQ_U64(st.lookups, 2);
	CHECK_EQ_U64(st.hits, 1998);
	/* a name-only question about a completed address needs no lookup */
	CHECK_STR(symbolizer_symbol(s, getpid(), addrs[0], NULL), "symcache_test_caller");
	symbolizer_get_stats(s, &st);
	CHECK_EQ_U64(st.lookups, 2);
	/* the malloc'd form is the same frames */
	{
		struct snap_frame g[SYMBOLIZER_MAX_INLINE + 1];
		size_t n = symbolizer_frames(s, getpid(), addrs[1], g, ARRAY_SIZE(g));

		CHECK_STR(g[n - 1].function, "symcache_test_caller");
		for (size_t i = 0; i < n; i++) {
			free(g[i].function);
			free(g[i].module);
			free(g[i].file);
			free(g[i].build_id);
		}
	}
	symbolizer_free(s);
}

static char tmpdir[4096];

/*
 * A child process that maps a private copy of libz (its own inode: a module
 * no other mapping shares), sends the address of zlibVersion, and on each
 * byte read unmaps it (dlclose, 'c') or maps it again ('o'), answering with
 * the new address (0 when unmapped), or maps an anonymous page where
 * zlibVersion was ('f', answering its address). The test traces it as the
 * daemon traces others.
 */
struct mapper {
	pid_t pid;
	int to, from;
};

static uint64_t mapper_ask(struct mapper *m, char cmd)
{
	uint64_t addr = 0;

	if (write(m->to, &cmd, 1) != 1 || read(m->from, &addr, sizeof(addr)) != sizeof(addr))
		return 0;
	return addr;
}

static int mapper_start(struct mapper *m, const char *path)
{
	int down[2], up[2];
	char cmd;

	if (pipe(down) || pipe(up))
		return -1;
	m->pid = fork();
	if (m->pid < 0)
		return -1;
	if (!m->pid) {
		void *h = NULL;
		uint64_t last = 0;

		close(down[1]);
		close(up[0]);
		while (read(down[0], &cmd, 1) == 1) {
			uint64_t addr = 0;

			if (cmd == 'o') {
				h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
				addr = h ? (uint64_t)(uintptr_t)dlsym(h, "zlibVersion") : 0;
				last = addr;
			} else if (cmd == 'f' && !h && last) {
				void *pg =
				    mmap((void *)(uintptr_t)(last & ~4095ull), 4096, PROT_READ,
					 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

				addr = pg == MAP_FAILED ? 0 : (uint64_t)(uintptr_t)pg;
			} else if (h) {
				dlclose(h);
				h = NULL;
			}
			if (write(up[1], &addr, sizeof(addr)) != sizeof(addr))
				break;
		}
		_exit(0);
	}
	close(down[0]);
	close(up[1]);
	m->to = down[1];
	m->from = up[0];
	return 0;
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int rc = in >= 0 && out >= 0 ? 0 : -1;

	while (!rc && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			rc = -1;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return rc;
}

TEST(module_goes_with_its_cache)
{
	struct symbolizer *s = symbolizer_new();
	struct snap_frame f[SYMBOLIZER_MAX_INLINE + 1];
	struct symbolizer_stats st0, st;
	struct mapper m;
	char path[4200];
	uint64_t fn, addr, nowhere = 0x1000; /* the first pages are never mapped */

	snprintf(path, sizeof(path), "%s/libzcopy.so", tmpdir);
	CHECK(!copy_file("/lib/x86_64-linux-gnu/libz.so.1", path));
	if (mapper_start(&m, path)) {
		CHECK(!"the mapper process started");
		symbolizer_free(s);
		return;
	}
	fn = mapper_ask(&m, 'o');
	CHECK(fn != 0);
	/* a return address just past the function's start: inside it */
	addr = fn + 1;
	symbolizer_note(s, m.pid, &addr, 1);
	symbolizer_get_stats(s, &st0);
	symbolizer_frames_interned(s, m.pid, addr, f, ARRAY_SIZE(f));
	symbolizer_frames_interned(s, m.pid, addr, f, ARRAY_SIZE(f));
	CHECK_STR(f[0].function, "zlibVersion");
	symbolizer_get_stats(s, &st);
	CHECK_EQ_U64(st.lookups - st0.lookups, 1);
	CHECK_EQ_U64(st.hits - st0.hits, 1);

	/* unmapped, then an address outside the cached maps makes them re-read:
	 * the copy stays where it was until something else is mapped there, so
	 * the stacks taken while it was mapped still name it */
	CHECK_EQ_U64(mapper_ask(&m, 'c'), 0);
	symbolizer_note(s, m.pid, &nowhere, 1);
	symbolizer_get_stats(s, &st);
	CHECK_EQ_U64(st.modules_dropped, st0.modules_dropped);
	symbolizer_frames_interned(s, m.pid, addr, f, ARRAY_SIZE(f));
	CHECK_STR(f[0].function, "zlibVersion");

	/* another mapping where it was: the copy is mapped nowhere, its module
	 * and cache go, and the address names nothing */
	CHECK(mapper_ask(&m, 'f') != 0);
	symbolizer_note(s, m.pid, &nowhere, 1);
	symbolizer_get_stats(s, &st);
	CHECK_EQ_U64(st.modules_dropped - st0.modules_dropped, 1);
	CHECK_EQ_U64(st.modules, st0.modules - 1);
	symbolizer_frames_interned(s, m.pid, addr, f, ARRAY_SIZE(f));
	CHECK(f[0].function == NULL);

	/* mapped again: looked up again, in a new module */
	fn = mapper_ask(&m, 'o');
	addr = fn + 1;
	symbolizer_note(s, m.pid, &addr, 1);
	symbolizer_frames_interned(s, m.pid, addr, f, ARRAY_SIZE(f));
	CHECK_STR(f[0].function, "zlibVersion");
	symbolizer_get_stats(s, &st0);
	CHECK_EQ_U64(st0.lookups - st.lookups, 1);
	CHECK_EQ_U64(st0.modules_opened - st.modules_opened, 1);

	/* a pid that shares every module: forgetting it drops none; forgetting
	 * the last pid drops them all */
	symbolizer_fork(s, m.pid, 0x7fffff00);
	symbolizer_forget(s, 0x7fffff00);
	symbolizer_get_stats(s, &st);
	CHECK_EQ_U64(st.modules_dropped, st0.modules_dropped);
	symbolizer_forget(s, m.pid);
	symbolizer_get_stats(s, &st);
	CHECK_EQ_U64(st.modules, 0);
	CHECK_EQ_U64(st.modules_dropped, st.modules_opened);

	close(m.to);
	close(m.from);
	waitpid(m.pid, NULL, 0);
	unlink(path);
	symbolizer_free(s);
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	int rc;

	snprintf(tmpdir, sizeof(tmpdir), "%s/memtrace-unit-XXXXXX", tmp);
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	rc = UNIT_RUN(argc, argv);
	rmdir(tmpdir);
	return rc;
}
