/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A parent that forks without pause, for tests/e2e/test_races.py (a process
 * that forks while the daemon attaches to it):
 *
 *   forkloop [MS]
 *
 * It prints "ready PID", then forks a child about every MS milliseconds
 * (default 4) until
 * SIGUSR1, reaping as it goes. Each child makes exactly PAIRS malloc+free
 * pairs at site_child and ends with _exit (nothing else of it calls the
 * allocator). The parent allocates nothing in the loop; at SIGUSR1 it reaps
 * the rest, prints "forked N" and exits.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef __clang__
#define SITE __attribute__((noinline))
#else
#define SITE __attribute__((noinline, noclone))
#endif

#define PAIRS 50

static volatile sig_atomic_t stop;

static void on_usr1(int sig)
{
	(void)sig;
	stop = 1;
}

SITE static void site_child(void)
{
	for (int i = 0; i < PAIRS; i++) {
		void *volatile p = malloc(48 + (size_t)i);

		free(p);
	}
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 4;
	struct timespec pause = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000};
	char line[64];
	long forked = 0;
	int n;

	signal(SIGUSR1, on_usr1);
	setvbuf(stdout, NULL, _IONBF, 0);
	n = snprintf(line, sizeof(line), "ready %d\n", (int)getpid());
	if (write(1, line, (size_t)n) != n)
		return 1;
	while (!stop) {
		pid_t c = fork();

		if (c == 0) {
			site_child();
			_exit(0);
		}
		if (c > 0)
			forked++;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		nanosleep(&pause, NULL);
	}
	while (wait(NULL) > 0)
		;
	n = snprintf(line, sizeof(line), "forked %ld\n", forked);
	return write(1, line, (size_t)n) == n ? 0 : 1;
}
