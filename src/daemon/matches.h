/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Whole-host mode (--comm/--exe): the scan at start and the --max-targets
 * count (matches.c).
 */
#ifndef MEMTRACE_DAEMON_MATCHES_H
#define MEMTRACE_DAEMON_MATCHES_H

#include <stdint.h>

struct daemon;
struct cgmatch;

/*
 * At start: attach to the matching processes running now that are not
 * targets yet, nor in the "targets" map (a match stopped at its exec, a
 * traced parent's child: their events are in the ring buffer); how many.
 * main.c runs it twice, with a drain of the ring buffer between: the second
 * (last set) takes the processes started between the first one's list and
 * their parent's attach. A match refused at the limit is counted once. One
 * that executed another program between its check and the exec
 * tracepoint's watch is checked again once watched, and detached ("not a
 * match").
 */
int attach_matching(struct daemon *d, const char *comm, const char *exe, int last);
/*
 * Start tracing cgroup m (resolved: proc/cgpath.h; the daemon owns it from
 * here): the BPF programs' match (the exec tracepoint, and the move
 * tracepoint attached now), then the scan of its processes running now (as
 * attach_matching, twice); what is its description ("--cgroup PATH").
 * memtraced --cgroup/--unit at start, and memtracectl attach --cgroup while
 * it runs. 0, or -1 with a one-line reason in err (a match traced already;
 * no CAP_KILL to continue what the exec tracepoint stops; the tracepoint).
 */
int matches_cgroup_start(struct daemon *d, struct cgmatch *m, const char *what, char *err,
			 size_t errlen);
/* Matched targets traced now (the --max-targets cap counts them). */
int targets_matched_now(const struct daemon *d);
/* A match refused at --max-targets (logged with the BPF side's on the tick). */
void target_over_limit(struct daemon *d, int pid);
/* matches_over_limit: the daemon's count and the BPF side's. */
uint64_t targets_over_limit(const struct daemon *d);
/* On the drain timer: log the matches over the limit not logged yet (a line
 * a second at most). */
void targets_log_over_limit(struct daemon *d, uint64_t now);

#endif
