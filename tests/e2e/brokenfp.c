// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Target whose frame-pointer chain breaks on purpose: call_with_bad_fp uses
 * %rbp as a plain register (as code built without frame pointers may), so
 * stacks through it end there. The tracer must say so, not guess further.
 * alloc_cb makes 10 allocations of 333 bytes.
 */
#include <stdlib.h>

void *volatile sink[16];

__attribute__((noinline)) void alloc_cb(void)
{
	static int i;

	sink[i++ % 16] = malloc(333);
}

__attribute__((naked)) void call_with_bad_fp(__attribute__((unused)) void (*fn)(void))
{
	__asm__("push %rbp\n\t"
		"mov $8, %rbp\n\t"
		"call *%rdi\n\t"
		"pop %rbp\n\t"
		"ret\n\t");
}

int main(void)
{
	for (int i = 0; i < 10; i++)
		call_with_bad_fp(alloc_cb);
	return 0;
}
