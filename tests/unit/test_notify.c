// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of notify_ready (src/daemon/serve/notify.c): the READY=1 datagram reaches a socket
 * named by a path or by an abstract name ('@'), nothing is sent without
 * $NOTIFY_SOCKET, a bad value is refused, and the variable is always cleared.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/serve/notify.h"
#include "unit.h"

/* A datagram socket bound to name (a path, or "@abstract"); -1 on failure. */
static int listener(const char *name)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	size_t len = strlen(name);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	memcpy(addr.sun_path, name, len);
	if (name[0] == '@')
		addr.sun_path[0] = 0;
	if (fd >= 0 && bind(fd, (struct sockaddr *)&addr,
			    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The one datagram waiting on fd, or "" when there is none. */
static const char *received(int fd)
{
	static char msg[64];
	ssize_t n = recv(fd, msg, sizeof(msg) - 1, 0);

	msg[n > 0 ? n : 0] = 0;
	return msg;
}

TEST(ready_to_path)
{
	char path[] = "/tmp/memtrace-notify-XXXXXX";
	char sock[64];
	int fd;

	CHECK(mkdtemp(path) != NULL);
	snprintf(sock, sizeof(sock), "%s/notify", path);
	fd = listener(sock);
	CHECK(fd >= 0);
	setenv("NOTIFY_SOCKET", sock, 1);
	notify_ready();
	CHECK_STR(received(fd), "READY=1");
	CHECK(getenv("NOTIFY_SOCKET") == NULL);
	notify_ready(); /* cleared: a second call sends nothing */
	CHECK_STR(received(fd), "");
	close(fd);
	unlink(sock);
	rmdir(path);
}

TEST(ready_to_abstract)
{
	char name[64];
	int fd;

	snprintf(name, sizeof(name), "@memtrace-notify-test-%d", (int)getpid());
	fd = listener(name);
	CHECK(fd >= 0);
	setenv("NOTIFY_SOCKET", name, 1);
	notify_ready();
	CHECK_STR(received(fd), "READY=1");
	CHECK(getenv("NOTIFY_SOCKET") == NULL);
	close(fd);
}

TEST(bad_values)
{
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	notify_ready(); /* refused with a log line, never sent */
	CHECK(getenv("NOTIFY_SOCKET") == NULL);
	setenv("NOTIFY_SOCKET", "/nonexistent-dir/notify", 1);
	notify_ready();
	CHECK(getenv("NOTIFY_SOCKET") == NULL);
	unsetenv("NOTIFY_SOCKET");
	notify_ready(); /* nothing to do */
	CHECK(getenv("NOTIFY_SOCKET") == NULL);
}

UNIT_MAIN()
