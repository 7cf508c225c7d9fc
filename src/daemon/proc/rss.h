/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A process's resident memory as /proc says it (rss.c): the figures of
 * include/memtrace/resident.h from /proc/PID/status (the kernel's own
 * counters: no walk, no lock of the process) and /proc/PID/smaps_rollup
 * (one walk of its page tables), one read of each. The parsers take the
 * text as untrusted bytes and say what is wrong rather than guess; the
 * "Key: N kB" lines they read are shared with smaps.c.
 */
#ifndef MEMTRACE_PROC_RSS_H
#define MEMTRACE_PROC_RSS_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/resident.h"

/* The most a status or smaps_rollup file may hold (the kernel writes 1-2 KiB). */
#define RSS_MAX_TEXT 16384

/*
 * Parse len bytes of /proc/PID/status (MT_FROM_STATUS) or smaps_rollup
 * (MT_FROM_ROLLUP) into the figures of out that come from that file; the
 * others are left as they are. 0, or -1 with a one-line reason in err: a
 * figure's line that is not "Key: N kB", a figure missing or given twice, a
 * rollup without its "[rollup]" header. Lines of other keys are skipped.
 */
int rss_parse(const char *text, size_t len, enum mt_resident_source src, struct mt_resident *out,
	      char *err, size_t errlen);

/* Read and parse both files of pid: 0, or -errno (-EINVAL: malformed) with a reason in err. */
int rss_read(int pid, struct mt_resident *out, char *err, size_t errlen);

/*
 * The value of a "Key: N kB" line after its colon ("   1234 kB"), in bytes:
 * 0, or -1 when it is not exactly spaces or tabs, digits, " kB", or does
 * not fit in 64 bits.
 */
int rss_kb_value(const char *v, size_t len, uint64_t *bytes);

/*
 * The key of a field line ("Rss:   4 kB" gives "Rss"): its length, the
 * colon at key[len]; 0 when the line does not start with letters, digits or
 * '_' followed by a colon.
 */
size_t rss_field_key(const char *line, size_t len);

#endif
