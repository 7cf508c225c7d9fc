/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Holding a whole process still for a moment, from outside, with ptrace:
 * PTRACE_SEIZE and PTRACE_INTERRUPT of every thread (threads it creates
 * meanwhile are seized by the kernel, PTRACE_O_TRACECLONE), each thread's
 * registers read once it stands still, then PTRACE_DETACH, giving back any
 * signal that arrived meanwhile. The process's parent sees no stop.
 *
 * The tracer is a thread of its own, started for one stop, which also keeps
 * the time: past the deadline it resumes the process whatever its caller is
 * doing (a read of the process's memory that waits on a page fault of a
 * user-space file system, say). When that thread exits, the kernel detaches
 * whatever it still traces, as it does when the whole daemon is killed: the
 * process is never left stopped, and a thread that died meanwhile is
 * released to its real parent.
 */
#ifndef MEMTRACE_PTSTOP_H
#define MEMTRACE_PTSTOP_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/user.h>

struct ptstop_thread {
	int tid;
	int stopped; /* in a ptrace stop */
	int gone;    /* exited */
	int signal;  /* stopped delivering this signal: given back at the detach */
	int have_regs;
	struct user_regs_struct regs;
	uint64_t *xstate; /* NT_X86_XSTATE (x87, SSE, AVX registers): words */
	size_t xstate_words;
};

struct ptstop {
	int pid;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC: resumed by then whatever happens */
	uint64_t asked_ns;    /* when ptstop_stop() was called */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* under lock */
	int phase;	   /* enum in ptstop.c */
	int resume_wanted; /* the caller is done */
	int timed_out;	   /* the deadline resumed it */
	int late_tid;	   /* a thread that had not stopped by the deadline, or 0 (it
			    * stays set after ptstop_stop()'s -ETIMEDOUT) */
	char err[256];	   /* why it could not be stopped */
	/* the threads: written by the tracer until it reports stopped, then read-only */
	struct ptstop_thread *t;
	uint32_t n, cap;
	int execed; /* a thread executed a new program while being stopped */
	/* CLOCK_MONOTONIC */
	uint64_t begin_ns;   /* the first PTRACE_INTERRUPT */
	uint64_t stopped_ns; /* every thread stood still */
	uint64_t resumed_ns; /* the last PTRACE_DETACH */
};

/*
 * Stop every thread of pid before deadline_ns. 0 once they all stand still
 * (s->t holds them, registers read), or -1 with a one-line reason in err
 * (the process then runs again: nothing is left stopped); -ETIMEDOUT when a
 * thread had not stopped by the deadline (one waiting in an uninterruptible
 * system call: a vfork, a page fault on a hung file system). Refuses a
 * process another tracer has (gdb, strace): a process has one at a time.
 */
int ptstop_stop(struct ptstop *s, int pid, uint64_t deadline_ns, char *err, size_t errlen);

/*
 * Resume the process (every thread detached, signals given back) and free
 * what ptstop_stop() made. Returns 0, or -1 when the deadline had already
 * resumed it (what was read from it since may be inconsistent).
 */
int ptstop_resume(struct ptstop *s);

/* Did the deadline resume the process already? (Any thread.) */
int ptstop_expired(struct ptstop *s);

/*
 * Was the process killed while it stood still (a SIGKILL ends a stop)? What
 * was read of it may then be incomplete. (The caller's thread.)
 */
int ptstop_died(const struct ptstop *s);

/* The pid tracing pid (TracerPid in /proc/PID/status), 0 if none, -1 if unknown. */
int ptstop_tracer_of(int pid, int tid);

#endif
