/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A snapshot's frames, built from the stack table: each distinct word of a
 * stack (a return address of a space, or a Python frame word) is symbolized
 * once per snapshot into frames of a shared table, and a stack is a list of
 * references to them (struct snapshot's frame_table and frame_refs). Native
 * frames carry the symbolizer's interned strings (a built snapshot's frame
 * strings are the builder's); a run of
 * the interpreter loop becomes the Python frames it ran.
 */
#ifndef MEMTRACE_FRAMEBUILD_H
#define MEMTRACE_FRAMEBUILD_H

#include <stdint.h>

#include "memtrace/snapshot.h"

struct daemon_view;
struct framebuild;

/* Frames of the stacks of v's stack table (v must outlive the builder). */
struct framebuild *framebuild_new(const struct daemon_view *v);

/*
 * Add the frames of stack idx of the daemon's stack table; returns where its
 * references start (an offset, for framebuild_finish) and their number in *n.
 */
uint64_t framebuild_stack(struct framebuild *b, uint32_t idx, uint32_t *n);

/*
 * Call fn(arg, first, count) for each run of frames of stack idx, innermost
 * first: frames first .. first + count - 1 of the table (framebuild_frame),
 * the frames of one return address or one Python frame. fn returns nonzero
 * to stop.
 */
typedef int framebuild_fn(void *arg, uint32_t first, uint32_t count);
void framebuild_walk(struct framebuild *b, uint32_t idx, framebuild_fn *fn, void *arg);

/* The run of frames of word number num of the stack table, in space (a tgid). */
void framebuild_word(struct framebuild *b, uint32_t space, uint32_t num, uint32_t *first,
		     uint32_t *count);

/* Frame i of the table (valid until the table grows: the next walk or stack). */
const struct snap_frame *framebuild_frame(const struct framebuild *b, uint32_t i);

/*
 * Hand the frames to s: s->frame_table, s->frame_refs, and
 * each s->stacks[i].frames from offsets[i] (what framebuild_stack returned;
 * nframes already set). Frees b.
 */
void framebuild_finish(struct framebuild *b, struct snapshot *s, const uint64_t *offsets);

#endif
