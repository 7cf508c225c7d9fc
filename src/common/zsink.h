/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A deflate stream into one growing buffer, with room kept free before the
 * compressed bytes (for a header, and for a reply's framing before that):
 * the snapshot encoder feeds it each section as soon as the section is made,
 * so a snapshot of a million blocks is never also held whole uncompressed.
 */
#ifndef MEMTRACE_ZSINK_H
#define MEMTRACE_ZSINK_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

struct zsink {
	z_stream z;
	int started;
	uint8_t *data;	   /* start bytes kept free, then the compressed ones */
	size_t cap, start; /* start: bytes before the compressed stream */
	uint64_t total_in; /* uncompressed bytes taken */
	uint64_t max_in;   /* more than this is -E2BIG */
	int err;	   /* 0, -ENOMEM, -E2BIG or -EIO: the first failure */
};

/* 0, or -ENOMEM (k->err set too). */
int zsink_init(struct zsink *k, size_t start, uint64_t max_in, int level);
/*
 * Compress n bytes of p; flush is Z_NO_FLUSH, or Z_FINISH once at the end
 * (n may be 0). Failures are remembered in k->err; later calls do nothing.
 */
void zsink_put(struct zsink *k, const uint8_t *p, size_t n, int flush);
/* Compressed bytes so far (after start). */
static inline uint64_t zsink_out(const struct zsink *k)
{
	return k->z.total_out;
}
/* Free what the sink holds (data, unless taken: set it to NULL first). */
void zsink_free(struct zsink *k);

#endif
