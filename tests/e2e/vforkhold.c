/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A process with a thread that cannot be stopped, for the leak scan's pause
 * bound (tests/e2e/test_scan.py, scan_stop_bound): the thread waits in
 * vfork() for a child that neither executes nor exits until it is killed,
 * and a parent waiting for its vfork child does not stop for ptrace. Prints
 * "ready PID" and then "held CHILD" once the child exists; once the child
 * is gone the thread goes on, and the process exits 0 on SIGTERM.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile pid_t child;

static void *hold(void *arg)
{
	pid_t c;

	(void)arg;
	c = vfork();
	if (c == 0) {
		/* the child shares the parent's memory: it only says who it is, and waits */
		child = (pid_t)syscall(SYS_getpid);
		for (;;)
			pause();
	}
	return NULL;
}

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(void)
{
	pthread_t t;

	signal(SIGTERM, on_term);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	if (pthread_create(&t, NULL, hold, NULL)) {
		perror("vforkhold: pthread_create");
		return 1;
	}
	while (!child)
		usleep(1000);
	printf("held %d\n", (int)child);
	pthread_join(t, NULL);
	while (!stop)
		pause();
	return 0;
}
