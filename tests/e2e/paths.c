// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Distinct call paths to one allocation helper: path_a -> helper (3 calls),
 * path_b -> helper (5 calls), path_c -> path_d -> helper (7 calls), each
 * allocating 100 bytes that stay live. Each path must be its own stack with
 * exact counts. Built with frame pointers by the Makefile, and without them
 * by the test (the first frame, helper, must still be right).
 */
#include <stdlib.h>
#include <string.h>

void *volatile kept[64];
static int next;

__attribute__((noinline)) void helper(void)
{
	char *p = malloc(100);

	memset(p, 0, 100); /* not a tail call: helper stays on the stack */
	kept[next++ % 64] = p;
}

__attribute__((noinline)) void path_a(void)
{
	helper();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void path_b(void)
{
	helper();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void path_d(void)
{
	helper();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void path_c(void)
{
	path_d();
	__asm__ volatile("" ::: "memory");
}

int main(void)
{
	for (int i = 0; i < 3; i++)
		path_a();
	for (int i = 0; i < 5; i++)
		path_b();
	for (int i = 0; i < 7; i++)
		path_c();
	return 0;
}
