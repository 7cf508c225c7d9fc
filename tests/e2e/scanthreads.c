/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Many threads for the leak scan (tests/e2e/test_scan.py): N threads each
 * hold a block on their own stack (thread_held: reachable) and drop one
 * (thread_lost: a direct leak), then wait; a spawner thread creates and
 * joins short-lived threads all the time (each allocates and frees, in
 * thread_churn), so that threads come and go while the scan stops the
 * process. Prints "ready PID" once the N threads hold their blocks, then
 * "progress K" every 100 ms (K: churn threads joined so far), and on
 * SIGUSR1 stops everything and prints "done K".
 *
 *     scanthreads N
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HELD_SIZE 80
#define LOST_SIZE 48

#define NOINLINE __attribute__((noinline))

static volatile int stopping;
static volatile long churned;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int holding;

NOINLINE static void *thread_held(void)
{
	return malloc(HELD_SIZE);
}

NOINLINE static void thread_lost(void)
{
	void *volatile p = malloc(LOST_SIZE);

	memset(p, 0, LOST_SIZE);
	p = NULL;
}

static void *holder(void *arg)
{
	void *volatile held = thread_held();

	(void)arg;
	thread_lost();
	pthread_mutex_lock(&lock);
	holding++;
	pthread_cond_broadcast(&cond);
	while (!stopping)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	free(held);
	return NULL;
}

NOINLINE static void thread_churn(void)
{
	void *volatile p = malloc(32);

	free(p);
}

static void *churner(void *arg)
{
	(void)arg;
	thread_churn();
	return NULL;
}

static void *spawner(void *arg)
{
	(void)arg;
	while (!stopping) {
		pthread_t t;

		if (pthread_create(&t, NULL, churner, NULL))
			continue;
		pthread_join(t, NULL);
		__atomic_add_fetch(&churned, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	stopping = 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 64;
	pthread_t *t = calloc((size_t)n + 1, sizeof(*t));
	struct sigaction sa = {.sa_handler = on_usr1};

	sigaction(SIGUSR1, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("starting %d\n", getpid());
	/* wait for the tracer: the test attaches, then sends SIGUSR2 */
	{
		sigset_t set;
		int sig;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR2);
		sigprocmask(SIG_BLOCK, &set, NULL);
		sigwait(&set, &sig);
	}
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, holder, NULL);
	pthread_mutex_lock(&lock);
	while (holding < n)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	pthread_create(&t[n], NULL, spawner, NULL);
	printf("ready %d\n", getpid());
	while (!stopping) {
		nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
		printf("progress %ld\n", __atomic_load_n(&churned, __ATOMIC_RELAXED));
	}
	pthread_mutex_lock(&lock);
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i <= n; i++)
		pthread_join(t[i], NULL);
	printf("done %ld\n", churned);
	free(t);
	return 0;
}
