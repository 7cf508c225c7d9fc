// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A leak scan request (see scan.h): pick the targets, then for each one
 * stop, freeze past the stop, copy, thaw, read, resume, mark; one last
 * freeze for the suppressions and the answer. The target stands still from
 * its first PTRACE_INTERRUPT to its last PTRACE_DETACH, at most max_pause:
 * the stopping thread resumes it at that deadline whatever this one is
 * doing, and the scan then gives up and says so.
 */
#include "daemon/serve/scan.h"
#include "daemon/serve/collect.h"
#include "daemon/serve/framebuild.h"
#include "daemon/serve/service.h"
#include "daemon/core/blocks.h"
#include "daemon/core/tracker.h"
#include "daemon/proc/ptstop.h"
#include "daemon/scan/memscan.h"
#include "daemon/scan/reach.h"
#include "daemon/symbols/symbolize.h"
#include "common/suppress.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct scan_target {
	int pid;
	uint32_t gen;
	uint64_t live_estimate; /* its live blocks when the targets were picked */
	struct reach r;
	int marked;
	uint64_t threads, pause_ns, live_bytes;
	struct memscan_stats ms;
};

/*
 * MEMTRACE_TEST_SCAN_STALL_MS=N: hold each target N ms more while it stands
 * still, between the copy of its blocks and the read of its memory (tests:
 * a daemon killed, a target killed, the pause bound, all mid-scan). Only in
 * the test build (MEMTRACE_TEST_HOOKS: make's $(O)/tests/memtraced-hooks).
 */
static long test_stall_ms(void)
{
#ifdef MEMTRACE_TEST_HOOKS
	const char *e = getenv("MEMTRACE_TEST_SCAN_STALL_MS");

	return e ? atol(e) : 0;
#else
	return 0;
#endif
}

static void format_ns(char *buf, size_t cap, uint64_t ns)
{
	if (ns >= 10000000000ull)
		snprintf(buf, cap, "%.0f s", (double)ns / 1e9);
	else if (ns >= 1000000000ull)
		snprintf(buf, cap, "%.1f s", (double)ns / 1e9);
	else
		snprintf(buf, cap, "%.0f ms", (double)ns / 1e6);
}

/* The index of pid's newest generation in the view, or -1. */
static int newest(const struct daemon_view *v, int pid)
{
	int found = -1;

	for (int k = 0; k < v->ntargets; k++)
		if (view_target(v, k).pid == pid)
			found = k;
	return found;
}

static int scannable(const struct view_target *vt, char *err, size_t errlen)
{
	if (vt->state != SNAP_TARGET_ATTACHED) {
		snprintf(err, errlen, "pid %d is %s: a scan needs a traced process that runs",
			 vt->pid, snap_target_state_name((uint32_t)vt->state));
		return 0;
	}
	if (vt->settling) {
		snprintf(err, errlen,
			 "pid %d is starting a new program (its allocator is not probed yet); try "
			 "again in a moment",
			 vt->pid);
		return 0;
	}
	return 1;
}

/* The targets the request names, from a frozen core. */
static int pick_targets(const struct scan_core *core, const struct proto_scan *sc,
			struct scan_target **out, uint32_t *n, char *err, size_t errlen)
{
	const struct daemon_view *v;
	struct scan_target *t;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (core->freeze(core->ctx, UINT64_MAX, &v)) {
		snprintf(err, errlen, "the daemon is stopping");
		return -1;
	}
	t = xcalloc((size_t)(v->ntargets ? v->ntargets : 1), sizeof(*t));
	if (sc->pid) {
		int k = newest(v, (int)sc->pid);
		struct view_target vt = k >= 0 ? view_target(v, k) : (struct view_target){0};

		if (k < 0) {
			snprintf(err, errlen, "pid %u is not traced", sc->pid);
			rc = -1;
		} else if (!scannable(&vt, err, errlen)) {
			rc = -1;
		} else {
			t[(*n)++] = (struct scan_target){.pid = vt.pid, .gen = vt.gen};
		}
	} else {
		for (int k = 0; k < v->ntargets; k++) {
			const struct view_target vt = view_target(v, k);
			char ignored[8];

			if (newest(v, vt.pid) == k && scannable(&vt, ignored, sizeof(ignored)))
				t[(*n)++] = (struct scan_target){.pid = vt.pid, .gen = vt.gen};
		}
		if (!*n) {
			snprintf(err, errlen, "no traced process is running");
			rc = -1;
		}
	}
	/* how many blocks each holds: the scan makes room for them before it stops it */
	for (uint32_t i = 0; i < *n; i++) {
		const struct tracker_target *tt = tracker_find_gen(v->tracker, t[i].gen);

		t[i].live_estimate = tt ? tt->c.live_allocations + tt->inherited_live : 0;
	}
	core->thaw(core->ctx);
	if (rc)
		free(t);
	else
		*out = t;
	return rc;
}

