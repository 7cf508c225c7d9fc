// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The table of targets and what each goes through: attach (at start, by
 * memtracectl attach, or as a --comm/--exe match), Python frames and arenas,
 * detach, exit, and the probes that stay while children run copies of
 * them. What follows an exec or a fork is in exec.c. Every entry
 * stays in the table until the daemon stops: a target that exited or was
 * detached keeps its data readable. A target's pid may come back (attached
 * again, an exec, a reused pid): each time its old data moves to a retired
 * key (retire_pid), so every entry is one generation of one process.
 */
#include <dirent.h>
#include <errno.h>
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
#include "daemon/proc/process.h"
#include "daemon/symbols/pystacks.h"
#include "daemon/symbols/symbolize.h"
#include "daemon/unwind/unwind.h"
#include "common/util.h"
#include "memtrace.skel.h"

/* Its pid may be reused by a process that is not this CPython. */
void python_frames_off(struct daemon *d, int pid)
{
	uint32_t key = (uint32_t)pid;

	bpf_map__delete_elem(d->skel->maps.pyconf, &key, sizeof(key), 0);
	probes_mmap_disable(d->skel, pid);
}

/* Continue a process the BPF programs stopped (exec, ld.so, --comm match). */
void continue_stopped(struct daemon *d, int pid)
{
	uint32_t key = (uint32_t)pid;

	if (kill(pid, SIGCONT) && errno != ESRCH)
		log_msg("cannot continue pid %d: %s", pid, strerror(errno));
	/* the keeper need not continue it */
	bpf_map__delete_elem(d->skel->maps.stopped, &key, sizeof(key), 0);
}

void ldso_release(struct target *tg)
{
	bpf_link__destroy(tg->ldso_link); /* NULL: nothing */
	tg->ldso_link = NULL;
}

/*
 * pid starts a new generation (an exec, or attached again): whatever the
 * tracker, the symbolizer and the Python reader keep under pid moves to a
 * retired key of its own, so the new program starts empty and the old
 * data stays readable, symbolized against the old program's maps.
 */
void retire_pid(struct daemon *d, int pid)
{
	uint32_t key = tracker_retire(&d->tracker, (uint32_t)pid);

	if (!key)
		return;
	symbolizer_rename(d->sym, pid, (int)key);
	pystacks_rename(d->py, pid, (int)key);
	for (int i = 0; i < d->ntargets; i++) {
		if (d->targets[i].space == (uint32_t)pid)
			d->targets[i].space = key;
	}
}

/* A new slot in d->targets (which may move). */
int target_new(struct daemon *d, int pid)
{
	struct target *tg;

	d->targets = xrealloc(d->targets, (size_t)(d->ntargets + 1) * sizeof(*d->targets));
	tg = &d->targets[d->ntargets];
	memset(tg, 0, sizeof(*tg));
	tg->pid = pid;
	tg->pidfd = -1;
	tg->exit_status = -1;
	tg->parent = -1;
	return d->ntargets++;
}

