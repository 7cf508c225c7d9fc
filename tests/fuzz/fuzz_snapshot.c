// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the snapshot decoder (src/common/snapshot.c), which reads files
 * given to `memtracectl --from` and the daemon's replies. A snapshot that
 * decodes must re-encode and decode again; on error the reason is one line.
 *
 * The payload sits behind a CRC and zlib, which random mutation rarely gets
 * through. So an input starting with 'P' is a raw payload: this target
 * compresses it and wraps it in a valid header (docs/snapshot-format.md)
 * before decoding, and the fuzzer explores the section decoder directly.
 * Any other input is decoded as it is (header, checksum, zlib checks).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "memtrace/snapshot.h"

#define HEADER 36

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void decode_check(const uint8_t *data, size_t size)
{
	struct snapshot s, again;
	struct snapshot_counts counts;
	char err[256];
	uint8_t *bytes;
	size_t n;
	int scanned = snapshot_scan(data, size, &counts, err, sizeof(err));

	if (!memchr(err, 0, sizeof(err)) || strchr(err, '\n'))
		abort();
	if (snapshot_decode(data, size, &s, err, sizeof(err))) {
		if (!memchr(err, 0, sizeof(err)) || strchr(err, '\n'))
			abort(); /* the reason is one terminated line */
		return;
	}
	/* what decodes, scans, to the same counts (the scan checks less) */
	if (scanned || counts.stacks != s.nstacks || counts.timeline_points != s.ntimeline ||
	    counts.blocks != (s.block_list ? s.block_list->nblocks : 0))
		abort();
	snapshot_events_lost(&s);
	for (uint32_t i = 0; i < s.ntargets; i++)
		snap_target_state_name(s.targets[i].state);
	if (snapshot_encode(&s, &bytes, &n) == 0) {
		if (snapshot_decode(bytes, n, &again, err, sizeof(err)))
			abort(); /* what we encode we must be able to read */
		if (again.nstacks != s.nstacks || again.ntargets != s.ntargets ||
		    memcmp(&again.totals, &s.totals, sizeof(s.totals)))
			abort();
		snapshot_free(&again);
		free(bytes);
	}
	snapshot_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uLongf clen;
	uint8_t *buf;

	if (!size || data[0] != 'P') {
		decode_check(data, size);
		return 0;
	}
	data++;
	size--;
	clen = compressBound(size);
	buf = malloc(HEADER + clen);
	if (!buf || compress2(buf + HEADER, &clen, data, size, 1) != Z_OK) {
		free(buf);
		return 0;
	}
	memcpy(buf, "MTSNAP\r\n", 8);
	put_le(buf + 8, 1, 4);
	put_le(buf + 12, 0, 4);
	put_le(buf + 16, size, 8);
	put_le(buf + 24, clen, 8);
	put_le(buf + 32, crc32(0, buf + HEADER, (uInt)clen), 4);
	decode_check(buf, HEADER + clen);
	free(buf);
	return 0;
}
