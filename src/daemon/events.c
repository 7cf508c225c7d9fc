// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What a target goes through after its attach, as the ring buffer reports
 * it in order with its allocations (events_control): an exec (a new entry
 * of the same pid, held in its ld.so until the new program's allocator is
 * resolved and probed), a fork of a followed target or of a match (an entry
 * for the child, traced from its first call on the probes it inherited), a
 * --comm/--exe match stopped at its exec, a match that executes a program
 * that does not match (traced no more), and a CPython that installs an
 * allocator. An exec event lost with a full ring buffer is found on the
 * drain timer by its count (events_check_execs).
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "daemon/daemon.h"
#include "daemon/watch.h"
#include "daemon/targets.h"
#include "daemon/attach/detacher.h"
#include "daemon/proc/cgpath.h"
#include "daemon/core/generations.h"
#include "daemon/proc/linkmap.h"
#include "daemon/proc/cgroup.h"
#include "daemon/proc/process.h"
#include "daemon/proc/ptstop.h"
#include "daemon/serve/oomsnap.h"
#include "daemon/serve/server.h"
#include "daemon/symbols/pystacks.h"
#include "daemon/symbols/symbolize.h"
#include "daemon/unwind/unwind.h"
#include "common/proto.h"
#include "common/util.h"
#include "memtrace.skel.h"

#include "daemon/events.h"
#include "daemon/matches.h"

/* Entry i's new program is stopped at its first instruction (an exec, a
 * --comm/--exe match): stop it again in its ld.so once the libraries are
 * mapped (MT_EV_LDSO), where its allocator is resolved; a static program's
 * at once. */
static void target_hold_in_ldso(struct daemon *d, int i);

/* The entry of pid that awaits its exec's event (LC_EXEC_AWAITED), or -1. */
static int awaited_entry(struct daemon *d, int pid)
{
	for (int i = d->ntargets - 1; i >= 0; i--) {
		if (d->targets[i]->pid == pid && d->targets[i]->phase == LC_EXEC_AWAITED)
			return i;
	}
	return -1;
}

/*
 * Entry i (new, or one that awaited this exec) of a match stopped at its
 * exec: attach it there, hold it in its ld.so. what: how it matched, for
 * the log.
 */
static void attach_at_exec(struct daemon *d, int i, const char *what)
{
	struct target *tg = d->targets[i];
	char err[512];

	lc_step(&tg->phase, LC_EV_MATCH_AT_EXEC);
	if (target_attach(d, i, err, sizeof(err))) {
		log_msg("pid %d %s, but %s", tg->pid, what, err);
		target_unmatch(d, tg);
		target_attach_failed(d, i);
		return;
	}
	log_msg("pid %d (%s) %s: traced from its first instruction", tg->pid, tg->command, what);
	/* stopped again in its ld.so once its libraries are mapped, its
	 * allocator is resolved there, as a traced target's new program's is:
	 * not on a timer while it runs (and maybe exits), nor after an
	 * allocator it preloads ran */
	if (tg->phase == LC_RESOLVING)
		target_hold_in_ldso(d, i);
}

/*
 * Entry i awaited its exec's event and will not be attached: its match
 * ends (the --max-targets cap), its "targets" entry goes unless another
 * process of its pid holds it, it shows detached with why.
 */
static void awaited_give_up(struct daemon *d, int i, const char *why)
{
	struct target *tg = d->targets[i];
	struct mt_target_watch w;

	if (!probes_watch_get(d->skel, tg->pid, &w) && w.matched)
		probes_unwatch(d->skel, tg->pid);
	target_unmatch(d, tg);
	lc_step(&tg->phase, LC_EV_GIVE_UP);
	tg->end_ns = time_monotonic_ns();
	free(tg->note);
	tg->note = xstrdup(why);
	log_msg("pid %d: %s", tg->pid, why);
}

/*
 * Whole-host mode: pid executed a program matching --comm/--exe, and is
 * stopped (SIGSTOP from the exec tracepoint) before its first instruction.
 * Attach, then let it go: it is traced from its first call. It is always
 * continued, attached or not. A process moved into the cgroup whose attach
 * this exec overtook has an entry that awaits it: that one is attached.
 */
static void target_matched(struct daemon *d, int pid)
{
	int i, live = targets_matched_now(d), known = 0, aw = awaited_entry(d, pid);

	for (i = 0; i < d->ntargets; i++)
		known |= d->targets[i]->pid == pid && lc_traced(d->targets[i]->phase);
	switch (lc_on_match(known, aw >= 0, live, d->set.max_targets)) {
	case LC_MATCH_KNOWN:
		/* attached by the scan at start already */
		__atomic_fetch_sub(&d->skel->bss->matched, 1, __ATOMIC_RELAXED);
		break;
	case LC_MATCH_OVER_LIMIT:
		/* BPF let two through at once: one is over the limit after all */
		probes_unwatch(d->skel, pid);
		__atomic_fetch_sub(&d->skel->bss->matched, 1, __ATOMIC_RELAXED);
		target_over_limit(d, pid);
		break;
	case LC_MATCH_AWAITED:
		/* counted when its attach began, and by the exec tracepoint */
		__atomic_fetch_sub(&d->skel->bss->matched, 1, __ATOMIC_RELAXED);
		attach_at_exec(d, aw, "executed a program during its attach, and matches");
		break;
	case LC_MATCH_ATTACH:
		i = target_new(d, pid);
		d->targets[i]->matched = true;
		attach_at_exec(d, i, "matches");
		break;
	}
	targets_continue(d, pid);
}