int pidfd_open(int pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Python frames for a CPython target: tell the BPF walker where they are.
 * 1 when they are on. */
int python_frames(struct daemon *d, int pid)
{
	struct mt_py_config pc;
	char desc[4200], why[4300];
	uint32_t key = (uint32_t)pid;
	int rc;

	rc = pystacks_config(d->py, pid, &pc, desc, sizeof(desc), why, sizeof(why));
	if (rc < 0) {
		log_msg("pid %d: %s", pid, why);
	} else if (rc == 0) {
		if (why[0]) /* the offsets' sources disagree, or one could not be used */
			log_msg("pid %d: %s", pid, why);
		if (bpf_map__update_elem(d->skel->maps.pyconf, &key, sizeof(key), &pc, sizeof(pc),
					 BPF_ANY)) {
			log_msg("pid %d: cannot enable Python frames: %s", pid, strerror(errno));
			return 0;
		}
		d->skel->bss->python_targets = 1;
		log_msg("pid %d: %s: Python frames on", pid, desc);
		return 1;
	}
	return 0;
}

#define ARENAS_NOTE                                                                                \
	"pymalloc arenas traced: small objects are seen as the arenas (anonymous mmap, kind "      \
	"mmap) that hold them, not one by one"

/*
 * Default mode, CPython target: pymalloc serves small objects from arenas it
 * maps itself, outside malloc; trace those mmaps (docs/python.md). Not with
 * --python-allocators, whose PyObject_Malloc events already count what the
 * arenas hold.
 */
void python_arenas(struct daemon *d, struct target *tg)
{
	char *note;
	int rc;

	if (d->set.python_allocators)
		return;
	rc = probes_mmap_enable(d->skel, tg->pid);
	if (rc) {
		log_msg("pid %d: cannot trace pymalloc arenas (mmap tracepoints): %s", tg->pid,
			strerror(-rc));
		return;
	}
	log_msg("pid %d: %s", tg->pid, ARENAS_NOTE);
	if (tg->note && asprintf(&note, "%s; %s", tg->note, ARENAS_NOTE) >= 0) {
		free(tg->note);
		tg->note = note;
	} else if (!tg->note) {
		tg->note = xstrdup(ARENAS_NOTE);
	}
}

/* Attach to d->targets[i], which is alive (and stopped, when we started it). */
int target_attach(struct daemon *d, int i, char *err, size_t errlen)
{
	struct target *tg = &d->targets[i];
	int rc, py = 0;

	retire_pid(d, tg->pid); /* traced before: that data stays, apart */
	tg = &d->targets[i];
	tg->state = SNAP_TARGET_ATTACHING;
	tg->command = process_read_command(tg->pid);
	tg->exit_status = -1;
	tg->pidfd = pidfd_open(tg->pid);
	if (tg->pidfd < 0) {
		snprintf(err, errlen, "cannot attach to pid %d: %s", tg->pid, strerror(errno));
		return -1;
	}
	if (tg->at_exec) {
		/* its libraries come later: target_resolve() finishes the job */
		if (allocator_resolve_at_exec(tg->pid, &tg->alloc, err, errlen))
			return -1;
		tg->resolve_pending = 1;
	} else {
		if (allocator_resolve(tg->pid, &tg->alloc, err, errlen))
			return -1;
		if (d->set.python_allocators && !allocator_resolve_python(tg->pid, &tg->alloc))
			log_msg("pid %d: --python-allocators: no loaded object exports "
				"PyObject_Malloc",
				tg->pid);
		free(tg->note);
		tg->note = allocator_python_note(tg->pid);
		if (tg->note)
			log_msg("pid %d: %s", tg->pid, tg->note);
		py = python_frames(d, tg->pid);
	}
	tg->attach_ns = time_monotonic_ns();
	tg->space = (uint32_t)tg->pid;
	if (!tracker_add_target(&d->tracker, (uint32_t)tg->pid, tg->attach_ns)) {
		snprintf(err, errlen, "cannot track pid %d: out of memory", tg->pid);
		return -1;
	}
	rc = probes_watch(d->skel, tg->pid, target_inherit(d, tg) != PROBES_OWN, tg->matched);
	if (rc) {
		snprintf(err, errlen, "cannot watch pid %d for exec: %s", tg->pid, strerror(-rc));
		return -1;
	}
	rc = probes_attach(d->skel, tg->pid, &tg->alloc, target_inherit(d, tg), &tg->probes, err,
			   errlen);
	if (rc)
		return -1;
	unwind_attach(d->unwind, tg->pid);
	/* after the allocator's probes: the mmaps malloc makes are its own */
	if (py)
		python_arenas(d, tg);
	if (loop_watch(d->epfd, tg->pidfd, EPOLLIN, TAG_PIDFD, (uint32_t)i)) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		return -1;
	}
	tg->state = SNAP_TARGET_ATTACHED;
	symbolizer_note_process(d->sym, tg->pid);
	log_msg("attached to pid %d (%s): %d probes on %s%s%s%s%s", tg->pid, tg->command,
		probes_count(&tg->probes), tg->alloc.obj[ALLOC_OBJ_MALLOC].path,
		tg->alloc.obj[ALLOC_OBJ_CXX].path ? " and " : "",
		tg->alloc.obj[ALLOC_OBJ_CXX].path ? tg->alloc.obj[ALLOC_OBJ_CXX].path : "",
		tg->alloc.obj[ALLOC_OBJ_PYTHON].path ? " and " : "",
		tg->alloc.obj[ALLOC_OBJ_PYTHON].path ? tg->alloc.obj[ALLOC_OBJ_PYTHON].path : "");
	return 0;
}

