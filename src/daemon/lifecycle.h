/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A target's lifecycle as one state machine: the phase an entry of the
 * targets table is in (enum lc_phase), the events that move it on (enum
 * lc_event), the one function that moves it (lc_step, refusing what the
 * table of lifecycle.c does not allow), and what the daemon decides for an
 * event in a phase. Pure logic: no BPF, no system call, so that the unit
 * test (tests/unit/test_lifecycle.c) runs the code the daemon runs.
 * docs/design.md draws the machine.
 */
#ifndef MEMTRACE_DAEMON_LIFECYCLE_H
#define MEMTRACE_DAEMON_LIFECYCLE_H

#include <stdbool.h>

enum lc_phase {
	LC_NEW,		 /* an entry just made: nothing done yet */
	LC_ATTACHING,	 /* a running process: its allocator read, its probes being placed */
	LC_EXEC_HELD,	 /* stopped at its exec by the BPF programs (a --comm/--exe match),
			  * being attached there: its libraries are not mapped yet */
	LC_RESOLVING,	 /* traced, but the allocator of the program it runs is not
			  * resolved yet (after an exec, or attached at one): held in its
			  * ld.so, or tried again on the drain tick */
	LC_ATTACHED,	 /* traced */
	LC_DETACHING,	 /* its probes are off; the ring buffer is being drained of what
			  * it did until then */
	LC_GIVEN_UP,	 /* its new program could not be traced: probes off, its exit
			  * still watched (target_give_up) */
	LC_DETACHED,	 /* no longer traced: detached, or its attach failed */
	LC_EXITED,	 /* its process exited */
	LC_EXECED,	 /* its process executed a new program: a newer entry traces it */
	LC_OOM_MARKED,	 /* the kernel's OOM killer chose it (oom:mark_victim): dying, killed
			  * (SIGKILL sent); still traced until its exit is seen */
	LC_OOM_KILLED,	 /* its process was killed by the OOM killer and exited */
	LC_EXEC_AWAITED, /* a running match (moved into the cgroup) whose attach an exec
			  * overtook: nothing of it is placed; the exec's own event (a
			  * match, or the exec the watch counted), ahead in the ring
			  * buffer, attaches it at that exec */
	LC_PHASES
};

enum lc_event {
	LC_EV_ATTACH,	     /* attach asked: at start, memtracectl attach, a running match */
	LC_EV_MATCH_AT_EXEC, /* a --comm/--exe match stopped at its exec, to be attached */
	LC_EV_FORKED,	     /* the entry of a child a traced process forked (its probes'
			      * copies trace it from its first call) */
	LC_EV_NEW_PROGRAM,   /* the entry of the program a traced process executed */
	LC_EV_PROBES_PLACED, /* the attach is done: probes placed, its exit watched */
	LC_EV_RESOLVED,	     /* its program's allocator resolved, the probes moved there */
	LC_EV_GIVE_UP,	     /* cannot trace it: the attach failed, or the new program's
			      * allocator or probes */
	LC_EV_EXEC,	     /* its process executed another program (seen in order, or
			      * found by its count after a lost event) */
	LC_EV_DETACH,	     /* detach asked (or its parent's, with its children) */
	LC_EV_DRAINED,	     /* the drain after the detach is done */
	LC_EV_EXIT,	     /* its process exited (pidfd readable, or gone at its fork) */
	LC_EV_STOP,	     /* the daemon stops */
	LC_EV_OOM_KILL,	     /* the OOM killer chose its process (the tracepoint's control
			      * record; after the exit when that came first) */
	LC_EV_OVERTAKEN,     /* the running process executed a program during its attach */
	LC_EVENTS
};

/* The phase event ev moves phase `from` to, or -1 if the table does not allow it. */
int lc_next(enum lc_phase from, enum lc_event ev);

/* Move *phase on by ev; an event the table does not allow is a bug (an
 * invariant, checked in the sanitizer build) and leaves *phase as it is. */
void lc_step(enum lc_phase *phase, enum lc_event ev);

const char *lc_phase_name(enum lc_phase p);
const char *lc_event_name(enum lc_event ev);

/* The state snapshots show (enum snap_target_state). */
int lc_snap_state(enum lc_phase p);
/* Traced now: its events are its own (resolving, attached, or detaching until
 * the drain is done): snapshots say "attached". */
bool lc_traced(enum lc_phase p);
/* Its program's allocator is not probed yet (a leak scan waits). */
bool lc_settling(enum lc_phase p);
/* Ended: no event moves it on. */
bool lc_ended(enum lc_phase p);

/* ---- what the daemon decides for an event in a phase ---------------------- */

/* Held still while its probes are placed (ptrace), its children being traced?
 * Not one the BPF programs hold at its exec; nor one whose children are not
 * traced. */
bool lc_attach_hold(enum lc_phase p, bool children_traced);

/* The exec event of an entry in phase p (unmatched: a match executed a
 * program that does not match). */
enum lc_exec_action {
	LC_EXEC_IGNORE,	  /* not traced (any more): nothing to do */
	LC_EXEC_NEW_GEN,  /* this entry ends, execed; a new one traces the new program */
	LC_EXEC_UNTRACED, /* this entry ends, execed; the new program is not traced */
	LC_EXEC_ATTACH,	  /* the exec its attach awaited (LC_EXEC_AWAITED): attached at it */
	LC_EXEC_ABANDON,  /* the same, but the new program does not match: given up */
};
enum lc_exec_action lc_on_exec(enum lc_phase p, bool unmatched);
/* The event that moves the new program's entry on after LC_EV_NEW_PROGRAM, if
 * any (-1): a process being detached that executed stays being detached. */
int lc_exec_successor(enum lc_phase old);

/* A fork reported by a traced process (or by one no longer traced). */
enum lc_fork_action {
	LC_FORK_NOT_TARGET, /* its parent is not traced: the child runs its copies untraced */
	LC_FORK_OVER_LIMIT, /* a match's child past --max-targets: untraced too */
	LC_FORK_CHILD,	    /* an entry for the child */
};
/* parent: the parent's phase, or -1 if no entry of it is traced. */
enum lc_fork_action lc_on_fork(int parent, bool parent_matched, int matched_now, int max_targets);
/* The event that moves a child's entry on after LC_EV_FORKED, if any (-1):
 * a child forked while its parent is being detached is detached with it. */
int lc_fork_successor(enum lc_phase parent);

/* A --comm/--exe match stopped at its exec. */
enum lc_match_action {
	LC_MATCH_KNOWN,	     /* attached already (the scan at start): it was counted twice */
	LC_MATCH_OVER_LIMIT, /* --max-targets are traced already: not traced */
	LC_MATCH_ATTACH,     /* a new entry, attached while it is held */
	LC_MATCH_AWAITED,    /* the exec an attach awaited (LC_EXEC_AWAITED): that entry is
			      * attached while it is held (it was counted twice) */
};
/* known: an entry of it is traced; awaited: one awaits this exec. */
enum lc_match_action lc_on_match(bool known, bool awaited, int matched_now, int max_targets);

/* What the daemon does with an entry when it stops: SIGTERM drains the ring
 * buffer, then every probe goes (and with it a hold in ld.so); under
 * SIGKILL nothing of this runs, and the BPF keeper continues a process
 * that was held at its exec or in its ld.so. */
enum lc_stop_action {
	LC_STOP_NOTHING, /* ended already: its data only */
	LC_STOP_DETACH,	 /* its probes go, it runs on untraced: LC_EV_STOP */
};
enum lc_stop_action lc_on_stop(enum lc_phase p);

#endif
