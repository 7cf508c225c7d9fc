/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Closing probes off the event loop (detacher.c). Closing a uprobe's perf
 * event waits for the kernel (a grace period per probe: about 1.5 s for a
 * glibc target's 17 probes on the test machine), during which the loop
 * would drain nothing. Probes that can no longer fire (their process
 * exited, or executed a program that does not map their file) are handed to
 * a thread of their own instead; probes of a live process that must be gone
 * before the daemon goes on (memtracectl detach) are still closed in place.
 * Those of a process moved out of a --cgroup are not (its calls count no
 * more from the move, in BPF): the loop drains on meanwhile, and an attach
 * of that pid again waits for them first (detacher_wait).
 */
#ifndef MEMTRACE_ATTACH_DETACHER_H
#define MEMTRACE_ATTACH_DETACHER_H

#include "daemon/attach/probes.h"

/* Move tp's probes to the detacher (tp is left empty). Closes them here if
 * no thread can be started. */
void detacher_detach(struct target_probes *tp);

/* The same for probes of process pid that is alive, and may be attached
 * again: detacher_wait() before that, or its calls would count twice. */
void detacher_detach_pid(struct target_probes *tp, int pid);

/* Wait until no probes of pid are left to close (at once when none are). */
void detacher_wait(int pid);

/* Close every probe handed over so far and stop the thread (at exit). */
void detacher_stop(void);

#endif
