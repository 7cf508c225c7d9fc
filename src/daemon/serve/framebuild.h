/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A snapshot's stacks, built from the rows of a view (the stack table, or
 * viewrows.h's rows): each row's numbers, where its stack ends, and its
 * frames. Each distinct word of a stack (a return address of a space, or a
 * Python frame word) is symbolized once per snapshot into frames of a
 * shared table, and a stack is a list of references to them (struct
 * snapshot's frame_table and frame_refs). Frames carry the symbolizer's
 * interned strings while the stacks are built, and the snapshot's own
 * copies once framebuild_finish() hands them over; a run of the interpreter
 * loop becomes the Python frames it ran.
 */
#ifndef MEMTRACE_FRAMEBUILD_H
#define MEMTRACE_FRAMEBUILD_H

#include <stdint.h>

#include "memtrace/counters.h"
#include "memtrace/snapshot.h"

struct daemon_view;
struct framebuild;

/*
 * Where each stack of the stack table really ends (enum mt_stack_end), one
 * byte per stack, and the stacks cut short with the module they end in.
 * The core keeps what the walk said; this is the serving side's own cache of
 * what the frames say, learned on the loop thread (stack_ends_check) and
 * only read by the lanes. The table only grows, so each stack is checked
 * once.
 */
struct stack_ends {
	uint8_t *end;	  /* by stack index, below checked */
	uint32_t checked; /* stacks checked so far */
	uint32_t cap;
	struct {
		uint32_t stack;
		const char *module; /* symbolizer_intern()ed */
	} * broken;
	uint32_t nbroken, broken_cap;
};

/* Learn where the stacks added since the last call end: as many as
 * budget_ns allows (UINT64_MAX: all). Loop thread only. */
void stack_ends_check(const struct daemon_view *v, struct stack_ends *e, uint64_t budget_ns);
void stack_ends_free(struct stack_ends *e);

/*
 * The rows of v (viewrows.h; its stacks when v has no rows): how many, the
 * numbers of row id (inherited part included), and whose row it is.
 */
uint32_t framebuild_nrows(const struct daemon_view *v);
struct mt_stack_counters framebuild_row_counters(const struct daemon_view *v, uint32_t id);
uint32_t framebuild_row_pid(const struct daemon_view *v, uint32_t id);

/* Stacks of v's rows (v and ends must outlive the builder; ends must be up
 * to date with the stack table, stack_ends_check, for every stack to say
 * where it really ends). */
struct framebuild *framebuild_new(const struct daemon_view *v, const struct stack_ends *ends);

/* Row idx as a snapshot shows it (counters, where it ends, its frames), the
 * frames' offset for framebuild_finish() in *frames_at. */
void framebuild_fill(struct framebuild *b, uint32_t idx, struct snap_stack *out,
		     uint64_t *frames_at);

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

/* The run of frames of word number num of the stack table, in generation (a tgid). */
void framebuild_word(struct framebuild *b, uint32_t gen, uint32_t num, uint32_t *first,
		     uint32_t *count);

/* Frame i of the table (valid until the table grows: the next walk or stack). */
const struct snap_frame *framebuild_frame(const struct framebuild *b, uint32_t i);

/*
 * Hand the frames to s: s->frame_table (its strings copied into s, each
 * once), s->frame_refs, and each s->stacks[i].frames from offsets[i] (what
 * framebuild_stack returned; nframes already set). Frees b. Call it while
 * the symbolizer's strings are valid (symbolizer_frames_interned); s
 * depends on the symbolizer no more.
 */
void framebuild_finish(struct framebuild *b, struct snapshot *s, const uint64_t *offsets);

#endif
