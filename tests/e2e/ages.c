/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Two generations of live blocks for tests/e2e/test_views.py: on the first
 * SIGUSR1 site_old allocates OLD_COUNT blocks of OLD_SIZE and prints "old";
 * on the second site_new allocates NEW_COUNT blocks of NEW_SIZE and prints
 * "new"; on the third site_temporary makes TEMP_COUNT malloc/free pairs
 * (temporary for any threshold) and site_held allocates HELD_COUNT blocks
 * and frees all but the last, oldest first (block i is freed after
 * HELD_COUNT - 1 - i further allocations: temporary only for a threshold
 * above that), then prints "temp"; the fourth SIGUSR1 ends it. Nothing else
 * allocates (stdout's buffer exists before the first phase; later output is
 * write(2)). --no-wait runs the phases at once and exits.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OLD_COUNT  7
#define OLD_SIZE   4000
#define NEW_COUNT  3
#define NEW_SIZE   12345
#define TEMP_COUNT 5
#define TEMP_SIZE  77
#define HELD_COUNT 4
#define HELD_SIZE  55

static void *volatile keep[OLD_COUNT + NEW_COUNT];
static void *volatile held[HELD_COUNT];

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

__attribute__((noinline)) static void site_temporary(void)
{
	for (int i = 0; i < TEMP_COUNT; i++) {
		void *volatile p = malloc(TEMP_SIZE);

		free(p);
	}
}

__attribute__((noinline)) static void site_held(void)
{
	for (int i = 0; i < HELD_COUNT; i++)
		held[i] = malloc(HELD_SIZE);
	for (int i = 0; i < HELD_COUNT - 1; i++)
		free(held[i]);
}

static void say(const char *s)
{
	if (write(STDOUT_FILENO, s, strlen(s)) < 0)
		_exit(1);
}

static int no_wait;

static void wait_sigusr1(const sigset_t *set)
{
	int sig;

	if (no_wait)
		return;
	while (sigwait(set, &sig) != 0 || sig != SIGUSR1)
		;
}

int main(int argc, char **argv)
{
	sigset_t set;

	no_wait = argc > 1 && !strcmp(argv[1], "--no-wait");
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
	site_temporary();
	site_held();
	say("temp\n");
	wait_sigusr1(&set);
	_exit(keep[0] && keep[OLD_COUNT] ? 0 : 1);
}
