// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of a target's lifecycle (src/daemon/lifecycle.c): every
 * transition the table allows, every one it refuses, and the orders of
 * events the stress rounds of the end-to-end tests provoke (an exec during
 * an attach, a fork during an exec hold, a detach during an exec, a match
 * past --max-targets, an exit in each phase...), through the functions the
 * daemon decides with. No root, no BPF.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/invariant.h"
#include "daemon/daemon.h"
#include "daemon/lifecycle.h"
#include "daemon/targets.h"
#include "memtrace/snapshot.h"
#include "unit.h"

/* The machine as docs/design.md draws it, written out apart from the table. */
static const struct {
	enum lc_phase from;
	enum lc_event ev;
	enum lc_phase to;
} allowed[] = {
    {LC_NEW, LC_EV_ATTACH, LC_ATTACHING},
    {LC_NEW, LC_EV_MATCH_AT_EXEC, LC_EXEC_HELD},
    {LC_NEW, LC_EV_FORKED, LC_ATTACHED},
    {LC_NEW, LC_EV_NEW_PROGRAM, LC_RESOLVING},
    {LC_ATTACHING, LC_EV_PROBES_PLACED, LC_ATTACHED},
    {LC_ATTACHING, LC_EV_GIVE_UP, LC_DETACHED},
    {LC_EXEC_HELD, LC_EV_PROBES_PLACED, LC_RESOLVING},
    {LC_EXEC_HELD, LC_EV_GIVE_UP, LC_DETACHED},
    {LC_RESOLVING, LC_EV_RESOLVED, LC_ATTACHED},
    {LC_RESOLVING, LC_EV_GIVE_UP, LC_GIVEN_UP},
    {LC_RESOLVING, LC_EV_EXEC, LC_EXECED},
    {LC_RESOLVING, LC_EV_DETACH, LC_DETACHING},
    {LC_RESOLVING, LC_EV_EXIT, LC_EXITED},
    {LC_RESOLVING, LC_EV_STOP, LC_DETACHED},
    {LC_ATTACHED, LC_EV_EXEC, LC_EXECED},
    {LC_ATTACHED, LC_EV_DETACH, LC_DETACHING},
    {LC_ATTACHED, LC_EV_EXIT, LC_EXITED},
    {LC_ATTACHED, LC_EV_STOP, LC_DETACHED},
    {LC_GIVEN_UP, LC_EV_EXIT, LC_EXITED},
    {LC_DETACHING, LC_EV_DRAINED, LC_DETACHED},
    {LC_DETACHING, LC_EV_EXEC, LC_EXECED},
    {LC_DETACHING, LC_EV_STOP, LC_DETACHED},
    {LC_RESOLVING, LC_EV_OOM_KILL, LC_OOM_MARKED},
    {LC_ATTACHED, LC_EV_OOM_KILL, LC_OOM_MARKED},
    {LC_OOM_MARKED, LC_EV_EXIT, LC_OOM_KILLED},
    {LC_OOM_MARKED, LC_EV_DETACH, LC_DETACHING},
    {LC_OOM_MARKED, LC_EV_STOP, LC_DETACHED},
    {LC_ATTACHING, LC_EV_OVERTAKEN, LC_EXEC_AWAITED},
    {LC_EXEC_AWAITED, LC_EV_MATCH_AT_EXEC, LC_EXEC_HELD},
    {LC_EXEC_AWAITED, LC_EV_ATTACH, LC_ATTACHING},
    {LC_EXEC_AWAITED, LC_EV_GIVE_UP, LC_DETACHED},
};

static int allowed_to(enum lc_phase from, enum lc_event ev)
{
	for (size_t k = 0; k < sizeof(allowed) / sizeof(allowed[0]); k++)
		if (allowed[k].from == from && allowed[k].ev == ev)
			return allowed[k].to;
	return -1;
}

/* Move p by each event in turn; each must be allowed. */
static enum lc_phase walk(enum lc_phase p, const enum lc_event *evs, int n)
{
	for (int k = 0; k < n; k++) {
		CHECK(lc_next(p, evs[k]) >= 0);
		lc_step(&p, evs[k]);
	}
	return p;
}

