/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Pointers a process handed to the kernel, which the kernel keeps for it and
 * hands back later: the data word of each epoll registration (an event
 * loop's per-connection state is often held there alone) and the value of
 * each POSIX timer's signal. /proc shows both (an epoll descriptor's fdinfo,
 * /proc/PID/timers); a leak scan takes them as roots, which LeakSanitizer,
 * inside the process, cannot see. Parsed as untrusted text.
 */
#ifndef MEMTRACE_KROOTS_H
#define MEMTRACE_KROOTS_H

#include <stddef.h>
#include <stdint.h>

/* Words found, appended to a growable array. */
struct kroots {
	uint64_t *v;
	size_t n, cap;
};

/* The data words of an epoll descriptor's fdinfo text ("tfd: ... data: HEX"). */
void kroots_parse_epoll(const char *text, size_t len, struct kroots *out);

/* The signal values of /proc/PID/timers ("signal: SIGNO/HEX"). */
void kroots_parse_timers(const char *text, size_t len, struct kroots *out);

/* Both, for pid (every descriptor's fdinfo, then its timers). 0, or -errno. */
int kroots_read(int pid, struct kroots *out);

void kroots_free(struct kroots *k);

#endif