/* target_attach() failed for entry i (the last): undo what it did. */
static void attach_failed(struct daemon *d, int i)
{
	struct target *tg = &d->targets[i];
	int pid = tg->pid;

	/* nothing of it may stay live: probes are undone by probes_attach */
	if (tg->pidfd >= 0) {
		loop_unwatch(d->epfd, tg->pidfd);
		close(tg->pidfd);
	}
	probes_unwatch(d->skel, pid);
	python_frames_off(d, pid);
	unwind_detach(d->unwind, pid);
	if (tracker_find_target(&d->tracker, (uint32_t)pid)) {
		/* accounting began: keep the entry, marked detached */
		tracker_target_exec(&d->tracker, (uint32_t)pid);
		tg->pidfd = -1;
		tg->state = SNAP_TARGET_DETACHED;
		tg->end_ns = time_monotonic_ns();
	} else {
		allocator_free(&tg->alloc);
		free(tg->command);
		free(tg->note);
		d->ntargets--;
	}
}

/* A matched target is gone (exited, detached): it leaves the cap. */
void unmatch(struct daemon *d, struct target *tg)
{
	if (!tg->matched)
		return;
	tg->matched = 0;
	__atomic_fetch_sub(&d->skel->bss->matched, 1, __ATOMIC_RELAXED);
}

int target_inherit(const struct daemon *d, const struct target *tg)
{
	if (d->set.follow_forks)
		return PROBES_INHERIT;
	return tg->matched ? PROBES_INHERIT_MATCH : PROBES_OWN;
}

int targets_matched_now(const struct daemon *d)
{
	int n = 0;

	for (int i = 0; i < d->ntargets; i++)
		n += d->targets[i].matched && d->targets[i].state == SNAP_TARGET_ATTACHED;
	return n;
}

void target_over_limit(struct daemon *d, int pid)
{
	(void)pid; /* logged with the BPF side's on the next tick */
	d->matches_over_limit++;
}

uint64_t targets_over_limit(const struct daemon *d)
{
	return d->matches_over_limit + d->skel->bss->matches_over_limit;
}

void targets_log_over_limit(struct daemon *d, uint64_t now)
{
	uint64_t total;

	if (!d->set.match_comm && !d->set.match_exe)
		return;
	total = targets_over_limit(d);
	if (total == d->over_limit_logged || now < d->over_limit_log_ns)
		return;
	log_msg("%llu more matching processes not traced: %d traced already (--max-targets); "
		"%llu in all (matches_over_limit)",
		(unsigned long long)(total - d->over_limit_logged), d->set.max_targets,
		(unsigned long long)total);
	d->over_limit_logged = total;
	d->over_limit_log_ns = now + 1000000000ull; /* at most one line a second */
}

/* Does the live entry k run copies of entry p's probes? */
static int runs_copies_of(const struct daemon *d, int k, int p)
{
	for (int x = k, hops = 0; x >= 0 && d->targets[x].copies && hops < 1024;
	     x = d->targets[x].parent, hops++) {
		if (d->targets[x].parent == p)
			return 1;
	}
	return 0;
}

/* pid runs no probe of ours now: it leaves the "targets" map, unless the map
 * holds another process of that pid already (not marked untraced). */
static void unwatch_untraced(struct daemon *d, int pid)
{
	struct mt_target_watch w;

	if (!probes_watch_get(d->skel, pid, &w) && w.untraced)
		probes_unwatch(d->skel, pid);
}

