// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A program that holds memory in a cgroup (tests/e2e/test_cgroup.py): it
 * allocates N MiB (argv[1], default 16) in 1 MiB blocks, writes every page
 * so they are charged to its memory cgroup, prints "ready BYTES" and waits
 * until it is killed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK (1 << 20)

static void *volatile keep[4096];

static void *hold_block(void)
{
	void *p = malloc(BLOCK);

	if (!p) {
		perror("cgalloc: malloc");
		exit(1);
	}
	memset(p, 0x5a, BLOCK);
	return p;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 16;

	if (n < 1 || n > 4096) {
		fprintf(stderr, "usage: cgalloc [MIB, 1 to 4096]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (long i = 0; i < n; i++)
		keep[i] = hold_block();
	printf("ready %ld\n", n * BLOCK);
	for (;;)
		pause();
}