/*
 * Entry i awaited this exec (its event: stopped there when stopped; the new
 * program does not match when unmatched), counted by the watch its attach
 * made: attach it at the exec, as a match stopped there; not stopped (no
 * CAP_KILL), as it runs, from a watch of its own again.
 */
static void awaited_exec(struct daemon *d, int i, int stopped, int unmatched)
{
	struct target *tg = d->targets[i];
	const char *cg = d->set.match_cgroup ? d->set.match_cgroup->path : "";
	char err[512], why[600];
	int rc;

	switch (lc_on_exec(tg->phase, unmatched)) {
	case LC_EXEC_ABANDON:
		snprintf(why, sizeof(why),
			 "executed a program that does not match %s during its "
			 "attach: not traced",
			 d->set.match_what ? d->set.match_what : "the match");
		awaited_give_up(d, i, why);
		return;
	case LC_EXEC_ATTACH:
		break;
	default:
		return;
	}
	if (stopped) {
		attach_at_exec(d, i, "executed a program during its attach");
		return;
	}
	probes_unwatch(d->skel, tg->pid); /* the watch its attach makes again */
	lc_step(&tg->phase, LC_EV_ATTACH);
	rc = target_attach(d, i, err, sizeof(err));
	if (rc < 0) {
		log_msg("pid %d executed a program during its attach, but %s", tg->pid, err);
		target_unmatch(d, tg);
		target_attach_failed(d, i);
	} else if (rc == 0) {
		log_msg("pid %d (%s) executed a program during its attach: traced from now in "
			"cgroup %s",
			tg->pid, tg->command ? tg->command : "?", cg);
	}
}

/*
 * --cgroup/--unit: pid was moved into the cgroup (in), or out of it. Into
 * it, untraced: attached as it runs (not stopped: what it allocated before
 * is not known, and its frees of that count as frees of unknown blocks).
 * An exec during that attach is the exec's event's to attach (target_attach:
 * LC_EXEC_AWAITED). Out of it, traced as a match: the BPF side counts its
 * calls no more since the move, so its events before the move are all
 * applied (they are ahead in the ring buffer); it is detached now, and
 * children that run copies of its probes with it (targets.c:
 * target_detach_begin).
 */
static void target_moved(struct daemon *d, int pid, int in)
{
	const char *cg = d->set.match_cgroup ? d->set.match_cgroup->path : "";
	struct target *traced = NULL;
	struct target_detach *h;
	struct mt_target_watch w;
	char err[512], *note;
	int i, known, rc;

	for (i = 0; i < d->ntargets; i++)
		if (d->targets[i]->pid == pid && lc_traced(d->targets[i]->phase))
			traced = d->targets[i];
	known = traced != NULL;
	if (!in) {
		if ((i = awaited_entry(d, pid)) >= 0) {
			awaited_give_up(d, i,
					"moved out of the cgroup before its exec was seen: "
					"not traced");
			return;
		}
		if (!traced || !(h = target_detach_begin(d, pid, true, err, sizeof(err))))
			return;
		target_detach_end(d, h); /* the match ends with it (detach_finish) */
		if (traced->phase == LC_DETACHED &&
		    asprintf(&note, "moved out of cgroup %s: not traced since", cg) >= 0) {
			free(traced->note);
			traced->note = note;
		}
		log_msg("pid %d moved out of cgroup %s: detached", pid, cg);
		return;
	}
	if (known || !d->set.match_cgroup || !cgmatch_has_pid(d->set.match_cgroup, pid))
		return; /* traced already, or moved on again */
	/* in the map already: it executed a program since its move and is stopped at that exec
	 * (its match event follows, and attaches it from its first instruction), or a traced
	 * parent forked it (its fork event makes it a target) */
	if (!probes_watch_get(d->skel, pid, &w))
		return;
	if (lc_on_match(false, false, targets_matched_now(d), d->set.max_targets) ==
	    LC_MATCH_OVER_LIMIT) {
		target_over_limit(d, pid);
		return;
	}
	i = target_new(d, pid);
	d->targets[i]->matched = true;
	__atomic_fetch_add(&d->skel->bss->matched, 1, __ATOMIC_RELAXED);
	rc = target_attach(d, i, err, sizeof(err));
	if (rc < 0) {
		log_msg("pid %d moved into cgroup %s, but %s", pid, cg, err);
		target_unmatch(d, d->targets[i]);
		target_attach_failed(d, i);
		return;
	}
	if (rc > 0) {
		log_msg("pid %d moved into cgroup %s and executed a program during its attach: "
			"attached at that exec, by its event",
			pid, cg);
		return;
	}
	log_msg("pid %d (%s) moved into cgroup %s: traced from now", pid,
		d->targets[i]->command ? d->targets[i]->command : "?", cg);
}

