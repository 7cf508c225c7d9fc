// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Two threads, each allocating (and freeing) 3000 blocks of 48 bytes through
 * one leaf function from a caller of its own (work_a, work_b). Built without
 * frame pointers by the Makefile (tests/nofp/): each thread's stack must run
 * from leaf_alloc to its thread function and the thread's start in libc.
 */
#include <pthread.h>
#include <stdlib.h>

#define BLOCKS 3000

void *volatile sink;

__attribute__((noinline)) void leaf_alloc(void)
{
	char *p = malloc(48);

	sink = p;
	free(p);
}

__attribute__((noinline)) void work_a(void)
{
	for (int i = 0; i < BLOCKS; i++)
		leaf_alloc();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void work_b(void)
{
	for (int i = 0; i < BLOCKS; i++)
		leaf_alloc();
	__asm__ volatile("" ::: "memory");
}

static void *thread_a(void *arg)
{
	work_a();
	return arg;
}

static void *thread_b(void *arg)
{
	work_b();
	return arg;
}

int main(void)
{
	pthread_t a, b;

	if (pthread_create(&a, NULL, thread_a, NULL) || pthread_create(&b, NULL, thread_b, NULL))
		return 1;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}
