// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Threads that preempt each other inside the tracer's uprobe programs
 * (tests/e2e/test_preempt.py). Two threads are pinned to each CPU this
 * process may run on (--per-cpu), so on a fully preemptible kernel (PREEMPT_RT,
 * or preempt=full) the scheduler's tick often switches them while one is in
 * the middle of building its event: the other's event must be built in a
 * scratch set of its own (bpf/memtrace.bpf.c, scratch_take). Never more than
 * two on one CPU, so a third level (counted lost) cannot happen.
 *
 * Thread t calls malloc through functions of its own (thread_main_t ->
 * work_t -> site_t) with sizes only it uses (SIZE(t, k)), --calls times, and
 * frees each block at once. An event that took its size from one thread
 * and its stack from another shows as a stack of site_t with another
 * thread's bytes.
 *
 * Prints "expect {...}" with the threads, calls and sizes when done.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 16
/* thread t's sizes: 1000 t + 100 .. 1000 t + 107, one a call in turn */
#define SIZE(t, k) (1000 * (t) + 100 + (k) % 8)

static long calls = 20000;
static pthread_barrier_t start;
static volatile unsigned long sink;

#define THREAD(t)                                                                                  \
	__attribute__((noinline)) static void site_##t(long k)                                     \
	{                                                                                          \
		char *p = malloc(SIZE(t, k));                                                      \
		p[0] = (char)k;                                                                    \
		sink += (unsigned char)p[0];                                                       \
		free(p);                                                                           \
	}                                                                                          \
	__attribute__((noinline)) static void work_##t(void)                                       \
	{                                                                                          \
		for (long k = 0; k < calls; k++)                                                   \
			site_##t(k);                                                               \
		__asm__ volatile("" ::: "memory");                                                 \
	}                                                                                          \
	__attribute__((noinline)) static void *thread_main_##t(void *a)                            \
	{                                                                                          \
		pthread_barrier_wait(&start);                                                      \
		work_##t();                                                                        \
		__asm__ volatile("" ::: "memory");                                                 \
		return a;                                                                          \
	}

THREAD(0)
THREAD(1)
THREAD(2)
THREAD(3)
THREAD(4)
THREAD(5)
THREAD(6)
THREAD(7)
THREAD(8)
THREAD(9)
THREAD(10)
THREAD(11)
THREAD(12)
THREAD(13)
THREAD(14)
THREAD(15)

static void *(*const mains[MAX_THREADS])(void *) = {
    thread_main_0,  thread_main_1,  thread_main_2,  thread_main_3,  thread_main_4,  thread_main_5,
    thread_main_6,  thread_main_7,  thread_main_8,  thread_main_9,  thread_main_10, thread_main_11,
    thread_main_12, thread_main_13, thread_main_14, thread_main_15,
};

int main(int argc, char **argv)
{
	int per_cpu = 2;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--calls") && i + 1 < argc)
			calls = atol(argv[++i]);
		else if (!strcmp(argv[i], "--per-cpu") && i + 1 < argc)
			per_cpu = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: preempt [--calls N] [--per-cpu N]\n");
			return 2;
		}
	}
	cpu_set_t allowed;
	int cpus[MAX_THREADS], ncpu = 0;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return perror("sched_getaffinity"), 1;
	for (int c = 0; c < CPU_SETSIZE && ncpu < MAX_THREADS; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[ncpu++] = c;
	int n = ncpu * per_cpu;

	if (n > MAX_THREADS)
		n = MAX_THREADS - MAX_THREADS % per_cpu;
	pthread_t th[MAX_THREADS];

	pthread_barrier_init(&start, NULL, n);
	for (int t = 0; t < n; t++) {
		pthread_attr_t attr;
		cpu_set_t one;

		CPU_ZERO(&one);
		CPU_SET(cpus[t / per_cpu], &one);
		pthread_attr_init(&attr);
		pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
		if (pthread_create(&th[t], &attr, mains[t], NULL))
			return fprintf(stderr, "pthread_create failed\n"), 1;
		pthread_attr_destroy(&attr);
	}
	for (int t = 0; t < n; t++)
		pthread_join(th[t], NULL);
	printf("expect {\"threads\":%d,\"cpus\":%d,\"calls\":%ld,\"size_base\":100,"
	       "\"size_step\":1000,\"sizes\":8}\n",
	       n, ncpu, calls);
	return 0;
}
