/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * leaks requests, answered in the daemon (leaks.c) so that only what is
 * shown travels: per stack, its live blocks past an age, the top stacks
 * sent. Reads the core only: run on a frozen core (worker.h).
 */
#ifndef MEMTRACE_SERVE_LEAKS_H
#define MEMTRACE_SERVE_LEAKS_H

#include <stdint.h>

#include "memtrace/snapshot.h"
#include "common/proto.h"

struct daemon_view;
struct stack_ends;

/*
 * Fill s's stacks (with their frames) and leaks section for a leaks
 * request: sel[0..nsel) are the stacks it selects, in the order of reports.
 */
void leaks_rows(const struct daemon_view *v, const struct stack_ends *ends,
		const struct proto_leaks *r, const uint32_t *sel, uint32_t nsel,
		struct snapshot *s);

#endif
