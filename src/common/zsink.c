// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A deflate stream into one growing buffer (zsink.h). zlib does the work;
 * this only grows the output and keeps avail_in/avail_out within their 32
 * bits.
 */
#include "common/zsink.h"

#include <errno.h>
#include <stdlib.h>

/* zlib's counts are 32 bits: at most a gigabyte at a time */
#define PIECE (1u << 30)

int zsink_init(struct zsink *k, size_t start, uint64_t max_in, int level)
{
	*k = (struct zsink){.start = start, .max_in = max_in};
	k->cap = start + 64 * 1024;
	k->data = malloc(k->cap);
	if (!k->data || deflateInit(&k->z, level) != Z_OK) {
		free(k->data);
		k->data = NULL;
		return k->err = -ENOMEM;
	}
	k->started = 1;
	k->z.next_out = k->data + start;
	k->z.avail_out = (uInt)(k->cap - start);
	return 0;
}

static int grow_out(struct zsink *k)
{
	size_t cap = 2 * k->cap, room;
	uint8_t *np = realloc(k->data, cap);

	if (!np)
		return k->err = -ENOMEM;
	k->data = np;
	k->cap = cap;
	room = cap - k->start - k->z.total_out;
	k->z.next_out = np + k->start + k->z.total_out;
	k->z.avail_out = (uInt)(room < PIECE ? room : PIECE);
	return 0;
}

void zsink_put(struct zsink *k, const uint8_t *p, size_t n, int flush)
{
	if (k->err)
		return;
	if (n > k->max_in - k->total_in) {
		k->err = -E2BIG;
		return;
	}
	k->total_in += n;
	do {
		size_t piece = n < PIECE ? n : PIECE;

		n -= piece;
		k->z.next_in = (Bytef *)p;
		k->z.avail_in = (uInt)piece;
		if (piece)
			p += piece;
		for (;;) {
			int rc;

			if (!k->z.avail_out && grow_out(k))
				return;
			rc = deflate(&k->z, n ? Z_NO_FLUSH : flush);
			if (rc == Z_STREAM_END)
				return;
			if ((rc != Z_OK && rc != Z_BUF_ERROR) ||
			    (rc == Z_BUF_ERROR && k->z.avail_out && flush == Z_FINISH && !n)) {
				k->err = -EIO; /* no progress with room to make it: never loop */
				return;
			}
			if (!k->z.avail_in && k->z.avail_out && (n || flush == Z_NO_FLUSH))
				break;
		}
	} while (n);
}

void zsink_free(struct zsink *k)
{
	if (k->started)
		deflateEnd(&k->z);
	free(k->data);
	k->data = NULL;
	k->started = 0;
}
