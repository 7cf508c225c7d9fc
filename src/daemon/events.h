/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A target's exec, fork and match, as the ring buffer reports them
 * (events.c).
 */
#ifndef MEMTRACE_DAEMON_EVENTS_H
#define MEMTRACE_DAEMON_EVENTS_H

#include "memtrace/event.h"

struct daemon;

/*
 * A control record of the ring buffer, after the tracker applied it
 * (ingest's control hook): a target executed a new program (held for us),
 * reached its ld.so's _dl_debug_state or is about to install a CPython
 * allocator (stopped there), a followed target or a match forked, or (whole-host
 * mode) a matching program was executed and is stopped at its exec.
 */
void events_control(struct daemon *d, const struct mt_event *ev);

/* On the drain timer: is some target's exec not seen yet (or an entry waited
 * too long for its exec's event, LC_EXEC_AWAITED)? If so, drain the ring
 * buffer, then events_check_execs acts on those whose event was lost. */
int events_execs_unseen(struct daemon *d);
void events_check_execs(struct daemon *d);
/* ... and new programs whose allocator is still to be resolved (held: the
 * process is stopped for it; 0 on the drain tick). */
void events_resolve(struct daemon *d, int i, int held);

#endif
