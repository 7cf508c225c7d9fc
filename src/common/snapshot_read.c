// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Reading untrusted snapshot bytes (snapshot_read.h): the header's checks and
 * the bounded readers every section decoder uses.
 */
#include "memtrace/snapshot.h"
#include "common/snapshot_read.h"
#include "common/snapshot_wire.h"
#include "common/util.h"
#include "common/varint.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

int dec_fail(struct decoder *d, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!d->errlen)
		return -1;
	n = snprintf(d->err, d->errlen, "snapshot: ");
	if (n >= 0 && (size_t)n < d->errlen) {
		va_start(ap, fmt);
		vsnprintf(d->err + n, d->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

void *dec_part(struct decoder *d, size_t size)
{
	void *p = calloc(1, size);

	if (!p)
		dec_fail(d, "out of memory");
	return p;
}

size_t rd_left(const struct reader *r)
{
	return (size_t)(r->end - r->p);
}

int rd_varint(struct reader *r, uint64_t *v)
{
	switch (varint_decode(&r->p, r->end, v)) {
	case VARINT_DONE:
		return 0;
	case VARINT_TRUNCATED:
		return dec_fail(r->d, "%s section: truncated", r->section);
	default:
		return dec_fail(r->d, "%s section: bad varint", r->section);
	}
}

int rd_u32(struct reader *r, uint32_t *v)
{
	uint64_t x;

	if (rd_varint(r, &x))
		return -1;
	if (x > UINT32_MAX)
		return dec_fail(r->d, "%s section: value out of range", r->section);
	*v = (uint32_t)x;
	return 0;
}

int rd_i64(struct reader *r, int64_t *v)
{
	uint64_t x;

	if (rd_varint(r, &x))
		return -1;
	*v = unzigzag(x);
	return 0;
}

int rd_string(struct reader *r, char **s)
{
	uint64_t ref;

	if (rd_varint(r, &ref))
		return -1;
	if (ref > r->d->nstrings)
		return dec_fail(r->d, "%s section: string index out of range", r->section);
	*s = ref ? r->d->strings[ref - 1] : NULL;
	return 0;
}

/* A count of entries each at least min_bytes long, at most max of them. */
int rd_count(struct reader *r, size_t min_bytes, uint32_t max, uint32_t *count)
{
	uint64_t n;

	if (rd_varint(r, &n))
		return -1;
	if (n > max)
		return dec_fail(r->d, "%s section: %llu entries exceed the limit of %u", r->section,
				(unsigned long long)n, max);
	if (n > rd_left(r) / min_bytes)
		return dec_fail(r->d, "%s section: truncated", r->section);
	*count = (uint32_t)n;
	return 0;
}

int rd_fields(struct reader *r, void *base, const size_t *offsets, size_t nfields)
{
	uint64_t n, v;

	if (rd_varint(r, &n))
		return -1;
	/* Each field is at least one byte, so the loop ends with the section. */
	for (uint64_t i = 0; i < n; i++) {
		if (rd_varint(r, &v))
			return -1;
		if (i < nfields)
			memcpy((char *)base + offsets[i], &v, sizeof(v));
	}
	return 0;
}

int rd_counters(struct reader *r, struct mt_counters *c)
{
	size_t offsets[MT_NCOUNTERS];

	for (size_t i = 0; i < MT_NCOUNTERS; i++)
		offsets[i] = mt_counter_descs[i].offset;
	if (rd_fields(r, c, offsets, MT_NCOUNTERS))
		return -1;
	return 0;
}

/* Checks the header; returns the payload's compressed and full lengths. */
int check_header(struct decoder *d, const uint8_t *buf, size_t len, uint64_t *ulen, uint64_t *clen)
{
	uint32_t version, flags;

	if (len < 8) {
		if (!len || !memcmp(buf, SNAPSHOT_MAGIC, len))
			return dec_fail(d, "truncated");
		return dec_fail(d, "not a memtrace snapshot");
	}
	if (memcmp(buf, SNAPSHOT_MAGIC, 8))
		return dec_fail(d, "not a memtrace snapshot");
	if (len < HEADER_SIZE)
		return dec_fail(d, "truncated");
	version = get_le32(buf + 8);
	flags = get_le32(buf + 12);
	*ulen = get_le64(buf + 16);
	*clen = get_le64(buf + 24);
	if (version > SNAPSHOT_VERSION)
		return dec_fail(d, "version %u is newer than this program supports", version);
	if (version == 0)
		return dec_fail(d, "bad version 0");
	if (flags)
		return dec_fail(d, "unknown flags 0x%x", flags);
	if (*clen > len - HEADER_SIZE)
		return dec_fail(d, "truncated");
	if (*clen < len - HEADER_SIZE)
		return dec_fail(d, "%llu bytes of garbage after the payload",
				(unsigned long long)(len - HEADER_SIZE - *clen));
	if (*ulen > SNAPSHOT_MAX_BYTES || *ulen > (uint64_t)*clen * MAX_ZLIB_RATIO + ZLIB_SLACK ||
	    *ulen != (uLong)*ulen)
		return dec_fail(d, "payload length %llu is not believable",
				(unsigned long long)*ulen);
	if (get_le32(buf + 32) != (uint32_t)crc32_z(0, buf + HEADER_SIZE, (z_size_t)*clen))
		return dec_fail(d, "bad checksum");
	d->s->version = version;
	return 0;
}