static int stop_expired(void *arg)
{
	return ptstop_expired(arg);
}

/*
 * Freeze once every ring buffer record before barrier is applied, by
 * deadline_ns: 0 frozen (*v), -1 with err.
 */
static int freeze_after(const struct scan_core *core, uint64_t barrier, uint64_t deadline_ns,
			const struct daemon_view **v, char *err, size_t errlen)
{
	for (;;) {
		int rc = core->freeze(core->ctx, deadline_ns, v);

		if (rc < 0) {
			snprintf(err, errlen, "the daemon is stopping");
			return -1;
		}
		if (rc > 0) {
			/* still asked for: take it and let go, the target is resumed */
			if (!core->freeze(core->ctx, UINT64_MAX, v))
				core->thaw(core->ctx);
			snprintf(err, errlen, "the daemon's core stayed busy");
			return -1;
		}
		/* the target's last records may sit behind one another process is
		 * still writing: they are drained within microseconds */
		if ((*v)->ring_consumed >= barrier)
			return 0;
		core->thaw(core->ctx);
		if (time_monotonic_ns() > deadline_ns) {
			snprintf(err, errlen, "the ring buffer was not drained in time");
			return -1;
		}
		nanosleep(&(struct timespec){.tv_nsec = 200000}, NULL);
	}
}

/*
 * While a target stands still this thread is all it waits for, so for that
 * time the scan runs at nice SCAN_NICE, then as before. Two priorities
 * count: the thread's, among the daemon's threads and within its cgroup,
 * and, when the kernel groups a session's processes (autogroup: a daemon
 * started from a shell, not a systemd unit), the session's, against other
 * sessions. On a machine whose two CPUs other sessions kept busy, the
 * thread's nice alone did nothing; the session's took the pause at a
 * million blocks from 535 ms to 195 ms (docs/performance.md). Both need
 * CAP_SYS_NICE; without it the scan runs at its own priority.
 */
#define SCAN_NICE (-10)

struct boost {
	int thread; /* the thread's nice before, or INT_MIN: unchanged */
	int group;  /* the session's, or INT_MIN */
};

static int autogroup_nice(int *nice)
{
	char text[128];
	ssize_t n;
	char *p;
	int fd = open("/proc/self/autogroup", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1; /* no autogroup: sessions are not weighed apart */
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = '\0';
	p = strstr(text, " nice ");
	return p && sscanf(p, " nice %d", nice) == 1 ? 0 : -1;
}

static int set_autogroup_nice(int nice)
{
	char text[16];
	int fd = open("/proc/self/autogroup", O_WRONLY | O_CLOEXEC), len, rc;

	if (fd < 0)
		return -1;
	len = snprintf(text, sizeof(text), "%d", nice);
	rc = write(fd, text, (size_t)len) == len ? 0 : -1;
	close(fd);
	return rc;
}

static void boost_on(struct boost *b)
{
	static int said;
	id_t tid = (id_t)syscall(SYS_gettid);
	int old, failed = 0;

	b->thread = b->group = INT_MIN;
	errno = 0;
	old = getpriority(PRIO_PROCESS, tid);
	if (!(old == -1 && errno) && old > SCAN_NICE) {
		if (setpriority(PRIO_PROCESS, tid, SCAN_NICE))
			failed = errno;
		else
			b->thread = old;
	}
	if (!autogroup_nice(&old) && old > SCAN_NICE) {
		if (set_autogroup_nice(SCAN_NICE))
			failed = errno;
		else
			b->group = old;
	}
	if (failed && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		log_msg("leak scans hold their target at the daemon's own priority: cannot raise "
			"it (%s)",
			strerror(failed));
}

static void boost_off(const struct boost *b)
{
	if (b->group != INT_MIN)
		set_autogroup_nice(b->group);
	if (b->thread != INT_MIN)
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), b->thread);
}

/* Where copy_blocks() puts the blocks it is given. */
struct copy {
	struct reach_block *v;
	size_t n, cap;
	size_t *room; /* the prepared array's: set to 0 once a new array replaces it */
	uint64_t bytes;
	int nomem;
};

