// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of CPython line tables (src/daemon/symbols/pystacks.c), 3.11+ and 3.10: the line of every
 * instruction of a real function's code object, as CPython 3.12's
 * co_lines() reports it (the vectors below were printed by it), including
 * multi-line expressions, a long-form entry, instructions without a line and
 * indexes past the table.
 */
#include "unit.h"

#include "daemon/symbols/pystacks.h"

/*
 * def f(n):                     # line 1
 *     a = [bytes(10)
 *          for i in range(n)]
 *
 *     b = {"k": n,
 *          "v": str(n)}
 *     if n > 3:
 *         return a, b
 *     return None
 */
static const uint8_t lt312[] = {
    0x80, 0x0,	0xe4, 0x12, 0x17, 0x98, 0x1,  0x93, 0x28, 0xf6, 0x3,  0x1,  0x9,  0x1c,
    0xd8, 0xd,	0xe,  0xf4, 0x3,  0x0,	0xa,  0xf,  0x88, 0x72, 0x8d, 0x19, 0xf0, 0x0,
    0x1,  0x9,	0x1c, 0x80, 0x41, 0xf0, 0x0,  0x1,  0x9,  0x1c, 0xf0, 0x6,  0x0,  0xf,
    0x10, 0xdc, 0xe,  0x11, 0x90, 0x21, 0x8b, 0x66, 0xf1, 0x3,	0x1,  0x9,  0x16, 0x80,
    0x41, 0xe0, 0x7,  0x8,  0x88, 0x31, 0x82, 0x75, 0xd8, 0xf,	0x10, 0x90, 0x21, 0x88,
    0x74, 0x88, 0xb,  0xd8, 0xb,  0xf,	0xf9, 0xf2, 0xf,  0x1,	0x9,  0x1c};
static const int64_t lines312[] = {1, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2,  2,  3, 2, 2,
				   2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 5, 6, 6, 6,  6,  6, 6, 6,
				   6, 6, 6, 5, 5, 5, 7, 7, 7, 7, 7, 8, 8, 8, 8, 9, -1, -1, 2, 2, 2};

TEST(test_cpython312_lines)
{
	for (size_t i = 0; i < sizeof(lines312) / sizeof(lines312[0]); i++) {
		int64_t got = pystacks_line(lt312, sizeof(lt312), 1, i);

		if (got != lines312[i])
			fprintf(stderr, "instruction %zu: line %lld, want %lld\n", i,
				(long long)got, (long long)lines312[i]);
		CHECK(got == lines312[i]);
	}
	/* past the table, and an empty table */
	CHECK(pystacks_line(lt312, sizeof(lt312), 1, 1000) == -1);
	CHECK(pystacks_line(lt312, 0, 1, 0) == -1);
}

static const uint8_t lt310[] = {0x6, 0x1, 0x6,	0x1, 0x6, 0xff, 0x2, 0x3, 0x6,
				0x1, 0x6, 0xff, 0x8, 0x2, 0x8,	0x1, 0x4, 0x1};
static const int64_t lines310[] = {2, 2, 2, 3, 3, 3, 2, 2, 2, 5, 6, 6, 6,
				   5, 5, 5, 7, 7, 7, 7, 8, 8, 8, 8, 9, 9};

TEST(test_cpython310_lines)
{
	for (size_t i = 0; i < sizeof(lines310) / sizeof(lines310[0]); i++) {
		int64_t got = pystacks_line310(lt310, sizeof(lt310), 1, i);

		if (got != lines310[i])
			fprintf(stderr, "3.10 instruction %zu: line %lld, want %lld\n", i,
				(long long)got, (long long)lines310[i]);
		CHECK(got == lines310[i]);
	}
	CHECK(pystacks_line310(lt310, sizeof(lt310), 1, 1000) == -1);
	CHECK(pystacks_line310(lt310, sizeof(lt310) - 1, 1, 25) == -1); /* odd length */
}

TEST(test_truncated_and_garbage)
{
	static const uint8_t cut[] = {0xf0}; /* long form without its varints */
	static const uint8_t junk[] = {0x01, 0x02};

	CHECK(pystacks_line(cut, sizeof(cut), 10, 0) == 10);
	CHECK(pystacks_line(junk, sizeof(junk), 10, 0) == -1);
	/* every prefix of a real table reads without going past its end */
	for (size_t n = 0; n < sizeof(lt312); n++)
		(void)pystacks_line(lt312, n, 1, 62);
}

UNIT_MAIN()
