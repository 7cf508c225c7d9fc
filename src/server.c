// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The Unix socket server. Each client sends one request line and gets one
 * reply frame (proto.h), then the connection closes. Everything is
 * non-blocking and bounded, so a slow or hostile client never stalls ingest.
 * Only root and members of the "memtrace" group may connect (SO_PEERCRED),
 * as the socket's mode 0660 already says to the filesystem.
 *
 * Bounds (docs/reliability.md): a client has d->client_timeout_ns from its
 * connect to send its line, and as long again for each part of the reply it
 * is slow to take (the timeout is for clients that stop, not for a large
 * reply or a busy daemon);
 * the replies waiting in the daemon for slow readers may hold at most
 * MAX_PENDING_OUTPUT bytes in all, past which a request gets "busy".
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"
#include "probes.h"
#include "util.h"
#include "worker.h"

#define MEMTRACE_GROUP	   "memtrace"
#define MAX_CLIENTS	   256
#define LISTEN_BACKLOG	   256
#define MAX_PENDING_OUTPUT (256u << 20)

struct client {
	int fd;
	size_t inlen;
	char in[PROTO_MAX_REQUEST];
	struct buf out;
	size_t outpos;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC: dropped if no progress by then */
	struct proto_request req;
	int deferred;	 /* req waits for the worker's thaw */
	int at_worker;	 /* req is with the worker */
	uint64_t serial; /* tells this client from a later one in its slot */
};

static uint64_t client_serials;

#define NO_DEADLINE UINT64_MAX

static int group_id(gid_t *gid)
{
	struct group *g = getgrnam(MEMTRACE_GROUP);

	if (!g)
		return -1;
	*gid = g->gr_gid;
	return 0;
}

/*
 * Root, or a process whose primary or supplementary groups include
 * "memtrace". The groups are the peer process's own at connect time
 * (SO_PEERGROUPS), not what /etc/group lists for its user: a process that
 * dropped the group is refused, one started with it (sg, setpriv) is let in.
 */
static int peer_allowed(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	gid_t gid, groups[256];
	int i, n;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return 0;
	if (cred.uid == 0)
		return 1;
	if (group_id(&gid))
		return 0;
	if (cred.gid == gid)
		return 1;
	len = sizeof(groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len))
		return 0; /* more than 256 groups (ERANGE), or an old kernel: refuse */
	n = (int)(len / sizeof(gid_t));
	for (i = 0; i < n; i++) {
		if (groups[i] == gid)
			return 1;
	}
	return 0;
}

int server_listen(struct daemon *d, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct stat st;
	char *dir, *slash;
	gid_t gid;
	int fd;

	d->listen_fd = d->lock_fd = -1;
	if (strlen(path) >= sizeof(addr.sun_path)) {
		snprintf(err, errlen, "socket path %s is too long", path);
		return -1;
	}
	strcpy(addr.sun_path, path);
	/* The default directory is ours to create; others must exist. */
	if (!strcmp(path, PROTO_DEFAULT_SOCKET)) {
		dir = xstrdup(path);
		slash = strrchr(dir, '/');
		*slash = 0;
		if (mkdir(dir, 0755) == 0) {
			chmod(dir, 0755); /* whatever the umask: the socket's mode guards it */
		} else if (errno != EEXIST) {
			snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
			free(dir);
			return -1;
		}
		free(dir);
	}
	/* The lock decides which daemon owns the path; the socket itself may be
	 * a stale leftover of one that was killed. */
	d->lock_path = xmalloc(strlen(path) + 6);
	sprintf(d->lock_path, "%s.lock", path);
	d->lock_fd = open(d->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (d->lock_fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", d->lock_path, strerror(errno));
		goto fail_nolock;
	}
	if (flock(d->lock_fd, LOCK_EX | LOCK_NB)) {
		snprintf(err, errlen, "another memtraced is serving %s", path);
		goto fail_nolock;
	}
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "%s exists and is not a socket", path);
			goto fail;
		}
		unlink(path); /* stale: its daemon died without cleaning up */
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    listen(fd, LISTEN_BACKLOG)) {
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto fail;
	}
	chmod(path, 0660);
	if (!group_id(&gid) && chown(path, 0, gid))
		log_msg("cannot give %s to group %s: %s", path, MEMTRACE_GROUP, strerror(errno));
	d->listen_fd = fd;
	d->socket_path = xstrdup(path);
	return 0;
fail:
	unlink(d->lock_path);
fail_nolock:
	if (d->lock_fd >= 0)
		close(d->lock_fd);
	d->lock_fd = -1;
	free(d->lock_path);
	d->lock_path = NULL;
	return -1;
}