static int copy_one(void *arg, const struct heap_block *b, int inherited)
{
	struct copy *c = arg;

	(void)inherited; /* shared with an ancestor, in this process's memory all the same */
	if (c->n == c->cap) {
		/* more blocks than when the room was made: a new array (the prepared one
		 * stays the reach's) */
		size_t more = 2 * c->cap + 1024;
		struct reach_block *bigger = malloc(more * sizeof(*bigger));

		if (!bigger) {
			c->nomem = 1;
			return 1;
		}
		memcpy(bigger, c->v, c->n * sizeof(*bigger));
		if (!*c->room)
			free(c->v);
		c->v = bigger;
		c->cap = more;
		*c->room = 0;
	}
	c->v[c->n++] = (struct reach_block){.addr = b->addr, .size = b->size, .stack = b->stack};
	c->bytes += b->size;
	return 0;
}

/*
 * Copy the live blocks of the target from the frozen core, its inherited
 * ones included (core/blocks.h), into *out, which has room for *room (made
 * beforehand); past it, a new array is made and *room set to 0. 0, or -1
 * when the target moved on.
 */
static int copy_blocks(const struct daemon_view *v, struct scan_target *t, struct reach_block **out,
		       size_t *room, uint32_t *n, char *err, size_t errlen)
{
	int k = newest(v, t->pid);
	const struct view_target vt = k >= 0 ? view_target(v, k) : (struct view_target){0};
	const struct tracker_target *tt = tracker_find_gen(v->tracker, t->gen);
	struct copy c = {.v = *out, .cap = *room, .room = room};

	if (k < 0 || vt.gen != t->gen || !tt || !scannable(&vt, err, errlen)) {
		if (k >= 0 && vt.gen != t->gen)
			snprintf(err, errlen, "pid %d executed a new program", t->pid);
		else if (k < 0 || !tt)
			snprintf(err, errlen, "pid %d is no longer traced", t->pid);
		return -1;
	}
	if (target_blocks_each(v->tracker, t->gen, copy_one, &c) || c.nomem) {
		snprintf(err, errlen, "out of memory for %zu blocks", c.n);
		*out = c.v;
		return -1;
	}
	*out = c.v;
	*n = (uint32_t)c.n;
	t->live_bytes = c.bytes;
	return 0;
}

/* Each thread's registers as words: the general ones, then the vector state. */
static struct memscan_thread *thread_words(const struct ptstop *st, uint64_t **store, size_t *n)
{
	struct memscan_thread *th = xcalloc(st->n ? st->n : 1, sizeof(*th));
	size_t words = 0, at = 0;

	for (uint32_t i = 0; i < st->n; i++)
		words += sizeof(st->t[i].regs) / 8 + st->t[i].xstate_words;
	*store = xmalloc((words ? words : 1) * sizeof(**store));
	*n = 0;
	for (uint32_t i = 0; i < st->n; i++) {
		const struct ptstop_thread *p = &st->t[i];

		if (!p->stopped || p->gone || !p->have_regs)
			continue;
		th[*n].sp = p->regs.rsp;
		th[*n].words = *store + at;
		memcpy(*store + at, &p->regs, sizeof(p->regs));
		at += sizeof(p->regs) / 8;
		if (p->xstate_words)
			memcpy(*store + at, p->xstate, p->xstate_words * 8);
		at += p->xstate_words;
		th[*n].nwords = sizeof(p->regs) / 8 + p->xstate_words;
		(*n)++;
	}
	return th;
}

/* Whether a reason already says the process is gone. */
static int ptstop_died_said(const char *why)
{
	return strstr(why, "killed") || strstr(why, "exited");
}

/* Stop, copy, read and mark one target; the target runs again on return. */
static int scan_one(const struct scan_core *core, const struct proto_scan *sc,
		    struct scan_target *t, char *err, size_t errlen)
{
	uint64_t deadline, barrier;
	const struct daemon_view *v;
	struct memscan_thread *th = NULL;
	struct reach_block *blocks, *prepared;
	struct ptstop stop;
	struct boost boost;
	uint64_t *words = NULL;
	size_t nthreads = 0, room;
	uint32_t nblocks = 0;
	char why[256] = "", limit[32];
	uint8_t *buf;
	int rc = -1, late;
	long stall;

