// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Allocations made in a callback libc calls: qsort's comparator allocates
 * (and frees) one block of 24 bytes per comparison, through a helper of its
 * own. Built without frame pointers by the Makefile (tests/nofp/), like libc
 * itself: the stacks must still run from the helper through libc's qsort to
 * sort_items and main. Prints "compares N" at the end.
 */
#include <stdio.h>
#include <stdlib.h>

#define ITEMS 1000

void *volatile sink;
static long compares;

__attribute__((noinline)) void record_compare(void)
{
	char *p = malloc(24);

	sink = p;
	free(p);
	compares++;
}

__attribute__((noinline)) int compare_items(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	record_compare();
	return x < y ? -1 : x > y;
}

__attribute__((noinline)) void sort_items(int *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), compare_items);
	__asm__ volatile("" ::: "memory");
}

int main(void)
{
	static int v[ITEMS];

	for (int i = 0; i < ITEMS; i++)
		v[i] = (i * 7919) % ITEMS;
	sort_items(v, ITEMS);
	printf("compares %ld\n", compares);
	return 0;
}
