// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of the one binary search (common/search.h): against a linear scan
 * on sorted arrays with runs of equal keys, for every key around them, both
 * bounds (first not below, first above), sub-ranges and empty ones; the
 * condition is only ever asked about indices inside the range.
 */
#include "unit.h"

#include "common/search.h"

#include <stdint.h>

static size_t asked_outside;

/* a[mid] >= key, counting any mid outside [lo, hi). */
static int at_least(const uint64_t *a, size_t mid, size_t lo, size_t hi, uint64_t key)
{
	if (mid < lo || mid >= hi)
		asked_outside++;
	return a[mid] >= key;
}

TEST(test_against_linear)
{
	uint64_t a[64];

	for (size_t n = 0; n <= 64; n++) {
		for (size_t i = 0; i < n; i++)
			a[i] = 10 * (i / 3); /* runs of three equal keys */
		for (size_t lo = 0; lo <= n; lo += n / 4 + 1) {
			for (uint64_t key = 0; key <= 10 * (n / 3) + 11; key++) {
				size_t first_not_below = lo, first_above = lo;

				while (first_not_below < n && a[first_not_below] < key)
					first_not_below++;
				while (first_above < n && a[first_above] <= key)
					first_above++;
				CHECK_EQ_U64(SEARCH_FIRST(lo, n, at_least(a, mid, lo, n, key)),
					     first_not_below);
				CHECK_EQ_U64(SEARCH_FIRST(lo, n, a[mid] > key), first_above);
			}
		}
	}
	CHECK_EQ_U64(asked_outside, 0);
}

TEST(test_edges)
{
	static const uint64_t a[] = {1, 2, 3};
	int asked = 0;

	CHECK_EQ_U64(SEARCH_FIRST(0, 0, (asked++, 1)), 0);
	CHECK_EQ_U64(SEARCH_FIRST(2, 2, (asked++, 1)), 2);
	CHECK_EQ_U64(asked, 0); /* an empty range asks nothing */
	CHECK_EQ_U64(SEARCH_FIRST(0, 3, a[mid] > 0), 0);
	CHECK_EQ_U64(SEARCH_FIRST(0, 3, a[mid] > 3), 3);
	/* near the top of size_t: no overflow computing the middle */
	CHECK_EQ_U64(SEARCH_FIRST(SIZE_MAX - 10, SIZE_MAX, mid >= SIZE_MAX - 3), SIZE_MAX - 3);
}

UNIT_MAIN()
