// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The table of targets and what each goes through: attach (at start, by
 * memtracectl attach, or as a --comm/--exe match), Python frames and arenas,
 * an exec, a fork, detach, exit, and the probes that stay while children
 * run copies of them. Every entry stays in the table until the daemon
 * stops: a target that exited or was detached keeps its data readable. A
 * target's pid may come back (attached again, an exec, a reused pid): each
 * time its old data moves to a retired key (retire_pid), so every entry is
 * one generation of one process.
 *
 * An exec makes a new entry of the same pid (the old one's data stays,
 * marked "execed"), held in its ld.so until the new program's allocator is
 * resolved and probed; a fork of a followed target, or of a --comm/--exe
 * match, makes an entry for the child, traced from its first call on the
 * probes it inherited. A match that executes a program that does not match
 * is traced no more (target_unmatched). The events that drive this arrive
 * through the ring buffer (ingest/ingest.c), in order with the allocation
 * events around them (targets_control).
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
#include "daemon/proc/linkmap.h"
#include "daemon/proc/process.h"
#include "daemon/proc/ptstop.h"
#include "daemon/symbols/pystacks.h"
#include "daemon/symbols/symbolize.h"
#include "daemon/unwind/unwind.h"
#include "common/util.h"
#include "memtrace.skel.h"

/* How entry tg's probes reach its children: enum probe_inherit. */
static int target_inherit(const struct daemon *d, const struct target *tg);
/* Entry i's new program is stopped at its first instruction (an exec, a
 * --comm/--exe match): stop it again in its ld.so once the libraries are
 * mapped (MT_EV_LDSO), where its allocator is resolved; a static program's
 * at once. */
static void target_hold_in_ldso(struct daemon *d, int i);

/* Its pid may be reused by a process that is not this CPython. */
static void python_frames_off(struct daemon *d, int pid)
{
	uint32_t key = (uint32_t)pid;

	bpf_map__delete_elem(d->skel->maps.pyconf, &key, sizeof(key), 0);
	probes_mmap_disable(d->skel, pid);
}

/*
 * Tests only (tests/e2e/test_races.py): the daemon loses N ms where a busy
 * host makes it lose the CPU to its targets. MEMTRACE_TEST_LAG_MS=N: right
 * after it continues a process it stopped; MEMTRACE_TEST_RESOLVE_LAG_MS=N:
 * between reading a new program's allocator and attaching to it;
 * MEMTRACE_TEST_ATTACH_LAG_MS=N: between watching a running process and
 * placing its probes. A process then runs ahead of the daemon, and what the
 * daemon reads of it outside a hold is stale.
 */
enum { TEST_LAG_CONTINUE, TEST_LAG_RESOLVE, TEST_LAG_ATTACH, TEST_LAGS };