/* ---- an exec, a fork: events from the ring buffer ------------------------- */

/* How long a new program may take to map its libraries before we give up. */
#define RESOLVE_TIMEOUT_NS (10ull * 1000 * 1000 * 1000)

/*
 * Target i executed a new program. Its events up to the exec (ordered before
 * the exec event in the ring buffer) stay with it, now marked "execed"; a
 * new entry of the same pid traces the new program from its first call:
 * the probes stay attached to the process, so calls into a library the new
 * program maps again (libc, nearly always) are counted at once; the
 * allocator is resolved again once the new program's libraries are mapped
 * (events_resolve), and only the probes that differ are changed. held: the
 * process is stopped at that exec.
 */
static void target_execed(struct daemon *d, int i, int held)
{
	struct target *tg = d->targets[i], *nt;
	uint64_t now = time_monotonic_ns();
	int j, succ, pid = tg->pid;

	if (lc_on_exec(tg->phase, false) != LC_EXEC_NEW_GEN)
		return;
	tracker_target_exec(&d->tracker, (uint32_t)pid);
	target_python_off(d, pid);
	unwind_detach(d->unwind, pid);
	targets_retire_pid(d, pid);
	j = target_new(d, pid);
	nt = d->targets[j];
	/* a process being detached that executed: the new program's entry is
	 * detached with it (target_detach_end) */
	succ = lc_exec_successor(tg->phase);
	lc_step(&tg->phase, LC_EV_EXEC);
	tg->end_ns = now;
	lc_step(&nt->phase, LC_EV_NEW_PROGRAM);
	if (succ >= 0)
		lc_step(&nt->phase, (enum lc_event)succ);
	nt->is_child = tg->is_child;
	tg->is_child = false;
	nt->pidfd = tg->pidfd;
	tg->pidfd = -1;
	nt->probes = tg->probes;
	tg->probes = NULL;
	nt->parent = tg->parent;
	nt->matched = tg->matched;
	tg->matched = false;
	/* the copies of its parent's probes a match's child ran went at the
	 * exec (remove_on_exec); --follow-forks' stay */
	nt->copies = tg->copies && target_inherit(d, nt) == PROBES_INHERIT;
	tg->copies = false;
	for (int k = 0; k < d->ntargets; k++) {
		if (d->targets[k]->parent == i)
			d->targets[k]->parent = j; /* the links they inherit moved */
	}
	nt->attach_ns = now;
	nt->gen = (uint32_t)pid;
	nt->execs_seen = tg->execs_seen + 1;
	/* held at its exec, the process runs this program: its command line is
	 * this program's; otherwise it may have executed another one or exited
	 * since, and the command is read at the resolve */
	nt->command = held ? process_read_command(pid) : target_read_command(d, j);
	/* its cgroup and NSpid are the process's, which an exec keeps: read anew
	 * (it may have moved since its last reading), else the old program's */
	if (target_read_labels(d, j))
		resident_inherit_labels(&d->resident, (uint32_t)j, (uint32_t)i, pid, pid);
	if (nt->pidfd >= 0)
		loop_rewatch(d->epfd, nt->pidfd, EPOLLIN, TAG_PIDFD, (uint32_t)j);
	if (!tracker_add_target(&d->tracker, (uint32_t)pid, now))
		log_msg("pid %d: cannot track the new program: out of memory", pid);
	log_msg("pid %d executed a new program (%s): the data from before the exec stays "
		"readable; tracing the new program",
		pid, nt->command);
}

/*
 * The new program of target i is not traced: say why, keep its data. Held
 * (stopped in its ld.so or at its exec), the process has made no event that
 * is not applied yet; running, it may have: its probes go first, then the
 * ring buffer is drained, and only then does its accounting end, so that
 * nothing it did before is dropped (at its exec event, in a drain, what
 * follows the event is the new program's, which is not traced).
 */
static void target_give_up(struct daemon *d, int i, const char *why, int held)
{
	struct target *tg = d->targets[i];

	probes_detach(tg->probes);
	target_ldso_release(tg);
	lc_step(&tg->phase, LC_EV_GIVE_UP); /* first: an exec event drained now is not its */
	if (!held)
		ingest_drain(&d->ingest);
	tg->end_ns = time_monotonic_ns();
	tracker_target_exec(&d->tracker, (uint32_t)tg->pid);
	free(tg->note);
	tg->note = xstrdup(why);
	log_msg("pid %d: %s", tg->pid, why);
}

/*
 * The probes a forked child carries from its ancestors (their perf events
 * are inherited): the keys only, links marked non-NULL and never used.
 * None once an exec dropped them (a match's child).
 */
static void inherited_probes(struct daemon *d, int i, struct target_probes *out)
{
	memset(out, 0, sizeof(*out));
	for (int x = i, p = d->targets[i]->parent, hops = 0;
	     p >= 0 && d->targets[x]->copies && hops < 1024;
	     x = p, p = d->targets[p]->parent, hops++) {
		const struct target_probes *tp = d->targets[p]->probes;

		for (int k = 0; tp && k < tp->nlinks && out->nlinks < (int)ARRAY_SIZE(out->links);
		     k++) {
			if (!tp->links[k])
				continue;
			out->keys[out->nlinks] = tp->keys[k];
			out->links[out->nlinks++] = tp->links[k];
		}
	}
}

