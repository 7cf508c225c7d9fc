/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A target with one mapping of each kind memtrace's breakdown tells apart
 * (tests/e2e/test_resident.py; its smaps are also the samples of
 * tests/unit/test_rss.c): the brk heap, two threads each allocating in an
 * arena of its own and sleeping on its stack, a large block (mmap'd by
 * malloc), shared anonymous memory, a memfd mapped shared, and a file mapped
 * read-only (the program itself). Every page is touched, so each is
 * resident. Prints "expect {json}" with what it made, then holds until
 * SIGTERM.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHARED_BYTES  (4u << 20)
#define MEMFD_BYTES   (2u << 20)
#define LARGE_BYTES   (3u << 20) /* above the mmap threshold: a mapping of its own */
#define THREAD_BLOCKS 64
#define THREAD_BLOCK  4096
#define BRK_BLOCKS    256
#define BRK_BLOCK     1000
#define THREADS	      2

static pthread_barrier_t started;

static void *thread_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < THREAD_BLOCKS; i++) {
		char *p = malloc(THREAD_BLOCK);

		if (!p)
			abort();
		memset(p, 0x5a, THREAD_BLOCK);
	}
	pthread_barrier_wait(&started);
	for (;;)
		pause();
	return NULL;
}

static void *mapped(size_t len, int flags, int fd)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, fd, 0);

	if (p == MAP_FAILED) {
		perror("mappings: mmap");
		exit(1);
	}
	memset(p, 0x33, len);
	return p;
}

int main(int argc, char **argv)
{
	pthread_t threads[THREADS];
	struct stat st;
	volatile char sum = 0;
	char *large, *self;
	int fd;

	(void)argc;
	setvbuf(stdout, NULL, _IOLBF, 0);
	pthread_barrier_init(&started, NULL, THREADS + 1);
	for (int i = 0; i < BRK_BLOCKS; i++)
		memset(malloc(BRK_BLOCK), 0x11, BRK_BLOCK);
	large = malloc(LARGE_BYTES);
	if (!large)
		return 1;
	memset(large, 0x22, LARGE_BYTES);
	mapped(SHARED_BYTES, MAP_SHARED | MAP_ANONYMOUS, -1);
	fd = memfd_create("mappings", 0);
	if (fd < 0 || ftruncate(fd, MEMFD_BYTES)) {
		perror("mappings: memfd");
		return 1;
	}
	mapped(MEMFD_BYTES, MAP_SHARED, fd);
	fd = open(argv[0], O_RDONLY);
	if (fd < 0 || fstat(fd, &st)) {
		perror("mappings: open itself");
		return 1;
	}
	self = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (self == MAP_FAILED)
		return 1;
	for (off_t i = 0; i < st.st_size; i += 4096)
		sum += self[i];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&threads[i], NULL, thread_main, NULL);
	pthread_barrier_wait(&started);
	printf("expect {\"ok\": true, \"threads\": %d, \"thread_bytes\": %u, \"brk_bytes\": %u, "
	       "\"large_bytes\": %u, \"shared_bytes\": %u, \"memfd_bytes\": %u, "
	       "\"file_bytes\": %lld}\n",
	       THREADS, THREADS * THREAD_BLOCKS * THREAD_BLOCK, BRK_BLOCKS * BRK_BLOCK, LARGE_BYTES,
	       SHARED_BYTES, MEMFD_BYTES, (long long)st.st_size);
	for (;;)
		pause();
}
