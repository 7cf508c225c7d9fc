// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A library dlopened by dlopen_host after the tracer attached. */
#include <stdlib.h>

void *volatile plugin_blocks[64];

__attribute__((noinline)) void plugin_alloc(int n)
{
	for (int i = 0; i < n && i < 64; i++)
		plugin_blocks[i] = malloc(4321);
}