static void test_lag(int where)
{
	static const char *const vars[TEST_LAGS] = {
	    "MEMTRACE_TEST_LAG_MS", "MEMTRACE_TEST_RESOLVE_LAG_MS", "MEMTRACE_TEST_ATTACH_LAG_MS"};
	static long ms[TEST_LAGS] = {-1, -1, -1};

	if (where < 0 || where >= TEST_LAGS)
		return;
	if (ms[where] < 0) {
		const char *e = getenv(vars[where]);

		ms[where] = e ? atol(e) : 0;
		if (ms[where] < 0 || ms[where] > 60000)
			ms[where] = 0;
	}
	if (ms[where]) {
		struct timespec ts = {.tv_sec = ms[where] / 1000,
				      .tv_nsec = ms[where] % 1000 * 1000000};

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
}

/* Continue a process the BPF programs stopped (exec, ld.so, --comm match). */
static void continue_stopped(struct daemon *d, int pid)
{
	uint32_t key = (uint32_t)pid;

	if (kill(pid, SIGCONT) && errno != ESRCH)
		log_msg("cannot continue pid %d: %s", pid, strerror(errno));
	/* the keeper need not continue it */
	bpf_map__delete_elem(d->skel->maps.stopped, &key, sizeof(key), 0);
	test_lag(TEST_LAG_CONTINUE);
}

/*
 * Is entry i's process still the program whose events are drained now:
 * attached, alive (its pidfd not readable: its pid is still its own) and
 * past no further exec (the exec tracepoint's count is the one the entry
 * began with)? What the daemon reads of /proc/PID while the process runs
 * describes that program only if this holds after the read.
 */
static int target_current(struct daemon *d, int i)
{
	const struct target *tg = &d->targets[i];
	struct pollfd pfd = {.fd = tg->pidfd, .events = POLLIN};

	if (tg->state != SNAP_TARGET_ATTACHED || tg->pidfd < 0 || poll(&pfd, 1, 0) != 0)
		return 0; /* it exited: its pid may be another process's by now */
	return probes_exec_count(d->skel, tg->pid) == tg->execs_seen;
}

/* The symbolizer's guard (symbolizer_set_guard): pid's newest entry is current. */
static int pid_current(void *arg, int pid)
{
	struct daemon *d = arg;

	for (int i = d->ntargets - 1; i >= 0; i--) {
		if (d->targets[i].pid == pid)
			return target_current(d, i);
	}
	return 0;
}

void targets_guard_symbolizer(struct daemon *d)
{
	symbolizer_set_guard(d->sym, pid_current, d);
}

/* Entry i's command line, read now: "?" unless target_current() after the read. */
static char *target_read_command(struct daemon *d, int i)
{
	char *cmd = process_read_command(d->targets[i].pid);

	if (target_current(d, i))
		return cmd;
	free(cmd);
	return xstrdup("?");
}

static void ldso_release(struct target *tg)
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
static void retire_pid(struct daemon *d, int pid)
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

	if (d->ntargets == d->targets_cap) {
		d->targets_cap = d->targets_cap < 8 ? 8 : d->targets_cap + d->targets_cap / 2;
		d->targets = xrealloc(d->targets, (size_t)d->targets_cap * sizeof(*d->targets));
	}
	tg = &d->targets[d->ntargets];
	memset(tg, 0, sizeof(*tg));
	tg->pid = pid;
	tg->pidfd = -1;
	tg->exit_status = -1;
	tg->parent = -1;
	return d->ntargets++;
}

