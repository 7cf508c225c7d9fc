// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The leak scan's workload (tests/bench/scanbench.py): BLOCKS live blocks of
 * 48 bytes in chains of 16 (each block points to the next), the chains held
 * by one table, except one chain in a hundred whose head was dropped (a
 * direct leak and 15 indirect ones), plus anonymous memory of its own
 * (untraced, like a cache or a buffer pool) filled with data that is mostly
 * not pointers and one word in 64 pointing at a block, so that the process
 * has about MB megabytes of written memory in all.
 *
 *     scanheap BLOCKS MB
 *
 * prints "ready"; on the line "build" on stdin makes the heap and prints
 * "built LEAKED" (the blocks it leaked); "quit" exits.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BLOCK_SIZE 48
#define CHAIN	   16

struct block {
	struct block *next;
	uint64_t payload[5];
};

static struct block **table;
static uint64_t *pool;

__attribute__((noinline)) static struct block *chain_block(struct block *next, uint64_t i)
{
	struct block *b = malloc(sizeof(*b));

	b->next = next;
	for (int k = 0; k < 5; k++)
		b->payload[k] = i * 2654435761u + (uint64_t)k;
	return b;
}

static long build(long blocks, long mb)
{
	long chains = blocks / CHAIN, leaked = 0;
	size_t pool_words;
	uint64_t x = 88172645463325252ull;
	size_t held;

	table = calloc((size_t)chains, sizeof(*table));
	for (long c = 0; c < chains; c++) {
		struct block *head = NULL;

		for (int k = 0; k < CHAIN; k++)
			head = chain_block(head, (uint64_t)(c * CHAIN + k));
		/* the head dropped: the chain is lost (never the last one, whose head the
		 * caller's registers may still hold when it returns) */
		if (c % 100 == 50 && c + 1 < chains) {
			leaked += CHAIN;
			continue;
		}
		table[c] = head;
	}
	/* the rest of MB as memory of its own, written */
	held = (size_t)blocks * 64 + (size_t)chains * 8;
	if ((size_t)mb << 20 <= held)
		return leaked;
	pool_words = (((size_t)mb << 20) - held) / 8;
	pool =
	    mmap(NULL, pool_words * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pool == MAP_FAILED)
		return -1;
	for (size_t i = 0; i < pool_words; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (i % 64 == 0 && chains) {
			long c = (long)(x % (uint64_t)chains);

			pool[i] = table[c] ? (uint64_t)(uintptr_t)table[c] : 0;
		} else {
			pool[i] = x & 0xffffffffffull; /* 40 bits: a number, not an address */
		}
	}
	return leaked;
}

int main(int argc, char **argv)
{
	long blocks = argc > 1 ? atol(argv[1]) : 100000, mb = argc > 2 ? atol(argv[2]) : 100;
	char line[64];

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "build\n"))
			printf("built %ld\n", build(blocks, mb));
		else if (!strcmp(line, "quit\n"))
			break;
	}
	return 0;
}
