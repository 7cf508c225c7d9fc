/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Building the snapshot a request asks for from the daemon's state
 * (collect.c): counters and targets always, the stacks it selects (one pid
 * or all, ordered by one key, the top N) symbolized, and the live blocks or
 * ages when asked.
 */
#ifndef MEMTRACE_SERVE_COLLECT_H
#define MEMTRACE_SERVE_COLLECT_H

#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"
#include "daemon/serve/service.h"
#include "memtrace/snapshot.h"

/*
 * Whether each stack really ends at a root, by stack index: verdict + 1,
 * 0 = not checked yet. The core keeps what the walk said; this is the
 * serving side's own cache of what the frames say.
 */
struct stack_ends {
	uint8_t *verdicts;
	uint32_t cap;
};

void stack_ends_free(struct stack_ends *e);

/* Fill s (zeroed first) for request r: 0, or -1 with a one-line reason in err. */
int collect_snapshot(const struct daemon_view *v, struct stack_ends *ends,
		     const struct proto_request *r, struct snapshot *s, char *err, size_t errlen);

#endif