	format_ns(limit, sizeof(limit), sc->max_pause_ns);
	/* every page the scan writes is made (and touched) before the target stops */
	room = t->live_estimate + t->live_estimate / 8 + 4096;
	t->marked = 1; /* the reach holds memory from here */
	prepared = reach_prepare(&t->r, (uint32_t)room);
	buf = prepared ? malloc(MEMSCAN_BUFFER) : NULL;
	if (!buf) {
		snprintf(err, errlen, "cannot scan pid %d: out of memory for %zu blocks", t->pid,
			 room);
		return -1;
	}
	memset(buf, 0, MEMSCAN_BUFFER);
	blocks = prepared;
	boost_on(&boost);
	deadline = time_monotonic_ns() + sc->max_pause_ns;
	rc = ptstop_stop(&stop, t->pid, deadline, why, sizeof(why));
	if (rc) {
		boost_off(&boost);
		free(buf);
		if (rc == -ETIMEDOUT)
			snprintf(err, errlen,
				 "gave up on pid %d: thread %d did not stop within the pause bound "
				 "(%s, --max-pause); it runs on, nothing is reported",
				 t->pid, stop.late_tid, limit);
		else
			snprintf(err, errlen, "%s", why);
		return -1;
	}
	rc = -1;
	why[0] = '\0';
	/* every record the target made lies before the producer position now */
	barrier = core->ring_produced(core->ctx);
	if (freeze_after(core, barrier, deadline, &v, why, sizeof(why)))
		goto resume;
	rc = copy_blocks(v, t, &blocks, &room, &nblocks, why, sizeof(why));
	core->thaw(core->ctx);
	if (rc)
		goto resume;
	rc = -1;
	th = thread_words(&stop, &words, &nthreads);
	t->threads = nthreads;
	if (room ? reach_load(&t->r, nblocks)
		 : (reach_free(&t->r), reach_init(&t->r, blocks, nblocks))) {
		snprintf(why, sizeof(why), "out of memory for %u blocks", nblocks);
		blocks = prepared = NULL;
		goto resume;
	}
	blocks = prepared = NULL; /* the reach's */
	for (stall = test_stall_ms(); stall > 0 && !ptstop_expired(&stop); stall -= 10)
		nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
	if (!memscan_run(&t->r, t->pid, th, nthreads, buf, stop_expired, &stop, &t->ms, why,
			 sizeof(why)))
		rc = 0;
	if (!rc && ptstop_died(&stop)) {
		snprintf(why, sizeof(why), "it was killed during the scan");
		rc = -1;
	}
resume:
	late = ptstop_resume(&stop);
	boost_off(&boost);
	t->pause_ns = stop.resumed_ns - stop.begin_ns;
	if (blocks != prepared)
		free(blocks);
	free(buf);
	free(th);
	free(words);
	if (late) {
		snprintf(err, errlen,
			 "gave up on pid %d: it stood still for the whole pause bound (%s, "
			 "--max-pause) and was resumed; nothing is reported",
			 t->pid, limit);
		return -1;
	}
	if (rc) {
		snprintf(err, errlen, "cannot scan pid %d: %s%s", t->pid, why,
			 ptstop_died_said(why) ? "" : "; it runs on");
		return -1;
	}
	if (reach_mark(&t->r) || reach_classify(&t->r)) {
		snprintf(err, errlen, "cannot scan pid %d: out of memory", t->pid);
		return -1;
	}
	return 0;
}

/* ---- the answer ------------------------------------------------------------- */

struct match_ctx {
	struct framebuild *fb;
	const struct suppressions *sup;
	int found;
};

/* LSan's order, frame by frame: the module, then each (inlined) function and file. */
static int match_run(void *arg, uint32_t first, uint32_t count)
{
	struct match_ctx *m = arg;

	if (!count)
		return 0;
	m->found = suppressions_find(m->sup, framebuild_frame(m->fb, first)->module);
	for (uint32_t i = 0; m->found < 0 && i < count; i++) {
		const struct snap_frame *f = framebuild_frame(m->fb, first + i);

		m->found = suppressions_find(m->sup, f->function);
		if (m->found < 0)
			m->found = suppressions_find(m->sup, f->file);
	}
	return m->found >= 0;
}

static int u32_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

