// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sd_notify("READY=1") without libsystemd (see notify.h). $NOTIFY_SOCKET is a
 * filesystem path, or an abstract socket name when it starts with '@'. The
 * message goes in one datagram; systemd takes the sender's pid from the
 * socket's credentials, so nothing else needs to be sent.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/serve/notify.h"
#include "common/util.h"

static const char ready_message[] = "READY=1";

void notify_ready(void)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	const char *path = getenv("NOTIFY_SOCKET");
	socklen_t addr_len;
	size_t path_len;
	int fd;

	if (!path || !*path)
		return;
	path_len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || path_len >= sizeof(addr.sun_path)) {
		log_msg("NOTIFY_SOCKET %s: not a Unix socket path, readiness not reported", path);
		goto out;
	}
	memcpy(addr.sun_path, path, path_len);
	if (path[0] == '@')
		addr.sun_path[0] = 0; /* abstract namespace */
	addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + path_len);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || sendto(fd, ready_message, sizeof(ready_message) - 1, MSG_NOSIGNAL,
			     (struct sockaddr *)&addr, addr_len) < 0)
		log_msg("cannot report readiness to %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
out:
	unsetenv("NOTIFY_SOCKET");
}
