/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Base-128 varints, the integer encoding of snapshots and of pprof's
 * protocol buffers alike: 7 bits a byte, least significant first, the high
 * bit set on every byte but the last.
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

#endif
