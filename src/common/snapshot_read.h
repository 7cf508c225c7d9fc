/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The snapshot decoder's reading of untrusted bytes, shared by its files:
 * bounded readers of one section that check every value and say what is
 * wrong in one line (snapshot_decode.c: the payload, the sections every
 * snapshot has and the heap's; snapshot_decode_targets.c: the targets and how
 * their tracing went; snapshot_decode_resident.c: resident memory;
 * snapshot_decode_views.c: the answers to one request).
 */
#ifndef MEMTRACE_SNAPSHOT_READ_H
#define MEMTRACE_SNAPSHOT_READ_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/snapshot.h"

struct decoder {
	char *err;
	size_t errlen;
	struct snapshot *s;
	char **strings; /* the string table, pointing into s's string block */
	uint32_t nstrings;
	uint8_t *inl_state; /* stack_info: per frame, 0 unseen, 1 not inlined, 2 inlined */
	uint32_t *twin_of;  /* per frame: its twin's index in s->frame_table + 1, or 0 */
	size_t nframes;	    /* frames before the twins */
	size_t ntwins;
};

/* A bounded view of one section. */
struct reader {
	struct decoder *d;
	const uint8_t *p, *end;
	const char *section;
};

/* Sets err to "snapshot: " and the message; returns -1. */
int dec_fail(struct decoder *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_t rd_left(const struct reader *r);
/* A section's part of the snapshot, zeroed: NULL (and err set) out of memory. */
void *dec_part(struct decoder *d, size_t size);
int rd_varint(struct reader *r, uint64_t *v);
int rd_u32(struct reader *r, uint32_t *v);
int rd_i64(struct reader *r, int64_t *v);
/* A string reference: NULL for 0, else the string table's entry. */
int rd_string(struct reader *r, char **s);
/* A count of entries each at least min_bytes long, at most max of them. */
int rd_count(struct reader *r, size_t min_bytes, uint32_t max, uint32_t *count);
/*
 * A count, then that many 64-bit fields: the first nfields go to base +
 * offsets[i], those past them (a later version's) are skipped.
 */
int rd_fields(struct reader *r, void *base, const size_t *offsets, size_t nfields);
/* A counted list of counters (struct mt_counters in wire order; more may follow). */
int rd_counters(struct reader *r, struct mt_counters *c);
/* Checks the header; returns the payload's compressed and full lengths. */
int check_header(struct decoder *d, const uint8_t *buf, size_t len, uint64_t *ulen, uint64_t *clen);

/* The optional sections, by the file that decodes them (snapshot_decode_targets.c,
 * snapshot_decode_resident.c, snapshot_decode_views.c). */
int dec_target_notes(struct reader *r);
int dec_unwind(struct reader *r);
int dec_probe_sites(struct reader *r);
int dec_daemon(struct reader *r);
int dec_groups(struct reader *r);
int dec_leaks(struct reader *r);
int dec_resident(struct reader *r);
int dec_memory(struct reader *r);
int dec_inherited(struct reader *r);
int dec_family(struct reader *r);
int dec_match(struct reader *r);
int dec_timeline_targets(struct reader *r);
int dec_walker(struct reader *r);
int dec_cgroup(struct reader *r);
int dec_timeline_cgroup(struct reader *r);
int dec_oom(struct reader *r);
int dec_scan(struct reader *r);
int dec_scan_entries(struct reader *r);

#endif
