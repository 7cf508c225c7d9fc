// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Built twice (libreopen_a.so, libreopen_b.so) with different LOCALS and
 * SIZE: the same code at the same offsets but for the immediates, so that
 * a return address in one is the other's too, with another frame size
 * (tests/e2e/dlreopen.c).
 */
#include <stdlib.h>

void *volatile reopen_blocks[64];

__attribute__((noinline)) void reopen_alloc(int n)
{
	volatile char locals[LOCALS];

	locals[0] = (char)n;
	for (int i = 0; i < n && i < 64; i++)
		reopen_blocks[i] = malloc(SIZE);
	(void)locals[0];
}
