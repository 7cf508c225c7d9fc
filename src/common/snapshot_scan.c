// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * snapshot_scan(): check a snapshot's envelope and its sections' framing and
 * count what `memtracectl snapshot -o` reports, inflating a window at a time
 * instead of decoding: a million blocks would be tens of MB of model for
 * three numbers.
 */
#include "memtrace/snapshot.h"
#include "common/snapshot_read.h"
#include "common/snapshot_wire.h"
#include "common/varint.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* The payload inflated a window at a time. */
struct scan {
	z_stream z;
	uint8_t win[1 << 16];
	size_t pos, len;
	uint64_t total; /* bytes taken from the payload */
	int end;	/* zlib said the stream ended */
	int bad;
	const char *overflow; /* the section of a varint too large for 64 bits, or NULL */
	const char *section;  /* the section being read, as the decoder names it */
};

static int scan_fill(struct scan *sc)
{
	int rc;

	if (sc->end)
		return -1;
	sc->z.next_out = sc->win;
	sc->z.avail_out = sizeof(sc->win);
	rc = inflate(&sc->z, Z_NO_FLUSH);
	if (rc != Z_OK && rc != Z_STREAM_END) {
		sc->bad = 1;
		return -1;
	}
	sc->end = rc == Z_STREAM_END;
	sc->pos = 0;
	sc->len = sizeof(sc->win) - sc->z.avail_out;
	return sc->len ? 0 : -1;
}

static int scan_byte(struct scan *sc, uint8_t *b)
{
	if (sc->pos == sc->len && scan_fill(sc))
		return -1;
	*b = sc->win[sc->pos++];
	sc->total++;
	return 0;
}

/* 0, or -1 when the payload ends first (sc->bad says why) or the value does not fit. */
static int scan_varint(struct scan *sc, uint64_t *v)
{
	enum varint_result r = VARINT_MORE;
	unsigned n = 0;
	uint8_t b;

	*v = 0;
	while (r == VARINT_MORE) {
		if (scan_byte(sc, &b))
			return -1;
		r = varint_step(v, &n, b);
	}
	if (r == VARINT_OVERFLOW)
		sc->overflow = sc->section;
	return r == VARINT_DONE ? 0 : -1;
}

static int scan_skip(struct scan *sc, uint64_t n)
{
	while (n) {
		size_t k;

		if (sc->pos == sc->len && scan_fill(sc))
			return -1;
		k = sc->len - sc->pos < n ? sc->len - sc->pos : (size_t)n;
		sc->pos += k;
		sc->total += k;
		n -= k;
	}
	return 0;
}

int snapshot_scan(const uint8_t *buf, size_t len, struct snapshot_counts *out, char *err,
		  size_t errlen)
{
	struct snapshot dummy = {0};
	struct decoder d = {.err = err, .errlen = errlen, .s = &dummy};
	struct scan *sc;
	uint64_t ulen, clen, tag, size, last = 0, v;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (errlen)
		err[0] = '\0';
	if (check_header(&d, buf, len, &ulen, &clen))
		return -1;
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return dec_fail(&d, "out of memory");
	if (inflateInit(&sc->z) != Z_OK) {
		free(sc);
		return dec_fail(&d, "out of memory");
	}
	sc->z.next_in = (Bytef *)(buf + HEADER_SIZE);
	sc->z.avail_in = (uInt)clen;
	/* the sections' framing, and the counts of stacks, timeline and blocks */
	while (sc->total < ulen) {
		uint64_t body_start;

		sc->section = "payload";
		if (scan_varint(sc, &tag) || scan_varint(sc, &size))
			goto truncated;
		if (tag <= last) {
			dec_fail(&d, "section %llu out of order", (unsigned long long)tag);
			goto out;
		}
		if (last < SEC_LAST && tag > last + 1) {
			dec_fail(&d, "missing %s section", section_names[last + 1]);
			goto out;
		}
		last = tag;
		if (size > ulen - sc->total)
			goto truncated;
		body_start = sc->total;
		if (tag == SEC_STACKS || tag == SEC_TIMELINE || tag == SEC_BLOCKS) {
			sc->section = section_names[tag];
			if (tag != SEC_STACKS && scan_varint(sc, &v)) /* interval, older_than */
				goto truncated;
			if (scan_varint(sc, &v))
				goto truncated;
			if (tag == SEC_STACKS)
				out->stacks = v;
			else if (tag == SEC_TIMELINE)
				out->timeline_points = v;
			else
				out->blocks = v;
		}
		if (sc->total - body_start > size || scan_skip(sc, size - (sc->total - body_start)))
			goto truncated;
	}
	if (last < SEC_LAST) {
		dec_fail(&d, "missing %s section", section_names[last + 1]);
		goto out;
	}
	/* exactly the payload, and zlib agrees it ends there */
	if (sc->total != ulen || (sc->pos == sc->len && !sc->end && scan_fill(sc) == 0) ||
	    sc->pos != sc->len || !sc->end || sc->z.avail_in) {
		dec_fail(&d, "corrupt compressed payload");
		goto out;
	}
	rc = 0;
	goto out;
truncated:
	if (sc->overflow)
		dec_fail(&d, "%s section: bad varint", sc->overflow);
	else
		dec_fail(&d, sc->bad ? "corrupt compressed payload" : "payload truncated");
out:
	inflateEnd(&sc->z);
	free(sc);
	return rc;
}
