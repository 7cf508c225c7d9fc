/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The core's invariants checked on the running daemon (common/invariant.h:
 * the sanitizer build only): the equations of docs/metrics.md after every
 * event, and at every request the whole state: every target's counters and
 * their sums, the heap table's own invariants, the blocks and stacks each
 * target's counters stand for. Nothing here runs in other builds: the
 * callers test MT_CHECKING, so the product's daemon never calls in.
 */
#ifndef MEMTRACE_CORE_CHECK_H
#define MEMTRACE_CORE_CHECK_H

#include "daemon/core/state.h"

/* After an event of tt: its counters' and the totals' equations (O(1)). */
void tracker_check_event(const struct tracker *t, const struct tracker_target *tt);
/* The whole state (O(heap + stacks)): at each request, on a frozen core. */
void tracker_check_state(const struct tracker *t);

#endif
