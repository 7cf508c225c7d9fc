// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Targets (see target.h). Starting a command: the child asks to be traced and
 * execs; at the exec stop only the executable and ld.so are mapped, so we
 * plant one breakpoint on ld.so's _dl_debug_state, the hook debuggers use,
 * and let the linker run until it reports a consistent link map (all start-up
 * libraries mapped, no constructor run yet). The breakpoint is removed before
 * the child goes on; nothing of ours stays in it.
 */
#include "daemon/proc/process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/proc/linkmap.h"
#include "common/util.h"

char *process_read_command(int pid)
{
	char path[64], buf[4096];
	ssize_t n, i;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			return xstrdup("?");
		if (buf[n - 1] == '\n')
			n--;
	}
	while (n > 0 && buf[n - 1] == 0)
		n--;
	/* arguments joined by spaces; a control character (an argument with a
	 * newline, python -c "...") becomes one too: the command goes into the
	 * daemon's one-line log messages, where it must not start a line */
	for (i = 0; i < n; i++) {
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = ' ';
	}
	buf[n] = 0;
	return xstrdup(buf);
}

/* The state letter and the flags word of /proc/PID/stat (its main thread's); -ESRCH if gone. */
static int read_stat(int pid, char *state, unsigned long *flags)
{
	char path[64], buf[512], *p;
	int fd;
	ssize_t n;

	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -ESRCH;
	*state = p[2];
	/* state ppid pgrp session tty_nr tpgid flags */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %lu", flags) != 1)
		*flags = 0;
	return 0;
}

int process_image(int pid, uint64_t id[2])
{
	char path[64], buf[1024], *p;
	unsigned long long start_code, start_stack;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strrchr(buf, ')');
	/* fields 3 to 25 after the command, then startcode, endcode, startstack */
	if (!p || sscanf(p + 1,
			 " %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s"
			 " %*s %*s %*s %*s %*s %llu %*s %llu",
			 &start_code, &start_stack) != 2)
		return -1;
	id[0] = start_code;
	id[1] = start_stack;
	return 0;
}

int process_check_pid(int pid)
{
	unsigned long flags;
	char state;

	if (read_stat(pid, &state, &flags))
		return -ESRCH;
	if (state == 'Z' || state == 'X')
		return -ESRCH; /* exited, waiting to be reaped */
	if (flags & 0x00200000)
		return -EINVAL; /* PF_KTHREAD: no user memory, no allocator */
	return 0;
}

const char *process_check_reason(int rc)
{
	return rc == -EINVAL ? "a kernel thread has no user-space allocator to trace"
			     : strerror(-rc);
}

int process_exiting(int pid)
{
	unsigned long flags;
	char state;

	if (read_stat(pid, &state, &flags) || state == 'Z' || state == 'X')
		return 1;
	return (flags & 0x4) != 0; /* PF_EXITING: do_exit has begun */
}

static int wait_stop(int pid, int *status)
{
	for (;;) {
		if (waitpid(pid, status, __WALL) == pid)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

/* Run the child until ld.so calls _dl_debug_state with a consistent map. */
static int run_to_link_map(int pid, uint64_t bp, char *err, size_t errlen)
{
	struct user_regs_struct regs;
	long orig, trap;
	int status, sig = 0, hits;

	errno = 0;
	orig = ptrace(PTRACE_PEEKTEXT, pid, (void *)bp, NULL);
	if (errno)
		goto fail;
	trap = (orig & ~0xffL) | 0xcc;
	if (ptrace(PTRACE_POKETEXT, pid, (void *)bp, (void *)trap))
		goto fail;
	for (hits = 0; hits < 64;) {
		if (ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig) || wait_stop(pid, &status))
			goto fail;
		if (!WIFSTOPPED(status)) {
			snprintf(err, errlen, "the command exited while starting (status %d)",
				 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
			return -1;
		}
		sig = WSTOPSIG(status);
		if (sig != SIGTRAP)
			continue; /* deliver it */
		sig = 0;
		if (ptrace(PTRACE_GETREGS, pid, NULL, &regs))
			goto fail;
		if (regs.rip - 1 != bp)
			continue;
		hits++;
		regs.rip = bp;
		if (ptrace(PTRACE_SETREGS, pid, NULL, &regs) ||
		    ptrace(PTRACE_POKETEXT, pid, (void *)bp, (void *)orig))
			goto fail;
		if (linkmap_state(pid) == 0)
			return 0;
		/* not yet: step over the original instruction, re-arm */
		if (ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL) || wait_stop(pid, &status) ||
		    !WIFSTOPPED(status) || ptrace(PTRACE_POKETEXT, pid, (void *)bp, (void *)trap))
			goto fail;
	}
	snprintf(err, errlen, "the dynamic linker never reported its libraries");
	return -1;
fail:
	snprintf(err, errlen, "cannot follow the command's start-up: %s", strerror(errno));
	return -1;
}

int process_spawn(char *const argv[], char *err, size_t errlen)
{
	int pfd[2], status, child_errno = 0;
	sigset_t none;
	uint64_t bp;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return snprintf(err, errlen, "pipe: %s", strerror(errno)), -1;
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		close(pfd[0]);
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0)
			execvp(argv[0], argv);
		child_errno = errno;
		if (write(pfd[1], &child_errno, sizeof(child_errno)) < 0)
			_exit(126);
		_exit(127);
	}
	close(pfd[1]);
	if (wait_stop(pid, &status) || !WIFSTOPPED(status)) {
		if (read(pfd[0], &child_errno, sizeof(child_errno)) != sizeof(child_errno))
			child_errno = ECHILD;
		close(pfd[0]);
		if (!WIFSTOPPED(status))
			waitpid(pid, &status, WNOHANG);
		snprintf(err, errlen, "cannot run %s: %s", argv[0], strerror(child_errno));
		return -1;
	}
	close(pfd[0]);
	/* A static executable has no ld.so: everything is mapped already. */
	bp = linkmap_ldso_symbol(pid, "_dl_debug_state");
	if (bp && run_to_link_map(pid, bp, err, errlen)) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return -1;
	}
	return pid;
}

int process_spawn_resume(int pid)
{
	return ptrace(PTRACE_DETACH, pid, NULL, NULL) ? -1 : 0;
}
