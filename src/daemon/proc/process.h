/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A traced process as the daemon sees it: its identity, state, probes and a
 * pidfd that tells the event loop when it exits. Also starting a command
 * under the tracer (target_spawn), stopped where its libraries are mapped but
 * none of its code has run, so probes are live before its first allocation.
 */
#ifndef MEMTRACE_TARGET_H
#define MEMTRACE_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/attach/allocator.h"
#include "daemon/attach/probes.h"

struct target {
	int pid;
	uint32_t space;	 /* its generation in the tracker (tracker_find_space) */
	int pidfd;	 /* -1 once the exit has been handled */
	int state;	 /* enum snap_target_state */
	int is_child;	 /* started by us: reap it */
	int exit_status; /* wait status, or -1 */
	char *command;
	char *note; /* one line on what tracing misses, or NULL (snap_target.note) */
	struct allocator alloc;
	struct target_probes probes;
	uint64_t attach_ns;	    /* CLOCK_MONOTONIC when tracing began */
	uint64_t end_ns;	    /* when it exited, or 0 */
	uint64_t execs_seen;	    /* the exec tracepoint's count when this entry began */
	int resolve_pending;	    /* executed a new program: its allocator is not resolved yet */
	struct bpf_link *ldso_link; /* meanwhile: the probe that stops it in its ld.so */
	int parent;		    /* --follow-forks: the entry whose probes it inherited, or -1 */
	int matched; /* started by a program matching --comm/--exe (counts in the cap) */
	int at_exec; /* stopped right after exec: its libraries are not mapped yet */
};

/* "cmd arg arg" from /proc/PID/cmdline (or comm); never NULL. */
char *target_read_command(int pid);

/* Does a process with this pid exist (and is it not a zombie)? 0, or -errno. */
int target_check_pid(int pid);

/*
 * Start argv[0] (searched in PATH) as a child stopped under ptrace after its
 * dynamic linker has mapped every library and before any of its code ran.
 * Returns the pid, or -1 with a reason in err. Release it with
 * target_spawn_resume() once probes are attached.
 */
int target_spawn(char *const argv[], char *err, size_t errlen);
int target_spawn_resume(int pid);

#endif