/*
 * The labels of forked child j (pid child) of entry p (ptgid), at its fork
 * event, before anything else can end it: its parent's cgroup and what it
 * names without a read (it was made in its parent's cgroup; a clone3 into
 * another is corrected by the next sample), its own NSpid: its pid when the
 * parent is in /proc's pid namespace, else read from its status now (a
 * container's processes only: one read per fork). A child already reaped
 * (pidfd -1) keeps what it inherited. No labels to inherit (its parent's
 * could not be read): both files are read now.
 */
static void label_child(struct daemon *d, int j, int p, int ptgid, int child, int pidfd)
{
	const struct resident_target *e;
	int32_t nspid;

	if (!resident_inherit_labels(&d->resident, (uint32_t)j, (uint32_t)p, ptgid, child)) {
		if (pidfd >= 0)
			target_read_labels(d, j);
		return;
	}
	e = resident_get_cgroup(&d->resident, (uint32_t)j);
	/* read while its pidfd says it is still this process (not reaped, its pid
	 * not taken by another since): the signal 0 after the read */
	if (pidfd >= 0 && e && e->labels && !e->labels->nspid &&
	    !cgroup_read_nspid(child, &nspid) && !syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0))
		e->labels->nspid = nspid;
}

/*
 * A followed target, or a match, forked: the child is traced already (it
 * inherited the probes in copy_process, before it ran); give it an entry
 * of its own. A match's child is a match: over --max-targets (BPF let two
 * through at once), it runs its copies untraced. One forked (at time_ns)
 * while its parent ran during its attach carries only the probes placed
 * by then: its note says so.
 */
static void target_forked(struct daemon *d, uint32_t ptgid, int child, uint64_t time_ns)
{
	struct target *parent = NULL, *c;
	uint64_t now = time_monotonic_ns();
	uint32_t key = (uint32_t)ptgid;
	struct mt_py_config pc;
	int p = -1, j, succ;

	for (int i = 0; i < d->ntargets; i++) {
		if (d->targets[i]->pid == (int)ptgid && lc_traced(d->targets[i]->phase))
			p = i;
	}
	if (child <= 0)
		return;
	switch (lc_on_fork(
	    p >= 0 ? (int)d->targets[p]->phase : -1, p >= 0 && d->targets[p]->matched,
	    p >= 0 && d->targets[p]->matched ? targets_matched_now(d) : 0, d->set.max_targets)) {
	case LC_FORK_NOT_TARGET: {
		struct mt_target_watch w;

		/* its parent stopped being traced meanwhile (detached): the child
		 * is no target; a match's leaves the cap it entered */
		if (!probes_watch_get(d->skel, child, &w) && !w.untraced) {
			probes_untraced(d->skel, child, MT_UNTRACED_COPIES);
			if (w.matched)
				__atomic_fetch_sub(&d->skel->bss->matched, 1, __ATOMIC_RELAXED);
		}
		return;
	}
	case LC_FORK_OVER_LIMIT:
		probes_untraced(d->skel, child, MT_UNTRACED_COPIES);
		__atomic_fetch_sub(&d->skel->bss->matched, 1, __ATOMIC_RELAXED);
		target_over_limit(d, child);
		return;
	case LC_FORK_CHILD:
		break;
	}
	targets_retire_pid(d, child); /* an earlier process with this pid */
	parent = d->targets[p];
	j = target_new(d, child);
	c = d->targets[j];
	c->parent = p;
	c->copies = true;
	c->matched = parent->matched;
	/* the child runs the parent's program until it executes another (an exec
	 * event follows then): its command line is the parent's as the daemon
	 * knows it, not /proc's now (the child may have executed another
	 * program or exited since) */
	c->command = xstrdup(parent->command ? parent->command : "?");
	c->alloc_path = target_alloc_path(parent) ? xstrdup(target_alloc_path(parent)) : NULL;
	c->attach_ns = now;
	c->gen = (uint32_t)child;
	lc_step(&c->phase, LC_EV_FORKED);
	if (time_ns >= parent->unguarded_from_ns && time_ns < parent->unguarded_to_ns) {
		c->note = xstrdup("forked while its parent's probes were being placed, its parent "
				  "not held still: some or all of its calls are not counted");
		log_msg("pid %d forked pid %d while its probes were being placed: the child "
			"carries only some of them",
			(int)ptgid, child);
	}
	/* its heap begins as the parent's now: the fork event is in order */
	if (!tracker_fork(&d->tracker, ptgid, (uint32_t)child, now))
		log_msg("pid %d: cannot track the child: out of memory", child);
	c->pidfd = target_pidfd_open(child);
	label_child(d, j, p, (int)ptgid, child, c->pidfd);
	if (c->pidfd >= 0 && loop_watch(d->epfd, c->pidfd, EPOLLIN, TAG_PIDFD, (uint32_t)j)) {
		close(c->pidfd);
		c->pidfd = -1;
	}
	if (c->pidfd < 0) { /* gone already: its events are all queued */
		lc_step(&c->phase, LC_EV_EXIT);
		c->end_ns = now;
		c->release_pending = true; /* on the next tick, after a whole drain */
		probes_unwatch(d->skel, child);
		target_unmatch(d, c);
	} else if ((succ = lc_fork_successor(parent->phase)) >= 0) {
		/* its parent is being detached: so is it (target_detach_end) */
		lc_step(&c->phase, (enum lc_event)succ);
	}
	/* a forked CPython is the same CPython */
	if (!bpf_map__lookup_elem(d->skel->maps.pyconf, &key, sizeof(key), &pc, sizeof(pc), 0)) {
		key = (uint32_t)child;
		bpf_map__update_elem(d->skel->maps.pyconf, &key, sizeof(key), &pc, sizeof(pc),
				     BPF_ANY);
		pystacks_fork(d->py, (int)ptgid, child);
	}
	/* the parent's maps as the daemon knows them at this point of its
	 * events, not as /proc shows them now */
	symbolizer_fork(d->sym, (int)ptgid, child);
	unwind_fork(d->unwind, (int)ptgid, child);
	log_msg("pid %d forked pid %d: traced from its first call", (int)ptgid, child);
}