void targets_release_probes(struct daemon *d, int i)
{
	for (int p = i, hops = 0; p >= 0 && hops < 1024; p = d->targets[p].parent, hops++) {
		struct target *tg = &d->targets[p];
		int used = 0;

		if (tg->state == SNAP_TARGET_ATTACHED || !tg->probes.nlinks)
			continue;
		for (int k = 0; k < d->ntargets && !used; k++)
			used =
			    d->targets[k].state == SNAP_TARGET_ATTACHED && runs_copies_of(d, k, p);
		if (used)
			continue;
		/* no traced process runs them: off the loop (they may still fire in
		 * one that runs them untraced, which BPF drops, until they are gone) */
		detacher_detach(&tg->probes);
		if (tg->holds_untraced)
			unwatch_untraced(d, tg->pid);
		tg->holds_untraced = 0;
	}
}

/*
 * Whole-host mode: pid executed a program matching --comm/--exe, and is
 * stopped (SIGSTOP from the exec tracepoint) before its first instruction.
 * Attach, then let it go: it is traced from its first call. It is always
 * continued, attached or not.
 */
void target_matched(struct daemon *d, int pid)
{
	char err[512];
	int i, live = targets_matched_now(d), known = 0;

	for (i = 0; i < d->ntargets; i++)
		known |= d->targets[i].pid == pid && d->targets[i].state == SNAP_TARGET_ATTACHED;
	if (known) {
		/* attached by the scan at start already */
		__atomic_fetch_sub(&d->skel->bss->matched, 1, __ATOMIC_RELAXED);
	} else if (live >= d->set.max_targets) {
		/* BPF let two through at once: one is over the limit after all */
		probes_unwatch(d->skel, pid);
		__atomic_fetch_sub(&d->skel->bss->matched, 1, __ATOMIC_RELAXED);
		target_over_limit(d, pid);
	} else {
		i = target_new(d, pid);
		d->targets[i].matched = 1;
		d->targets[i].at_exec = 1;
		if (target_attach(d, i, err, sizeof(err))) {
			log_msg("pid %d matches, but %s", pid, err);
			unmatch(d, &d->targets[i]);
			attach_failed(d, i);
		} else {
			log_msg("pid %d (%s) matches: traced from its first instruction", pid,
				d->targets[i].command);
		}
	}
	continue_stopped(d, pid);
}

/* Does pid run the program --comm/--exe names? exe_st: --exe's file. */
static int process_matches(int pid, const char *comm, const struct stat *exe_st)
{
	char path[64], name[32] = "";
	struct stat st;
	FILE *f;

	if (comm) {
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		f = fopen(path, "re");
		if (!f)
			return 0;
		if (!fgets(name, sizeof(name), f))
			name[0] = 0;
		fclose(f);
		name[strcspn(name, "\n")] = 0;
		return !strcmp(name, comm);
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	return !stat(path, &st) && st.st_dev == exe_st->st_dev && st.st_ino == exe_st->st_ino;
}

/* The processes running now that match, in /proc's order; *n of them. */
static int *list_matching(const char *comm, const struct stat *exe_st, int *n)
{
	struct dirent *de;
	int *pids = NULL, cap = 0;
	DIR *dir = opendir("/proc");

	*n = 0;
	if (!dir) {
		log_msg("cannot read /proc: %s", strerror(errno));
		return NULL;
	}
	while ((de = readdir(dir))) {
		int pid = atoi(de->d_name);

		if (pid <= 0 || pid == getpid() || !process_matches(pid, comm, exe_st))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			pids = xrealloc(pids, (size_t)cap * sizeof(*pids));
		}
		pids[(*n)++] = pid;
	}
	closedir(dir);
	return pids;
}

