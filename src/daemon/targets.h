/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A traced process as the daemon sees it (one generation of it: see
 * targets.c): its identity, state, probes and a pidfd that tells the event
 * loop when it exits; and the operations of targets.c on the table of them.
 */
#ifndef MEMTRACE_DAEMON_TARGETS_H
#define MEMTRACE_DAEMON_TARGETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/attach/allocator.h"
#include "daemon/attach/probes.h"
#include "daemon/lifecycle.h"
#include "memtrace/event.h"
#include "memtrace/snapshot.h"

struct daemon;

struct target {
	int pid;
	uint32_t gen;	   /* its generation in the tracker (tracker_find_gen) */
	int pidfd;	   /* -1 once the exit has been handled */
	bool pidfd_paused; /* out of the epoll set while the request worker reads the core */
	/* where it is in its life: moved on by lc_step() alone (lifecycle.h) */
	enum lc_phase phase;
	bool is_child;	 /* started by us: reap it */
	int exit_status; /* wait status, or -1 */
	char *command;
	char *note; /* one line on what tracing misses, or NULL (snap_target.note) */
	/* its allocator and its own probes, allocated when first needed
	 * (target_alloc, target_probes): NULL in a forked child, which runs
	 * copies of its parent's (the entry is 136 bytes, not 25 KiB) */
	struct allocator *alloc;
	char *alloc_path; /* a forked child: its parent's allocator, for showing */
	struct target_probes *probes;
	uint64_t attach_ns;	    /* CLOCK_MONOTONIC when tracing began */
	uint64_t end_ns;	    /* when it exited, or 0 */
	uint64_t execs_seen;	    /* the exec tracepoint's count when this entry began */
	struct bpf_link *ldso_link; /* LC_RESOLVING: the probe that stops it in its ld.so */
	int parent;	     /* forked from a target (--follow-forks, a match): the entry whose
			      * probes it inherited, or -1 */
	bool copies;	     /* runs copies of its parent's probes: forked, and not executed a
			      * program since that dropped them (a match's child does) */
	bool matched;	     /* matched --comm/--exe, or forked by a match (counts in the cap) */
	bool holds_untraced; /* ended, its process runs its probes untraced while
			      * children run copies (MT_UNTRACED_OWN) */
	/* exited before we could watch it: what it inherited leaves its heap
	 * once its events (queued behind its fork) are all applied */
	bool release_pending;
	/* it ran while its probes were placed, its children traced (not held
	 * still: ptrace refused, or the hold's bound passed): a child forked in
	 * [from, to) carries only some of them (CLOCK_MONOTONIC; 0 0: never) */
	uint64_t unguarded_from_ns, unguarded_to_ns;
	/* the OOM killer chose it (events.c, target_oom_killed): when, and what it
	 * held then; killed = 0 otherwise */
	struct snap_oom oom;
};

/* A new entry for pid in d->targets; returns its index. An entry does not
 * move: a pointer to it stays good until targets_free(). */
int target_new(struct daemon *d, int pid);
/* Entry tg's allocator and probe table, made empty on first use. */
struct allocator *target_alloc(struct target *tg);
struct target_probes *target_probes(struct target *tg);
/* Probes entry tg holds itself (0 without a table). */
int target_nlinks(const struct target *tg);
/* Which allocator it runs, for showing, or NULL. */
const char *target_alloc_path(const struct target *tg);

/* Attach to a running process (memtracectl attach, --pid, a match found at
 * start). 0, or -1 with a one-line reason in err. */
int target_attach_pid(struct daemon *d, int pid, char *err, size_t errlen);
/* Attach to entry i, alive (and stopped, when we started it or it matched).
 * 0; -1 with a one-line reason in err; 1 for a running match that executed
 * a program meanwhile: left in LC_EXEC_AWAITED to that exec's event. */
int target_attach(struct daemon *d, int i, char *err, size_t errlen);

/*
 * Stop tracing pid and, with --follow-forks, its descendants, in two steps:
 * begin takes their probes off; the caller then drains the ring buffer of
 * the events made until then; end marks them detached. begin returns a
 * handle for end, or NULL with a one-line reason in err. off_loop: the
 * probes are closed by the detacher (attach/detacher.h), not before begin
 * returns: for a process whose calls the BPF side counts no more already
 * (moved out of the cgroup), so that the loop goes on draining meanwhile.
 */
struct target_detach *target_detach_begin(struct daemon *d, int pid, bool off_loop, char *err,
					  size_t errlen);
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
 * Make the symbolizer read a running process's maps only while it is still
 * the program whose events are drained now (attached, alive, past no exec
 * the daemon has not seen): what it reads after the process executed
 * another program or exited is dropped.
 */
void targets_guard_symbolizer(struct daemon *d);

/*
 * For events.c and matches.c, which carry a target through its exec, fork
 * and match, on the entries this file makes.
 */

/* How entry tg's probes reach its children: enum probe_inherit. */
int target_inherit(const struct daemon *d, const struct target *tg);
/* target_attach() failed for entry i (the last, or one that awaited its
 * exec): undo what it did. */
void target_attach_failed(struct daemon *d, int i);
/* A matched target is gone (exited, detached, no longer a match): it leaves
 * the --max-targets cap. */
void target_unmatch(struct daemon *d, struct target *tg);
/* Is entry i's process still the program whose events are drained now
 * (attached, alive, past no exec the daemon has not seen)? */
int target_current(struct daemon *d, int i);
/* Entry i's command line, read now: "?" unless target_current() after the read. */
char *target_read_command(struct daemon *d, int i);
/* pid starts a new generation: what is kept under pid moves to a retired key. */
void targets_retire_pid(struct daemon *d, int pid);
/* Continue a process the BPF programs stopped (exec, ld.so, --comm match). */
void targets_continue(struct daemon *d, int pid);
/* Close the probe that holds entry tg in its ld.so, if any. */
void target_ldso_release(struct target *tg);
int target_pidfd_open(int pid);
/*
 * Entry i's labels (its cgroup, what it names, NSpid), read now from /proc
 * (docs/design.md, "The cgroup, with the same round"): 0, or -1 when the
 * process could not be read (gone already: its entry keeps what it had).
 */
int target_read_labels(struct daemon *d, int i);
/* Python frames for pid on (1) if it is a CPython the walker can read, or off;
 * pymalloc's arenas traced (default mode). */
int target_python_frames(struct daemon *d, int pid);
void target_python_off(struct daemon *d, int pid);
void target_python_arenas(struct daemon *d, struct target *tg);
/* Close the probes of entry i and its ancestors that no traced process runs
 * any more (off the loop). */
void targets_release_probes(struct daemon *d, int i);

/* Tests only: where the daemon loses MEMTRACE_TEST_*LAG_MS ms (targets.c; a
 * no-op without MEMTRACE_TEST_HOOKS). */
enum { TEST_LAG_CONTINUE, TEST_LAG_RESOLVE, TEST_LAG_ATTACH, TEST_LAGS };
void targets_test_lag(int where);

/* Detach every probe and free the table (the daemon stops). */
void targets_free(struct daemon *d);

#endif
