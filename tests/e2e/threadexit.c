/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Threads that come and go (tests/e2e/test_core.py, thread_exit): each of
 * THREADS threads allocates BLOCKS blocks from site_churn, in sizes over
 * eight of glibc's cache bins, and frees them all; when it exits glibc
 * frees the chunks its cache (tcache) still holds a second time. One more
 * thread does the same but exits only after the main thread has freed
 * SPREAD blocks at distinct addresses (site_spread): the chunks in its
 * cache were freed long before, behind more addresses than the daemon once
 * remembered (65 536). Prints "expect {json}" with the sites' counts.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 100
#define BLOCKS	64
#define SPREAD	80000

static __attribute__((noinline, noclone)) void *site_churn(size_t size)
{
	return malloc(size);
}

static __attribute__((noinline, noclone)) void *site_spread(size_t size)
{
	return malloc(size);
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int stage; /* 1: the lingering thread has freed its blocks; 2: it may exit */

static void *work(void *arg)
{
	void *p[BLOCKS];

	for (int i = 0; i < BLOCKS; i++)
		p[i] = site_churn(16 + 16 * (size_t)(i % 8));
	for (int i = 0; i < BLOCKS; i++)
		free(p[i]);
	if (arg) { /* the lingering one */
		pthread_mutex_lock(&lock);
		stage = 1;
		pthread_cond_broadcast(&cond);
		while (stage != 2)
			pthread_cond_wait(&cond, &lock);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

/* SPREAD blocks live at once, then freed: as many distinct addresses freed */
static int spread(void)
{
	void **v = malloc(SPREAD * sizeof(*v));

	if (!v)
		return -1;
	for (int i = 0; i < SPREAD; i++) {
		if (!(v[i] = site_spread(24)))
			return -1;
	}
	for (int i = 0; i < SPREAD; i++)
		free(v[i]);
	free(v);
	return 0;
}

int main(void)
{
	uint64_t bytes = 0;
	pthread_t lingering;

	if (pthread_create(&lingering, NULL, work, (void *)1)) {
		fprintf(stderr, "threadexit: cannot run a thread\n");
		return 1;
	}
	pthread_mutex_lock(&lock);
	while (stage != 1)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	for (int t = 0; t < THREADS; t++) {
		pthread_t th;

		if (pthread_create(&th, NULL, work, NULL) || pthread_join(th, NULL)) {
			fprintf(stderr, "threadexit: cannot run a thread\n");
			return 1;
		}
	}
	if (spread()) {
		fprintf(stderr, "threadexit: out of memory\n");
		return 1;
	}
	pthread_mutex_lock(&lock);
	stage = 2;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	if (pthread_join(lingering, NULL)) {
		fprintf(stderr, "threadexit: cannot join a thread\n");
		return 1;
	}
	for (int i = 0; i < BLOCKS; i++)
		bytes += 16 + 16 * (uint64_t)(i % 8);
	printf("expect {\"threads\": %d, \"allocations\": %d, \"bytes\": %llu, "
	       "\"spread\": %d}\n",
	       THREADS + 1, (THREADS + 1) * BLOCKS, (unsigned long long)(bytes * (THREADS + 1)),
	       SPREAD);
	return 0;
}
