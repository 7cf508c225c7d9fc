// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A native process that maps anonymous memory itself, as pymalloc does for
 * its arenas, and makes one large malloc (which glibc maps inside malloc):
 * without a CPython in it, memtraced must count the malloc and nothing of
 * the mmaps (test python_arenas_native).
 *
 *     anonmap SIGNAL_FILE
 *
 * Prints "ready", waits for SIGNAL_FILE, maps 8 regions of 1 MiB (touching
 * them), unmaps 3, mallocs 4 MiB, prints "done", waits for SIGNAL_FILE to go.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void *volatile keep[8];

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	while (access(argv[1], F_OK))
		usleep(10000);
	for (int i = 0; i < 8; i++) {
		keep[i] =
		    mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (keep[i] == MAP_FAILED)
			return 1;
		memset(keep[i], 1, 1 << 20);
	}
	for (int i = 0; i < 3; i++)
		munmap(keep[i], 1 << 20);
	keep[0] = malloc(4 << 20);
	printf("done\n");
	while (!access(argv[1], F_OK))
		usleep(10000);
	free(keep[0]);
	return 0;
}