/*
 * After an exec: once the dynamic linker has mapped the new program's
 * libraries (or at once for a program), find its allocator and move the
 * probes over. held: the process is stopped (in its ld.so, or at its exec)
 * and runs nothing meanwhile; else this is the drain tick's try, on a
 * process that runs and may exit at any moment.
 */
void events_resolve(struct daemon *d, int i, int held)
{
	struct target *tg = d->targets[i];
	struct target_probes np, inh;
	struct allocator a = {0};
	char err[512], why[600], *note;
	uint64_t now = time_monotonic_ns();
	int late = now - tg->attach_ns > RESOLVE_TIMEOUT_NS;
	struct pollfd pfd = {.fd = tg->pidfd, .events = POLLIN};

	if (tg->pidfd >= 0 && poll(&pfd, 1, 0) > 0)
		return; /* it exited (its maps may be half gone): the pidfd event is next */
	if (linkmap_ldso_symbol(tg->pid, "_dl_debug_state") && linkmap_state(tg->pid) != 0 && !late)
		return; /* ld.so is still mapping libraries */
	if (allocator_resolve(tg->pid, &a, err, sizeof(err))) {
		allocator_free(&a);
		if (process_exiting(tg->pid) && !late)
			return; /* its maps are going: its pidfd says so next */
		if (!late && linkmap_ldso_symbol(tg->pid, "_dl_debug_state"))
			return; /* not all mapped yet */
		snprintf(why, sizeof(why), "the new program is not traced: %s", err);
		target_give_up(d, i, why, held);
		return;
	}
	if (d->set.python_allocators)
		allocator_resolve_python(tg->pid, &a);
	targets_test_lag(TEST_LAG_RESOLVE);
	inherited_probes(d, i, &inh);
	if (probes_attach_keeping(d->skel, tg->pid, &a, target_inherit(d, tg), &np,
				  target_probes(tg), &inh, err, sizeof(err))) {
		allocator_free(&a);
		/* a process that began to exit loses /proc/PID/root before its
		 * pidfd fires: the probes of a program that is ending cannot be
		 * placed, and nothing is missed by that (its at-exec probes
		 * counted it until now) */
		if (process_exiting(tg->pid) && !late)
			return;
		snprintf(why, sizeof(why), "the new program is not traced: %s", err);
		target_give_up(d, i, why, held);
		return;
	}
	/* the old program's that the new one does not map: they cannot fire
	 * again, closed off the loop */
	detacher_detach(tg->probes);
	*tg->probes = np;
	allocator_free(target_alloc(tg));
	*tg->alloc = a;
	tracker_set_refrees(&d->tracker, (uint32_t)tg->pid, allocator_frees_twice(tg->alloc));
	lc_step(&tg->phase, LC_EV_RESOLVED);
	target_ldso_release(tg);
	free(tg->command);
	tg->command = held ? process_read_command(tg->pid) : target_read_command(d, i);
	if ((note = allocator_python_note(tg->pid))) {
		free(tg->note);
		tg->note = note;
	}
	if (target_python_frames(d, tg->pid))
		target_python_arenas(d, tg); /* after the probes: malloc's own mmaps are its own */
	unwind_attach(d->unwind, tg->pid);
	/* its maps and modules now, while it holds still: a program that runs
	 * a moment and exits is gone before the daemon drains its stacks */
	symbolizer_note_process(d->sym, tg->pid);
	log_msg("pid %d: the new program's allocator is %s: %d probes, after %llu us", tg->pid,
		tg->alloc->obj[ALLOC_OBJ_MALLOC].path, probes_count(tg->probes),
		(unsigned long long)(now - tg->attach_ns) / 1000);
}

/* The newest entry of pid waiting for its new program's allocator, or -1. */
static int pending_entry(struct daemon *d, int pid)
{
	for (int i = d->ntargets - 1; i >= 0; i--) {
		if (d->targets[i]->pid == pid && d->targets[i]->phase == LC_RESOLVING)
			return i;
	}
	return -1;
}

