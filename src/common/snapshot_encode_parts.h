/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Inside the snapshot encoder (snapshot_encode.c): the deflate sink the
 * payload streams into, the buffer sections are written into (inline: every
 * section's every number goes through it), and the encoders of the sections
 * that a snapshot may or may not carry (snapshot_encode_parts.c). Not for
 * other files.
 */
#ifndef MEMTRACE_COMMON_SNAPSHOT_ENCODE_PARTS_H
#define MEMTRACE_COMMON_SNAPSHOT_ENCODE_PARTS_H

#include <stddef.h>
#include <stdint.h>

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "memtrace/snapshot.h"
#include "common/snapshot_wire.h"
#include "common/varint.h"

/*
 * A deflate stream into one growing buffer, with room kept free before the
 * compressed bytes (for a header, and for a reply's framing before that):
 * the snapshot encoder feeds it each section as soon as the section is made,
 * so a snapshot of a million blocks is never also held whole uncompressed.
 */
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

/*
 * The encoder's growable buffers and tables remember the first allocation
 * failure instead of aborting: a snapshot of a huge heap must not take the
 * daemon down. snapshot_encode() reports it as -ENOMEM at the end.
 */
struct wbuf {
	uint8_t *data;
	size_t len, cap;
	int *nomem;
	struct zsink *sink; /* the payload: what is put here goes on to the sink */
};

static inline int enc_grow(void **p, size_t *cap, size_t need, size_t elem, int *nomem)
{
	size_t ncap = *cap ? *cap : 64;
	void *np;

	if (*nomem)
		return -1;
	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	np = ncap <= SIZE_MAX / elem ? realloc(*p, ncap * elem) : NULL;
	if (!np) {
		*nomem = 1;
		return -1;
	}
	*p = np;
	*cap = ncap;
	return 0;
}

static inline void wbuf_put(struct wbuf *w, const void *p, size_t n)
{
	if (!n || enc_grow((void **)&w->data, &w->cap, w->len + n, 1, w->nomem))
		return;
	memcpy(w->data + w->len, p, n);
	w->len += n;
}

static inline void enc_varint(struct wbuf *w, uint64_t v)
{
	uint8_t tmp[VARINT_MAX_BYTES];

	wbuf_put(w, tmp, varint_encode(tmp, v));
}

static inline void enc_counters(struct wbuf *w, const struct mt_counters *c)
{
	enc_varint(w, MT_NCOUNTERS);
	for (size_t i = 0; i < MT_NCOUNTERS; i++)
		enc_varint(w, mt_counter_get(c, i));
}

/* What out holds goes on to its sink, if it has one. */
static inline void enc_flush(struct wbuf *out)
{
	if (!out->sink || !out->len || *out->nomem)
		return;
	zsink_put(out->sink, out->data, out->len, Z_NO_FLUSH);
	out->len = 0;
}

/* Section bodies are built in body, then framed as tag, length, body. */
static inline void enc_section(struct wbuf *out, struct wbuf *body, enum section tag)
{
	enc_varint(out, tag);
	enc_varint(out, body->len);
	if (out->sink && !*body->nomem) {
		enc_flush(out);
		zsink_put(out->sink, body->data, body->len, Z_NO_FLUSH);
	} else {
		wbuf_put(out, body->data, body->len);
	}
	body->len = 0;
}

/* A list of figures: their count, then each. */
static inline void enc_figures(struct wbuf *body, const uint64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		enc_varint(body, v[i]);
}

/* A timeline point's live heap and counters (sections SEC_TIMELINE and SEC_TIMELINE_TARGETS), in
 * wire order. */
static inline void enc_live_figures(struct wbuf *body, const struct snap_figures *f)
{
	enc_varint(body, f->live_bytes);
	enc_varint(body, f->live_allocations);
	enc_varint(body, f->allocations);
	enc_varint(body, f->bytes_allocated);
}

/* Section SEC_BLOCKS: the live block list. */
void encode_blocks(const struct snap_block_list *l, struct wbuf *body, struct wbuf *out);
/* Sections SEC_RESIDENT and SEC_MEMORY: resident memory, and its breakdowns (error_refs: their
 * errors' string references). */
void encode_memory_sections(const struct snapshot *s, const uint32_t *error_refs, struct wbuf *body,
			    struct wbuf *out);
/* Sections SEC_SCAN and SEC_SCAN_ENTRIES: a leak scan (supp_refs: its suppressions' patterns). */
void encode_scan_sections(const struct snapshot *s, const uint32_t *supp_refs, struct wbuf *body,
			  struct wbuf *out);
/* Sections SEC_DAEMON-44: the daemon's figures, grouped rows (row_refs: their keys), leaks. */
void encode_scale_sections(const struct snapshot *s, const uint32_t *row_refs, struct wbuf *body,
			   struct wbuf *out);
/* Section SEC_TIMELINE_TARGETS: each timeline point's targets. */
void encode_timeline_targets(const struct snapshot *s, struct wbuf *body, struct wbuf *out);
/* Sections SEC_INHERITED-50: what forked children inherited, and whom each was forked from. */
void encode_family_sections(const struct snapshot *s, struct wbuf *body, struct wbuf *out);
void encode_oom_section(const struct snapshot *s, struct wbuf *body, struct wbuf *out);

#endif
