/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A process's memory cgroup: its usage and limit, read once (memlimit.c).
 * The least an OOM kill's mark needs, kept apart so that the cgroup labels
 * and limits of proc/cgroup.* can take its place: the v1 memory
 * controller's memory.usage_in_bytes and memory.limit_in_bytes where
 * /proc/PID/cgroup names a memory hierarchy (hybrid hosts), else the v2
 * unified hierarchy's memory.current and memory.max.
 */
#ifndef MEMTRACE_PROC_MEMLIMIT_H
#define MEMTRACE_PROC_MEMLIMIT_H

#include <stddef.h>
#include <stdint.h>

/* No limit (v2 "max", or v1's page-rounded LONG_MAX). */
#define MEMLIMIT_NONE UINT64_MAX

/* pid's memory cgroup now: 0 with *usage and *limit (MEMLIMIT_NONE: none),
 * or -1 with a one-line reason in err (gone, no memory controller). */
int memlimit_read(int pid, uint64_t *usage, uint64_t *limit, char *err, size_t errlen);

/* The value of a limit file's text ("max", a number): 0, or -1. Tests. */
int memlimit_parse(const char *text, uint64_t *out);

#endif