/*
 * The new program of entry i reached ld.so's _dl_debug_state, stopped there
 * (or is stopped at its exec, for a static program): once the linker's map
 * is complete, resolve its allocator now, before its libraries' code runs.
 */
static void resolve_held(struct daemon *d, int i)
{
	if (linkmap_state(d->targets[i]->pid) > 0)
		return; /* still adding objects: the next report will do */
	events_resolve(d, i, 1);
	if (d->targets[i]->phase != LC_RESOLVING)
		target_ldso_release(d->targets[i]);
}

static void target_hold_in_ldso(struct daemon *d, int i)
{
	int pid = d->targets[i]->pid;
	char *path = NULL;
	uint64_t off;

	if (!linkmap_ldso_probe(pid, &path, &off)) {
		d->targets[i]->ldso_link = probes_attach_ldso(d->skel, pid, path, off);
		if (!d->targets[i]->ldso_link)
			log_msg("pid %d: cannot hold it in ld.so (%s): its allocator is resolved "
				"once ld.so is done",
				pid, strerror(errno));
	} else {
		resolve_held(d, i); /* a static program: all there is is mapped */
	}
	free(path);
}

/*
 * A match (without --follow-forks) executed a program that matches too,
 * entry i its new generation, stopped at its first instruction when held.
 * The probes it keeps lost their inherited events at the exec: open them
 * again, so that the children it forks from now on get copies. A match's
 * child that ran only copies of its parent's probes has none left (they
 * went at the exec): probes of its own, on the libc beside its ld.so
 * before it runs, as for a new match (target_attach); events_resolve()
 * completes them once ld.so is done.
 */
static void match_execed(struct daemon *d, int i, int held)
{
	struct target *tg = d->targets[i];
	char err[512], why[600];
	int rc;

	if (target_nlinks(tg)) {
		rc = probes_reinherit(tg->probes, tg->pid);
		if (rc)
			log_msg("pid %d: children it forks from now on may miss some probes: %s",
				tg->pid, strerror(-rc));
		return;
	}
	if (allocator_resolve_at_exec(tg->pid, target_alloc(tg), err, sizeof(err)) ||
	    probes_attach(d->skel, tg->pid, tg->alloc, PROBES_INHERIT_MATCH, target_probes(tg), err,
			  sizeof(err))) {
		snprintf(why, sizeof(why), "the new program is not traced: %s", err);
		target_give_up(d, i, why, held);
	} else {
		tracker_set_refrees(&d->tracker, (uint32_t)tg->pid,
				    allocator_frees_twice(tg->alloc));
	}
	/* it runs no copies now: its ancestors' probes may go */
	targets_release_probes(d, tg->parent);
}

/*
 * Entry i, a match without --follow-forks, executed a program that does not
 * match (MT_EXEC_UNMATCHED): it is traced no more. Its data until the exec
 * stays, marked execed; no entry follows. The BPF side drops its calls from
 * the exec on (MT_UNTRACED_OWN); its own probes stay while children it
 * forked before run copies of them, and go with the last of those.
 */
static void target_unmatched(struct daemon *d, int i)
{
	struct target *tg = d->targets[i];
	char *cmd, *note;
	int pid = tg->pid;

	if (lc_on_exec(tg->phase, true) != LC_EXEC_UNTRACED)
		return;
	tracker_target_exec(&d->tracker, (uint32_t)pid);
	target_python_off(d, pid);
	unwind_detach(d->unwind, pid);
	target_ldso_release(tg);
	target_unmatch(d, tg);
	if (tg->pidfd >= 0) {
		loop_unwatch(d->epfd, tg->pidfd);
		close(tg->pidfd);
		tg->pidfd = -1;
	}
	tg->copies = false; /* gone at the exec */
	lc_step(&tg->phase, LC_EV_EXEC);
	tg->end_ns = time_monotonic_ns();
	cmd = process_read_command(pid);
	if (asprintf(&note, "executed %s, which does not match %s%s: not traced since",
		     cmd ? cmd : "a program", d->set.match_what ? d->set.match_what : "the match",
		     "") >= 0) {
		free(tg->note);
		tg->note = note;
	}
	log_msg("pid %d %s", pid, tg->note);
	free(cmd);
	if (target_nlinks(tg))
		tg->holds_untraced = true; /* left in the map until they go */
	else
		probes_unwatch(d->skel, pid);
	targets_release_probes(d, i);
}

/*
 * A target executed a new program, stopped at its first instruction when
 * stopped is set (the exec tracepoint). Hold it in its ld.so until the
 * libraries are mapped (MT_EV_LDSO): an allocator the new program preloads
 * (jemalloc in LD_PRELOAD, say) is then probed before it is first called.
 */
