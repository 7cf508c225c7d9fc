/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * How numbers, names and untrusted text look in memtracectl's output: byte
 * counts (binary units, and tracemalloc's sizes and statistic lines),
 * durations, frame names and terminal-safe text; and the pieces of a
 * snapshot that several renderers print the same way: a stack's frames (text
 * lines, JSON objects), the counters, the lost events and the modules that
 * cut stacks short. One place each, so that status, stats, report and the
 * grouped views cannot drift apart. Every renderer uses it; it uses only the
 * JSON writer.
 */
#ifndef MEMTRACE_CTL_FORMAT_H
#define MEMTRACE_CTL_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "ctl/render/json.h"
#include "memtrace/snapshot.h"

/* Nanoseconds as seconds, as the JSON forms give every time. */
double ns_to_seconds(uint64_t ns);

/* "512 B", "1.0 KiB", "100.0 MiB": binary units, one decimal. */
void format_bytes(char *dst, size_t len, uint64_t bytes);

/* "1.5s", "2m 05s", "1h 02m 03s", "1d 01h 01m". */
void format_duration(char *dst, size_t len, uint64_t ns);

/*
 * tracemalloc's size format: "117 B", "8173 KiB", "12.5 MiB" (one decimal
 * below 100 units, none above). With sign, a '+' before positive values.
 */
void format_size(char *dst, size_t len, int64_t bytes, int sign);

/*
 * One statistic as tracemalloc prints it:
 * "site_a: size=4855 KiB, count=39328, average=126 B" (no newline).
 */
void format_stat_line(char *dst, size_t len, const char *key, uint64_t size, uint64_t count);

/* The same with growth since old: "size=8173 KiB (+4428 KiB), count=71332 (+39369), ..." */
void format_stat_diff_line(char *dst, size_t len, const char *key, uint64_t size, uint64_t old_size,
			   uint64_t count, uint64_t old_count);

/* Append s for a terminal: C0 and C1 control characters become '?'. */
void format_text(struct buf *out, const char *s);

/*
 * Append one frame's name for folded stacks and flame graphs: the function,
 * else "module+0xOFFSET", else "0xADDRESS". Characters that would break a
 * folded line (';', newline, control characters) become '?'.
 */
void format_frame_name(struct buf *out, const struct snap_frame *f);

/* An allocation site for a line of text: its frame's name, then " at FILE:LINE"
 * (the file's last part) when the frame has a source file. */
void format_site_name(struct buf *out, const struct snap_frame *f);

/* The last part of a path ("libc.so.6" of "/usr/lib/libc.so.6"), for showing. */
const char *format_basename(const char *path);

/* ---- pieces several renderers share ---- */

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
 * ids[0..n) in that order; the inherited ones (section SEC_META) only with inherited.
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

/*
 * The stack walker the daemon ran and why (section SEC_WALKER): "fp (chosen)",
 * "fp (dwarf refused by the verifier: ...)"; "" when the snapshot does not
 * say (written before it). The line "stack walker: ...\n" (nothing then),
 * and JSON's "stack_walker": {"name", "reason", "refused"} (no key then).
 */
void format_walker(char *dst, size_t len, const struct snapshot *s);
void render_text_walker(struct buf *out, const struct snapshot *s);
void render_json_walker(struct json_writer *w, const struct snapshot *s);

/* The modules whose missing frame pointers cut stacks short: a note line
 * each, or "truncated_stacks". */
void render_text_truncations(struct buf *out, const struct snapshot *s);
void render_json_truncations(struct json_writer *w, const struct snapshot *s);

#endif
