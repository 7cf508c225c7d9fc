/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Threads that come and go (tests/e2e/test_core.py, thread_exit): each of
 * THREADS threads allocates BLOCKS blocks from site_churn, in sizes over
 * eight of glibc's cache bins, and frees them all; when it exits glibc
 * frees the chunks its cache (tcache) still holds a second time. Prints
 * "expect {json}" with the site's counts.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 100
#define BLOCKS	64

static __attribute__((noinline, noclone)) void *site_churn(size_t size)
{
	return malloc(size);
}

static void *work(void *arg)
{
	void *p[BLOCKS];

	(void)arg;
	for (int i = 0; i < BLOCKS; i++)
		p[i] = site_churn(16 + 16 * (size_t)(i % 8));
	for (int i = 0; i < BLOCKS; i++)
		free(p[i]);
	return NULL;
}

int main(void)
{
	uint64_t bytes = 0;

	for (int t = 0; t < THREADS; t++) {
		pthread_t th;

		if (pthread_create(&th, NULL, work, NULL) || pthread_join(th, NULL)) {
			fprintf(stderr, "threadexit: cannot run a thread\n");
			return 1;
		}
	}
	for (int i = 0; i < BLOCKS; i++)
		bytes += 16 + 16 * (uint64_t)(i % 8);
	printf("expect {\"threads\": %d, \"allocations\": %d, \"bytes\": %llu}\n", THREADS,
	       THREADS * BLOCKS, (unsigned long long)(bytes * THREADS));
	return 0;
}