static int pidfd_open(int pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Python frames for a CPython target: tell the BPF walker where they are.
 * 1 when they are on. */
static int python_frames(struct daemon *d, int pid)
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
static void python_arenas(struct daemon *d, struct target *tg)
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

/* How long a running process may stand still while its probes are placed. */
#define ATTACH_HOLD_MAX_NS (1ull * 1000000000)

/*
 * Hold entry tg's process still while its probes are placed, when its
 * children will be traced and it runs (not held at an exec by the BPF
 * programs). 1 if held (attach_release() resumes it), 0 if not needed or
 * not possible: a process another tracer has (gdb, strace), or one a thread
 * of which does not stop in time (a vfork waiting on its child). Then a
 * child it forks during the attach carries only some of the probes, and the
 * log says so.
 */
static int attach_hold(struct daemon *d, struct target *tg, struct ptstop *st)
{
	char why[256];
	int rc;

	if (tg->at_exec || target_inherit(d, tg) == PROBES_OWN)
		return 0;
	rc = ptstop_stop(st, tg->pid, time_monotonic_ns() + ATTACH_HOLD_MAX_NS, why, sizeof(why));
	if (!rc)
		return 1;
	if (rc == -ETIMEDOUT)
		snprintf(why, sizeof(why), "thread %d did not stop", st->late_tid);
	log_msg("pid %d: not held while its probes are placed (%s): a child it forks "
		"meanwhile may carry only some of them",
		tg->pid, why);
	return 0;
}

/* Resume what attach_hold() held; says so if the bound resumed it first. */
static void attach_release(const struct target *tg, struct ptstop *st, int *held)
{
	if (*held <= 0)
		return;
	*held = -1; /* released */
	if (ptstop_resume(st)) {
		log_msg("pid %d: its probes took longer than %llu s to place and it ran "
			"before the last: a child it forked meanwhile may carry only some of "
			"them",
			tg->pid, ATTACH_HOLD_MAX_NS / 1000000000);
		return;
	}
	log_msg("pid %d stood still for %.1f ms while its probes were placed", tg->pid,
		(double)(st->resumed_ns - st->begin_ns) / 1e6);
}

/*
 * Attach to d->targets[i], which is alive (and stopped, when we started it).
 * What is read of it (command line, allocator) must be of the program it
 * runs once the exec tracepoint watches it (from then on an exec is counted
 * and arrives as an event): its image (/proc/PID/stat's start_code and
 * start_stack, new at every exec) is taken before the reads and again after
 * the watch, and an attach across an exec fails. The watch comes last, just
 * before the probes: with --follow-forks or as a match, a child forked once
 * it is watched is a target, and carries only the probes placed by then. So
 * a running process whose children are traced stands still from before the
 * watch until its last probe is placed (attach_hold): a fork completes
 * before it (the child is not a target) or after (the child has every
 * probe), never in between.
 */
int target_attach(struct daemon *d, int i, char *err, size_t errlen)
{
	struct target *tg = &d->targets[i];
	uint64_t image[2], again[2];
	struct ptstop st;
	int rc, held, py = 0;

	retire_pid(d, tg->pid); /* traced before: that data stays, apart */
	tg = &d->targets[i];
	tg->state = SNAP_TARGET_ATTACHING;
	tg->exit_status = -1;
	tg->pidfd = pidfd_open(tg->pid);
	if (tg->pidfd < 0) {
		snprintf(err, errlen, "cannot attach to pid %d: %s", tg->pid, strerror(errno));
		return -1;
	}
	if (process_image(tg->pid, image)) {
		snprintf(err, errlen, "cannot attach to pid %d: %s", tg->pid, strerror(ESRCH));
		return -1;
	}
	tg->command = process_read_command(tg->pid);
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
	held = attach_hold(d, tg, &st);
	rc = probes_watch(d->skel, tg->pid, target_inherit(d, tg) != PROBES_OWN, tg->matched);
	if (rc) {
		attach_release(tg, &st, &held);
		snprintf(err, errlen, "cannot watch pid %d for exec: %s", tg->pid, strerror(-rc));
		return -1;
	}
	if (process_image(tg->pid, again) || memcmp(image, again, sizeof(image))) {
		attach_release(tg, &st, &held);
		snprintf(err, errlen, "pid %d executed a new program while being attached",
			 tg->pid);
		return -1;
	}
	test_lag(TEST_LAG_ATTACH);
	rc = probes_attach(d->skel, tg->pid, &tg->alloc, target_inherit(d, tg), &tg->probes, err,
			   errlen);
	attach_release(tg, &st, &held);
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
	symbolizer_note_process(d->sym, tg->pid); /* only while it is that program */
	if (probes_exec_count(d->skel, tg->pid)) {
		/* what was read may be either program's: the new one's entry,
		 * made at its exec event, reads its own */
		free(tg->command);
		tg->command = xstrdup("?");
		log_msg("pid %d executed a new program while being attached", tg->pid);
	}
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
static void unmatch(struct daemon *d, struct target *tg)
{
	if (!tg->matched)
		return;
	tg->matched = 0;
	__atomic_fetch_sub(&d->skel->bss->matched, 1, __ATOMIC_RELAXED);
}

static int target_inherit(const struct daemon *d, const struct target *tg)
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

static void target_over_limit(struct daemon *d, int pid)
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

static void targets_release_probes(struct daemon *d, int i)
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
static void target_matched(struct daemon *d, int pid)
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
			/* stopped again in its ld.so once its libraries are mapped,
			 * its allocator is resolved there, as a traced target's new
			 * program's is: not on a timer while it runs (and maybe
			 * exits), nor after an allocator it preloads ran */
			if (d->targets[i].resolve_pending)
				target_hold_in_ldso(d, i);
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
		/* the check above came before the exec tracepoint watched it: no
		 * exec since the watch (the count is 0) and still matching means
		 * the program attached to is a match */
		if (!probes_exec_count(d->skel, pid) && !process_matches(pid, comm, &exe_st)) {
			struct target_detach *h = target_detach_begin(d, pid, err, sizeof(err));

			if (h) {
				ingest_drain(&d->ingest); /* what it did until its probes went */
				target_detach_end(d, h);
			}
			free(d->targets[i].note);
			d->targets[i].note = xstrdup("executed another program while being "
						     "attached: not a match");
			log_msg("pid %d executed another program while being attached: not a "
				"match, not traced",
				pid);
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
	d->targets_cap = 0;
	d->ntargets = 0;
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
 * (target_resolve), and only the probes that differ are changed. held: the
 * process is stopped at that exec.
 */
static void target_execed(struct daemon *d, int i, int held)
{
	struct target *tg = &d->targets[i], *nt;
	uint64_t now = time_monotonic_ns();
	int j, pid = tg->pid;

	if (tg->state != SNAP_TARGET_ATTACHED)
		return;
	tracker_target_exec(&d->tracker, (uint32_t)pid);
	python_frames_off(d, pid);
	unwind_detach(d->unwind, pid);
	retire_pid(d, pid);
	j = target_new(d, pid);
	tg = &d->targets[i];
	nt = &d->targets[j];
	tg->state = SNAP_TARGET_EXECED;
	tg->end_ns = now;
	nt->state = SNAP_TARGET_ATTACHED;
	nt->is_child = tg->is_child;
	tg->is_child = 0;
	nt->pidfd = tg->pidfd;
	tg->pidfd = -1;
	nt->probes = tg->probes;
	memset(&tg->probes, 0, sizeof(tg->probes));
	nt->parent = tg->parent;
	nt->matched = tg->matched;
	tg->matched = 0;
	/* the copies of its parent's probes a match's child ran went at the
	 * exec (remove_on_exec); --follow-forks' stay */
	nt->copies = tg->copies && target_inherit(d, nt) == PROBES_INHERIT;
	tg->copies = 0;
	for (int k = 0; k < d->ntargets; k++) {
		if (d->targets[k].parent == i)
			d->targets[k].parent = j; /* the links they inherit moved */
	}
	nt->attach_ns = now;
	nt->space = (uint32_t)pid;
	nt->resolve_pending = 1;
	nt->execs_seen = tg->execs_seen + 1;
	/* held at its exec, the process runs this program: its command line is
	 * this program's; otherwise it may have executed another one or exited
	 * since, and the command is read at the resolve */
	nt->command = held ? process_read_command(pid) : target_read_command(d, j);
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
	struct target *tg = &d->targets[i];

	probes_detach(&tg->probes);
	ldso_release(tg);
	tg->resolve_pending = 0;
	tg->state = SNAP_TARGET_DETACHED; /* first: an exec event drained now is not its */
	if (!held) {
		ingest_drain(&d->ingest);
		tg = &d->targets[i];
	}
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
	for (int x = i, p = d->targets[i].parent, hops = 0;
	     p >= 0 && d->targets[x].copies && hops < 1024;
	     x = p, p = d->targets[p].parent, hops++) {
		const struct target_probes *tp = &d->targets[p].probes;

		for (int k = 0; k < tp->nlinks && out->nlinks < (int)ARRAY_SIZE(out->links); k++) {
			if (!tp->links[k])
				continue;
			out->keys[out->nlinks] = tp->keys[k];
			out->links[out->nlinks++] = tp->links[k];
		}
	}
}

/*
 * A followed target, or a match, forked: the child is traced already (it
 * inherited the probes in copy_process, before it ran); give it an entry
 * of its own. A match's child is a match: over --max-targets (BPF let two
 * through at once), it runs its copies untraced.
 */
static void target_forked(struct daemon *d, uint32_t ptgid, int child)
{
	struct target *parent, *c;
	uint64_t now = time_monotonic_ns();
	uint32_t key = (uint32_t)ptgid;
	struct mt_py_config pc;
	int p = -1, j;

	for (int i = 0; i < d->ntargets; i++) {
		if (d->targets[i].pid == (int)ptgid && d->targets[i].state == SNAP_TARGET_ATTACHED)
			p = i;
	}
	if (child <= 0)
		return;
	if (p < 0) {
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
	if (d->targets[p].matched && targets_matched_now(d) >= d->set.max_targets) {
		probes_untraced(d->skel, child, MT_UNTRACED_COPIES);
		__atomic_fetch_sub(&d->skel->bss->matched, 1, __ATOMIC_RELAXED);
		target_over_limit(d, child);
		return;
	}
	retire_pid(d, child); /* an earlier process with this pid */
	j = target_new(d, child);
	parent = &d->targets[p];
	c = &d->targets[j];
	c->parent = p;
	c->copies = 1;
	c->matched = parent->matched;
	/* the child runs the parent's program until it executes another (an exec
	 * event follows then): its command line is the parent's as the daemon
	 * knows it, not /proc's now (the child may have executed another
	 * program or exited since) */
	c->command = xstrdup(parent->command ? parent->command : "?");
	c->alloc.obj[ALLOC_OBJ_MALLOC].path =
	    parent->alloc.obj[ALLOC_OBJ_MALLOC].path
		? xstrdup(parent->alloc.obj[ALLOC_OBJ_MALLOC].path)
		: NULL;
	c->attach_ns = now;
	c->space = (uint32_t)child;
	c->state = SNAP_TARGET_ATTACHED;
	/* its heap begins as the parent's now: the fork event is in order */
	if (!tracker_fork(&d->tracker, ptgid, (uint32_t)child, now))
		log_msg("pid %d: cannot track the child: out of memory", child);
	c->pidfd = pidfd_open(child);
	if (c->pidfd >= 0 && loop_watch(d->epfd, c->pidfd, EPOLLIN, TAG_PIDFD, (uint32_t)j)) {
		close(c->pidfd);
		c->pidfd = -1;
	}
	if (c->pidfd < 0) { /* gone already: its events are all queued */
		c->state = SNAP_TARGET_EXITED;
		c->end_ns = now;
		c->release_pending = 1; /* on the next tick, after a whole drain */
		probes_unwatch(d->skel, child);
		unmatch(d, c);
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
void target_resolve(struct daemon *d, int i, int held)
{
	struct target *tg = &d->targets[i];
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
	test_lag(TEST_LAG_RESOLVE);
	inherited_probes(d, i, &inh);
	if (probes_attach_keeping(d->skel, tg->pid, &a, target_inherit(d, tg), &np, &tg->probes,
				  &inh, err, sizeof(err))) {
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
	detacher_detach(&tg->probes);
	tg->probes = np;
	allocator_free(&tg->alloc);
	tg->alloc = a;
	tg->resolve_pending = 0;
	ldso_release(tg);
	free(tg->command);
	tg->command = held ? process_read_command(tg->pid) : target_read_command(d, i);
	if ((note = allocator_python_note(tg->pid))) {
		free(tg->note);
		tg->note = note;
	}
	if (python_frames(d, tg->pid))
		python_arenas(d, tg); /* after the probes: malloc's own mmaps are its own */
	unwind_attach(d->unwind, tg->pid);
	/* its maps and modules now, while it holds still: a program that runs
	 * a moment and exits is gone before the daemon drains its stacks */
	symbolizer_note_process(d->sym, tg->pid);
	log_msg("pid %d: the new program's allocator is %s: %d probes, after %llu us", tg->pid,
		tg->alloc.obj[ALLOC_OBJ_MALLOC].path, probes_count(&tg->probes),
		(unsigned long long)(now - tg->attach_ns) / 1000);
}

/* The newest entry of pid waiting for its new program's allocator, or -1. */
static int pending_entry(struct daemon *d, int pid)
{
	for (int i = d->ntargets - 1; i >= 0; i--) {
		if (d->targets[i].pid == pid && d->targets[i].state == SNAP_TARGET_ATTACHED &&
		    d->targets[i].resolve_pending)
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
	if (linkmap_state(d->targets[i].pid) > 0)
		return; /* still adding objects: the next report will do */
	target_resolve(d, i, 1);
	if (!d->targets[i].resolve_pending)
		ldso_release(&d->targets[i]);
}

static void target_hold_in_ldso(struct daemon *d, int i)
{
	int pid = d->targets[i].pid;
	char *path = NULL;
	uint64_t off;

	if (!linkmap_ldso_probe(pid, &path, &off)) {
		d->targets[i].ldso_link = probes_attach_ldso(d->skel, pid, path, off);
		if (!d->targets[i].ldso_link)
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
 * before it runs, as for a new match (target_attach); target_resolve()
 * completes them once ld.so is done.
 */
static void match_execed(struct daemon *d, int i, int held)
{
	struct target *tg = &d->targets[i];
	char err[512], why[600];
	int rc;

	if (tg->probes.nlinks) {
		rc = probes_reinherit(&tg->probes, tg->pid);
		if (rc)
			log_msg("pid %d: children it forks from now on may miss some probes: %s",
				tg->pid, strerror(-rc));
		return;
	}
	if (allocator_resolve_at_exec(tg->pid, &tg->alloc, err, sizeof(err)) ||
	    probes_attach(d->skel, tg->pid, &tg->alloc, PROBES_INHERIT_MATCH, &tg->probes, err,
			  sizeof(err))) {
		snprintf(why, sizeof(why), "the new program is not traced: %s", err);
		target_give_up(d, i, why, held);
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
	struct target *tg = &d->targets[i];
	char *cmd, *note;
	int pid = tg->pid;

	if (tg->state != SNAP_TARGET_ATTACHED)
		return;
	tracker_target_exec(&d->tracker, (uint32_t)pid);
	python_frames_off(d, pid);
	unwind_detach(d->unwind, pid);
	ldso_release(tg);
	unmatch(d, tg);
	if (tg->pidfd >= 0) {
		loop_unwatch(d->epfd, tg->pidfd);
		close(tg->pidfd);
		tg->pidfd = -1;
	}
	tg->resolve_pending = 0;
	tg->copies = 0; /* gone at the exec */
	tg->state = SNAP_TARGET_EXECED;
	tg->end_ns = time_monotonic_ns();
	cmd = process_read_command(pid);
	if (asprintf(&note, "executed %s, which does not match %s %s: not traced since",
		     cmd ? cmd : "a program", d->set.match_comm ? "--comm" : "--exe",
		     d->set.match_comm ? d->set.match_comm : d->set.match_exe) >= 0) {
		free(tg->note);
		tg->note = note;
	}
	log_msg("pid %d %s", pid, tg->note);
	free(cmd);
	if (tg->probes.nlinks)
		tg->holds_untraced = 1; /* left in the map until they go */
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
	int n = d->ntargets, i; /* target_execed appends */

	for (i = 0; i < n; i++) {
		if (d->targets[i].pid != (int)tgid)
			continue;
		if (unmatched)
			target_unmatched(d, i);
		else
			target_execed(d, i, stopped);
	}
	i = pending_entry(d, (int)tgid);
	if (i >= 0 && target_inherit(d, &d->targets[i]) == PROBES_INHERIT_MATCH)
		match_execed(d, i, stopped);
	i = pending_entry(d, (int)tgid);
	if (i >= 0 && stopped)
		target_hold_in_ldso(d, i);
	if (stopped)
		continue_stopped(d, (int)tgid);
}

static void target_ldso_event(struct daemon *d, uint32_t tgid)
{
	int i = pending_entry(d, (int)tgid);

	if (i >= 0 && d->targets[i].ldso_link)
		resolve_held(d, i);
	continue_stopped(d, (int)tgid);
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
		struct target *tg = &d->targets[i];

		if (tg->pid != (int)tgid || tg->state != SNAP_TARGET_ATTACHED)
			continue;
		if (allocator_undo_python_dispatch(&tg->alloc)) {
			inherited_probes(d, i, &inh);
			if (probes_attach_keeping(d->skel, tg->pid, &tg->alloc,
						  target_inherit(d, tg), &np, &tg->probes, &inh,
						  err, sizeof(err))) {
				log_msg("pid %d: %s: its frees may go untraced", tg->pid, err);
			} else {
				probes_detach(&tg->probes);
				tg->probes = np;
				log_msg(
				    "pid %d installs an allocator: PyObject_Free and PyMem_Free "
				    "probed themselves",
				    tg->pid);
			}
		}
		break;
	}
	continue_stopped(d, (int)tgid);
}

void targets_control(struct daemon *d, const struct mt_event *ev)
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
		target_forked(d, ev->tgid, (int)ev->addr);
		break;
	case MT_EV_MATCH:
		target_matched(d, (int)ev->tgid);
		break;
	}
}

/* An attached target whose exec count (the tracepoint's, in the targets
 * map) is ahead of what its entry has seen. */
static int exec_unseen(struct daemon *d, const struct target *tg)
{
	return tg->state == SNAP_TARGET_ATTACHED &&
	       probes_exec_count(d->skel, tg->pid) > tg->execs_seen;
}

int execs_unseen(struct daemon *d)
{
	for (int i = 0; i < d->ntargets; i++)
		if (exec_unseen(d, &d->targets[i]))
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
void check_execs(struct daemon *d)
{
	uint64_t lost[MT_LOST_SLOTS];
	struct mt_target_watch w;

	for (int i = 0; i < d->ntargets; i++) {
		struct target *tg = &d->targets[i];

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
		if (target_inherit(d, &d->targets[d->ntargets - 1]) == PROBES_INHERIT_MATCH)
			match_execed(d, d->ntargets - 1, 0);
	}
}
