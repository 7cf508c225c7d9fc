// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Benchmark target: N malloc+free pairs at a chosen call depth, timed with
 * CLOCK_MONOTONIC. Prints one line "pairs=N depth=D ns_per_pair=X". Waits for
 * a line on stdin before starting, so a tracer can attach first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void *volatile sink;

__attribute__((noinline)) static void pairs_at_depth(long n, int depth)
{
	long i;

	if (depth > 1) {
		pairs_at_depth(n, depth - 1);
		__asm__ volatile("" ::: "memory"); /* not a tail call */
		return;
	}
	for (i = 0; i < n; i++) {
		void *p = malloc(64);

		sink = p;
		free(p);
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	int depth = argc > 2 ? atoi(argv[2]) : 1;
	struct timespec a, b;
	char line[16];

	if (n <= 0 || depth <= 0 || depth > 1000) {
		fprintf(stderr, "usage: allocbench PAIRS DEPTH\n");
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	pairs_at_depth(n, depth);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("pairs=%ld depth=%d ns_per_pair=%.0f\n", n, depth,
	       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
	return 0;
}
