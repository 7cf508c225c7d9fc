// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * One library dlopened, called and closed, then another of the same code
 * with a larger frame (tests/e2e/lib/reopen.c), which the linker maps where
 * the first was: the same return addresses with other rules, which the
 * DWARF walker's cache of rows must not take for the first library's.
 * Pinned to one CPU (the cache is per CPU). Waits for a line on stdin
 * first, prints each library's load address, then "done", then waits.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>

__attribute__((noinline)) static int call(const char *path, int n)
{
	void (*reopen_alloc)(int);
	Dl_info info;
	void *h = dlopen(path, RTLD_NOW);

	if (!h)
		return -1;
	reopen_alloc = (void (*)(int))dlsym(h, "reopen_alloc");
	if (!reopen_alloc || !dladdr((void *)reopen_alloc, &info))
		return -1;
	reopen_alloc(n);
	printf("base %p\n", info.dli_fbase);
	return dlclose(h);
}

int main(int argc, char **argv)
{
	cpu_set_t one;
	char line[16];

	if (argc < 3)
		return 2;
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof(one), &one);
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	if (call(argv[1], 3) || call(argv[2], 4))
		return 1;
	printf("done\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	return 0;
}
