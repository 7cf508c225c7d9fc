// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of the one varint reader (common/varint.h): values of every length
 * read back, the largest 64-bit value, and what does not fit refused as an
 * overflow, whether read whole or a byte at a time; a varint cut short is
 * truncated.
 */
#include "unit.h"

#include "common/varint.h"

static enum varint_result decode(const uint8_t *p, size_t n, uint64_t *v, size_t *used)
{
	const uint8_t *q = p;
	enum varint_result r = varint_decode(&q, p + n, v);

	*used = (size_t)(q - p);
	return r;
}

/* The same bytes a byte at a time, as snapshot_scan() reads them. */
static enum varint_result step_all(const uint8_t *p, size_t n, uint64_t *v)
{
	enum varint_result r = VARINT_MORE;
	unsigned k = 0;

	*v = 0;
	for (size_t i = 0; i < n && r == VARINT_MORE; i++)
		r = varint_step(v, &k, p[i]);
	return r == VARINT_MORE ? VARINT_TRUNCATED : r;
}

TEST(test_round_trip)
{
	static const uint64_t values[] = {0,	      1,	  127,	      128,
					  300,	      16383,	  16384,      UINT32_MAX,
					  1ull << 35, 1ull << 56, 1ull << 62, UINT64_MAX - 1,
					  UINT64_MAX};

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		uint8_t buf[VARINT_MAX_BYTES];
		size_t n = varint_encode(buf, values[i]), used;
		uint64_t v = 12345;

		CHECK_EQ_U64(n, varint_len(values[i]));
		CHECK_EQ_U64(decode(buf, n, &v, &used), VARINT_DONE);
		CHECK_EQ_U64(v, values[i]);
		CHECK_EQ_U64(used, n);
		CHECK_EQ_U64(step_all(buf, n, &v), VARINT_DONE);
		CHECK_EQ_U64(v, values[i]);
		/* one byte short: truncated */
		CHECK_EQ_U64(decode(buf, n - 1, &v, &used), VARINT_TRUNCATED);
		CHECK_EQ_U64(step_all(buf, n - 1, &v), VARINT_TRUNCATED);
	}
	CHECK_EQ_U64(varint_len(UINT64_MAX), VARINT_MAX_BYTES);
}

TEST(test_overflow)
{
	/* 2^64: nine bytes of 0x80 and a tenth of 2 */
	static const uint8_t two64[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02};
	/* UINT64_MAX with one more bit set in the tenth byte */
	static const uint8_t over[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
	/* eleven bytes, however small the value */
	static const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					 0x80, 0x80, 0x80, 0x80, 0x00};
	/* the tenth byte 1: the top bit, fits */
	static const uint8_t top[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
	uint64_t v;
	size_t used;

	CHECK_EQ_U64(decode(two64, sizeof(two64), &v, &used), VARINT_OVERFLOW);
	CHECK_EQ_U64(step_all(two64, sizeof(two64), &v), VARINT_OVERFLOW);
	CHECK_EQ_U64(decode(over, sizeof(over), &v, &used), VARINT_OVERFLOW);
	CHECK_EQ_U64(step_all(over, sizeof(over), &v), VARINT_OVERFLOW);
	CHECK_EQ_U64(decode(eleven, sizeof(eleven), &v, &used), VARINT_OVERFLOW);
	CHECK_EQ_U64(step_all(eleven, sizeof(eleven), &v), VARINT_OVERFLOW);
	CHECK_EQ_U64(decode(top, sizeof(top), &v, &used), VARINT_DONE);
	CHECK_EQ_U64(v, 1ull << 63);
}

UNIT_MAIN()
