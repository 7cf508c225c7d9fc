// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Target for symbolization tests: waits for a line on stdin (so the tracer
 * attaches first), then dlopens the library named by argv[1] and calls its
 * plugin_alloc(), which allocates 7 blocks of 4321 bytes from inside the
 * library, mapped after the tracer attached. Prints "done" and waits for
 * another line before exiting.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	void (*plugin_alloc)(int);
	char line[16];
	void *h;

	if (argc < 2)
		return 2;
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	h = dlopen(argv[1], RTLD_NOW);
	if (!h)
		return 1;
	plugin_alloc = (void (*)(int))dlsym(h, "plugin_alloc");
	if (!plugin_alloc)
		return 1;
	plugin_alloc(7);
	printf("done\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	return 0;
}
