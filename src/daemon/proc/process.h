/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Processes as /proc shows them: a command line, whether a pid is alive,
 * and starting a command under the tracer (process_spawn), stopped where its
 * libraries are mapped but none of its code has run, so probes are live
 * before its first allocation.
 */
#ifndef MEMTRACE_PROCESS_H
#define MEMTRACE_PROCESS_H

#include <stddef.h>
#include <stdint.h>

/* "cmd arg arg" from /proc/PID/cmdline (or comm); never NULL. */
char *process_read_command(int pid);

/* Does a process with this pid exist (and is it not a zombie)? 0, or -errno:
 * -ESRCH, or -EINVAL for a kernel thread. */
int process_check_pid(int pid);
/* What a process_check_pid() failure means, for a message. */
const char *process_check_reason(int rc);

/*
 * What identifies the program a process runs now: its start_code and
 * start_stack (/proc/PID/stat), set anew at every exec (randomized, as a
 * rule). 0, or -1 if it cannot be read.
 */
int process_image(int pid, uint64_t id[2]);

/*
 * Is the process gone, a zombie, or on its way out (its main thread in
 * do_exit: PF_EXITING)? From the moment it begins to exit, what /proc shows
 * of it vanishes piece by piece (its maps, then its root) before its pidfd
 * says it exited: a read that failed then says nothing about the program.
 */
int process_exiting(int pid);

/*
 * Start argv[0] (searched in PATH) as a child stopped under ptrace after its
 * dynamic linker has mapped every library and before any of its code ran.
 * Returns the pid, or -1 with a reason in err. Release it with
 * process_spawn_resume() once probes are attached.
 */
int process_spawn(char *const argv[], char *err, size_t errlen);
int process_spawn_resume(int pid);

#endif
