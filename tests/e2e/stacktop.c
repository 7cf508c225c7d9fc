// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Allocations on a stack whose top page is followed by an inaccessible one
 * (a makecontext stack at the end of its mapping, a PROT_NONE page above
 * it): the walker reads the frames near the top without touching that page,
 * so every stack is whole. descend() recurses 1 to 6 times with 1.5 KiB of
 * locals per frame, so that frames straddle page boundaries: 6 sites of 5
 * blocks, 100 + depth bytes each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#define STACK_PAGES 16

static ucontext_t main_ctx, ctx;
void *volatile kept[64];
static int nkept;

__attribute__((noinline)) static void descend(int depth, int left)
{
	volatile char pad[1536];

	pad[0] = (char)left;
	if (left > 1) {
		descend(depth, left - 1);
		__asm__ volatile("" ::: "memory"); /* not a tail call */
		return;
	}
	kept[nkept++ & 63] = malloc(100 + (size_t)depth);
	(void)pad[0];
}

__attribute__((noinline)) static void on_stack(void)
{
	for (int depth = 1; depth <= 6; depth++)
		for (int i = 0; i < 5; i++)
			descend(depth, depth);
}

int main(void)
{
	size_t page = 4096, size = STACK_PAGES * page;
	char *m =
	    mmap(NULL, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED || mprotect(m + size, page, PROT_NONE) || getcontext(&ctx)) {
		perror("stacktop");
		return 1;
	}
	ctx.uc_stack.ss_sp = m;
	ctx.uc_stack.ss_size = size;
	ctx.uc_link = &main_ctx;
	makecontext(&ctx, on_stack, 0);
	if (swapcontext(&main_ctx, &ctx)) {
		perror("stacktop: swapcontext");
		return 1;
	}
	printf("allocations %d\n", nkept);
	return 0;
}
