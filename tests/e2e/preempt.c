// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Threads that preempt each other inside the tracer's uprobe programs
 * (tests/e2e/test_preempt.py). On each CPU this process may run on, two
 * threads pinned there: one allocates all the time (SCHED_OTHER), the other
 * (SCHED_FIFO) sleeps 100 us between bursts of a few allocations. On a fully
 * preemptible kernel (PREEMPT_RT, preempt=full) each wake-up of the real-time
 * thread preempts the other at once wherever it is, often in the middle of
 * building its event in the uprobe programs (an ordinary thread's turn would
 * not come there: the RT patches' lazy preemption waits for its return to
 * user space): the real-time thread's event must be built in a scratch set
 * of its own (bpf/memtrace.bpf.c, scratch_take). Never more than two on one
 * CPU, so a third level (counted lost) cannot happen.
 *
 * Thread t calls malloc through functions of its own (thread_main_t ->
 * work_t -> site_t) with sizes only it uses (SIZE(t, k) for its k-th call)
 * and frees each block at once. An event that took its size from one
 * thread and its stack from another shows as a stack of site_t with bytes
 * other than thread t's.
 *
 * Prints "expect {...}" with each thread's number of calls when done.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CPUS    8
#define MAX_THREADS (2 * MAX_CPUS)
/* thread t's sizes: 1000 t + 100 .. 1000 t + 107, one a call in turn */
#define SIZE(t, k) (1000 * (t) + 100 + (k) % 8)
#define BURST	   4
#define BUSY_MAX   2000000 /* calls of an ordinary thread at most */

static long calls = 4000; /* of each real-time thread */
static pthread_barrier_t start;
static volatile int rt_running;
static long done[MAX_THREADS];
static volatile unsigned long sink;

/* Even threads are ordinary and allocate until every real-time one is done;
 * odd ones are real-time and make calls allocations in bursts. */
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
		long k = 0;                                                                        \
		if ((t) % 2 == 0) {                                                                \
			while (__atomic_load_n(&rt_running, __ATOMIC_RELAXED) && k < BUSY_MAX)     \
				site_##t(k++);                                                     \
		} else {                                                                           \
			struct timespec nap = {0, 100000};                                         \
			while (k < calls) {                                                        \
				for (int b = 0; b < BURST && k < calls; b++)                       \
					site_##t(k++);                                             \
				nanosleep(&nap, NULL);                                             \
			}                                                                          \
			__atomic_fetch_sub(&rt_running, 1, __ATOMIC_RELAXED);                      \
		}                                                                                  \
		done[t] = k;                                                                       \
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
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--calls") && i + 1 < argc) {
			calls = atol(argv[++i]);
		} else {
			fprintf(stderr, "usage: preempt [--calls N]\n");
			return 2;
		}
	}
	cpu_set_t allowed;
	int cpus[MAX_CPUS], ncpu = 0, fifo = 1;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return perror("sched_getaffinity"), 1;
	for (int c = 0; c < CPU_SETSIZE && ncpu < MAX_CPUS; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[ncpu++] = c;
	int n = 2 * ncpu;
	pthread_t th[MAX_THREADS];

	rt_running = ncpu;
	pthread_barrier_init(&start, NULL, n);
	for (int t = 0; t < n; t++) {
		pthread_attr_t attr;
		cpu_set_t one;
		struct sched_param sp = {.sched_priority = 1};

		CPU_ZERO(&one);
		CPU_SET(cpus[t / 2], &one);
		pthread_attr_init(&attr);
		pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
		if (t % 2) {
			pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
			pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
			pthread_attr_setschedparam(&attr, &sp);
		}
		if (pthread_create(&th[t], &attr, mains[t], NULL)) {
			/* no real-time scheduling allowed: an ordinary thread */
			fifo = 0;
			pthread_attr_setinheritsched(&attr, PTHREAD_INHERIT_SCHED);
			if (pthread_create(&th[t], &attr, mains[t], NULL))
				return fprintf(stderr, "pthread_create failed\n"), 1;
		}
		pthread_attr_destroy(&attr);
	}
	for (int t = 0; t < n; t++)
		pthread_join(th[t], NULL);
	printf("expect {\"threads\":%d,\"cpus\":%d,\"fifo\":%s,\"calls\":[", n, ncpu,
	       fifo ? "true" : "false");
	for (int t = 0; t < n; t++)
		printf("%s%ld", t ? "," : "", done[t]);
	printf("]}\n");
	return 0;
}
