/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Fragmentation target for tests/e2e/test_resident.py: the memory that stays
 * resident when the live heap is small. On SIGUSR1 (at once with --no-wait)
 * it allocates about --total-mb MiB in blocks of --size bytes, writes every
 * byte (so every page is resident), then frees nine of every ten, keeping
 * every tenth and the last: each run of free chunks lies between two live
 * blocks and the top of glibc's heap is live, so it can give nothing back.
 * Then it prints "expect {json}" (the bytes it still holds) and holds until
 * SIGTERM. The table of blocks is mmap'd, not malloc'd: it is not heap.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: frag [--no-wait] [--total-mb N] [--size BYTES] [--keep K]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	size_t total_mb = 100, size = 1024, keep = 10, n, kept = 0, kept_bytes = 0;
	int no_wait = 0;
	char **blocks;
	sigset_t mask, old;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--no-wait"))
			no_wait = 1;
		else if (!strcmp(argv[i], "--total-mb") && i + 1 < argc)
			total_mb = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
			keep = strtoul(argv[++i], NULL, 10);
		else
			usage();
	}
	if (!total_mb || !size || !keep)
		usage();
	n = (total_mb << 20) / size;
	blocks = mmap(NULL, n * sizeof(*blocks), PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (blocks == MAP_FAILED) {
		perror("frag: mmap");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0); /* its buffer exists before the pattern */
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, &old);
	signal(SIGUSR1, on_usr1);
	printf("ready %d\n", (int)getpid());
	while (!no_wait && !go)
		sigsuspend(&old);
	sigprocmask(SIG_SETMASK, &old, NULL);

	for (size_t i = 0; i < n; i++) {
		blocks[i] = malloc(size);
		if (!blocks[i]) {
			perror("frag: malloc");
			return 1;
		}
		memset(blocks[i], (int)(i & 0xff) | 1, size);
	}
	/* every keep-th block stays, counted from the end: the last one is live */
	for (size_t i = 0; i < n; i++) {
		if ((n - 1 - i) % keep == 0) {
			kept++;
			kept_bytes += size;
			continue;
		}
		free(blocks[i]);
	}
	printf("expect {\"ok\": true, \"blocks\": %zu, \"block_size\": %zu, \"kept_blocks\": %zu, "
	       "\"kept_bytes\": %zu, \"allocated_bytes\": %zu}\n",
	       n, size, kept, kept_bytes, n * size);
	for (;;)
		pause();
}
