/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* report --format html: one self-contained page with a flame graph. */
#ifndef MEMTRACE_CTL_HTML_H
#define MEMTRACE_CTL_HTML_H

#include "common/util.h"
#include "ctl/render/render.h"
#include "memtrace/snapshot.h"

/* The page, its libraries inlined; o->sample is the flame graph shown first. */
void render_html(struct buf *out, const struct snapshot *s, const struct render_opts *o);

#endif
