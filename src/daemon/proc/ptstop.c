// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Stopping a whole process with ptrace, from a thread of its own that also
 * keeps the deadline (see ptstop.h). Only that thread makes ptrace calls:
 * the kernel accepts requests on a tracee from its tracer thread alone, and
 * wait notifications are taken for the tracee's own thread ids only (never
 * waitpid(-1): the daemon's children are the event loop's to reap).
 */
#include "daemon/proc/ptstop.h"
#include "common/util.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { PHASE_STOPPING, PHASE_STOPPED, PHASE_FAILED, PHASE_DONE };

/* Bytes of extended register state read per thread (AVX-512 needs 2.7 KiB). */
#define XSTATE_MAX 16384

int ptstop_tracer_of(int pid, int tid)
{
	char path[64], line[256];
	FILE *f;
	int tracer = -1;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %d", &tracer) == 1)
			break;
	fclose(f);
	return tracer;
}

/* Is thread tid of pid a zombie, or gone? */
static int thread_dead(int pid, int tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return 1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the command may hold anything, up to its last ')' */
	return !p || (p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

static void comm_of(int pid, char *out, size_t cap)
{
	char path[64];
	FILE *f;

	snprintf(out, cap, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(out, (int)cap, f))
		out[strcspn(out, "\n")] = '\0';
	fclose(f);
}

static struct ptstop_thread *find(struct ptstop *s, int tid)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (s->t[i].tid == tid)
			return &s->t[i];
	return NULL;
}

static struct ptstop_thread *add(struct ptstop *s, int tid)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->t = xrealloc(s->t, s->cap * sizeof(*s->t));
	}
	memset(&s->t[s->n], 0, sizeof(s->t[s->n]));
	s->t[s->n].tid = tid;
	return &s->t[s->n++];
}

static int fail(struct ptstop *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct ptstop *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
	return -1;
}

/* "pid N is already traced by pid M (strace)": one tracer at a time. */
static int traced_by_other(struct ptstop *s, int tracer)
{
	char comm[32];

	comm_of(tracer, comm, sizeof(comm));
	return fail(s,
		    "pid %d is already traced by pid %d (%s): a process has one tracer at a "
		    "time; scan it once that one has detached",
		    s->pid, tracer, comm);
}

/* Seize the threads of the listing not seized yet; how many, or -1. */
static int seize_new(struct ptstop *s)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int added = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", s->pid);
	d = opendir(path);
	if (!d)
		return fail(s, "pid %d %s", s->pid,
			    errno == ENOENT ? "exited" : "cannot be listed: permission denied");
	while ((de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);
		int tracer;

		if (*end || tid <= 0 || find(s, (int)tid))
			continue;
		if (!s->begin_ns)
			s->begin_ns = time_monotonic_ns();
		if (!ptrace(PTRACE_SEIZE, (pid_t)tid, NULL,
			    (void *)(long)(PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC))) {
			ptrace(PTRACE_INTERRUPT, (pid_t)tid, NULL, NULL);
			add(s, (int)tid);
			added++;
			continue;
		}
		if (errno == ESRCH)
			continue; /* it exited meanwhile */
		tracer = ptstop_tracer_of(s->pid, (int)tid);
		if (tracer == getpid()) {
			/* a clone the kernel seized for us, its report not read yet */
			ptrace(PTRACE_INTERRUPT, (pid_t)tid, NULL, NULL);
			add(s, (int)tid);
			added++;
			continue;
		}
		if (tracer > 0) {
			closedir(d);
			return traced_by_other(s, tracer);
		}
		if (thread_dead(s->pid, (int)tid))
			continue; /* a zombie (a leader that called pthread_exit): nothing to stop
				   */
		closedir(d);
		return fail(s, "cannot stop pid %d: %s%s", s->pid, strerror(errno),
			    errno == EPERM ? " (kernel.yama.ptrace_scope, or no CAP_SYS_PTRACE)"
					   : "");
	}
	closedir(d);
	return added;
}

