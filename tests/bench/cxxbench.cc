// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Benchmark target, C++: N `new Obj` + `delete` pairs (64 bytes, so the
 * delete is the sized one C++14 compilers emit), with allocbench's protocol:
 * "ready", a line on stdin, then "pairs=N ns_per_pair=X".
 */
#include <cstdio>
#include <cstdlib>
#include <ctime>

struct Obj {
	long v[8];
};

static Obj *volatile sink;

__attribute__((noinline)) static void pairs(long n)
{
	for (long i = 0; i < n; i++) {
		Obj *o = new Obj;

		sink = o;
		delete o;
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	struct timespec a, b;
	char line[16];

	if (n <= 0) {
		fprintf(stderr, "usage: cxxbench PAIRS\n");
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	pairs(n);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("pairs=%ld ns_per_pair=%.0f\n", n,
	       ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n);
	return 0;
}
