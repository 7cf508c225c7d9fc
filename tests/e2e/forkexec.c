/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A parent that forks a short-lived child and then executes another program, for
 * tests/e2e/test_races.py (memtraced --follow-forks): prints "ready PID", waits for SIGUSR1,
 * then forks a child that allocates CHILD_BLOCKS blocks of CHILD_SIZE bytes from
 * site_fork_child and exits; the parent reaps it (its /proc entry is gone), prints
 * "expect CHILD {json}" in check_sites' form and executes ARGV[1..] (sleep, say). The daemon
 * drains the fork after all of this when it was held up meanwhile: the child's stacks must
 * still be named from the program it ran, which neither /proc/CHILD nor /proc/PARENT shows
 * any more.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef __clang__
#define SITE __attribute__((noinline))
#else
#define SITE __attribute__((noinline, noclone))
#endif

#define CHILD_BLOCKS 50
#define CHILD_SIZE   3000

static void *volatile blocks[CHILD_BLOCKS];

SITE static void site_fork_child(void)
{
	for (int k = 0; k < CHILD_BLOCKS; k++)
		blocks[k] = malloc(CHILD_SIZE);
}

int main(int argc, char **argv)
{
	sigset_t set;
	int sig, status;
	pid_t child;

	if (argc < 2) {
		fprintf(stderr, "usage: forkexec PROG [ARGS...]\n");
		return 2;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (sigwait(&set, &sig))
		return 1;
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		site_fork_child();
		_exit(0);
	}
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	printf("expect %d {\"ok\":true,\"sites\":{\"site_fork_child\":{\"allocations\":%d,"
	       "\"bytes_allocated\":%d,\"frees\":0,\"bytes_freed\":0,\"live_allocations\":%d,"
	       "\"live_bytes\":%d,\"peak_live_bytes\":%d}}}\n",
	       (int)child, CHILD_BLOCKS, CHILD_BLOCKS * CHILD_SIZE, CHILD_BLOCKS,
	       CHILD_BLOCKS * CHILD_SIZE, CHILD_BLOCKS * CHILD_SIZE);
	fflush(stdout);
	execvp(argv[1], argv + 1);
	return 127;
}
