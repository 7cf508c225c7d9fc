/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A process memtraced must refuse: tests/e2e/run.py links this file with -static and strips
 * the result, so no malloc symbol is left for a probe. It only sleeps (60 s, or argv[1]
 * seconds) and exits; built by the Makefile's normal rule it is a harmless dynamic sleeper.
 */
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	struct timespec end, now;
	long seconds = argc > 1 ? strtol(argv[1], NULL, 10) : 60;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += seconds;
	do {
		struct timespec nap = {.tv_sec = 1};

		nanosleep(&nap, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec < end.tv_sec);
	return 0;
}
