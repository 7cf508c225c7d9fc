/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * `leaks --unreachable`: a leak scan's answer (snapshot sections SEC_SCAN and SEC_SCAN_ENTRIES)
 * as text, in the style of `leaks` (a header line with the pause, the
 * memory scanned and the counts, then one entry per stack and kind, most
 * bytes first), or as JSON: a "scan" object and "entries".
 */
#ifndef MEMTRACE_CTL_RENDER_SCAN_H
#define MEMTRACE_CTL_RENDER_SCAN_H

#include "common/util.h"
#include "ctl/render/render.h"
#include "memtrace/snapshot.h"

void render_scan(struct buf *out, const struct snapshot *s, const struct render_opts *o);

#endif
