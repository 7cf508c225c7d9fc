// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Target whose call frame information the DWARF walker cannot follow on
 * purpose: call_through_expression describes its CFA with a DWARF
 * expression (two dereferences) the compact rows cannot hold, so stacks
 * through it end there, marked truncated, not guessed further. alloc_cb
 * makes 10 allocations of 444 bytes.
 */
#include <stdlib.h>

void *volatile sink[16];

__attribute__((noinline)) void alloc_cb(void)
{
	static int i;

	sink[i++ % 16] = malloc(444);
}

__attribute__((naked)) void call_through_expression(__attribute__((unused)) void (*fn)(void))
{
	__asm__("push %rbp\n\t"
		/* DW_CFA_def_cfa_expression: breg7 8; deref; deref */
		".cfi_escape 0x0f, 0x04, 0x77, 0x08, 0x06, 0x06\n\t"
		"call *%rdi\n\t"
		"pop %rbp\n\t"
		"ret\n\t");
}

int main(void)
{
	for (int i = 0; i < 10; i++)
		call_through_expression(alloc_cb);
	return 0;
}