/* The suppression each leaked block's stack matches: suppressed leaks become roots. */
static int suppress(struct framebuild *fb, struct suppressions *sup, struct scan_target *t)
{
	struct reach *r = &t->r;
	uint32_t *stacks = xmalloc((r->n ? r->n : 1) * sizeof(*stacks)), n = 0, k = 0;
	int *verdict, any = 0;

	for (uint32_t i = 0; i < r->n; i++)
		if (r->kind[i] <= REACH_KIND_POSSIBLE)
			stacks[n++] = r->blocks[i].stack;
	qsort(stacks, n, sizeof(*stacks), u32_cmp);
	for (uint32_t i = 0; i < n; i++)
		if (!k || stacks[i] != stacks[k - 1])
			stacks[k++] = stacks[i];
	verdict = xmalloc((k ? k : 1) * sizeof(*verdict));
	for (uint32_t i = 0; i < k; i++) {
		struct match_ctx m = {.fb = fb, .sup = sup, .found = -1};

		framebuild_walk(fb, stacks[i], match_run, &m);
		verdict[i] = m.found;
	}
	for (uint32_t i = 0; i < r->n; i++) {
		uint32_t *at;
		int p;

		if (r->kind[i] > REACH_KIND_POSSIBLE)
			continue;
		at = bsearch(&r->blocks[i].stack, stacks, k, sizeof(*stacks), u32_cmp);
		p = at ? verdict[at - stacks] : -1;
		if (p < 0)
			continue;
		sup->v[p].blocks++;
		sup->v[p].bytes += r->blocks[i].size;
		reach_ignore(r, i);
		any = 1;
	}
	free(verdict);
	free(stacks);
	return any && (reach_mark(r) || reach_classify(r)) ? -1 : 0;
}

/* An entry, with the process it was found in (an inherited block's stack is an ancestor's). */
struct pid_entry {
	struct reach_entry e;
	uint32_t pid;
};

static int entry_cmp(const void *x, const void *y)
{
	const struct reach_entry *a = &((const struct pid_entry *)x)->e;
	const struct reach_entry *b = &((const struct pid_entry *)y)->e;
	uint32_t pa = ((const struct pid_entry *)x)->pid, pb = ((const struct pid_entry *)y)->pid;

	/* LeakSanitizer's order: direct leaks first, then indirect, then possible */
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	if (a->blocks != b->blocks)
		return a->blocks > b->blocks ? -1 : 1;
	if (a->stack != b->stack)
		return a->stack < b->stack ? -1 : 1;
	return pa < pb ? -1 : pa > pb;
}

static void add_figures(struct snap_scan_figures *f, const struct scan_target *t)
{
	struct reach_totals tot;

	reach_totals(&t->r, &tot);
	f->targets++;
	f->threads += t->threads;
	if (t->pause_ns > f->pause_ns)
		f->pause_ns = t->pause_ns;
	f->bytes_scanned += t->ms.bytes_scanned;
	f->bytes_unreadable += t->ms.bytes_unreadable;
	f->mappings += t->ms.mappings;
	f->live_blocks += t->r.n;
	f->live_bytes += t->live_bytes;
	for (int k = 0; k < SNAP_LEAK_KINDS; k++) {
		f->blocks[k] += tot.blocks[k];
		f->bytes[k] += tot.bytes[k];
	}
	f->suppressed_blocks += tot.blocks[REACH_KIND_SUPPRESSED];
	f->suppressed_bytes += tot.bytes[REACH_KIND_SUPPRESSED];
	f->blocks_unread += t->ms.blocks_unread;
	f->blocks_overlapping += t->r.overlapping;
}

static int build_reply(const struct scan_core *core, const struct proto_request *r,
		       struct scan_target *t, uint32_t nt, struct suppressions *sup, uint64_t start,
		       struct snapshot *s, char *err, size_t errlen)
{
	const struct daemon_view *v;
	struct framebuild *fb;
	struct pid_entry *all = NULL;
	struct {
		uint32_t pid, stack;
	} *ids = NULL;
	uint32_t nids = 0;
	uint64_t *frames_at;
	size_t nall = 0, top;

