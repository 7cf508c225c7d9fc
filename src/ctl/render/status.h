/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * status and stats, as text and as JSON: the daemon, its targets and every
 * counter, totals and per target; stats adds the size histogram, the
 * allocator mix and the top allocation sites (view/sites.h).
 */
#ifndef MEMTRACE_CTL_STATUS_H
#define MEMTRACE_CTL_STATUS_H

#include "common/util.h"
#include "ctl/render/render.h"
#include "memtrace/snapshot.h"

/* Daemon uptime, events and the table of targets. */
void render_status(struct buf *out, const struct snapshot *s, const struct render_opts *o);
/*
 * Every counter of docs/metrics.md, totals and per target; then the sizes,
 * the allocator mix and the top sites. The sites (and stacks_total) are
 * those of stacks, the rest is s's: one snapshot, or stats --memory's two
 * answers (the breakdowns' and the sites').
 */
void render_stats(struct buf *out, const struct snapshot *s, const struct snapshot *stacks,
		  const struct render_opts *o);

#endif
