/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report as text and as JSON: the totals (of all targets or of one pid),
 * then each stack the snapshot holds, in its order, with its frames.
 */
#ifndef MEMTRACE_CTL_REPORT_H
#define MEMTRACE_CTL_REPORT_H

#include "common/util.h"
#include "ctl/render/render.h"
#include "memtrace/snapshot.h"

/* Totals, then the stacks in the order the snapshot holds them. */
void render_report(struct buf *out, const struct snapshot *s, const struct render_opts *o);

#endif
