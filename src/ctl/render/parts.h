/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Pieces of a snapshot that several renderers print the same way: a stack's
 * frames (text lines, JSON objects), the counters, the lost events and the
 * modules that cut stacks short. One place each, so that status, stats,
 * report and the grouped views cannot drift apart.
 */
#ifndef MEMTRACE_CTL_PARTS_H
#define MEMTRACE_CTL_PARTS_H

#include "common/util.h"
#include "ctl/render/json.h"
#include "memtrace/snapshot.h"

/* One frame as an indented text line: "    function (module+0xOFFSET) at file:line". */
void render_text_frame(struct buf *out, const struct snap_frame *f);
/* A stack's frames as text lines; "(no stack)" for a stack without frames. */
void render_text_frames(struct buf *out, const struct snap_stack *st);
/* "frames": a stack's frames as JSON objects (an empty array for NULL). */
void render_json_frames(struct json_writer *w, const struct snap_stack *st);

/* Every counter of docs/metrics.md as "name": value (times in seconds), or
 * only those of the summary table. */
void render_json_counters(struct json_writer *w, const struct mt_counters *c, int summary_only);

/*
 * Stack counters as "name": value, the names of MT_STACK_COUNTERS, those of
 * ids[0..n) in that order; the inherited ones (section 2) only with inherited.
 */
void render_json_stack_counters(struct json_writer *w, const struct mt_stack_counters *t,
				const enum mt_stack_counter *ids, size_t n, int inherited);
/* The same with "name_diff": the change from was to t beside each. */
void render_json_stack_diffs(struct json_writer *w, const struct mt_stack_counters *t,
			     const struct mt_stack_counters *was, const enum mt_stack_counter *ids,
			     size_t n);

/* "events_received", "events_lost" and "events_lost_by_kind". */
void render_json_events(struct json_writer *w, const struct snapshot *s);
/* A warning line when events were lost; nothing otherwise. */
void render_text_lost_warning(struct buf *out, const struct snapshot *s);

/* The modules whose missing frame pointers cut stacks short: a note line
 * each, or "truncated_stacks". */
void render_text_truncations(struct buf *out, const struct snapshot *s);
void render_json_truncations(struct json_writer *w, const struct snapshot *s);

#endif
