// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The OOM test's workload (tests/e2e/test_oom.py): one function allocates
 * 1 MiB blocks and touches every page of each (memset), never freeing, until
 * the memory cgroup's limit has the OOM killer kill it. Prints "ready PID"
 * and starts at once: it is the program `sh -c '...; exec oomhog'` runs,
 * in the cgroup already.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK (1u << 20)

static void **held;

__attribute__((noinline)) void hog_memory(unsigned max_blocks)
{
	for (unsigned i = 0; i < max_blocks; i++) {
		char *p = malloc(BLOCK);

		if (!p)
			return;
		memset(p, 0x5a, BLOCK);
		held[i] = p;
		if (i % 8 == 0)
			usleep(2000); /* a few milliseconds for the daemon's samples */
	}
}

int main(int argc, char **argv)
{
	unsigned max_blocks = argc > 1 ? (unsigned)atoi(argv[1]) : 4096;

	held = calloc(max_blocks, sizeof(*held));
	if (!held)
		return 1;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	hog_memory(max_blocks);
	/* not killed within max_blocks MiB: the limit did not hold */
	printf("survived %u MiB\n", max_blocks);
	return 3;
}
