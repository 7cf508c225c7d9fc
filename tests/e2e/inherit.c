/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Fork target for tests/e2e/test_family.py (memtraced --follow-forks -- inherit OUT): the
 * parent allocates KEEP blocks from site_keep and SHARED blocks from site_shared, forks
 * CHILDREN workers, then frees half of its shared blocks itself. Worker i frees
 * (i + 1) * 10 of the shared blocks it inherited, reallocates one of them, allocates
 * (i + 1) * 50 blocks of its own from site_worker, frees every other one, and writes
 * "expect PID {json}" (write(2), no allocation) with exactly what its heap holds and what
 * it called, counting the blocks it inherited; then it waits for SIGUSR1 and exits. The
 * parent writes its own line after its frees, waits for its workers and exits.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef __clang__
#define SITE __attribute__((noinline))
#else
#define SITE __attribute__((noinline, noclone))
#endif

#define CHILDREN    3
#define KEEP	    40
#define KEEP_SIZE   300
#define SHARED	    100
#define SHARED_SIZE 1000

struct tally {
	uint64_t inherited, inherited_bytes, allocations, frees, bytes_allocated, bytes_freed, live,
	    live_bytes;
};

static void *keep[KEEP], *shared[SHARED], *own[1000];

static void say(const struct tally *t)
{
	char line[512];
	int n = snprintf(line, sizeof(line),
			 "expect %d {\"inherited_allocations\":%llu,\"inherited_bytes\":%llu,"
			 "\"allocations\":%llu,\"frees\":%llu,\"bytes_allocated\":%llu,"
			 "\"bytes_freed\":%llu,\"live_allocations\":%llu,\"live_bytes\":%llu,"
			 "\"unknown_frees\":0}\n",
			 (int)getpid(), (unsigned long long)t->inherited,
			 (unsigned long long)t->inherited_bytes, (unsigned long long)t->allocations,
			 (unsigned long long)t->frees, (unsigned long long)t->bytes_allocated,
			 (unsigned long long)t->bytes_freed, (unsigned long long)t->live,
			 (unsigned long long)t->live_bytes);

	if (write(1, line, (size_t)n) != n)
		_exit(3);
}

/* Macros, not functions: the allocator's caller is the site function itself. */
#define TAKE(p, size, t)                                                                           \
	do {                                                                                       \
		(p) = malloc(size);                                                                \
		if (!(p))                                                                          \
			_exit(2);                                                                  \
		memset((p), 1, (size));                                                            \
		(t)->allocations++;                                                                \
		(t)->bytes_allocated += (size);                                                    \
		(t)->live++;                                                                       \
		(t)->live_bytes += (size);                                                         \
	} while (0)

static void give(void *p, size_t size, struct tally *t)
{
	free(p);
	t->frees++;
	t->bytes_freed += size;
	t->live--;
	t->live_bytes -= size;
}

SITE static void site_keep(struct tally *t)
{
	for (int k = 0; k < KEEP; k++)
		TAKE(keep[k], KEEP_SIZE, t);
}

SITE static void site_shared(struct tally *t)
{
	for (int k = 0; k < SHARED; k++)
		TAKE(shared[k], SHARED_SIZE, t);
}

SITE static void site_worker(int i, struct tally *t)
{
	int n = (i + 1) * 50;

	for (int k = 0; k < n; k++)
		TAKE(own[k], 64 * (size_t)(i + 1), t);
	for (int k = 0; k < n; k += 2)
		give(own[k], 64 * (size_t)(i + 1), t);
}

SITE static void *site_grow(void *p, struct tally *t)
{
	void *q = realloc(p, 5000);

	if (!q)
		_exit(2);
	/* one free of the inherited block, one allocation of the new one */
	t->frees++;
	t->bytes_freed += SHARED_SIZE;
	t->allocations++;
	t->bytes_allocated += 5000;
	t->live_bytes += 5000 - SHARED_SIZE;
	return q;
}

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

static void worker(int i, const struct tally *parent)
{
	struct tally t = {.inherited = parent->live,
			  .inherited_bytes = parent->live_bytes,
			  .live = parent->live,
			  .live_bytes = parent->live_bytes};
	int nfree = (i + 1) * 10;

	/* the blocks the parent frees after the fork are this worker's still: it
	 * frees some of those, and of the others */
	for (int k = SHARED - nfree; k < SHARED; k++)
		give(shared[k], SHARED_SIZE, &t);
	for (int k = 0; k < nfree; k++)
		give(shared[k], SHARED_SIZE, &t);
	shared[nfree] = site_grow(shared[nfree], &t);
	site_worker(i, &t);
	say(&t);
	while (!go)
		pause();
	_exit(0);
}

int main(void)
{
	struct tally t = {0};
	pid_t kids[CHILDREN];

	signal(SIGUSR1, on_usr1);
	site_keep(&t);
	site_shared(&t);
	for (int i = 0; i < CHILDREN; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			return 1;
		if (!kids[i])
			worker(i, &t);
	}
	/* after the forks: the parent's frees change nothing of its workers' heaps */
	for (int k = 0; k < SHARED; k += 2)
		give(shared[k], SHARED_SIZE, &t);
	say(&t);
	for (int i = 0; i < CHILDREN; i++) {
		int status;

		if (waitpid(kids[i], &status, 0) != kids[i] || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			return 1;
	}
	return 0;
}
