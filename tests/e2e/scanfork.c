/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A leak scan of a forked child, whose heap holds the blocks it inherited
 * (tests/e2e/test_scan.py, scan_forked; memtraced --follow-forks --
 * scanfork). Before forking, the parent allocates KEPT_N blocks held by a
 * global (site_kept) and LOST_N blocks it drops (site_lost). The child then
 * drops one of the kept blocks (its copy of the global no longer holds it;
 * the parent's still does), frees another, and drops CHILD_N blocks of its
 * own (site_child_lost). So, by construction:
 *
 *   child:  direct site_lost LOST_N, site_kept 1, site_child_lost CHILD_N;
 *           site_kept's other KEPT_N - 2 blocks reachable
 *   parent: direct site_lost LOST_N; site_kept's KEPT_N blocks reachable
 *
 * Each writes "pid PID" (write(2): no allocation) and then waits; SIGUSR1
 * ends the child, and the parent once its child is gone. Sizes are
 * multiples of 16 (see scanprog.c).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEPT_N	   6
#define KEPT_SIZE  48
#define LOST_N	   4
#define LOST_SIZE  64
#define CHILD_N	   3
#define CHILD_SIZE 80

#define NOINLINE __attribute__((noinline))

static void *volatile kept[KEPT_N];
static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

/* Zero the dead stack below: what callees left there are copies of pointers. */
NOINLINE static void scrub_stack(void)
{
	volatile char junk[16384];

	memset((char *)junk, 0, sizeof(junk));
	__asm__ volatile("" ::"r"(junk) : "memory");
}

NOINLINE static void site_kept(void)
{
	for (int i = 0; i < KEPT_N; i++) {
		kept[i] = malloc(KEPT_SIZE);
		memset(kept[i], 1, KEPT_SIZE);
	}
}

NOINLINE static void site_lost(void)
{
	for (int i = 0; i < LOST_N; i++) {
		void *volatile p = malloc(LOST_SIZE);

		memset(p, 2, LOST_SIZE);
		p = NULL;
	}
}

NOINLINE static void site_child_lost(void)
{
	for (int i = 0; i < CHILD_N; i++) {
		void *volatile p = malloc(CHILD_SIZE);

		memset(p, 3, CHILD_SIZE);
		p = NULL;
	}
}

static void say(const char *who)
{
	char line[64];
	int n = snprintf(line, sizeof(line), "%s %d\n", who, (int)getpid());

	if (write(1, line, (size_t)n) != n)
		_exit(3);
}

/* Until SIGUSR1, the pointers of the cases out of every register and the stack. */
static void wait_usr1(const sigset_t *old)
{
	scrub_stack();
	while (!go)
		sigsuspend(old);
}

int main(void)
{
	struct sigaction sa = {.sa_handler = on_usr1};
	sigset_t block, old;
	pid_t child;

	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);
	site_kept();
	site_lost();
	scrub_stack();
	child = fork();
	if (child < 0)
		return 2;
	if (child == 0) {
		kept[0] = NULL; /* leaked in the child alone */
		free(kept[1]);
		kept[1] = NULL;
		site_child_lost();
		say("child");
		wait_usr1(&old);
		return 0;
	}
	say("parent");
	scrub_stack();
	if (waitpid(child, NULL, 0) != child)
		return 4;
	return 0;
}
