/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A traced process as the daemon sees it (one generation of it: see
 * targets.c): its identity, state, probes and a pidfd that tells the event
 * loop when it exits; and the operations of targets.c on the table of them.
 */
#ifndef MEMTRACE_DAEMON_TARGETS_H
#define MEMTRACE_DAEMON_TARGETS_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/attach/allocator.h"
#include "daemon/attach/probes.h"
#include "memtrace/event.h"

struct daemon;

struct target {
	int pid;
	uint32_t space;	  /* its generation in the tracker (tracker_find_space) */
	int pidfd;	  /* -1 once the exit has been handled */
	int pidfd_paused; /* out of the epoll set while the request worker reads the core */
	int state;	  /* enum snap_target_state */
	int is_child;	  /* started by us: reap it */
	int exit_status;  /* wait status, or -1 */
	char *command;
	char *note; /* one line on what tracing misses, or NULL (snap_target.note) */
	struct allocator alloc;
	struct target_probes probes;
	uint64_t attach_ns;	    /* CLOCK_MONOTONIC when tracing began */
	uint64_t end_ns;	    /* when it exited, or 0 */
	uint64_t execs_seen;	    /* the exec tracepoint's count when this entry began */
	int resolve_pending;	    /* executed a new program: its allocator is not resolved yet */
	struct bpf_link *ldso_link; /* meanwhile: the probe that stops it in its ld.so */
	int parent;	    /* forked from a target (--follow-forks, a match): the entry whose
			     * probes it inherited, or -1 */
	int copies;	    /* runs copies of its parent's probes: forked, and not executed a
			     * program since that dropped them (a match's child does) */
	int matched;	    /* matched --comm/--exe, or forked by a match (counts in the cap) */
	int holds_untraced; /* ended, its process runs its probes untraced while
			     * children run copies (MT_UNTRACED_OWN) */
	int at_exec;	    /* stopped right after exec: its libraries are not mapped yet */
	/* exited before we could watch it: what it inherited leaves its heap
	 * once its events (queued behind its fork) are all applied */
	int release_pending;
};

/* A new entry for pid in d->targets (which may move); returns its index. */
int target_new(struct daemon *d, int pid);

/* Attach to a running process (memtracectl attach, --pid, a match found at
 * start). 0, or -1 with a one-line reason in err. */
int target_attach_pid(struct daemon *d, int pid, char *err, size_t errlen);
/* Attach to entry i, alive (and stopped, when we started it or it matched). */
int target_attach(struct daemon *d, int i, char *err, size_t errlen);

/*
 * Stop tracing pid and, with --follow-forks, its descendants, in two steps:
 * begin takes their probes off; the caller then drains the ring buffer of
 * the events made until then; end marks them detached. begin returns a
 * handle for end, or NULL with a one-line reason in err.
 */
struct target_detach *target_detach_begin(struct daemon *d, int pid, char *err, size_t errlen);
void target_detach_end(struct daemon *d, struct target_detach *h);

/* Entry i's process exited (its pidfd said so; drain the ring buffer first). */
void target_exited(struct daemon *d, int i);
/* After a whole drain: children found gone at their fork have had all their
 * events; what they inherited leaves their heaps now. */
void targets_release_pending(struct daemon *d);
/* Stop (0) or resume (1) watching target i's exit; resuming fires at once if
 * it exited meanwhile (while the request worker read the core). */
void target_pidfd_arm(struct daemon *d, int i, int on);

/*
 * Whole-host mode at start: attach to the matching processes running now
 * that are not targets yet, nor in the "targets" map (a match stopped at
 * its exec, a traced parent's child: their events are in the ring buffer);
 * how many. main.c runs it twice, with a drain of the ring buffer between:
 * the second (last set) takes the processes started between the first
 * one's list and their parent's attach. A match refused at the limit is
 * counted once. One that executed another program between its check and
 * the exec tracepoint's watch is checked again once watched, and detached
 * ("not a match").
 */
int attach_matching(struct daemon *d, const char *comm, const char *exe, int last);
/* Matched targets traced now (the --max-targets cap counts them). */
int targets_matched_now(const struct daemon *d);
/* matches_over_limit: the daemon's count and the BPF side's. */
uint64_t targets_over_limit(const struct daemon *d);
/* On the drain timer: log the matches over the limit not logged yet (a line
 * a second at most). */
void targets_log_over_limit(struct daemon *d, uint64_t now);

/*
 * A control record of the ring buffer, after the tracker applied it
 * (ingest's control hook): a target executed a new program (held for us),
 * reached its ld.so's _dl_debug_state or is about to install a CPython
 * allocator (stopped there), a followed target or a match forked, or (whole-host
 * mode) a matching program was executed and is stopped at its exec.
 */
void targets_control(struct daemon *d, const struct mt_event *ev);

/* On the drain timer: is some target's exec not seen yet? If so, drain the
 * ring buffer, then check_execs acts on those whose event was lost. */
int execs_unseen(struct daemon *d);
void check_execs(struct daemon *d);
/* ... and new programs whose allocator is still to be resolved (held: the
 * process is stopped for it; 0 on the drain tick). */
void target_resolve(struct daemon *d, int i, int held);

/*
 * Make the symbolizer read a running process's maps only while it is still
 * the program whose events are drained now (attached, alive, past no exec
 * the daemon has not seen): what it reads after the process executed
 * another program or exited is dropped.
 */
void targets_guard_symbolizer(struct daemon *d);

/* Detach every probe and free the table (the daemon stops). */
void targets_free(struct daemon *d);

#endif
