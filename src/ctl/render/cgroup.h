/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A target's cgroup in status and stats (cgroup.c), text and JSON from the
 * same figures: its labels (cgroup path, unit, container, pod, NSpid) and
 * its memory cgroup's usage beside the limit, with the headroom left, the
 * memory.stat breakdown and the events counters. Each prints nothing for a
 * target without them (a snapshot older than section SEC_CGROUP), so older files
 * read as before.
 */
#ifndef MEMTRACE_CTL_RENDER_CGROUP_H
#define MEMTRACE_CTL_RENDER_CGROUP_H

#include "common/util.h"
#include "ctl/render/json.h"
#include "memtrace/snapshot.h"

/*
 * Text: "  cgroup /PATH (unit U, container ID runtime R, pod P), nspid N" (PATH:
 * its memory cgroup's, else its unified one's; "; unified hierarchy /P"
 * when that one differs and is not the root),
 * then "  memory cgroup /PATH (v1): 48.2 MiB of 64.0 MiB (75 %), headroom
 * 15.8 MiB; oom_kill 0" and its breakdown, or why there are no figures.
 */
void render_text_target_cgroup(struct buf *b, const struct snap_target *t);

/*
 * Text, for status: one line, "pid N: cgroup /PATH (...), nspid N: 48.2 MiB
 * of 64.0 MiB (75 %), headroom 15.8 MiB".
 */
void render_text_target_cgroup_line(struct buf *b, const struct snap_target *t);

/*
 * Text, for watch: "  cgroup /PATH: 48.2 MiB of 64.0 MiB (75 %), headroom
 * 15.8 MiB; oom_kill 0", once per memory cgroup of the targets traced now
 * (of pid; 0: all).
 */
void render_text_cgroups(struct buf *b, const struct snapshot *s, uint32_t pid);

/* JSON: a target's "cgroup" member (nothing when it has none). */
void render_json_target_cgroup(struct json_writer *w, const struct snap_target *t);

#endif