static void client_close(struct daemon *d, int slot)
{
	struct client *c = d->clients[slot];

	epoll_ctl(d->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	d->pending_output -= c->out.len - c->outpos;
	buf_free(&c->out);
	free(c);
	d->clients[slot] = NULL;
}

void server_close(struct daemon *d)
{
	int i;

	for (i = 0; i < d->nclients; i++) {
		if (d->clients[i])
			client_close(d, i);
	}
	free(d->clients);
	d->clients = NULL;
	worker_stop(d);
	collect_free(d);
	if (d->listen_fd >= 0) {
		close(d->listen_fd);
		unlink(d->socket_path);
	}
	if (d->lock_fd >= 0) {
		unlink(d->lock_path);
		close(d->lock_fd);
	}
	free(d->socket_path);
	free(d->lock_path);
	d->socket_path = d->lock_path = NULL;
	d->listen_fd = d->lock_fd = -1;
}

static void reply(struct client *c, int status, const void *payload, size_t len)
{
	uint8_t hdr[PROTO_REPLY_HEADER];

	proto_reply_header(hdr, status, (uint32_t)len);
	buf_put(&c->out, hdr, sizeof(hdr));
	buf_put(&c->out, payload, len);
}

static void reply_error(struct client *c, const char *msg)
{
	reply(c, 1, msg, strlen(msg));
}

/* Build, encode and queue the reply to r here, on the loop thread. */
static void reply_here(struct daemon *d, struct client *c, const struct proto_request *r)
{
	uint64_t lost[MT_LOST_SLOTS];
	struct collect_ctx ctx = {.lost = lost, .check_ends = !worker_frozen(d)};
	struct snapshot snap;
	char err[256];
	uint8_t *bytes;
	size_t nbytes;

	if (!d->skel || probes_read_lost(d->skel, lost, MT_LOST_SLOTS))
		memset(lost, 0, sizeof(lost));
	if (collect_snapshot(d, r, &ctx, &snap, err, sizeof(err))) {
		reply_error(c, err);
		return;
	}
	if (snapshot_encode(&snap, &bytes, &nbytes)) {
		reply_error(c, "cannot encode the snapshot");
	} else {
		reply(c, 0, bytes, nbytes);
		free(bytes);
	}
	snapshot_free(&snap);
}

enum handled {
	HANDLED_REPLY,	  /* the reply is in c->out */
	HANDLED_WORKER,	  /* the worker builds the answer (server_deliver) */
	HANDLED_DEFERRED, /* it changes what the worker reads: after the thaw */
};

/* A parsed request: answer it, hand it to the worker, or put it off. */
static int serve_request(struct daemon *d, int slot, const struct proto_request *req)
{
	struct client *c = d->clients[slot];
	char err[256];

	if (req->command != PROTO_CMD_SNAPSHOT && worker_frozen(d))
		return HANDLED_DEFERRED; /* reset-peak, attach, detach change the core */
	daemon_consume(d);		 /* include everything queued before the request */
	if (req->command == PROTO_CMD_RESET_PEAK) {
		tracker_reset_peak(&d->tracker, time_monotonic_ns());
		d->drain_gap_max_ns = 0; /* a new window for the ingest figures too */
		d->loop_busy_max_ns = 0;
		log_msg("peak reset at %llu live bytes",
			(unsigned long long)d->tracker.totals.live_bytes);
	}
	if ((req->command == PROTO_CMD_ATTACH &&
	     daemon_attach(d, (int)req->pid, err, sizeof(err))) ||
	    (req->command == PROTO_CMD_DETACH &&
	     daemon_detach(d, (int)req->pid, err, sizeof(err)))) {
		reply_error(c, err);
		return HANDLED_REPLY;
	}
	/* stacks mean symbolizing and encoding up to the whole table: the worker's */
	if (req->stacks) {
		if (!worker_submit(d, slot, c->serial, req))
			return HANDLED_WORKER;
		d->clients_busy++;
		reply_error(c, "busy: too many requests waiting, try again");
		return HANDLED_REPLY;
	}
	reply_here(d, c, req);
	return HANDLED_REPLY;
}

static int handle_request(struct daemon *d, int slot, size_t len)
{
	struct client *c = d->clients[slot];
	char err[256];

	if (proto_request_parse(c->in, len, &c->req, err, sizeof(err))) {
		reply_error(c, err);
		return HANDLED_REPLY;
	}
	if (d->pending_output > MAX_PENDING_OUTPUT) {
		d->clients_busy++;
		reply_error(c, "busy: too many unread replies, try again");
		return HANDLED_REPLY;
	}
	return serve_request(d, slot, &c->req);
}

/* Write what we can; returns 1 when the reply is fully sent or the peer is gone. */
static int client_flush(struct client *c)
{
	while (c->outpos < c->out.len) {
		ssize_t n =
		    send(c->fd, c->out.data + c->outpos, c->out.len - c->outpos, MSG_NOSIGNAL);

		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : 1;
		c->outpos += (size_t)n;
	}
	return 1;
}

/* Flush a client of the table, keeping d->pending_output in step; progress
 * gives the client another --client-timeout for the rest. */
static int client_flush_counted(struct daemon *d, struct client *c)
{
	size_t before = c->outpos;
	int done = client_flush(c);

	d->pending_output -= c->outpos - before;
	if (c->outpos != before)
		c->deadline_ns = time_monotonic_ns() + d->client_timeout_ns;
	return done;
}

/* After a request was handled: send what is ready, or wait to. */
static void client_after_request(struct daemon *d, int slot, int handled)
{
	struct client *c = d->clients[slot];
	struct epoll_event ev = {.events = EPOLLOUT};

	if (handled == HANDLED_WORKER || handled == HANDLED_DEFERRED) {
		/* waiting on us, not on the client; only a hang-up matters */
		c->deferred = handled == HANDLED_DEFERRED;
		c->at_worker = handled == HANDLED_WORKER;
		c->deadline_ns = NO_DEADLINE;
		ev.events = EPOLLRDHUP;
	} else {
		d->pending_output += c->out.len;
		c->deadline_ns = time_monotonic_ns() + d->client_timeout_ns;
		if (client_flush_counted(d, c)) {
			client_close(d, slot);
			return;
		}
	}
	ev.data.u64 = (uint64_t)TAG_CLIENT << 32 | (uint32_t)slot;
	if (epoll_ctl(d->epfd, EPOLL_CTL_MOD, c->fd, &ev))
		client_close(d, slot);
}

void server_resume(struct daemon *d)
{
	for (int i = 0; i < d->nclients && !worker_frozen(d); i++) {
		struct client *c = d->clients[i];

		if (!c || !c->deferred)
			continue;
		c->deferred = 0;
		client_after_request(d, i, serve_request(d, i, &c->req));
	}
}

void server_deliver(struct daemon *d, int slot, uint8_t *frame, size_t len, uint64_t serial)
{
	struct client *c = slot >= 0 && slot < d->nclients ? d->clients[slot] : NULL;

	if (!c || c->serial != serial || !c->at_worker) {
		free(frame); /* it hung up meanwhile */
		return;
	}
	c->at_worker = 0;
	/* the frame becomes the output buffer as it is: no copy of a large reply here */
	buf_free(&c->out);
	c->out = (struct buf){.data = frame, .len = len, .cap = len};
	c->outpos = 0;
	client_after_request(d, slot, HANDLED_REPLY);
}

/* Drop clients past their deadline: one that never sends its line, or never
 * reads its reply, holds a slot and memory for at most the timeout. */
void server_expire(struct daemon *d, uint64_t now_ns)
{
	int i;

	/* serving's periodic work too: learn where new stacks end, a slice a tick */
	if (!worker_frozen(d))
		collect_check_ends_for(d, 2 * 1000 * 1000);

	for (i = 0; i < d->nclients; i++) {
		if (d->clients[i] && now_ns >= d->clients[i]->deadline_ns) {
			d->clients_timed_out++;
			log_msg("dropped a client that did not finish within %.1f s (%s)",
				(double)d->client_timeout_ns / 1e9,
				d->clients[i]->out.len ? "it does not read its reply"
						       : "it sent no complete request");
			client_close(d, i);
		}
	}
}

void server_accept(struct daemon *d)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct client *c;
	int fd, slot;

	while ((fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		c = xcalloc(1, sizeof(*c));
		c->fd = fd;
		c->serial = ++client_serials;
		c->deadline_ns = time_monotonic_ns() + d->client_timeout_ns;
		if (!peer_allowed(fd)) {
			reply_error(c, "permission denied: only root and group " MEMTRACE_GROUP
				       " may use memtraced");
			client_flush(c);
			close(fd);
			buf_free(&c->out);
			free(c);
			continue;
		}
		for (slot = 0; slot < d->nclients && d->clients[slot]; slot++)
			;
		if (slot == d->nclients) {
			if (d->nclients == MAX_CLIENTS) {
				d->clients_refused++;
				reply_error(c, "too many clients");
				client_flush(c);
				close(fd);
				buf_free(&c->out);
				free(c);
				continue;
			}
			d->clients =
			    xrealloc(d->clients, (size_t)(d->nclients + 1) * sizeof(*d->clients));
			d->clients[d->nclients++] = NULL;
		}
		d->clients[slot] = c;
		ev.data.u64 = (uint64_t)TAG_CLIENT << 32 | (uint32_t)slot;
		if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev))
			client_close(d, slot);
	}
}

void server_client_event(struct daemon *d, int slot, uint32_t events)
{
	struct client *c;
	char *nl;
	ssize_t n;

	if (slot < 0 || slot >= d->nclients || !(c = d->clients[slot]))
		return;
	if (c->deferred || c->at_worker) {
		/* its request waits for the thaw or the worker: this can only be a hang-up */
		client_close(d, slot);
		return;
	}
	if (c->out.len) {
		/* replying: only writability matters */
		if (client_flush_counted(d, c))
			client_close(d, slot);
		return;
	}
	for (;;) {
		n = recv(c->fd, c->in + c->inlen, sizeof(c->in) - c->inlen, 0);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			client_close(d, slot);
			return;
		}
		c->inlen += (size_t)n;
		nl = memchr(c->in, '\n', c->inlen);
		if (nl) {
			client_after_request(d, slot,
					     handle_request(d, slot, (size_t)(nl - c->in) + 1));
			return;
		}
		if (c->inlen == sizeof(c->in)) {
			reply_error(c, "request too long");
			client_after_request(d, slot, HANDLED_REPLY);
			return;
		}
	}
}
