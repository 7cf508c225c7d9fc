// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A process that allocates and frees as fast as it can, printing how many
 * malloc+free pairs it made in each 200 ms: its own measure of how much
 * tracing slows it, so a test can see probes come and go.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void *volatile sink;

static long ns_since(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a->tv_sec) * 1000000000L + (b.tv_nsec - a->tv_nsec);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		struct timespec a;
		long n = 0;

		clock_gettime(CLOCK_MONOTONIC, &a);
		do {
			sink = malloc(32);
			free(sink);
			n++;
		} while (ns_since(&a) < 200000000L);
		printf("%ld\n", n);
	}
}