TEST(every_allowed_transition)
{
	for (size_t k = 0; k < sizeof(allowed) / sizeof(allowed[0]); k++) {
		enum lc_phase p = allowed[k].from;

		CHECK_EQ_U64(lc_next(allowed[k].from, allowed[k].ev), allowed[k].to);
		lc_step(&p, allowed[k].ev);
		CHECK_EQ_U64(p, allowed[k].to);
	}
}

TEST(every_other_transition_refused)
{
	int refused = 0;

	for (int p = 0; p < LC_PHASES; p++)
		for (int e = 0; e < LC_EVENTS; e++) {
			int want = allowed_to((enum lc_phase)p, (enum lc_event)e);

			if (want < 0) {
				if (lc_next((enum lc_phase)p, (enum lc_event)e) != -1)
					fprintf(stderr, "%s --%s--> allowed\n",
						lc_phase_name((enum lc_phase)p),
						lc_event_name((enum lc_event)e));
				CHECK(lc_next((enum lc_phase)p, (enum lc_event)e) == -1);
				refused++;
			}
		}
	CHECK(refused > 0);
	/* the ended phases: nothing moves them */
	for (int e = 0; e < LC_EVENTS; e++) {
		CHECK(lc_next(LC_DETACHED, (enum lc_event)e) == -1);
		CHECK(lc_next(LC_EXITED, (enum lc_event)e) == -1);
		CHECK(lc_next(LC_EXECED, (enum lc_event)e) == -1);
		CHECK(lc_next(LC_OOM_KILLED, (enum lc_event)e) == -1);
	}
	CHECK(lc_next(LC_PHASES, LC_EV_EXIT) == -1);
	CHECK(lc_next(LC_ATTACHED, LC_EVENTS) == -1);
}

/* A refused event is an invariant: the sanitizer build aborts on it; the
 * others leave the phase as it was. */
