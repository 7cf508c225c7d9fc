/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * `leaks --unreachable`: which live blocks of a running process no pointer
 * reaches (docs/design.md, "Leaks told from live data"). For each target:
 * stop every thread (proc/ptstop.h), freeze the core once every event the
 * target made before it stood still is applied, copy its live blocks
 * (core/blocks.h) and thaw at once, so the loop goes on ingesting every
 * other target; mark from the target's roots while it stands still
 * (scan/memscan.h, scan/reach.h), resume it, classify. Then one more freeze
 * to name the leaking stacks, match the suppressions against their frames
 * (LSan's rule: a suppressed leak is a root, what it holds is no leak) and
 * build the answer: snapshot sections SEC_SCAN and SEC_SCAN_ENTRIES.
 *
 * Runs on a worker lane (worker.c), which lends it the freezes.
 */
#ifndef MEMTRACE_SERVE_SCAN_H
#define MEMTRACE_SERVE_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"
#include "memtrace/snapshot.h"

struct daemon_view;
struct stack_ends;
struct symbolizer;

/* What a scan asks of the lane it runs on. */
struct scan_core {
	void *ctx;
	/*
	 * Freeze the core: 0 and the view in *v; 1 when deadline_ns passed
	 * first (the freeze stays asked for: call again with UINT64_MAX, then
	 * thaw); -1 when the daemon stops.
	 */
	int (*freeze)(void *ctx, uint64_t deadline_ns, const struct daemon_view **v);
	void (*thaw)(void *ctx);
	/* The ring buffer's producer position now (service.h); NULL or UINT64_MAX: no scans. */
	uint64_t (*ring_produced)(void *ctx);
	const struct stack_ends *ends; /* brought up to date at each freeze */
};

/*
 * Scan what r->scan asks for; body[0..len) are its suppressions. Fills out
 * (every string its own) and returns 0, or -1 with a one-line reason in err.
 */
int scan_serve(const struct scan_core *core, const struct proto_request *r, const char *body,
	       size_t len, struct snapshot *out, char *err, size_t errlen);

#endif
