// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Benchmark target: N malloc+free pairs at a chosen call depth, in one or
 * more threads that start together, timed with CLOCK_MONOTONIC per thread.
 * Prints one line "pairs=N depth=D threads=T ns_per_pair=X", X the mean
 * over threads of each thread's time per pair. Waits for a line on stdin
 * before starting, so a tracer can attach first.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_THREADS 64

static void *volatile sink;
static long pairs;
static int depth;
static pthread_barrier_t start;

__attribute__((noinline)) static void pairs_at_depth(long n, int d)
{
	long i;

	if (d > 1) {
		pairs_at_depth(n, d - 1);
		__asm__ volatile("" ::: "memory"); /* not a tail call */
		return;
	}
	for (i = 0; i < n; i++) {
		void *p = malloc(64);

		sink = p;
		free(p);
	}
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void *worker(void *arg)
{
	double *ns = arg, t0;

	pthread_barrier_wait(&start);
	t0 = now_ns();
	pairs_at_depth(pairs, depth);
	*ns = now_ns() - t0;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 3 ? atoi(argv[3]) : 1;
	pthread_t tid[MAX_THREADS];
	double ns[MAX_THREADS], sum = 0;
	char line[16];

	pairs = argc > 1 ? atol(argv[1]) : 100000;
	depth = argc > 2 ? atoi(argv[2]) : 1;
	if (pairs <= 0 || depth <= 0 || depth > 1000 || threads <= 0 || threads > MAX_THREADS) {
		fprintf(stderr, "usage: allocbench PAIRS DEPTH [THREADS]\n");
		return 2;
	}
	/* threads made (and their stacks mapped) before the tracer attaches */
	pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
	for (int i = 0; i < threads; i++) {
		if (pthread_create(&tid[i], NULL, worker, &ns[i])) {
			fprintf(stderr, "allocbench: cannot start thread %d\n", i);
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	pthread_barrier_wait(&start);
	for (int i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		sum += ns[i] / (double)pairs;
	}
	printf("pairs=%ld depth=%d threads=%d ns_per_pair=%.0f\n", pairs, depth, threads,
	       sum / threads);
	return 0;
}
