/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* report --format folded: the input of flamegraph.pl, inferno and speedscope. */
#ifndef MEMTRACE_CTL_FOLDED_H
#define MEMTRACE_CTL_FOLDED_H

#include "common/util.h"
#include "ctl/render/render.h"
#include "memtrace/snapshot.h"

/* "root;...;leaf VALUE" lines (o->sample), largest first. */
void render_folded(struct buf *out, const struct snapshot *s, const struct render_opts *o);

#endif
