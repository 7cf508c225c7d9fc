/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* report --format pprof: a snapshot as `go tool pprof` reads a heap profile. */
#ifndef MEMTRACE_CTL_PPROF_H
#define MEMTRACE_CTL_PPROF_H

#include "common/util.h"
#include "ctl/render/render.h"
#include "memtrace/snapshot.h"

/* A gzip-compressed profile.proto (o->peak: the profile at the peak).
 * Returns 0, or -1 with a message logged. */
int render_pprof(struct buf *out, const struct snapshot *s, const struct render_opts *o);

#endif
