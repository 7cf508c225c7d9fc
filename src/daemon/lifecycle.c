// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A target's lifecycle (lifecycle.h): the table of the transitions allowed,
 * the one function that makes them, and the daemon's decisions for an event
 * in a phase. targets.c, matches.c and events.c act on what these say (the
 * system calls, the BPF maps); nothing here does.
 */
#include "daemon/lifecycle.h"
#include "common/invariant.h"
#include "memtrace/snapshot.h"

/* Every transition allowed, and none else: next[from][event], 0 where the
 * table has no entry (so LC_NEW, never reached again, marks "none"). */
static const unsigned char next[LC_PHASES][LC_EVENTS] = {
    [LC_NEW] =
	{
	    [LC_EV_ATTACH] = LC_ATTACHING,
	    [LC_EV_MATCH_AT_EXEC] = LC_EXEC_HELD,
	    [LC_EV_FORKED] = LC_ATTACHED,
	    [LC_EV_NEW_PROGRAM] = LC_RESOLVING,
	},
    [LC_ATTACHING] =
	{
	    [LC_EV_PROBES_PLACED] = LC_ATTACHED,
	    [LC_EV_GIVE_UP] = LC_DETACHED,
	    [LC_EV_OVERTAKEN] = LC_EXEC_AWAITED,
	},
    /* its exec's event: held there (a match, or the watch's exec held), attached
     * as at a match; not held (no CAP_KILL), attached as it runs; lost, or the
     * new program no match, given up */
    [LC_EXEC_AWAITED] =
	{
	    [LC_EV_MATCH_AT_EXEC] = LC_EXEC_HELD,
	    [LC_EV_ATTACH] = LC_ATTACHING,
	    [LC_EV_GIVE_UP] = LC_DETACHED,
	},
    [LC_EXEC_HELD] =
	{
	    [LC_EV_PROBES_PLACED] = LC_RESOLVING,
	    [LC_EV_GIVE_UP] = LC_DETACHED,
	},
    [LC_RESOLVING] =
	{
	    [LC_EV_RESOLVED] = LC_ATTACHED,
	    [LC_EV_GIVE_UP] = LC_GIVEN_UP,
	    [LC_EV_EXEC] = LC_EXECED,
	    [LC_EV_DETACH] = LC_DETACHING,
	    [LC_EV_EXIT] = LC_EXITED,
	    [LC_EV_STOP] = LC_DETACHED,
	    [LC_EV_OOM_KILL] = LC_OOM_MARKED,
	},
    [LC_ATTACHED] =
	{
	    [LC_EV_EXEC] = LC_EXECED,
	    [LC_EV_DETACH] = LC_DETACHING,
	    [LC_EV_EXIT] = LC_EXITED,
	    [LC_EV_STOP] = LC_DETACHED,
	    [LC_EV_OOM_KILL] = LC_OOM_MARKED,
	},
    /* killed: no exec can come; its exit ends it as oom-killed */
    [LC_OOM_MARKED] =
	{
	    [LC_EV_EXIT] = LC_OOM_KILLED,
	    [LC_EV_DETACH] = LC_DETACHING,
	    [LC_EV_STOP] = LC_DETACHED,
	},
    [LC_GIVEN_UP] =
	{
	    [LC_EV_EXIT] = LC_EXITED,
	},
    [LC_DETACHING] =
	{
	    [LC_EV_DRAINED] = LC_DETACHED,
	    [LC_EV_EXEC] = LC_EXECED,
	    [LC_EV_STOP] = LC_DETACHED,
	},
};

int lc_next(enum lc_phase from, enum lc_event ev)
{
	if ((unsigned)from >= LC_PHASES || (unsigned)ev >= LC_EVENTS || !next[from][ev])
		return -1;
	return next[from][ev];
}

void lc_step(enum lc_phase *phase, enum lc_event ev)
{
	int to = lc_next(*phase, ev);

	MT_INVARIANT(to >= 0);
	if (to >= 0)
		*phase = (enum lc_phase)to;
}

