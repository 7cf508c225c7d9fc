/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Building the snapshot a request asks for from the daemon's state
 * (collect.c): counters and targets always, the stacks it selects (one pid
 * or all, ordered by one key, the top N) symbolized, and the live blocks or
 * ages when asked; grouped views and leaks are counted here and only the
 * rows shown go (grouping.c). It only reads the state, so a worker lane can
 * run it on a frozen core (worker.h).
 */
#ifndef MEMTRACE_SERVE_COLLECT_H
#define MEMTRACE_SERVE_COLLECT_H

#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"
#include "daemon/serve/service.h"
#include "memtrace/snapshot.h"

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
 * Fill s (zeroed first) for request r, as its kind says (proto.h): 0, or -1
 * with a one-line reason in err. For attach, detach and reset-peak, their
 * answer (as status, of the process attached or detached); for a scan, what
 * its answer has beside the scan (scan.c). ends must be up to date with the stack table
 * (stack_ends_check) for the truncations to count every stack; stacks past it show what the walk
 * said. The frames' strings are the symbolizer's (the builder's): hold it
 * (symbolizer_hold) until s is encoded if the core may change meanwhile.
 */
int collect_snapshot(const struct daemon_view *v, const struct stack_ends *ends,
		     const struct proto_request *r, struct snapshot *s, char *err, size_t errlen);

/*
 * The rows of v (viewrows.h; its stacks when v has no rows): how many, the
 * numbers of row id (inherited part included), and whose row it is.
 */
uint32_t collect_nrows(const struct daemon_view *v);
struct mt_stack_counters collect_row_counters(const struct daemon_view *v, uint32_t id);
uint32_t collect_row_pid(const struct daemon_view *v, uint32_t id);

/* Stack idx as a snapshot shows it (counters, where it ends), its frames
 * from fb, their offset for framebuild_finish() in *frames_at. */
struct framebuild;
void collect_fill_stack(const struct daemon_view *v, const struct stack_ends *ends,
			struct framebuild *fb, uint32_t idx, struct snap_stack *out,
			uint64_t *frames_at);

#endif
