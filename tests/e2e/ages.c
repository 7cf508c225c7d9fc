/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Two generations of live blocks for tests/e2e/test_views.py: on the first
 * SIGUSR1 site_old allocates OLD_COUNT blocks of OLD_SIZE and prints "old";
 * on the second site_new allocates NEW_COUNT blocks of NEW_SIZE and prints
 * "new"; the third SIGUSR1 ends it. Nothing is freed, nothing else allocates
 * (stdout's buffer exists before the first phase; later output is write(2)).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OLD_COUNT 7
#define OLD_SIZE  4000
#define NEW_COUNT 3
#define NEW_SIZE  12345

static void *volatile keep[OLD_COUNT + NEW_COUNT];

__attribute__((noinline)) static void site_old(void)
{
	for (int i = 0; i < OLD_COUNT; i++)
		keep[i] = malloc(OLD_SIZE);
}

__attribute__((noinline)) static void site_new(void)
{
	for (int i = 0; i < NEW_COUNT; i++)
		keep[OLD_COUNT + i] = malloc(NEW_SIZE);
}

static void say(const char *s)
{
	if (write(STDOUT_FILENO, s, strlen(s)) < 0)
		_exit(1);
}

static void wait_sigusr1(const sigset_t *set)
{
	int sig;

	while (sigwait(set, &sig) != 0 || sig != SIGUSR1)
		;
}

int main(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	wait_sigusr1(&set);
	site_old();
	say("old\n");
	wait_sigusr1(&set);
	site_new();
	say("new\n");
	wait_sigusr1(&set);
	_exit(keep[0] && keep[OLD_COUNT] ? 0 : 1);
}