/* One wait notification of thread t, if any. */
static void poll_thread(struct ptstop *s, struct ptstop_thread *t)
{
	siginfo_t si;
	int flags = WSTOPPED | WNOHANG | __WALL;
	int status, event;

	/* a leader's exit is its parent's to collect (the daemon's own child
	 * included): only other threads are reaped here */
	if (t->tid != s->pid)
		flags |= WEXITED;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)t->tid, &si, flags)) {
		if (errno == ECHILD)
			t->gone = 1;
		return;
	}
	if (!si.si_pid)
		return;
	if (si.si_code == CLD_EXITED || si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED) {
		t->gone = 1;
		return;
	}
	if (si.si_code != CLD_TRAPPED && si.si_code != CLD_STOPPED)
		return;
	t->stopped = 1;
	status = si.si_status;
	event = (status >> 8) & 0xff;
	if (event == PTRACE_EVENT_CLONE) {
		unsigned long child = 0;

		/* the kernel seized it: it reports a stop of its own */
		if (!ptrace(PTRACE_GETEVENTMSG, t->tid, NULL, &child) && child &&
		    !find(s, (int)child))
			add(s, (int)child);
	} else if (event == PTRACE_EVENT_EXEC) {
		s->execed = 1;
	} else if (!event && (status & 0xff) && (status & 0xff) != SIGTRAP) {
		/* stopped on its way to a handler: the signal is given back at the detach */
		t->signal = status & 0xff;
	} else if (!event && (status & 0xff) == SIGTRAP) {
		t->signal = SIGTRAP; /* a real one (a debugger's int3 in the program) */
	}
}

/* Wait until every known thread stands still or is gone (by the deadline). */
static int wait_all(struct ptstop *s)
{
	for (unsigned round = 0;; round++) {
		uint32_t waiting = 0, first = 0;

		/* s->t may grow (clones) while it is walked: by index */
		for (uint32_t i = 0; i < s->n; i++) {
			if (s->t[i].stopped || s->t[i].gone)
				continue;
			poll_thread(s, &s->t[i]);
			if (!s->t[i].stopped && !s->t[i].gone) {
				if (!waiting++)
					first = i;
				if (!(round & 63) && round && thread_dead(s->pid, s->t[i].tid))
					s->t[i].gone = 1; /* a zombie leader never reports */
			}
		}
		if (!waiting)
			return 0;
		if (time_monotonic_ns() > s->deadline_ns) {
			s->late_tid = s->t[first].tid;
			return fail(s, "thread %d of pid %d did not stop within %.0f ms",
				    s->t[first].tid, s->pid,
				    s->deadline_ns > s->asked_ns
					? (double)(s->deadline_ns - s->asked_ns) / 1e6
					: 0.0);
		}
		/* a thread stops within microseconds unless it is in a long system call */
		if (round > 16)
			nanosleep(&(struct timespec){.tv_nsec = round < 256 ? 20000 : 200000},
				  NULL);
	}
}

static void read_registers(struct ptstop_thread *t)
{
	struct iovec iov = {.iov_base = &t->regs, .iov_len = sizeof(t->regs)};
	uint64_t *x;

	t->have_regs = !ptrace(PTRACE_GETREGSET, t->tid, (void *)(long)NT_PRSTATUS, &iov);
	x = malloc(XSTATE_MAX);
	if (!x)
		return;
	iov = (struct iovec){.iov_base = x, .iov_len = XSTATE_MAX};
	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)(long)NT_X86_XSTATE, &iov)) {
		free(x);
		return;
	}
	t->xstate = x;
	t->xstate_words = iov.iov_len / 8;
}

static int stop_all(struct ptstop *s)
{
	int tracer = ptstop_tracer_of(s->pid, s->pid);

	if (tracer > 0 && tracer != getpid())
		return traced_by_other(s, tracer);
	if (tracer < 0)
		return fail(s, "pid %d %s", s->pid, errno == ENOENT ? "exited" : "cannot be read");
	/* list, seize and wait until a listing made while everything stood still
	 * finds nobody new: a thread that stands still creates no other */
	for (;;) {
		int added = seize_new(s);

		if (added < 0 || wait_all(s))
			return -1;
		if (!added)
			break;
	}
	s->stopped_ns = time_monotonic_ns();
	if (s->execed)
		return fail(s, "pid %d executed a new program while being stopped", s->pid);
	for (uint32_t i = 0; i < s->n; i++)
		if (s->t[i].stopped && !s->t[i].gone)
			read_registers(&s->t[i]);
	for (uint32_t i = 0; i < s->n; i++)
		if (!s->t[i].gone)
			return 0;
	return fail(s, "pid %d exited", s->pid);
}

