// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The keeper of stopped matches (see keeper.h). */
#include "daemon/attach/keeper.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Where the two descriptors the keeper keeps are moved before it closes the rest. */
#define KEEP_MAP  1000
#define KEEP_PIPE 1001

static void keeper_run(int map_fd, int rd)
{
	static const int ignored[] = {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGQUIT};
	uint32_t key, next;
	sigset_t none;
	char c;
	int n = 0;

	prctl(PR_SET_NAME, "memtrace-keeper");
	for (size_t i = 0; i < sizeof(ignored) / sizeof(*ignored); i++)
		signal(ignored[i], SIG_IGN);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* keep the map and the pipe, nothing else the daemon holds: with its
	 * BPF links closed here, the programs go when the daemon does */
	if (dup2(map_fd, KEEP_MAP) < 0 || dup2(rd, KEEP_PIPE) < 0)
		_exit(1);
	close_range(3, KEEP_MAP - 1, 0);
	close_range(KEEP_PIPE + 1, ~0U, 0);
	while (read(KEEP_PIPE, &c, 1) != 0) {
		if (errno != EINTR)
			break;
	}
	for (int more = !bpf_map_get_next_key(KEEP_MAP, NULL, &key); more;
	     more = !bpf_map_get_next_key(KEEP_MAP, &key, &next), key = next) {
		if (kill((pid_t)key, SIGCONT) == 0)
			n++;
	}
	if (n)
		fprintf(stderr,
			"memtrace-keeper: memtraced is gone: continued %d stopped process%s\n", n,
			n == 1 ? "" : "es");
	_exit(0);
}

int keeper_start(int map_fd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		errno = e;
		return -1;
	}
	if (pid == 0) {
		close(p[1]);
		keeper_run(map_fd, p[0]);
	}
	close(p[0]);
	return p[1];
}