int attach_matching(struct daemon *d, const char *comm, const char *exe, int last)
{
	/* refused by the first pass: the second does not count them again */
	static int *refused, nrefused;
	struct stat exe_st = {0};
	struct mt_target_watch w;
	int n, *pids, attached = 0;

	if (exe && stat(exe, &exe_st)) {
		log_msg("--exe %s: %s", exe, strerror(errno));
		return 0;
	}
	/* listed before any is attached: none of them runs copies of probes
	 * placed by this pass */
	pids = list_matching(comm, &exe_st, &n);
	for (int k = 0; k < n; k++) {
		char err[512];
		int pid = pids[k], i, known = 0;

		for (i = 0; i < d->ntargets; i++)
			known |=
			    d->targets[i].pid == pid && d->targets[i].state == SNAP_TARGET_ATTACHED;
		/* in the map: a match stopped at its exec or a traced parent's child
		 * (its event comes through the ring buffer), or a process that runs
		 * copies of a match's probes untraced (probes of its own would count
		 * its calls twice) */
		if (known || !probes_watch_get(d->skel, pid, &w))
			continue;
		if (!process_matches(pid, comm, &exe_st) || process_check_pid(pid))
			continue; /* it executed another program, or exited, meanwhile */
		if (targets_matched_now(d) >= d->set.max_targets) {
			for (i = 0; i < nrefused && refused[i] != pid; i++)
				;
			if (i < nrefused)
				continue;
			target_over_limit(d, pid);
			refused = xrealloc(refused, (size_t)(nrefused + 1) * sizeof(*refused));
			refused[nrefused++] = pid;
			continue;
		}
		i = target_new(d, pid);
		d->targets[i].matched = 1;
		__atomic_fetch_add(&d->skel->bss->matched, 1, __ATOMIC_RELAXED);
		if (target_attach(d, i, err, sizeof(err))) {
			log_msg("pid %d matches, but %s", pid, err);
			unmatch(d, &d->targets[i]);
			attach_failed(d, i);
			continue;
		}
		attached++;
	}
	free(pids);
	if (last) {
		free(refused);
		refused = NULL;
		nrefused = 0;
	}
	return attached;
}

int target_attach_pid(struct daemon *d, int pid, char *err, size_t errlen)
{
	int i, rc;

	for (i = 0; i < d->ntargets; i++) {
		if (d->targets[i].pid == pid && d->targets[i].state == SNAP_TARGET_ATTACHED) {
			snprintf(err, errlen, "pid %d is traced already", pid);
			return -1;
		}
	}
	rc = process_check_pid(pid);
	if (rc) {
		snprintf(err, errlen, "cannot attach to pid %d: %s", pid, strerror(-rc));
		return -1;
	}
	/* traced before (detached, or an earlier process with this pid): a new
	 * entry, the old one's data stays as it was */
	i = target_new(d, pid);
	if (target_attach(d, i, err, errlen)) {
		attach_failed(d, i);
		return -1;
	}
	return 0;
}

/* Stop tracing entry i: probes off (events until now still drain), state detached. */
static void detach_probes(struct daemon *d, int i)
{
	struct target *tg = &d->targets[i];

	python_frames_off(d, tg->pid); /* first: mmaps then are malloc's own until the end */
	probes_detach(&tg->probes);
	ldso_release(tg);
	/* it may run on with copies of a parent's probes that stay: those count
	 * nothing from now on */
	if (tg->copies)
		probes_untraced(d->skel, tg->pid, MT_UNTRACED_COPIES);
	else
		probes_unwatch(d->skel, tg->pid);
	unwind_detach(d->unwind, tg->pid);
}

static void detach_finish(struct daemon *d, int i)
{
	struct target *tg = &d->targets[i];

	tracker_target_exec(&d->tracker, (uint32_t)tg->pid); /* later events are not its */
	tg->resolve_pending = 0;
	unmatch(d, tg);
	loop_unwatch(d->epfd, tg->pidfd);
	close(tg->pidfd);
	tg->pidfd = -1;
	tg->state = SNAP_TARGET_DETACHED;
	tg->end_ns = time_monotonic_ns();
	log_msg("detached from pid %d (%s); its data stays readable", tg->pid, tg->command);
}

struct target_detach {
	char *gone; /* entries being detached */
	int n;	    /* entries before the drain */
};

struct target_detach *target_detach_begin(struct daemon *d, int pid, char *err, size_t errlen)
{
	struct target_detach *h;
	int i, k, more;