const char *lc_phase_name(enum lc_phase p)
{
	static const char *const names[LC_PHASES] = {
	    [LC_NEW] = "new",
	    [LC_ATTACHING] = "attaching",
	    [LC_EXEC_HELD] = "exec-held",
	    [LC_RESOLVING] = "resolving",
	    [LC_ATTACHED] = "attached",
	    [LC_DETACHING] = "detaching",
	    [LC_GIVEN_UP] = "given-up",
	    [LC_DETACHED] = "detached",
	    [LC_EXITED] = "exited",
	    [LC_EXECED] = "execed",
	    [LC_OOM_MARKED] = "oom-marked",
	    [LC_OOM_KILLED] = "oom-killed",
	    [LC_EXEC_AWAITED] = "exec-awaited",
	};

	return (unsigned)p < LC_PHASES ? names[p] : "?";
}

const char *lc_event_name(enum lc_event ev)
{
	static const char *const names[LC_EVENTS] = {
	    [LC_EV_ATTACH] = "attach",
	    [LC_EV_MATCH_AT_EXEC] = "match-at-exec",
	    [LC_EV_FORKED] = "forked",
	    [LC_EV_NEW_PROGRAM] = "new-program",
	    [LC_EV_PROBES_PLACED] = "probes-placed",
	    [LC_EV_RESOLVED] = "resolved",
	    [LC_EV_GIVE_UP] = "give-up",
	    [LC_EV_EXEC] = "exec",
	    [LC_EV_DETACH] = "detach",
	    [LC_EV_DRAINED] = "drained",
	    [LC_EV_EXIT] = "exit",
	    [LC_EV_STOP] = "stop",
	    [LC_EV_OOM_KILL] = "oom-kill",
	    [LC_EV_OVERTAKEN] = "overtaken",
	};

	return (unsigned)ev < LC_EVENTS ? names[ev] : "?";
}

int lc_snap_state(enum lc_phase p)
{
	switch (p) {
	case LC_RESOLVING:
	case LC_ATTACHED:
	case LC_DETACHING:
	case LC_OOM_MARKED: /* its last events are its own; shown oom-killed (SEC_OOM) */
		return SNAP_TARGET_ATTACHED;
	case LC_GIVEN_UP:
	case LC_DETACHED:
		return SNAP_TARGET_DETACHED;
	case LC_EXITED:
	case LC_OOM_KILLED:
		return SNAP_TARGET_EXITED;
	case LC_EXECED:
		return SNAP_TARGET_EXECED;
	default:
		return SNAP_TARGET_ATTACHING;
	}
}

bool lc_traced(enum lc_phase p)
{
	return lc_snap_state(p) == SNAP_TARGET_ATTACHED;
}

bool lc_settling(enum lc_phase p)
{
	return p == LC_EXEC_HELD || p == LC_RESOLVING || p == LC_EXEC_AWAITED;
}

bool lc_ended(enum lc_phase p)
{
	return p == LC_DETACHED || p == LC_EXITED || p == LC_EXECED || p == LC_OOM_KILLED;
}

bool lc_attach_hold(enum lc_phase p, bool children_traced)
{
	return p == LC_ATTACHING && children_traced;
}

enum lc_exec_action lc_on_exec(enum lc_phase p, bool unmatched)
{
	if (p == LC_EXEC_AWAITED)
		return unmatched ? LC_EXEC_ABANDON : LC_EXEC_ATTACH;
	if (!lc_traced(p))
		return LC_EXEC_IGNORE;
	return unmatched ? LC_EXEC_UNTRACED : LC_EXEC_NEW_GEN;
}

int lc_exec_successor(enum lc_phase old)
{
	return old == LC_DETACHING ? LC_EV_DETACH : -1;
}

enum lc_fork_action lc_on_fork(int parent, bool parent_matched, int matched_now, int max_targets)
{
	if (parent < 0 || !lc_traced((enum lc_phase)parent))
		return LC_FORK_NOT_TARGET;
	if (parent_matched && matched_now >= max_targets)
		return LC_FORK_OVER_LIMIT;
	return LC_FORK_CHILD;
}

int lc_fork_successor(enum lc_phase parent)
{
	return parent == LC_DETACHING ? LC_EV_DETACH : -1;
}

enum lc_match_action lc_on_match(bool known, bool awaited, int matched_now, int max_targets)
{
	if (known)
		return LC_MATCH_KNOWN;
	if (awaited)
		return LC_MATCH_AWAITED; /* counted when its attach began */
	if (matched_now >= max_targets)
		return LC_MATCH_OVER_LIMIT;
	return LC_MATCH_ATTACH;
}

enum lc_stop_action lc_on_stop(enum lc_phase p)
{
	return lc_next(p, LC_EV_STOP) >= 0 ? LC_STOP_DETACH : LC_STOP_NOTHING;
}
