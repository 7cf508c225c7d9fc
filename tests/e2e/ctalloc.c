// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The workload of a real container (tests/e2e/test_container.py), linked
 * -static so that it runs in any root filesystem: it makes N allocations of
 * SIZE bytes (argv[1], argv[2]; default 16 of 1 MiB) in hold_block, writes
 * every page so they are charged to the container's memory cgroup, frees
 * none, prints "expect {json}" with its own pid (1, as the container sees it)
 * and the counts, and waits until it is killed. With --wait it first prints
 * "ready PID" and allocates only on SIGUSR1 (a tracer attaching to it as it
 * runs). Nothing else allocates: no stdio (snprintf to the stack, write(2)),
 * so a tracer that saw it from its exec counts exactly these allocations.
 * As pid 1 of its namespace it gets only the signals it handles: SIGUSR1,
 * and SIGTERM, on which it exits.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile keep[4096];
static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

static void on_term(int sig)
{
	(void)sig;
	_exit(0);
}

static void say(const char *line)
{
	size_t n = strlen(line);

	while (n > 0) {
		ssize_t w = write(1, line, n);

		if (w <= 0)
			_exit(3);
		line += w;
		n -= (size_t)w;
	}
}

__attribute__((noinline)) static void *hold_block(long size)
{
	void *p = malloc((size_t)size);

	if (!p) {
		say("ctalloc: malloc failed\n");
		_exit(1);
	}
	memset(p, 0x5a, (size_t)size);
	return p;
}

int main(int argc, char **argv)
{
	int wait = argc > 1 && strcmp(argv[argc - 1], "--wait") == 0;
	int nargs = argc - wait;
	long n = nargs > 1 ? strtol(argv[1], NULL, 10) : 16;
	long size = nargs > 2 ? strtol(argv[2], NULL, 10) : 1 << 20;
	char line[256];
	sigset_t none;

	if (n < 1 || n > 4096 || size < 1 || size > (1L << 30)) {
		say("usage: ctalloc [N [SIZE]] [--wait] (N 1 to 4096, SIZE at most 1 GiB)\n");
		return 2;
	}
	signal(SIGTERM, on_term);
	signal(SIGUSR1, on_usr1);
	if (wait) {
		sigset_t usr1;

		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		sigprocmask(SIG_BLOCK, &usr1, NULL);
		snprintf(line, sizeof(line), "ready %d\n", (int)getpid());
		say(line);
		sigemptyset(&none);
		while (!go)
			sigsuspend(&none);
	}
	for (long i = 0; i < n; i++)
		keep[i] = hold_block(size);
	snprintf(line, sizeof(line),
		 "expect {\"pid\": %d, \"function\": \"hold_block\", \"allocations\": %ld, "
		 "\"bytes_allocated\": %ld, \"frees\": 0, \"live_bytes\": %ld}\n",
		 (int)getpid(), n, n * size, n * size);
	say(line);
	for (;;)
		pause();
}