	if (core->freeze(core->ctx, UINT64_MAX, &v)) {
		snprintf(err, errlen, "the daemon is stopping");
		return -1;
	}
	/* the counters and targets of the processes scanned, as any answer has them */
	if (collect_snapshot(v, core->ends, r, NULL, 0, s, err, errlen)) {
		core->thaw(core->ctx);
		return -1;
	}
	fb = framebuild_new(v, core->ends);
	for (uint32_t i = 0; i < nt; i++) {
		struct reach_entry *e;
		int64_t n;

		if ((sup->n && suppress(fb, sup, &t[i])) || (n = reach_entries(&t[i].r, &e)) < 0) {
			snprintf(err, errlen, "out of memory");
			framebuild_finish(fb, s, NULL);
			core->thaw(core->ctx);
			free(all);
			return -1;
		}
		all = xrealloc(all, (nall + (size_t)n + 1) * sizeof(*all));
		for (int64_t k = 0; k < n; k++)
			all[nall++] = (struct pid_entry){.e = e[k], .pid = (uint32_t)t[i].pid};
		free(e);
		add_figures(&s->scan.f, &t[i]);
	}
	qsort(all, nall, sizeof(*all), entry_cmp);
	top = r->scan.top && r->scan.top < nall ? r->scan.top : nall;
	/* the stacks the entries sent name, once each, in the entries' order */
	ids = xmalloc((top ? top : 1) * sizeof(*ids));
	s->scan.entries = xcalloc(top ? top : 1, sizeof(*s->scan.entries));
	for (size_t i = 0; i < top; i++) {
		uint32_t k;

		for (k = 0;
		     k < nids && (ids[k].stack != all[i].e.stack || ids[k].pid != all[i].pid); k++)
			;
		if (k == nids) {
			ids[nids].pid = all[i].pid;
			ids[nids++].stack = all[i].e.stack;
		}
		s->scan.entries[i] = (struct snap_scan_entry){.stack = k,
							      .kind = all[i].e.kind,
							      .blocks = all[i].e.blocks,
							      .bytes = all[i].e.bytes};
	}
	s->scan.nentries = (uint32_t)top;
	s->stacks = xcalloc(nids ? nids : 1, sizeof(*s->stacks));
	frames_at = xmalloc((nids ? nids : 1) * sizeof(*frames_at));
	for (uint32_t k = 0; k < nids; k++) {
		framebuild_fill(fb, ids[k].stack, &s->stacks[k], &frames_at[k]);
		s->stacks[k].pid = ids[k].pid; /* the process that holds it, not an ancestor */
	}
	s->nstacks = nids;
	s->stacks_total = nids;
	framebuild_finish(fb, s, frames_at); /* the frames' strings copied while frozen */
	free(frames_at);
	core->thaw(core->ctx);

	s->kind = SNAP_SCAN;
	s->scan.npids = nt;
	s->scan.pids = xcalloc(nt ? nt : 1, sizeof(*s->scan.pids));
	for (uint32_t i = 0; i < nt; i++)
		s->scan.pids[i] = (uint32_t)t[i].pid;
	s->scan.f.entries_total = nall;
	s->scan.f.max_pause_ns = r->scan.max_pause_ns;
	s->scan.f.scan_ns = time_monotonic_ns() - start;
	s->scan.nsuppressions = sup->n;
	s->scan.suppressions = xcalloc(sup->n ? sup->n : 1, sizeof(*s->scan.suppressions));
	for (uint32_t i = 0; i < sup->n; i++)
		s->scan.suppressions[i] =
		    (struct snap_scan_suppression){.pattern = snapshot_strdup(s, sup->v[i].pattern),
						   .blocks = sup->v[i].blocks,
						   .bytes = sup->v[i].bytes};
	free(ids);
	free(all);
	return 0;
}

int scan_serve(const struct scan_core *core, const struct proto_request *r, const char *body,
	       size_t len, struct snapshot *out, char *err, size_t errlen)
{
	uint64_t start = time_monotonic_ns();
	struct suppressions sup;
	struct scan_target *t;
	uint32_t nt;
	char why[256];
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (!core->ring_produced || core->ring_produced(core->ctx) == UINT64_MAX) {
		snprintf(err, errlen,
			 "scans need the ring buffer's positions, which this daemon "
			 "could not map");
		return -1;
	}
	if (suppressions_parse(body, len, &sup, why, sizeof(why))) {
		snprintf(err, errlen, "bad request: suppressions: %s", why);
		return -1;
	}
	if (pick_targets(core, &r->scan, &t, &nt, err, errlen)) {
		suppressions_free(&sup);
		return -1;
	}
	for (uint32_t i = 0; i < nt; i++)
		if (scan_one(core, &r->scan, &t[i], err, errlen))
			goto out;
	rc = build_reply(core, r, t, nt, &sup, start, out, err, errlen);
out:
	for (uint32_t i = 0; i < nt; i++)
		if (t[i].marked)
			reach_free(&t[i].r);
	free(t);
	suppressions_free(&sup);
	if (rc)
		snapshot_free(out);
	return rc;
}