	for (i = 0; i < d->ntargets; i++) {
		if (d->targets[i].pid == pid && d->targets[i].state == SNAP_TARGET_ATTACHED)
			break;
	}
	if (i == d->ntargets) {
		snprintf(err, errlen, "pid %d is not traced", pid);
		return NULL;
	}
	/* with --follow-forks its descendants run on copies of its probes,
	 * which go with them: they are detached too */
	h = xcalloc(1, sizeof(*h));
	h->gone = xcalloc((size_t)d->ntargets, 1);
	h->n = d->ntargets;
	h->gone[i] = 1;
	detach_probes(d, i);
	do {
		more = 0;
		for (k = 0; k < d->ntargets; k++) {
			struct target *c = &d->targets[k];

			if (!h->gone[k] && c->state == SNAP_TARGET_ATTACHED && c->parent >= 0 &&
			    h->gone[c->parent]) {
				h->gone[k] = more = 1;
				detach_probes(d, k);
			}
		}
	} while (more);
	return h;
}

void target_detach_end(struct daemon *d, struct target_detach *h)
{
	int k;

	for (k = 0; k < h->n; k++) {
		if (h->gone[k] && d->targets[k].state == SNAP_TARGET_ATTACHED)
			detach_finish(d, k);
	}
	/* children forked while it was being detached (the drain added them) */
	for (k = h->n; k < d->ntargets; k++) {
		struct target *c = &d->targets[k];

		if (c->state == SNAP_TARGET_ATTACHED && c->parent >= 0 &&
		    d->targets[c->parent].state == SNAP_TARGET_DETACHED) {
			detach_probes(d, k);
			detach_finish(d, k);
		}
	}
	free(h->gone);
	free(h);
}

void target_pidfd_arm(struct daemon *d, int i, int on)
{
	struct target *tg = &d->targets[i];

	/* out of the set, not watched for no event: a reaped process's pidfd
	 * reports EPOLLHUP whatever it is asked for, and would spin the loop */
	if (tg->pidfd < 0 || tg->pidfd_paused == !on)
		return;
	if (on)
		loop_watch(d->epfd, tg->pidfd, EPOLLIN, TAG_PIDFD, (uint32_t)i);
	else
		loop_unwatch(d->epfd, tg->pidfd);
	tg->pidfd_paused = !on;
}

void target_exited(struct daemon *d, int i)
{
	struct target *tg = &d->targets[i];
	int status;

	loop_unwatch(d->epfd, tg->pidfd);
	close(tg->pidfd);
	tg->pidfd = -1;
	if (tg->is_child && waitpid(tg->pid, &status, WNOHANG) == tg->pid)
		tg->exit_status = status;
	python_frames_off(d, tg->pid); /* first: mmaps then are malloc's own until the end */
	ldso_release(tg);
	probes_unwatch(d->skel, tg->pid);
	unwind_detach(d->unwind, tg->pid);
	unmatch(d, tg);
	tracker_target_exited(&d->tracker, tg->space); /* what it inherited leaves it */
	tg->state = SNAP_TARGET_EXITED;
	tg->end_ns = time_monotonic_ns();
	/* its children (--follow-forks, a match's) may run on with copies of
	 * its probes, which live as long as the originals: those stay until
	 * the last such child ends; the rest go off the loop (they cannot fire
	 * again), and so may its ancestors' that only it ran */
	targets_release_probes(d, i);
	if (tg->exit_status >= 0 && WIFEXITED(tg->exit_status))
		log_msg("pid %d exited with status %d; its data stays readable", tg->pid,
			WEXITSTATUS(tg->exit_status));
	else if (tg->exit_status >= 0 && WIFSIGNALED(tg->exit_status))
		log_msg("pid %d was killed by signal %d; its data stays readable", tg->pid,
			WTERMSIG(tg->exit_status));
	else
		log_msg("pid %d exited; its data stays readable", tg->pid);
}

void targets_release_pending(struct daemon *d)
{
	for (int k = 0; k < d->ntargets; k++) {
		if (!d->targets[k].release_pending)
			continue;
		tracker_target_exited(&d->tracker, d->targets[k].space);
		d->targets[k].release_pending = 0;
	}
}

void targets_free(struct daemon *d)
{
	for (int i = 0; i < d->ntargets; i++) {
		struct target *tg = &d->targets[i];

		probes_detach(&tg->probes);
		ldso_release(tg);
		if (tg->pidfd >= 0)
			close(tg->pidfd);
		allocator_free(&tg->alloc);
		free(tg->command);
		free(tg->note);
	}
	free(d->targets);
	d->targets = NULL;
	d->ntargets = 0;
}