/* Every stopped thread detached, with the signal it stopped for. */
static void detach_all(struct ptstop *s)
{
	for (uint32_t i = 0; i < s->n; i++) {
		struct ptstop_thread *t = &s->t[i];

		if (t->stopped && !t->gone)
			ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(long)t->signal);
	}
	s->resumed_ns = time_monotonic_ns();
}

static void *tracer_main(void *arg)
{
	struct ptstop *s = arg;
	struct timespec until;
	int rc;

	pthread_setname_np(pthread_self(), "memtrace-stop");
	rc = stop_all(s);
	if (rc)
		detach_all(s); /* before anyone hears of the failure: it runs again */
	pthread_mutex_lock(&s->lock);
	s->phase = rc ? PHASE_FAILED : PHASE_STOPPED;
	pthread_cond_broadcast(&s->cond);
	if (rc) {
		pthread_mutex_unlock(&s->lock);
		return NULL; /* exiting detaches any thread that had not stopped yet */
	}
	until.tv_sec = (time_t)(s->deadline_ns / 1000000000ull);
	until.tv_nsec = (long)(s->deadline_ns % 1000000000ull);
	while (!s->resume_wanted) {
		if (pthread_cond_timedwait(&s->cond, &s->lock, &until) == ETIMEDOUT &&
		    !s->resume_wanted) {
			s->timed_out = 1;
			break;
		}
	}
	pthread_mutex_unlock(&s->lock);
	detach_all(s);
	pthread_mutex_lock(&s->lock);
	s->phase = PHASE_DONE;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static void ptstop_clear(struct ptstop *s)
{
	for (uint32_t i = 0; i < s->n; i++)
		free(s->t[i].xstate);
	free(s->t);
	s->t = NULL;
	s->n = s->cap = 0;
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
}

int ptstop_stop(struct ptstop *s, int pid, uint64_t deadline_ns, char *err, size_t errlen)
{
	pthread_condattr_t ca;

	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->deadline_ns = deadline_ns;
	s->asked_ns = time_monotonic_ns();
	pthread_mutex_init(&s->lock, NULL);
	/* the deadline is CLOCK_MONOTONIC, as every time of the daemon */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (util_thread_start(&s->thread, tracer_main, s)) {
		snprintf(err, errlen, "cannot start a thread to stop pid %d", pid);
		ptstop_clear(s);
		return -1;
	}
	pthread_mutex_lock(&s->lock);
	while (s->phase == PHASE_STOPPING)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	if (s->phase == PHASE_FAILED) {
		int late;

		pthread_join(s->thread, NULL);
		snprintf(err, errlen, "%s", s->err);
		late = s->late_tid != 0;
		ptstop_clear(s);
		return late ? -ETIMEDOUT : -1;
	}
	return 0;
}

int ptstop_expired(struct ptstop *s)
{
	int expired;

	pthread_mutex_lock(&s->lock);
	expired = s->timed_out;
	pthread_mutex_unlock(&s->lock);
	return expired;
}

int ptstop_died(const struct ptstop *s)
{
	/* a kill ends every thread: the first one that stood still tells */
	for (uint32_t i = 0; i < s->n; i++)
		if (s->t[i].stopped && !s->t[i].gone)
			return thread_dead(s->pid, s->t[i].tid);
	return 1;
}

int ptstop_resume(struct ptstop *s)
{
	int timed_out;

	pthread_mutex_lock(&s->lock);
	s->resume_wanted = 1;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	timed_out = s->timed_out;
	ptstop_clear(s);
	return timed_out ? -1 : 0;
}
