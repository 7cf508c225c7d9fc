/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The accounting core: applies ring buffer events to the live heap, the stack
 * table and the counters, with the semantics of docs/metrics.md. Pure logic,
 * no I/O, so every rule is unit tested (tests/unit/test_tracker.c).
 *
 * Invariants, per target and in total:
 *   live_allocations == inherited_allocations + allocations - frees - missed_frees
 *                       - untracked_allocations - inherited_released
 *   live_bytes == inherited_bytes + bytes_allocated - bytes_freed - missed_free_bytes
 *                 - untracked bytes - inherited_released_bytes
 *   peak_live_bytes >= live_bytes
 */
#ifndef MEMTRACE_TRACKER_H
#define MEMTRACE_TRACKER_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/core/state.h"
#include "daemon/core/generations.h"
#include "memtrace/event.h"
#include "memtrace/counters.h"

/* temporary_threshold is 1 (heaptrack's definition); set it after init to change it. */
int tracker_init(struct tracker *t, size_t max_live_blocks, uint32_t max_stacks);
void tracker_destroy(struct tracker *t);

/*
 * The current generation of tgid executed a new program (or stopped being
 * traced): from now on its events count as events_foreign, its data so far
 * stays. Also what an MT_EV_EXEC event does. 0, or -1 if tgid has no
 * current generation.
 */
int tracker_target_exec(struct tracker *t, uint32_t tgid);

/*
 * The generation of that key exited (its events are all applied): the
 * blocks it inherited at a fork and still held leave its heap
 * (inherited_released); its own live blocks stay, as its leaks. 0, or -1 if
 * there is no such generation.
 */
int tracker_target_exited(struct tracker *t, uint32_t gen);

/*
 * The current generation of parent forked child (an MT_EV_FORK event, in
 * ring buffer order): child becomes a new generation whose heap begins as
 * the parent's now (family.h), in O(1). Returns it, or NULL as
 * tracker_add_target does (or if parent has no current generation: then it
 * starts empty).
 */
struct tracker_target *tracker_fork(struct tracker *t, uint32_t parent, uint32_t child,
				    uint64_t start_ns);

/* Apply one event as read from the ring buffer (len bytes, untrusted size). */
void tracker_event(struct tracker *t, const void *data, size_t len);

/*
 * Whether the current generation of tgid keeps the addresses it freed, to
 * tell the allocator's second frees from unknown ones (tracker.c,
 * freed_note): on for a new target, off once the daemon knows its
 * allocator is not glibc (allocator_frees_twice). A forked child takes its
 * parent's.
 */
void tracker_set_refrees(struct tracker *t, uint32_t tgid, int on);

/*
 * Start a new peak window (tracemalloc.reset_peak): the peak becomes the
 * current live bytes, at now_ns, in total and per target; every stack's
 * value at the peak becomes its current live bytes.
 */
void tracker_reset_peak(struct tracker *t, uint64_t now_ns);

/* Bin of SNAP_HISTOGRAM_BINS for an allocation of size bytes. */
static inline unsigned tracker_size_bin(uint64_t size)
{
	return size ? 64 - (unsigned)__builtin_clzll(size) : 0;
}

/* This stack's live bytes at the moment of the global peak. */
uint64_t tracker_stack_peak_bytes(const struct tracker *t, const struct stack_entry *s);

#endif
