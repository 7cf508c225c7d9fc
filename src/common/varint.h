/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Base-128 varints, the integer encoding of snapshots and of pprof's
 * protocol buffers alike: 7 bits a byte, least significant first, the high
 * bit set on every byte but the last. One writer and one reader for every
 * program: a value must fit in 64 bits (at most 10 bytes, the 10th 0 or 1),
 * anything longer is refused, never wrapped.
 */
#ifndef MEMTRACE_VARINT_H
#define MEMTRACE_VARINT_H

#include <stddef.h>
#include <stdint.h>

#define VARINT_MAX_BYTES 10

/* Write v into out; returns the number of bytes (1 to VARINT_MAX_BYTES). */
static inline size_t varint_encode(uint8_t out[VARINT_MAX_BYTES], uint64_t v)
{
	size_t n = 0;

	do {
		out[n] = v & 0x7f;
		v >>= 7;
		if (v)
			out[n] |= 0x80;
		n++;
	} while (v);
	return n;
}

/* The bytes varint_encode() writes for v. */
static inline size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >>= 7)
		n++;
	return n;
}

/* What varint_step() and varint_decode() say. */
enum varint_result {
	VARINT_DONE = 1,       /* the value is whole */
	VARINT_MORE = 0,       /* more bytes follow */
	VARINT_TRUNCATED = -1, /* varint_decode(): the bytes ended first */
	VARINT_OVERFLOW = -2,  /* the value does not fit in 64 bits */
};

/*
 * Take one more byte of a varint, for readers that get bytes one at a time:
 * start with *v = 0 and *n = 0 (bytes taken). VARINT_DONE when the byte ends
 * the value (in *v), VARINT_MORE when another follows, VARINT_OVERFLOW when
 * the value would not fit in 64 bits.
 */
static inline enum varint_result varint_step(uint64_t *v, unsigned *n, uint8_t byte)
{
	unsigned shift = 7 * *n;

	if (*n == VARINT_MAX_BYTES - 1 && byte > 1)
		return VARINT_OVERFLOW; /* bits past the 64th, or an 11th byte */
	*v |= (uint64_t)(byte & 0x7f) << shift;
	(*n)++;
	return byte & 0x80 ? VARINT_MORE : VARINT_DONE;
}

/*
 * Read a varint from [*p, end): VARINT_DONE with the value in *v and *p past
 * it, else VARINT_TRUNCATED or VARINT_OVERFLOW (*p then undefined).
 */
static inline enum varint_result varint_decode(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned n = 0;

	*v = 0;
	while (*p < end) {
		enum varint_result r = varint_step(v, &n, *(*p)++);

		if (r != VARINT_MORE)
			return r;
	}
	return VARINT_TRUNCATED;
}

#endif
