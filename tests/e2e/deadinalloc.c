// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A thread that dies inside an allocator call (tests/e2e/test_faults.py,
 * faults_inflight_dead_holder). The program has an allocator of its own
 * (malloc and its family below, which interpose glibc's, so the daemon
 * probes these): a bump allocator whose malloc of BLOCK_SIZE bytes never
 * returns.
 *
 *   deadinalloc block    a thread calls malloc(BLOCK_SIZE) and stays in it;
 *                        then the main thread makes 10 malloc+free pairs and
 *                        exits, killing the thread inside its call
 *   deadinalloc calls N  N malloc(32)+free pairs, then exits
 *
 * Each prints one line when its work is done.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK_SIZE 12345
#define ARENA	   (64u << 20)

static char arena[ARENA] __attribute__((aligned(64)));
static size_t used;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int blocked;

/* n bytes aligned to align (a power of two, at least 16), a size word before. */
static void *bump(size_t n, size_t align)
{
	size_t at;
	void *p = NULL;

	if (n > ARENA || align > ARENA)
		return NULL;
	pthread_mutex_lock(&lock);
	at = (used + 16 + align - 1) & ~(align - 1);
	if (at + n <= ARENA) {
		used = at + n;
		((size_t *)(arena + at))[-1] = n;
		p = arena + at;
	}
	pthread_mutex_unlock(&lock);
	return p;
}

__attribute__((noinline)) void *malloc(size_t n)
{
	if (n == BLOCK_SIZE) {
		blocked = 1;
		for (;;)
			pause();
	}
	return bump(n, 16);
}

__attribute__((noinline)) void free(void *p)
{
	(void)p; /* the arena is never reused */
}

void *calloc(size_t n, size_t m)
{
	if (m && n > SIZE_MAX / m)
		return NULL;
	return malloc(n * m); /* the arena is zero and never reused */
}

void *realloc(void *p, size_t n)
{
	void *q = malloc(n);
	size_t old = p ? ((size_t *)p)[-1] : 0;

	if (q && p)
		memcpy(q, p, old < n ? old : n);
	return q;
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p = bump(n, align < 16 ? 16 : align);

	if (!p)
		return 12; /* ENOMEM */
	*out = p;
	return 0;
}

void *aligned_alloc(size_t align, size_t n)
{
	return bump(n, align < 16 ? 16 : align);
}

void *memalign(size_t align, size_t n)
{
	return bump(n, align < 16 ? 16 : align);
}

static void *stay_in_malloc(void *arg)
{
	return malloc(BLOCK_SIZE + (size_t)arg);
}

static void pairs(long n)
{
	for (long i = 0; i < n; i++) {
		void *volatile p = malloc(32);

		free(p);
	}
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc == 2 && !strcmp(argv[1], "block")) {
		if (pthread_create(&t, NULL, stay_in_malloc, NULL))
			return 1;
		while (!blocked)
			usleep(1000);
		usleep(20000); /* past the trap: inside the call */
		pairs(10);
		printf("exiting with a thread inside malloc\n");
		fflush(stdout);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "calls")) {
		pairs(atol(argv[2]));
		printf("made %ld pairs\n", atol(argv[2]));
		return 0;
	}
	fprintf(stderr, "usage: deadinalloc block | calls N\n");
	return 2;
}
