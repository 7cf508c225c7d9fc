/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Resident memory in stats (resident.c), text and JSON from the same
 * figures: the totals over the targets traced then, each target's last
 * sample and peak, and its breakdown by kind of mapping with the live heap
 * and the heap overhead (stats --memory). Each prints nothing for a
 * snapshot without resident memory, so older files read as before.
 */
#ifndef MEMTRACE_CTL_RENDER_RESIDENT_H
#define MEMTRACE_CTL_RENDER_RESIDENT_H

#include "common/util.h"
#include "ctl/render/json.h"
#include "memtrace/snapshot.h"

/* Text: the totals block, one target's line, every breakdown. */
void render_text_resident_totals(struct buf *b, const struct snapshot *s);
void render_text_target_resident(struct buf *b, const struct snap_target *t);
void render_text_memory(struct buf *b, const struct snapshot *s);

/* JSON: "resident" of the totals (of one pid's targets, or all: 0); a target's
 * "resident" (and "memory") members. */
void render_json_resident_totals(struct json_writer *w, const struct snapshot *s, uint32_t pid);
void render_json_target_resident(struct json_writer *w, const struct snapshot *s, uint32_t i);

/* "-1.5 MiB" as well as "1.5 MiB". */
void format_bytes_signed(char *dst, size_t len, int64_t bytes);

#endif
