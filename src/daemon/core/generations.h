/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The tracker's targets: a generation of a process is accounted under a
 * generation key, its pid while it is the pid's current generation, a retired
 * key of its own once a newer one has started (an exec, or the pid traced
 * again). Lookups by pid and by key, and the start of a new generation.
 */
#ifndef MEMTRACE_CORE_GENERATIONS_H
#define MEMTRACE_CORE_GENERATIONS_H

#include <stdint.h>

#include "daemon/core/state.h"

/*
 * Start accounting for a new generation of tgid (its key = tgid). An older
 * generation of the same tgid is retired first (tracker_retire). Returns
 * NULL if tgid has a generation that has not ended, or out of memory.
 */
struct tracker_target *tracker_add_target(struct tracker *t, uint32_t tgid, uint64_t start_ns);
/* The generation of tgid whose events count now; NULL if none. */
struct tracker_target *tracker_find_target(struct tracker *t, uint32_t tgid);
/* The generation of that key; NULL if none (the second for changing it). */
const struct tracker_target *tracker_find_gen(const struct tracker *t, uint32_t gen);
struct tracker_target *tracker_gen_target(struct tracker *t, uint32_t gen);
/* The pid of a space (itself, or the tgid of the retired generation). */
uint32_t tracker_gen_pid(const struct tracker *t, uint32_t gen);

/*
 * Move every generation keyed by tgid to a retired key of its own: its live
 * blocks and stacks follow, so a new generation of tgid starts empty.
 * Returns the new key, or 0 when no generation was keyed by tgid.
 */
uint32_t tracker_retire(struct tracker *t, uint32_t tgid);

#endif