static void target_exec_event(struct daemon *d, uint32_t tgid, int stopped, int unmatched)
{
	int n = d->ntargets, i = awaited_entry(d, (int)tgid); /* target_execed appends */

	if (i >= 0) {
		/* no entry of it is traced: its attach awaited this exec */
		awaited_exec(d, i, stopped, unmatched);
		if (stopped)
			targets_continue(d, (int)tgid);
		return;
	}
	for (i = 0; i < n; i++) {
		if (d->targets[i]->pid != (int)tgid)
			continue;
		if (unmatched)
			target_unmatched(d, i);
		else
			target_execed(d, i, stopped);
	}
	i = pending_entry(d, (int)tgid);
	if (i >= 0 && target_inherit(d, d->targets[i]) == PROBES_INHERIT_MATCH)
		match_execed(d, i, stopped);
	i = pending_entry(d, (int)tgid);
	if (i >= 0 && stopped)
		target_hold_in_ldso(d, i);
	if (stopped)
		targets_continue(d, (int)tgid);
}

static void target_ldso_event(struct daemon *d, uint32_t tgid)
{
	int i = pending_entry(d, (int)tgid);

	if (i >= 0 && d->targets[i]->ldso_link)
		resolve_held(d, i);
	targets_continue(d, (int)tgid);
}

/*
 * A CPython target stopped in a function that installs an allocator, while
 * its frees are probed where the table dispatches them: probe the
 * dispatchers again before the table changes (attach/allocator.c), continue
 * it.
 */
static void target_pyalloc_event(struct daemon *d, uint32_t tgid)
{
	struct target_probes np, inh;
	char err[512];

	for (int i = d->ntargets - 1; i >= 0; i--) {
		struct target *tg = d->targets[i];

		if (tg->pid != (int)tgid || !lc_traced(tg->phase))
			continue;
		if (tg->alloc && allocator_undo_python_dispatch(tg->alloc)) {
			inherited_probes(d, i, &inh);
			if (probes_attach_keeping(d->skel, tg->pid, tg->alloc,
						  target_inherit(d, tg), &np, target_probes(tg),
						  &inh, err, sizeof(err))) {
				log_msg("pid %d: %s: its frees may go untraced", tg->pid, err);
			} else {
				probes_detach(tg->probes);
				*tg->probes = np;
				log_msg(
				    "pid %d installs an allocator: PyObject_Free and PyMem_Free "
				    "probed themselves",
				    tg->pid);
			}
		}
		break;
	}
	targets_continue(d, (int)tgid);
}

/*
 * The kernel's OOM killer chose tgid (oom:mark_victim, at time_ns): its
 * newest entry is marked (LC_EV_OOM_KILL) and keeps what it held then: its
 * live heap, its last resident memory sampled and its memory cgroup's usage
 * and limit, read here, while the process dies. Its exit comes after this
 * record in the ring buffer's order (the loop drains before it acts on a
 * pidfd), so its heap is all there; the request worker then builds the
 * snapshot of that pid and writes it to --oom-snapshots.
 */
static void target_oom_killed(struct daemon *d, uint32_t tgid, uint64_t time_ns)
{
	struct target *tg = NULL;
	const struct tracker_target *tt;
	const struct resident_target *rt;
	struct proto_request req;
	struct oomsnap_job job;
	struct mt_cgroup_labels labels;
	struct mt_cgroup_memory mem;
	char why[256] = "", mem_why[256] = "";
	int i;

	for (i = d->ntargets - 1; i >= 0 && !tg; i--)
		if (d->targets[i]->pid == (int)tgid)
			tg = d->targets[i];
	i++;
	if (!tg || tg->oom.killed)
		return;
	if (lc_next(tg->phase, LC_EV_OOM_KILL) >= 0)
		lc_step(&tg->phase, LC_EV_OOM_KILL);
	else if (tg->phase != LC_EXITED)
		return; /* not traced (being detached, given up): not ours to mark */
	/* (an exit seen first keeps its phase; the mark still says what ended it) */
	tg->oom.killed = 1;
	tg->oom.time_ns = time_ns > d->tracker.start_ns ? time_ns - d->tracker.start_ns : 0;
	if ((tt = tracker_find_gen(&d->tracker, tg->gen))) {
		tg->oom.live_bytes = tt->c.live_bytes;
		tg->oom.live_blocks = tt->c.live_allocations;
	}
	if ((rt = resident_get(&d->resident, (uint32_t)i)))
		tg->oom.resident_bytes = rt->last.resident_bytes;
	/* read now: the process is dying, and its cgroup may go with it. The
	 * memory cgroup its labels name first: a dying task may have left its
	 * cgroup already (its /proc/PID/cgroup says the root) */
	rt = resident_get_cgroup(&d->resident, (uint32_t)i);
	if (rt && rt->labels && !cgroup_read_memory(rt->labels, &mem, mem_why, sizeof(mem_why)) &&
	    (mem.have & 3) == 3) {
		tg->oom.cgroup_usage = mem.f.usage_bytes;
		tg->oom.cgroup_limit = mem.f.limit_bytes;
	} else if (!cgroup_read(tg->pid, &labels, &mem, mem_why, sizeof(mem_why), why,
				sizeof(why))) {
		if (mem.version != MT_CGROUP_NONE && (mem.have & 3) == 3) {
			tg->oom.cgroup_usage = mem.f.usage_bytes;
			tg->oom.cgroup_limit = mem.f.limit_bytes;
		} else {
			snprintf(why, sizeof(why), "%s", mem_why[0] ? mem_why : "no memory cgroup");
		}
	}
	if (why[0])
		log_msg("pid %d was chosen by the OOM killer: %llu live bytes in %llu blocks; "
			"memory cgroup not read (%s)",
			tg->pid, (unsigned long long)tg->oom.live_bytes,
			(unsigned long long)tg->oom.live_blocks, why);
	else
		log_msg("pid %d was chosen by the OOM killer: %llu live bytes in %llu blocks; "
			"memory cgroup at %llu of %llu bytes",
			tg->pid, (unsigned long long)tg->oom.live_bytes,
			(unsigned long long)tg->oom.live_blocks,
			(unsigned long long)tg->oom.cgroup_usage,
			(unsigned long long)tg->oom.cgroup_limit);
	if (!d->set.oom_dir)
		return;
	proto_request_init(&req, PROTO_SNAPSHOT);
	req.snapshot.pid = tgid;
	job = (struct oomsnap_job){.pid = tgid,
				   .unix_ns = time_realtime_ns(),
				   .dir = d->set.oom_dir,
				   .keep = d->set.oom_keep};
	if (server_oom_snapshot(d->server, &req, &job))
		log_msg("pid %d: no OOM snapshot: the request worker cannot take it", tg->pid);
}

