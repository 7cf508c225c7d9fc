/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Fork target for tests/e2e (memtraced --follow-forks): prints "ready PID", waits for SIGUSR1,
 * then allocates a known amount itself and forks three children that each allocate their own
 * known amount from site_child. Every process prints one line with exactly what it did:
 * "expect PID {json}" (write(2): nothing else calls the allocator after the fork).
 * With --exec-child PROG ARGS..., the first child executes PROG instead; with --hold, the
 * children wait to be killed after their line, and the parent for SIGUSR1 before it waits;
 * with --late, the first child allocates only once its siblings have exited (SIGUSR2 from
 * the parent after it reaped them).
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

#define CHILDREN      3
#define PARENT_BLOCKS 7
#define PARENT_SIZE   4000

struct tally {
	uint64_t allocations, frees, bytes_allocated, bytes_freed;
};

static void *blocks[1000];

static void say(const struct tally *t)
{
	char line[256];
	int n = snprintf(line, sizeof(line),
			 "expect %d {\"allocations\":%llu,\"frees\":%llu,\"bytes_allocated\":%llu,"
			 "\"bytes_freed\":%llu,\"live_allocations\":%llu,\"live_bytes\":%llu}\n",
			 (int)getpid(), (unsigned long long)t->allocations,
			 (unsigned long long)t->frees, (unsigned long long)t->bytes_allocated,
			 (unsigned long long)t->bytes_freed,
			 (unsigned long long)(t->allocations - t->frees),
			 (unsigned long long)(t->bytes_allocated - t->bytes_freed));

	if (write(1, line, (size_t)n) != n)
		_exit(3);
}

/* Child i: (i + 1) * 100 blocks of 64 * (i + 1) bytes, every other one freed. */
SITE static void site_child(int i, struct tally *t)
{
	int n = (i + 1) * 100;
	size_t size = 64 * (size_t)(i + 1);

	for (int k = 0; k < n; k++) {
		blocks[k] = malloc(size);
		if (!blocks[k])
			_exit(2);
		memset(blocks[k], k, size);
		t->allocations++;
		t->bytes_allocated += size;
	}
	for (int k = 0; k < n; k += 2) {
		free(blocks[k]);
		t->frees++;
		t->bytes_freed += size;
	}
}

SITE static void site_parent(struct tally *t)
{
	for (int k = 0; k < PARENT_BLOCKS; k++) {
		blocks[k] = malloc(PARENT_SIZE);
		if (!blocks[k])
			exit(2);
		t->allocations++;
		t->bytes_allocated += PARENT_SIZE;
	}
}

int main(int argc, char **argv)
{
	char **exec_argv = argc > 2 && !strcmp(argv[1], "--exec-child") ? &argv[2] : NULL;
	int hold = argc > 1 && !strcmp(argv[1], "--hold");
	int late = argc > 1 && !strcmp(argv[1], "--late");
	struct tally parent = {0};
	pid_t pids[CHILDREN];
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	sigwait(&set, &sig);
	site_parent(&parent);
	for (int i = 0; i < CHILDREN; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return 1;
		if (pids[i] == 0) {
			struct tally t = {0};

			if (i == 0 && exec_argv) {
				execv(exec_argv[0], exec_argv);
				_exit(127);
			}
			if (i == 0 && late) {
				sigset_t usr2;

				sigemptyset(&usr2);
				sigaddset(&usr2, SIGUSR2);
				sigwait(&usr2, &sig);
			}
			site_child(i, &t);
			say(&t);
			while (hold)
				pause();
			_exit(0);
		}
	}
	if (hold)
		sigwait(&set, &sig);
	for (int i = late ? 1 : 0, n = 0; n < CHILDREN; n++, i = (i + 1) % CHILDREN) {
		int st;

		if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
		if (late && i == CHILDREN - 1)
			kill(pids[0], SIGUSR2); /* its siblings are gone */
	}
	say(&parent);
	return 0;
}
