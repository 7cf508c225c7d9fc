// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The table of targets, and a target's attach, detach and exit: attach at
 * start, by memtracectl attach, or as a --comm/--exe match (with its Python
 * frames and arenas), and the probes that stay while children run copies
 * of them. Every entry stays in the table until the daemon stops: a target
 * that exited or was detached keeps its data readable. A target's pid may
 * come back (attached again, an exec, a reused pid): each time its old data
 * moves to a retired key (targets_retire_pid), so every entry is one
 * generation of one process.
 *
 * What happens between attach and exit (an exec, a fork, a match stopped
 * at its exec) is events.c's, driven by the ring buffer; the --comm/--exe
 * scan at start and the --max-targets count are matches.c's. Both use this
 * file; it uses neither.
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
#include "daemon/proc/cgroup.h"
#include "daemon/proc/linkmap.h"
#include "daemon/proc/process.h"
#include "daemon/proc/ptstop.h"
#include "daemon/symbols/pystacks.h"
#include "daemon/symbols/symbolize.h"
#include "daemon/unwind/unwind.h"
#include "common/util.h"
#include "memtrace.skel.h"

void target_python_off(struct daemon *d, int pid)
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
 * placing its probes (MEMTRACE_TEST_NO_HOLD=1: not held still meanwhile,
 * attach_hold). A process then runs ahead of the daemon, and what the
 * daemon reads of it outside a hold is stale. Only in the test build
 * (MEMTRACE_TEST_HOOKS: make's $(O)/tests/memtraced-hooks); a no-op in
 * memtraced.
 */
void targets_test_lag(int where)
{
#ifdef MEMTRACE_TEST_HOOKS
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
#endif
}

/* Continue a process the BPF programs stopped (exec, ld.so, --comm match). */
void targets_continue(struct daemon *d, int pid)
{
	uint32_t key = (uint32_t)pid;

	if (kill(pid, SIGCONT) && errno != ESRCH)
		log_msg("cannot continue pid %d: %s", pid, strerror(errno));
	/* the keeper need not continue it */
	bpf_map__delete_elem(d->skel->maps.stopped, &key, sizeof(key), 0);
	targets_test_lag(TEST_LAG_CONTINUE);
}

/*
 * Is entry i's process still the program whose events are drained now:
 * attached, alive (its pidfd not readable: its pid is still its own) and
 * past no further exec (the exec tracepoint's count is the one the entry
 * began with)? What the daemon reads of /proc/PID while the process runs
 * describes that program only if this holds after the read.
 */
int target_current(struct daemon *d, int i)
{
	const struct target *tg = d->targets[i];
	struct pollfd pfd = {.fd = tg->pidfd, .events = POLLIN};

	if (!lc_traced(tg->phase) || tg->pidfd < 0 || poll(&pfd, 1, 0) != 0)
		return 0; /* it exited: its pid may be another process's by now */
	return probes_exec_count(d->skel, tg->pid) == tg->execs_seen;
}

/* The symbolizer's guard (symbolizer_set_guard): pid's newest entry is current. */
static int pid_current(void *arg, int pid)
{
	struct daemon *d = arg;

	for (int i = d->ntargets - 1; i >= 0; i--) {
		if (d->targets[i]->pid == pid)
			return target_current(d, i);
	}
	return 0;
}

void targets_guard_symbolizer(struct daemon *d)
{
	symbolizer_set_guard(d->sym, pid_current, d);
}

/* Entry i's command line, read now: "?" unless target_current() after the read. */
char *target_read_command(struct daemon *d, int i)
{
	char *cmd = process_read_command(d->targets[i]->pid);

	if (target_current(d, i))
		return cmd;
	free(cmd);
	return xstrdup("?");
}

void target_ldso_release(struct target *tg)
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
void targets_retire_pid(struct daemon *d, int pid)
{
	uint32_t key = tracker_retire(&d->tracker, (uint32_t)pid);

	if (!key)
		return;
	symbolizer_rename(d->sym, pid, (int)key);
	pystacks_rename(d->py, pid, (int)key);
	for (int i = 0; i < d->ntargets; i++) {
		if (d->targets[i]->gen == (uint32_t)pid)
			d->targets[i]->gen = key;
	}
}

struct allocator *target_alloc(struct target *tg)
{
	if (!tg->alloc)
		tg->alloc = xcalloc(1, sizeof(*tg->alloc));
	return tg->alloc;
}

struct target_probes *target_probes(struct target *tg)
{
	if (!tg->probes)
		tg->probes = xcalloc(1, sizeof(*tg->probes));
	return tg->probes;
}

int target_nlinks(const struct target *tg)
{
	return tg->probes ? tg->probes->nlinks : 0;
}

const char *target_alloc_path(const struct target *tg)
{
	return tg->alloc ? tg->alloc->obj[ALLOC_OBJ_MALLOC].path : tg->alloc_path;
}

/* Entry tg's allocator and probe table go (its probes are detached already). */
static void target_free_parts(struct target *tg)
{
	allocator_free(tg->alloc); /* NULL: never attached */
	free(tg->alloc);
	free(tg->alloc_path);
	free(tg->probes);
	tg->alloc = NULL;
	tg->alloc_path = NULL;
	tg->probes = NULL;
}

/* A new entry, allocated on its own: it stays where it is until the daemon
 * stops (only the table of pointers to the entries grows). */
int target_new(struct daemon *d, int pid)
{
	struct target *tg;

	if (d->ntargets == d->targets_cap) {
		d->targets_cap = d->targets_cap < 8 ? 8 : d->targets_cap + d->targets_cap / 2;
		d->targets = xrealloc(d->targets, (size_t)d->targets_cap * sizeof(*d->targets));
	}
	tg = xcalloc(1, sizeof(*tg));
	d->targets[d->ntargets] = tg;
	tg->pid = pid;
	tg->pidfd = -1;
	tg->exit_status = -1;
	tg->parent = -1;
	return d->ntargets++;
}

int target_pidfd_open(int pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

int target_read_labels(struct daemon *d, int i)
{
	struct mt_cgroup_labels *l = xcalloc(1, sizeof(*l));
	char err[256];
	int rc = cgroup_read(d->targets[i]->pid, l, NULL, NULL, 0, err, sizeof(err));

	if (!rc)
		resident_set_labels(&d->resident, (uint32_t)i, l);
	free(l);
	return rc ? -1 : 0;
}

/* Python frames for a CPython target: tell the BPF walker where they are.
 * 1 when they are on. */
int target_python_frames(struct daemon *d, int pid)
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
void target_python_arenas(struct daemon *d, struct target *tg)
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
static int attach_hold(struct daemon *d, struct target *tg, struct ptstop *st, bool *unheld)
{
	char why[256];
	int rc;

	if (!lc_attach_hold(tg->phase, target_inherit(d, tg) != PROBES_OWN))
		return 0;
#ifdef MEMTRACE_TEST_HOOKS
	/* tests/e2e/test_cgmatch.py: as where ptrace is refused (Yama's
	 * ptrace_scope 3, another tracer), the process runs on during its attach */
	if (getenv("MEMTRACE_TEST_NO_HOLD")) {
		log_msg("pid %d: not held while its probes are placed (MEMTRACE_TEST_NO_HOLD)",
			tg->pid);
		*unheld = true;
		return 0;
	}
#endif
	rc = ptstop_stop(st, tg->pid, time_monotonic_ns() + ATTACH_HOLD_MAX_NS, why, sizeof(why));
	if (!rc)
		return 1;
	if (rc == -ETIMEDOUT)
		snprintf(why, sizeof(why), "thread %d did not stop", st->late_tid);
	log_msg("pid %d: not held while its probes are placed (%s): a child it forks "
		"meanwhile may carry only some of them",
		tg->pid, why);
	*unheld = true;
	return 0;
}

/* Resume what attach_hold() held; says so if the bound resumed it first
 * (then 1: it ran before its last probe was placed). */
static int attach_release(const struct target *tg, struct ptstop *st, int *held)
{
	if (*held <= 0)
		return 0;
	*held = -1; /* released */
	if (ptstop_resume(st)) {
		log_msg("pid %d: its probes took longer than %llu s to place and it ran "
			"before the last: a child it forked meanwhile may carry only some of "
			"them",
			tg->pid, ATTACH_HOLD_MAX_NS / 1000000000);
		return 1;
	}
	log_msg("pid %d stood still for %.1f ms while its probes were placed", tg->pid,
		(double)(st->resumed_ns - st->begin_ns) / 1e6);
	return 0;
}

/*
 * A running match (moved into the cgroup, found by the scan at start)
 * executed a program during its attach, and that exec's own event comes
 * through the ring buffer: a match stopped at the exec (the exec tracepoint
 * found no entry and made one), or an exec the watch counted. What was read
 * of the program before goes, nothing is placed, the "targets" entry stays
 * as the exec left it: the entry waits for that event, which attaches it at
 * the exec (events.c: target_matched, target_exec_event).
 */
static int attach_overtaken(struct daemon *d, struct target *tg)
{
	target_python_off(d, tg->pid);
	allocator_free(tg->alloc);
	free(tg->command);
	free(tg->note);
	tg->command = xstrdup("?"); /* the exec's event reads the new program's */
	tg->note = NULL;
	if (tg->pidfd >= 0)
		close(tg->pidfd);
	tg->pidfd = -1;
	tg->attach_ns = time_monotonic_ns(); /* since when it waits */
	tg->gen = 0;			     /* no data of its own yet */
	lc_step(&tg->phase, LC_EV_OVERTAKEN);
	return 1;
}

/* A running match's map entry, made since its attach began (the callers
 * found none): the exec tracepoint's, for an exec that matched. */
static int exec_matched_meanwhile(struct daemon *d, const struct target *tg)
{
	struct mt_target_watch w;

	return !probes_watch_get(d->skel, tg->pid, &w) && w.matched && !w.untraced;
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
 *
 * A running match (the callers found it outside the "targets" map) whose
 * exec comes with an event of its own is not failed but handed to that
 * event (attach_overtaken, 1): an exec that matched before the watch (the
 * tracepoint's entry is there: the watch is made only where none is, and a
 * failed read of the allocator looks for it too), or one the watch counted
 * before its image was taken again (without the ptrace hold).
 */
int target_attach(struct daemon *d, int i, char *err, size_t errlen)
{
	struct target *tg = d->targets[i];
	uint64_t image[2], again[2];
	struct ptstop st;
	int rc, held, py = 0, running_match;
	uint64_t watch_ns;
	bool unheld = false;

	targets_retire_pid(d, tg->pid); /* traced before: that data stays, apart */
	/* moved out of the cgroup and back: its old probes gone first (they would
	 * count its calls twice) */
	detacher_wait(tg->pid);
	if (tg->phase == LC_NEW) /* else held at its exec (LC_EXEC_HELD) */
		lc_step(&tg->phase, LC_EV_ATTACH);
	running_match = tg->phase == LC_ATTACHING && tg->matched;
	tg->exit_status = -1;
	tg->pidfd = target_pidfd_open(tg->pid);
	if (tg->pidfd < 0) {
		snprintf(err, errlen, "cannot attach to pid %d: %s", tg->pid, strerror(errno));
		return -1;
	}
	if (process_image(tg->pid, image)) {
		snprintf(err, errlen, "cannot attach to pid %d: %s", tg->pid, strerror(ESRCH));
		return -1;
	}
	free(tg->command); /* an entry that awaited its exec: "?" */
	tg->command = process_read_command(tg->pid);
	/* labelled now, while it is there (held at its exec, a match is stopped): a
	 * process that ends before the next tick has its labels too */
	target_read_labels(d, i);
	if (tg->phase == LC_EXEC_HELD) {
		/* its libraries come later: events_resolve() finishes the job */
		if (allocator_resolve_at_exec(tg->pid, target_alloc(tg), err, errlen))
			return -1;
	} else {
		if (allocator_resolve(tg->pid, target_alloc(tg), err, errlen))
			/* read at its exec, before its libraries were mapped */
			return running_match && exec_matched_meanwhile(d, tg)
				   ? attach_overtaken(d, tg)
				   : -1;
		if (d->set.python_allocators && !allocator_resolve_python(tg->pid, tg->alloc))
			log_msg("pid %d: --python-allocators: no loaded object exports "
				"PyObject_Malloc",
				tg->pid);
		free(tg->note);
		tg->note = allocator_python_note(tg->pid);
		if (tg->note)
			log_msg("pid %d: %s", tg->pid, tg->note);
		py = target_python_frames(d, tg->pid);
	}
	tg->attach_ns = time_monotonic_ns();
	tg->gen = (uint32_t)tg->pid;
	held = attach_hold(d, tg, &st, &unheld);
	watch_ns = time_monotonic_ns();
	rc = probes_watch(d->skel, tg->pid, target_inherit(d, tg) != PROBES_OWN, tg->matched,
			  running_match);
	if (rc == -EEXIST && running_match) {
		attach_release(tg, &st, &held);
		return attach_overtaken(d, tg); /* its exec matched first */
	}
	if (rc) {
		attach_release(tg, &st, &held);
		snprintf(err, errlen, "cannot watch pid %d for exec: %s", tg->pid, strerror(-rc));
		return -1;
	}
	if (tg->phase == LC_ATTACHING) /* held at an exec, it runs nothing meanwhile */
		targets_test_lag(TEST_LAG_ATTACH);
	if (process_image(tg->pid, again) || memcmp(image, again, sizeof(image))) {
		attach_release(tg, &st, &held);
		/* counted since the watch: its exec event follows */
		if (running_match && probes_exec_count(d->skel, tg->pid))
			return attach_overtaken(d, tg);
		snprintf(err, errlen, "pid %d executed a new program while being attached",
			 tg->pid);
		return -1;
	}
	/* accounting begins once no exec can have overtaken the attach unseen */
	if (!tracker_add_target(&d->tracker, (uint32_t)tg->pid, tg->attach_ns)) {
		attach_release(tg, &st, &held);
		snprintf(err, errlen, "cannot track pid %d: out of memory", tg->pid);
		return -1;
	}
	tracker_set_refrees(&d->tracker, (uint32_t)tg->pid, allocator_frees_twice(tg->alloc));
	rc = probes_attach(d->skel, tg->pid, target_alloc(tg), target_inherit(d, tg),
			   target_probes(tg), err, errlen);
	/* it ran, its children traced, while its probes were placed: a child
	 * forked then carries only some (target_forked marks it) */
	if ((attach_release(tg, &st, &held) || unheld) && target_inherit(d, tg) != PROBES_OWN) {
		tg->unguarded_from_ns = watch_ns;
		tg->unguarded_to_ns = time_monotonic_ns();
	}
	if (rc)
		return -1;
	unwind_attach(d->unwind, tg->pid);
	/* after the allocator's probes: the mmaps malloc makes are its own */
	if (py)
		target_python_arenas(d, tg);
	if (loop_watch(d->epfd, tg->pidfd, EPOLLIN, TAG_PIDFD, (uint32_t)i)) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		return -1;
	}
	lc_step(&tg->phase, LC_EV_PROBES_PLACED); /* held at its exec: LC_RESOLVING */
	symbolizer_note_process(d->sym, tg->pid); /* only while it is that program */
	if (probes_exec_count(d->skel, tg->pid)) {
		/* what was read may be either program's: the new one's entry,
		 * made at its exec event, reads its own */
		free(tg->command);
		tg->command = xstrdup("?");
		log_msg("pid %d executed a new program while being attached", tg->pid);
	}
	log_msg("attached to pid %d (%s): %d probes on %s%s%s%s%s", tg->pid, tg->command,
		probes_count(tg->probes), tg->alloc->obj[ALLOC_OBJ_MALLOC].path,
		tg->alloc->obj[ALLOC_OBJ_CXX].path ? " and " : "",
		tg->alloc->obj[ALLOC_OBJ_CXX].path ? tg->alloc->obj[ALLOC_OBJ_CXX].path : "",
		tg->alloc->obj[ALLOC_OBJ_PYTHON].path ? " and " : "",
		tg->alloc->obj[ALLOC_OBJ_PYTHON].path ? tg->alloc->obj[ALLOC_OBJ_PYTHON].path : "");
	return 0;
}

/* target_attach() failed for entry i (the last, or one that awaited its exec
 * and stays: entries never move): undo what it did. */
void target_attach_failed(struct daemon *d, int i)
{
	struct target *tg = d->targets[i];
	int pid = tg->pid;

	/* nothing of it may stay live: probes are undone by probes_attach */
	if (tg->pidfd >= 0) {
		loop_unwatch(d->epfd, tg->pidfd);
		close(tg->pidfd);
	}
	probes_unwatch(d->skel, pid);
	target_python_off(d, pid);
	unwind_detach(d->unwind, pid);
	if (tracker_find_target(&d->tracker, (uint32_t)pid) || i != d->ntargets - 1) {
		/* accounting began, or an entry that waited for its exec (not the
		 * last: entries never move): keep it, marked detached */
		if (tracker_target_exec(&d->tracker, (uint32_t)pid))
			tg->gen = 0; /* none: not the next generation's */
		tg->pidfd = -1;
		lc_step(&tg->phase, LC_EV_GIVE_UP);
		tg->end_ns = time_monotonic_ns();
	} else {
		target_free_parts(tg);
		free(tg->command);
		free(tg->note);
		free(tg);
		d->targets[--d->ntargets] = NULL;
	}
}

/* A matched target is gone (exited, detached): it leaves the cap. */
void target_unmatch(struct daemon *d, struct target *tg)
{
	if (!tg->matched)
		return;
	tg->matched = false;
	__atomic_fetch_sub(&d->skel->bss->matched, 1, __ATOMIC_RELAXED);
}

int target_inherit(const struct daemon *d, const struct target *tg)
{
	if (d->set.follow_forks)
		return PROBES_INHERIT;
	return tg->matched ? PROBES_INHERIT_MATCH : PROBES_OWN;
}

/* Does the live entry k run copies of entry p's probes? */
static int runs_copies_of(const struct daemon *d, int k, int p)
{
	for (int x = k, hops = 0; x >= 0 && d->targets[x]->copies && hops < 1024;
	     x = d->targets[x]->parent, hops++) {
		if (d->targets[x]->parent == p)
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
	for (int p = i, hops = 0; p >= 0 && hops < 1024; p = d->targets[p]->parent, hops++) {
		struct target *tg = d->targets[p];
		int used = 0;

		if (lc_traced(tg->phase) || !target_nlinks(tg))
			continue;
		for (int k = 0; k < d->ntargets && !used; k++)
			used = lc_traced(d->targets[k]->phase) && runs_copies_of(d, k, p);
		if (used)
			continue;
		/* no traced process runs them: off the loop (they may still fire in
		 * one that runs them untraced, which BPF drops, until they are gone) */
		detacher_detach(tg->probes);
		if (tg->holds_untraced)
			unwatch_untraced(d, tg->pid);
		tg->holds_untraced = false;
	}
}

int target_attach_pid(struct daemon *d, int pid, char *err, size_t errlen)
{
	int i, rc;

	for (i = 0; i < d->ntargets; i++) {
		if (d->targets[i]->pid == pid && lc_traced(d->targets[i]->phase)) {
			snprintf(err, errlen, "pid %d is traced already", pid);
			return -1;
		}
	}
	rc = process_check_pid(pid);
	if (rc) {
		snprintf(err, errlen, "cannot attach to pid %d: %s", pid, process_check_reason(rc));
		return -1;
	}
	/* traced before (detached, or an earlier process with this pid): a new
	 * entry, the old one's data stays as it was */
	i = target_new(d, pid);
	if (target_attach(d, i, err, errlen)) {
		target_attach_failed(d, i);
		return -1;
	}
	return 0;
}

/* Stop tracing entry i: probes off (events until now still drain), state
 * detached; off_loop: closed by the detacher. */
static void detach_probes(struct daemon *d, int i, bool off_loop)
{
	struct target *tg = d->targets[i];

	target_python_off(d, tg->pid); /* first: mmaps then are malloc's own until the end */
	if (off_loop && tg->probes)
		detacher_detach_pid(tg->probes, tg->pid);
	else
		probes_detach(tg->probes);
	target_ldso_release(tg);
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
	struct target *tg = d->targets[i];

	tracker_target_exec(&d->tracker, (uint32_t)tg->pid); /* later events are not its */
	target_unmatch(d, tg);
	loop_unwatch(d->epfd, tg->pidfd);
	close(tg->pidfd);
	tg->pidfd = -1;
	lc_step(&tg->phase, LC_EV_DRAINED);
	tg->end_ns = time_monotonic_ns();
	log_msg("detached from pid %d (%s); its data stays readable", tg->pid, tg->command);
}

struct target_detach {
	char *gone;    /* entries being detached */
	int n;	       /* entries before the drain */
	bool off_loop; /* their probes closed by the detacher */
};

struct target_detach *target_detach_begin(struct daemon *d, int pid, bool off_loop, char *err,
					  size_t errlen)
{
	struct target_detach *h;
	int i, k, more;

	for (i = 0; i < d->ntargets; i++) {
		if (d->targets[i]->pid == pid && lc_next(d->targets[i]->phase, LC_EV_DETACH) >= 0)
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
	h->off_loop = off_loop;
	h->gone[i] = 1;
	detach_probes(d, i, off_loop);
	lc_step(&d->targets[i]->phase, LC_EV_DETACH);
	do {
		more = 0;
		for (k = 0; k < d->ntargets; k++) {
			struct target *c = d->targets[k];

			if (!h->gone[k] && lc_next(c->phase, LC_EV_DETACH) >= 0 && c->parent >= 0 &&
			    h->gone[c->parent]) {
				h->gone[k] = more = 1;
				detach_probes(d, k, off_loop);
				lc_step(&c->phase, LC_EV_DETACH);
			}
		}
	} while (more);
	return h;
}

void target_detach_end(struct daemon *d, struct target_detach *h)
{
	int k;

	for (k = 0; k < d->ntargets; k++) {
		if (d->targets[k]->phase != LC_DETACHING)
			continue;
		/* children forked, or the new program executed, while it was being
		 * detached (the drain added them, detaching: lc_fork_successor,
		 * lc_exec_successor) */
		if (k >= h->n || !h->gone[k])
			detach_probes(d, k, h->off_loop);
		detach_finish(d, k);
	}
	free(h->gone);
	free(h);
}

void target_pidfd_arm(struct daemon *d, int i, int on)
{
	struct target *tg = d->targets[i];

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
	struct target *tg = d->targets[i];
	int status;

	loop_unwatch(d->epfd, tg->pidfd);
	close(tg->pidfd);
	tg->pidfd = -1;
	if (tg->is_child && waitpid(tg->pid, &status, WNOHANG) == tg->pid)
		tg->exit_status = status;
	target_python_off(d, tg->pid); /* first: mmaps then are malloc's own until the end */
	target_ldso_release(tg);
	probes_unwatch(d->skel, tg->pid);
	unwind_detach(d->unwind, tg->pid);
	target_unmatch(d, tg);
	tracker_target_exited(&d->tracker, tg->gen); /* what it inherited leaves it */
	lc_step(&tg->phase, LC_EV_EXIT);
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
		log_msg("pid %d was killed by signal %d%s; its data stays readable", tg->pid,
			WTERMSIG(tg->exit_status), tg->oom.killed ? " (the OOM killer)" : "");
	else if (tg->oom.killed)
		log_msg("pid %d was killed by the OOM killer; its data stays readable", tg->pid);
	else
		log_msg("pid %d exited; its data stays readable", tg->pid);
}

void targets_release_pending(struct daemon *d)
{
	for (int k = 0; k < d->ntargets; k++) {
		if (!d->targets[k]->release_pending)
			continue;
		tracker_target_exited(&d->tracker, d->targets[k]->gen);
		d->targets[k]->release_pending = false;
	}
}

void targets_free(struct daemon *d)
{
	for (int i = 0; i < d->ntargets; i++) {
		struct target *tg = d->targets[i];

		if (lc_on_stop(tg->phase) == LC_STOP_DETACH)
			lc_step(&tg->phase, LC_EV_STOP);
		probes_detach(tg->probes);
		target_ldso_release(tg);
		if (tg->pidfd >= 0)
			close(tg->pidfd);
		target_free_parts(tg);
		free(tg->command);
		free(tg->note);
		free(tg);
	}
	free(d->targets);
	d->targets = NULL;
	d->targets_cap = 0;
	d->ntargets = 0;
}