void events_control(struct daemon *d, const struct mt_event *ev)
{
	switch (ev->kind) {
	case MT_EV_EXEC:
		target_exec_event(d, ev->tgid, ev->addr == 1, ev->old_addr == MT_EXEC_UNMATCHED);
		break;
	case MT_EV_LDSO:
		target_ldso_event(d, ev->tgid);
		break;
	case MT_EV_PYALLOC:
		target_pyalloc_event(d, ev->tgid);
		break;
	case MT_EV_FORK:
		target_forked(d, ev->tgid, (int)ev->addr, ev->time_ns);
		break;
	case MT_EV_MATCH:
		if (ev->old_addr == MT_MATCH_MOVED_IN || ev->old_addr == MT_MATCH_MOVED_OUT)
			target_moved(d, (int)ev->tgid, ev->old_addr == MT_MATCH_MOVED_IN);
		else
			target_matched(d, (int)ev->tgid);
		break;
	case MT_EV_OOM:
		target_oom_killed(d, ev->tgid, ev->time_ns);
		break;
	}
}

/* An attached target whose exec count (the tracepoint's, in the targets
 * map) is ahead of what its entry has seen. */
static int exec_unseen(struct daemon *d, const struct target *tg)
{
	return lc_traced(tg->phase) && probes_exec_count(d->skel, tg->pid) > tg->execs_seen;
}

/* An entry that awaited its exec's event longer than that event can take:
 * it was lost (the ring buffer full), or will not come. */
static int awaited_too_long(const struct target *tg)
{
	return tg->phase == LC_EXEC_AWAITED &&
	       time_monotonic_ns() - tg->attach_ns > RESOLVE_TIMEOUT_NS;
}

int events_execs_unseen(struct daemon *d)
{
	for (int i = 0; i < d->ntargets; i++)
		if (exec_unseen(d, d->targets[i]) || awaited_too_long(d->targets[i]))
			return 1;
	return 0;
}

/*
 * The exec event can be lost with a full ring buffer (then counted in
 * events_lost); the tracepoint's count in the targets map cannot. A target
 * still attached with a count after a drain is one whose event was lost, or
 * is being written right now (then the next drain has it): only in the
 * former case act here.
 */
void events_check_execs(struct daemon *d)
{
	uint64_t lost[MT_LOST_SLOTS];
	struct mt_target_watch w;

	for (int i = 0; i < d->ntargets; i++) {
		struct target *tg = d->targets[i];
		uint32_t key = (uint32_t)tg->pid;
		uint8_t held;

		if (awaited_too_long(tg)) {
			/* its exec's event was lost (counted), or it was moved out or
			 * no longer matched before that exec: nothing will attach it */
			awaited_give_up(d, i,
					"executed a program during its attach, and no event "
					"of that exec came: not traced");
			if (!bpf_map__lookup_elem(d->skel->maps.stopped, &key, sizeof(key), &held,
						  sizeof(held), 0))
				targets_continue(d, tg->pid);
			continue;
		}
		if (!exec_unseen(d, tg))
			continue;
		if (probes_read_lost(d->skel, lost, MT_LOST_SLOTS) ||
		    lost[MT_EV_EXEC] <= d->exec_events_lost)
			continue; /* not lost: it is being written right now */
		d->exec_events_lost++;
		log_msg("the exec event of pid %d was lost (ring buffer full)", tg->pid);
		if (!probes_watch_get(d->skel, tg->pid, &w) && w.untraced == MT_UNTRACED_OWN) {
			target_unmatched(d, i);
			continue;
		}
		target_execed(d, i, 0);
		if (d->targets[d->ntargets - 1]->phase == LC_RESOLVING &&
		    target_inherit(d, d->targets[d->ntargets - 1]) == PROBES_INHERIT_MATCH)
			match_execed(d, d->ntargets - 1, 0);
	}
}