TEST(refused_step_is_an_invariant)
{
	int status = 0;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		enum lc_phase p = LC_EXITED;

		/* the invariant's line is expected */
		if (!freopen("/dev/null", "w", stderr))
			_exit(2);
		lc_step(&p, LC_EV_RESOLVED);
		_exit(p == LC_EXITED ? 0 : 1);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	if (MT_CHECKING)
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	else
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(phases_as_snapshots_show_them)
{
	CHECK_EQ_U64(lc_snap_state(LC_NEW), SNAP_TARGET_ATTACHING);
	CHECK_EQ_U64(lc_snap_state(LC_ATTACHING), SNAP_TARGET_ATTACHING);
	CHECK_EQ_U64(lc_snap_state(LC_EXEC_HELD), SNAP_TARGET_ATTACHING);
	CHECK_EQ_U64(lc_snap_state(LC_RESOLVING), SNAP_TARGET_ATTACHED);
	CHECK_EQ_U64(lc_snap_state(LC_ATTACHED), SNAP_TARGET_ATTACHED);
	CHECK_EQ_U64(lc_snap_state(LC_DETACHING), SNAP_TARGET_ATTACHED);
	CHECK_EQ_U64(lc_snap_state(LC_GIVEN_UP), SNAP_TARGET_DETACHED);
	CHECK_EQ_U64(lc_snap_state(LC_DETACHED), SNAP_TARGET_DETACHED);
	CHECK_EQ_U64(lc_snap_state(LC_EXITED), SNAP_TARGET_EXITED);
	CHECK_EQ_U64(lc_snap_state(LC_EXECED), SNAP_TARGET_EXECED);
	CHECK_EQ_U64(lc_snap_state(LC_OOM_MARKED), SNAP_TARGET_ATTACHED);
	CHECK_EQ_U64(lc_snap_state(LC_OOM_KILLED), SNAP_TARGET_EXITED);
	CHECK_EQ_U64(lc_snap_state(LC_EXEC_AWAITED), SNAP_TARGET_ATTACHING);
	/* a leak scan waits for the allocator, and only for it */
	for (int p = 0; p < LC_PHASES; p++)
		CHECK(lc_settling((enum lc_phase)p) ==
		      (p == LC_EXEC_HELD || p == LC_RESOLVING || p == LC_EXEC_AWAITED));
	for (int p = 0; p < LC_PHASES; p++)
		CHECK(lc_ended((enum lc_phase)p) ==
		      (p == LC_DETACHED || p == LC_EXITED || p == LC_EXECED || p == LC_OOM_KILLED));
	CHECK_STR(lc_phase_name(LC_EXEC_HELD), "exec-held");
	CHECK_STR(lc_phase_name(LC_OOM_KILLED), "oom-killed");
	CHECK_STR(lc_event_name(LC_EV_PROBES_PLACED), "probes-placed");
	CHECK_STR(lc_phase_name(LC_EXEC_AWAITED), "exec-awaited");
	CHECK_STR(lc_event_name(LC_EV_OVERTAKEN), "overtaken");
}

/* memtracectl attach, a running process: held still by ptrace while its
 * probes are placed only if its children are traced. */
TEST(attach_running)
{
	static const enum lc_event evs[] = {LC_EV_ATTACH, LC_EV_PROBES_PLACED};
	enum lc_phase p = LC_NEW;

	lc_step(&p, LC_EV_ATTACH);
	CHECK(lc_attach_hold(p, true));
	CHECK(!lc_attach_hold(p, false));
	CHECK_EQ_U64(walk(LC_NEW, evs, 2), LC_ATTACHED);
	CHECK(!lc_settling(LC_ATTACHED));
}

/* An exec during the attach: before the exec tracepoint watches it, the
 * attach fails (its image changed) and the entry is given up; after, the
 * exec arrives as an event once it is attached, and a new entry follows. */
TEST(exec_during_attach)
{
	static const enum lc_event failed[] = {LC_EV_ATTACH, LC_EV_GIVE_UP};
	enum lc_phase p = LC_NEW, nt = LC_NEW;

	CHECK_EQ_U64(walk(LC_NEW, failed, 2), LC_DETACHED);
	lc_step(&p, LC_EV_ATTACH);
	/* the ring buffer is not drained during an attach: no exec applies */
	CHECK_EQ_U64(lc_on_exec(LC_ATTACHING, false), LC_EXEC_IGNORE);
	CHECK(lc_next(p, LC_EV_EXEC) == -1);
	lc_step(&p, LC_EV_PROBES_PLACED);
	CHECK_EQ_U64(lc_on_exec(p, false), LC_EXEC_NEW_GEN);
	CHECK(lc_exec_successor(p) == -1);
	lc_step(&p, LC_EV_EXEC);
	lc_step(&nt, LC_EV_NEW_PROGRAM);
	CHECK_EQ_U64(p, LC_EXECED);
	CHECK_EQ_U64(nt, LC_RESOLVING);
	CHECK(lc_settling(nt));
	/* an exec again before the new program's allocator is resolved */
	CHECK_EQ_U64(lc_on_exec(nt, false), LC_EXEC_NEW_GEN);
	lc_step(&nt, LC_EV_EXEC);
	CHECK_EQ_U64(nt, LC_EXECED);
	/* an exec event of an entry that ended already is nothing */
	CHECK_EQ_U64(lc_on_exec(LC_EXECED, false), LC_EXEC_IGNORE);
	CHECK_EQ_U64(lc_on_exec(LC_DETACHED, true), LC_EXEC_IGNORE);
}

/*
 * A process moved into the cgroup that executes a program at once (runc's
 * init, `sh -c 'echo $$ > cgroup.procs; exec prog'`): the exec overtakes
 * its attach (the tracepoint matched it first, or the watch counted it
 * before the image was taken again). Nothing is placed; the entry awaits
 * the exec's own event, which attaches it at that exec: a match stopped
 * there (counted twice: once at the move, once by the tracepoint), or the
 * exec event, held (as at a match) or not (attached as it runs, and maybe
 * overtaken again). Lost, or the new program no match: given up.
 */
TEST(exec_overtakes_moved_attach)
{
	static const enum lc_event at_match[] = {LC_EV_ATTACH, LC_EV_OVERTAKEN, LC_EV_MATCH_AT_EXEC,
						 LC_EV_PROBES_PLACED, LC_EV_RESOLVED};
	static const enum lc_event unheld[] = {LC_EV_ATTACH, LC_EV_OVERTAKEN,
					       LC_EV_ATTACH, LC_EV_OVERTAKEN,
					       LC_EV_ATTACH, LC_EV_PROBES_PLACED};
	static const enum lc_event lost[] = {LC_EV_ATTACH, LC_EV_OVERTAKEN, LC_EV_GIVE_UP};
	enum lc_phase p = LC_NEW;

	lc_step(&p, LC_EV_ATTACH);
	lc_step(&p, LC_EV_OVERTAKEN);
	CHECK_EQ_U64(p, LC_EXEC_AWAITED);
	CHECK(!lc_traced(p) && !lc_ended(p) && lc_settling(p));
	CHECK(!lc_attach_hold(p, true));
	/* its match event: not known (nothing traced), the awaiting entry, even
	 * at the cap (it was counted when its attach began) */
	CHECK_EQ_U64(lc_on_match(false, true, 0, 1), LC_MATCH_AWAITED);
	CHECK_EQ_U64(lc_on_match(false, true, 5, 1), LC_MATCH_AWAITED);
	CHECK_EQ_U64(lc_on_match(true, true, 0, 1), LC_MATCH_KNOWN);
	/* the exec event its watch counted */
	CHECK_EQ_U64(lc_on_exec(p, false), LC_EXEC_ATTACH);
	CHECK_EQ_U64(lc_on_exec(p, true), LC_EXEC_ABANDON);
	CHECK(lc_next(p, LC_EV_EXEC) == -1); /* no entry of it ends: none began */
	CHECK(lc_next(p, LC_EV_EXIT) == -1); /* its exit is watched once attached */
	CHECK(lc_next(p, LC_EV_PROBES_PLACED) == -1);
	CHECK_EQ_U64(lc_on_stop(p), LC_STOP_NOTHING);
	CHECK_EQ_U64(walk(LC_NEW, at_match, 5), LC_ATTACHED);
	CHECK_EQ_U64(walk(LC_NEW, unheld, 6), LC_ATTACHED);
	CHECK_EQ_U64(walk(LC_NEW, lost, 3), LC_DETACHED);
	/* attached at its exec, it may fail there too */
	CHECK(lc_next(LC_EXEC_HELD, LC_EV_GIVE_UP) == LC_DETACHED);
	/* only a running attach is overtaken: held at an exec, nothing runs */
	CHECK(lc_next(LC_EXEC_HELD, LC_EV_OVERTAKEN) == -1);
	CHECK(lc_next(LC_RESOLVING, LC_EV_OVERTAKEN) == -1);
	CHECK(lc_next(LC_ATTACHED, LC_EV_OVERTAKEN) == -1);
}

/* A --comm/--exe match stopped at its exec: attached there without ptrace,
 * then held in its ld.so until its allocator is resolved. */
TEST(match_at_exec)
{
	static const enum lc_event evs[] = {LC_EV_MATCH_AT_EXEC, LC_EV_PROBES_PLACED,
					    LC_EV_RESOLVED};
	enum lc_phase p = LC_NEW;

	CHECK_EQ_U64(lc_on_match(false, false, 0, 1), LC_MATCH_ATTACH);
	lc_step(&p, LC_EV_MATCH_AT_EXEC);
	CHECK(!lc_attach_hold(p, true)); /* the BPF programs hold it */
	CHECK(lc_settling(p));
	CHECK_EQ_U64(walk(LC_NEW, evs, 3), LC_ATTACHED);
	/* the match executes a program that does not match */
	CHECK_EQ_U64(lc_on_exec(LC_ATTACHED, true), LC_EXEC_UNTRACED);
}

/* Past --max-targets: a match is not traced, nor a match's child; a child of
 * a --follow-forks target is, whatever the count. The scan at start found it
 * already: it is known. */
TEST(match_past_max_targets)
{
	CHECK_EQ_U64(lc_on_match(false, false, 2, 2), LC_MATCH_OVER_LIMIT);
	CHECK_EQ_U64(lc_on_match(false, false, 3, 2), LC_MATCH_OVER_LIMIT);
	CHECK_EQ_U64(lc_on_match(false, false, 1, 2), LC_MATCH_ATTACH);
	CHECK_EQ_U64(lc_on_match(true, false, 2, 2), LC_MATCH_KNOWN);
	CHECK_EQ_U64(lc_on_fork(LC_ATTACHED, true, 2, 2), LC_FORK_OVER_LIMIT);
	CHECK_EQ_U64(lc_on_fork(LC_ATTACHED, true, 1, 2), LC_FORK_CHILD);
	CHECK_EQ_U64(lc_on_fork(LC_ATTACHED, false, 9, 2), LC_FORK_CHILD);
}

/* A fork while the parent is held at an exec: held by the BPF programs while
 * being attached (a match), it is no target yet; its new program in ld.so
 * or resolved on the tick, it is traced, and so is the child. */
TEST(fork_during_exec_hold)
{
	enum lc_phase c = LC_NEW;

	CHECK_EQ_U64(lc_on_fork(LC_EXEC_HELD, true, 0, 4), LC_FORK_NOT_TARGET);
	CHECK_EQ_U64(lc_on_fork(LC_RESOLVING, false, 0, 0), LC_FORK_CHILD);
	CHECK(lc_fork_successor(LC_RESOLVING) == -1);
	lc_step(&c, LC_EV_FORKED);
	CHECK_EQ_U64(c, LC_ATTACHED);
	/* the parent's allocator resolved after the fork: the child runs copies */
	CHECK(lc_next(LC_RESOLVING, LC_EV_RESOLVED) == LC_ATTACHED);
}

/* A child forked before its parent's probes are placed: the parent is not
 * traced yet (or no longer), so the child is no target. */
TEST(fork_before_probes_placed)
{
	CHECK_EQ_U64(lc_on_fork(LC_ATTACHING, false, 0, 0), LC_FORK_NOT_TARGET);
	CHECK_EQ_U64(lc_on_fork(LC_NEW, false, 0, 0), LC_FORK_NOT_TARGET);
	CHECK_EQ_U64(lc_on_fork(-1, false, 0, 0), LC_FORK_NOT_TARGET);
	CHECK_EQ_U64(lc_on_fork(LC_DETACHED, false, 0, 0), LC_FORK_NOT_TARGET);
	CHECK_EQ_U64(lc_on_fork(LC_EXITED, true, 0, 8), LC_FORK_NOT_TARGET);
}

/* A child whose process is gone by the time its fork is drained: its entry
 * is made, and ends at once. */
TEST(child_gone_at_its_fork)
{
	static const enum lc_event evs[] = {LC_EV_FORKED, LC_EV_EXIT};

	CHECK_EQ_U64(walk(LC_NEW, evs, 2), LC_EXITED);
}

/* A detach during an exec: the exec, drained between the two steps of the
 * detach, ends the old entry; the new program's is detached with it. A
 * child forked meanwhile is detached too. */
TEST(detach_during_exec)
{
	enum lc_phase p = LC_ATTACHED, nt = LC_NEW, c = LC_NEW;
	int succ;

	lc_step(&p, LC_EV_DETACH);
	CHECK_EQ_U64(p, LC_DETACHING);
	CHECK_EQ_U64(lc_on_exec(p, false), LC_EXEC_NEW_GEN);
	succ = lc_exec_successor(p);
	CHECK(succ == LC_EV_DETACH);
	lc_step(&p, LC_EV_EXEC);
	lc_step(&nt, LC_EV_NEW_PROGRAM);
	lc_step(&nt, (enum lc_event)succ);
	CHECK_EQ_U64(p, LC_EXECED);
	CHECK_EQ_U64(nt, LC_DETACHING);
	/* a fork drained too */
	CHECK_EQ_U64(lc_on_fork(nt, false, 0, 0), LC_FORK_CHILD);
	succ = lc_fork_successor(nt);
	CHECK(succ == LC_EV_DETACH);
	lc_step(&c, LC_EV_FORKED);
	lc_step(&c, (enum lc_event)succ);
	CHECK_EQ_U64(c, LC_DETACHING);
	/* target_detach_end */
	lc_step(&nt, LC_EV_DRAINED);
	lc_step(&c, LC_EV_DRAINED);
	CHECK_EQ_U64(nt, LC_DETACHED);
	CHECK_EQ_U64(c, LC_DETACHED);
	/* a detach while its allocator is being resolved */
	CHECK(lc_next(LC_RESOLVING, LC_EV_DETACH) == LC_DETACHING);
	/* detached twice: the second finds nothing to detach */
	CHECK(lc_next(LC_DETACHING, LC_EV_DETACH) == -1);
	CHECK(lc_next(LC_DETACHED, LC_EV_DETACH) == -1);
}

/* ld.so maps a library while the new program's allocator is being resolved:
 * the entry stays resolving (the link map is not complete: the next report
 * does it) until the allocator is resolved, or given up. */
TEST(ldso_loads_while_resolving)
{
	static const enum lc_event evs[] = {LC_EV_NEW_PROGRAM, LC_EV_RESOLVED};
	static const enum lc_event gave_up[] = {LC_EV_NEW_PROGRAM, LC_EV_GIVE_UP};

	CHECK_EQ_U64(walk(LC_NEW, evs, 2), LC_ATTACHED);
	CHECK_EQ_U64(walk(LC_NEW, gave_up, 2), LC_GIVEN_UP);
	CHECK(!lc_traced(LC_GIVEN_UP) && !lc_settling(LC_GIVEN_UP));
	CHECK_EQ_U64(lc_on_exec(LC_GIVEN_UP, false), LC_EXEC_IGNORE);
	CHECK_EQ_U64(lc_on_fork(LC_GIVEN_UP, false, 0, 0), LC_FORK_NOT_TARGET);
	/* resolved once only: a later ld.so stop finds no entry resolving */
	CHECK(lc_next(LC_ATTACHED, LC_EV_RESOLVED) == -1);
	CHECK(lc_next(LC_GIVEN_UP, LC_EV_RESOLVED) == -1);
	CHECK(lc_next(LC_DETACHED, LC_EV_RESOLVED) == -1);
	CHECK(lc_next(LC_EXECED, LC_EV_RESOLVED) == -1);
}

/* The process exits in each phase: its pidfd is watched from the end of the
 * attach on, so an exit before that fails the attach; after the end, no
 * exit moves an entry again. */
TEST(exit_at_each_phase)
{
	CHECK(lc_next(LC_NEW, LC_EV_EXIT) == -1); /* a forked child: FORKED first */
	CHECK(lc_next(LC_ATTACHING, LC_EV_EXIT) == -1);
	CHECK(lc_next(LC_ATTACHING, LC_EV_GIVE_UP) == LC_DETACHED);
	CHECK(lc_next(LC_EXEC_HELD, LC_EV_EXIT) == -1);
	CHECK(lc_next(LC_EXEC_HELD, LC_EV_GIVE_UP) == LC_DETACHED);
	CHECK(lc_next(LC_RESOLVING, LC_EV_EXIT) == LC_EXITED);
	CHECK(lc_next(LC_ATTACHED, LC_EV_EXIT) == LC_EXITED);
	/* a new program that could not be traced: its exit is still watched */
	CHECK(lc_next(LC_GIVEN_UP, LC_EV_EXIT) == LC_EXITED);
	/* the drain of a detach runs on the loop: the exit is served after it */
	CHECK(lc_next(LC_DETACHING, LC_EV_EXIT) == -1);
	CHECK(lc_next(LC_DETACHED, LC_EV_EXIT) == -1);
	CHECK(lc_next(LC_EXITED, LC_EV_EXIT) == -1);
	CHECK(lc_next(LC_EXECED, LC_EV_EXIT) == -1);
}

/* The OOM killer chooses a traced process (oom:mark_victim, a control record
 * in the ring buffer before its exit): it is marked while it dies, still
 * traced (its last events are its own), and its exit ends it as oom-killed,
 * which nothing moves again. One being detached, or ended already, is not
 * moved (the daemon keeps the figures of an ended one's mark). */
TEST(oom_kill_then_exit)
{
	static const enum lc_event evs[] = {LC_EV_ATTACH, LC_EV_PROBES_PLACED, LC_EV_OOM_KILL,
					    LC_EV_EXIT};
	enum lc_phase p = walk(LC_NEW, evs, 3);

	CHECK_EQ_U64(p, LC_OOM_MARKED);
	CHECK(lc_traced(p) && !lc_ended(p));
	CHECK(lc_next(p, LC_EV_EXEC) == -1); /* killed: no exec comes */
	CHECK(lc_next(p, LC_EV_OOM_KILL) == -1);
	lc_step(&p, LC_EV_EXIT);
	CHECK_EQ_U64(p, LC_OOM_KILLED);
	CHECK(!lc_traced(p) && lc_ended(p));
	CHECK_EQ_U64(walk(LC_NEW, evs, 4), LC_OOM_KILLED);
	/* a new program still resolving is marked as well */
	CHECK(lc_next(LC_RESOLVING, LC_EV_OOM_KILL) == LC_OOM_MARKED);
	CHECK(lc_next(LC_DETACHING, LC_EV_OOM_KILL) == -1);
	CHECK(lc_next(LC_EXITED, LC_EV_OOM_KILL) == -1);
	CHECK(lc_next(LC_GIVEN_UP, LC_EV_OOM_KILL) == -1);
	CHECK_STR(lc_event_name(LC_EV_OOM_KILL), "oom-kill");
}

/* The daemon stops. SIGTERM: every entry still traced is detached. SIGKILL
 * while a process is held at its exec or in its ld.so: the daemon decides
 * nothing more, the BPF keeper continues the process; what the daemon had
 * is what a stop would have found. */
TEST(daemon_stops)
{
	for (int p = 0; p < LC_PHASES; p++) {
		enum lc_stop_action a = lc_on_stop((enum lc_phase)p);

		if (p == LC_RESOLVING || p == LC_ATTACHED || p == LC_DETACHING ||
		    p == LC_OOM_MARKED) {
			enum lc_phase q = (enum lc_phase)p;

			CHECK_EQ_U64(a, LC_STOP_DETACH);
			lc_step(&q, LC_EV_STOP);
			CHECK_EQ_U64(q, LC_DETACHED);
		} else {
			CHECK_EQ_U64(a, LC_STOP_NOTHING);
		}
	}
}

/* Entries do not move: a pointer taken before any number of new entries
 * (an exec, a fork storm of a pre-fork server) is the entry still. */
TEST(entries_do_not_move)
{
	struct daemon d;
	struct target *first;
	int i;

	memset(&d, 0, sizeof(d));
	i = target_new(&d, 100);
	first = d.targets[i];
	CHECK_EQ_U64(first->phase, LC_NEW);
	CHECK(first->parent == -1 && first->pidfd == -1 && first->exit_status == -1);
	for (int k = 0; k < 5000; k++)
		target_new(&d, 1000 + k);
	CHECK_EQ_U64(d.ntargets, 5001);
	CHECK(d.targets[i] == first);
	CHECK_EQ_U64(first->pid, 100);
	CHECK_EQ_U64(d.targets[4321]->pid, 1000 + 4320);
	targets_free(&d); /* none attached: nothing to stop */
	CHECK_EQ_U64(d.ntargets, 0);
}

UNIT_MAIN()
