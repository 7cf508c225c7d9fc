// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The Unix socket server. Each client sends one request line (a scan's
 * followed by the suppressions it announces) and gets one reply frame
 * (proto.h), then the connection closes. Everything is
 * non-blocking and bounded, so a slow or hostile client never stalls ingest.
 * Only root and members of the "memtrace" group may connect (SO_PEERCRED),
 * as the socket's mode 0660 already says to the filesystem.
 *
 * Requests that send stacks are built on the worker's threads (worker.h),
 * so that however large the reply, the loop goes on draining the ring
 * buffer; the others are answered here at once.
 *
 * Bounds (docs/reliability.md): a client has client_timeout_ns from its
 * connect to send its line, and as long again for each part of the reply it
 * is slow to take (the timeout is for clients that stop, not for a large
 * reply or a busy daemon); the replies waiting in the daemon for slow
 * readers may hold at most MAX_PENDING_OUTPUT bytes in all, past which a
 * request gets "busy".
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

#include "daemon/serve/collect.h"
#include "daemon/serve/server.h"
#include "daemon/serve/worker.h"
#include "daemon/core/tracker.h"
#include "daemon/ingest/ingest.h"
#include "common/proto.h"
#include "common/util.h"

#define MEMTRACE_GROUP	   "memtrace"
#define MAX_CLIENTS	   256
#define LISTEN_BACKLOG	   256
#define MAX_PENDING_OUTPUT (256u << 20)

struct server {
	int listen_fd;
	int lock_fd; /* flock()ed: which daemon owns the socket path */
	char *socket_path;
	char *lock_path;
	const struct service *svc;
	struct client **clients;       /* open connections by slot; NULL = free */
	int nclients;		       /* slots */
	uint64_t client_timeout_ns;    /* a client must be done within this */
	uint64_t pending_output;       /* reply bytes not yet taken by clients */
	uint64_t clients_timed_out;    /* dropped at their deadline */
	uint64_t clients_refused;      /* turned away: every slot taken */
	uint64_t clients_busy;	       /* answered "busy": pending_output too large */
	struct stack_ends ends;	       /* collect.c's cache */
	struct worker *worker;	       /* started on the first request that sends stacks */
	const struct tracker *tracker; /* the core's, as the last view gave it */
	uint64_t serials;	       /* tells a client from a later one in its slot */
};

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
	/* what follows the line (a scan's suppressions): body_want bytes, body_len so far */
	char *body;
	size_t body_len, body_want;
};

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

struct server *server_listen(const char *path, const struct service *svc,
			     uint64_t client_timeout_ns, char *err, size_t errlen)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct server *srv;
	struct stat st;
	char *dir, *slash;
	gid_t gid;
	int fd;

	if (strlen(path) >= sizeof(addr.sun_path)) {
		snprintf(err, errlen, "socket path %s is too long", path);
		return NULL;
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
			return NULL;
		}
		free(dir);
	}
	srv = xcalloc(1, sizeof(*srv));
	srv->listen_fd = -1;
	srv->svc = svc;
	srv->client_timeout_ns = client_timeout_ns;
	/* The lock decides which daemon owns the path; the socket itself may be
	 * a stale leftover of one that was killed. */
	srv->lock_path = xmalloc(strlen(path) + 6);
	sprintf(srv->lock_path, "%s.lock", path);
	srv->lock_fd = open(srv->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (srv->lock_fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", srv->lock_path, strerror(errno));
		goto fail_nolock;
	}
	if (flock(srv->lock_fd, LOCK_EX | LOCK_NB)) {
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
	srv->listen_fd = fd;
	srv->socket_path = xstrdup(path);
	if (svc->watch(svc->ctx, fd, EPOLLIN, WATCH_LISTEN, 0)) {
		snprintf(err, errlen, "cannot listen on %s: epoll: %s", path, strerror(errno));
		server_close(srv);
		return NULL;
	}
	return srv;
fail:
	unlink(srv->lock_path);
fail_nolock:
	if (srv->lock_fd >= 0)
		close(srv->lock_fd);
	free(srv->lock_path);
	free(srv);
	return NULL;
}

const char *server_path(const struct server *s)
{
	return s->socket_path;
}

static void client_close(struct server *srv, int slot)
{
	struct client *c = srv->clients[slot];

	srv->svc->unwatch(srv->svc->ctx, c->fd);
	close(c->fd);
	srv->pending_output -= c->out.len - c->outpos;
	buf_free(&c->out);
	free(c->body);
	free(c);
	srv->clients[slot] = NULL;
}

void server_close(struct server *srv)
{
	int i;

	if (!srv)
		return;
	/* first: a lane may be reading what is freed below */
	worker_stop(srv->worker);
	srv->worker = NULL;
	for (i = 0; i < srv->nclients; i++) {
		if (srv->clients[i])
			client_close(srv, i);
	}
	free(srv->clients);
	srv->clients = NULL;
	if (srv->listen_fd >= 0) {
		close(srv->listen_fd);
		unlink(srv->socket_path);
	}
	if (srv->lock_fd >= 0) {
		unlink(srv->lock_path);
		close(srv->lock_fd);
	}
	free(srv->socket_path);
	free(srv->lock_path);
	stack_ends_free(&srv->ends);
	free(srv);
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
static void reply_here(struct server *srv, struct client *c, const struct proto_request *r)
{
	const struct service *svc = srv->svc;
	struct daemon_view view;
	struct snapshot snap;
	char err[256];
	uint8_t *bytes;
	size_t nbytes;

	svc->view(svc->ctx, &view);
	view.sym_lock = worker_sym_lock(srv->worker); /* lanes may be reading a freeze */
	if (!ingest_frozen(svc->ingest)) /* a status must be quick: a burst is learned over ticks */
		stack_ends_check(&view, &srv->ends, 5 * 1000 * 1000);
	if (collect_snapshot(&view, &srv->ends, r, NULL, 0, &snap, err, sizeof(err))) {
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
	HANDLED_READING,  /* more of the request is to come (its body) */
	HANDLED_REPLY,	  /* the reply is in c->out */
	HANDLED_WORKER,	  /* the worker builds the answer (deliver) */
	HANDLED_DEFERRED, /* it changes what the worker reads: after the thaw */
};

static void deliver(void *ctx, int slot, uint8_t *frame, size_t len, uint64_t serial);

static struct worker *get_worker(struct server *srv)
{
	if (!srv->worker)
		srv->worker = worker_start(srv->svc, &srv->ends, deliver, srv);
	return srv->worker;
}

int server_oom_snapshot(struct server *srv, const struct proto_request *r,
			const struct oomsnap_job *j)
{
	struct worker *w = srv ? get_worker(srv) : NULL;

	return w ? worker_submit_oom(w, r, j) : -1;
}

/* Requests that change the core: they wait for a freeze to end. */
static int changes_core(const struct proto_request *req)
{
	return req->kind == PROTO_RESET_PEAK || req->kind == PROTO_ATTACH ||
	       req->kind == PROTO_DETACH || req->kind == PROTO_ATTACH_CGROUP;
}

/* A parsed request: answer it, hand it to the worker, or put it off. */
static int serve_request(struct server *srv, int slot, const struct proto_request *req)
{
	const struct service *svc = srv->svc;
	struct client *c = srv->clients[slot];
	struct worker *w;
	char err[256];

	if (changes_core(req) && ingest_frozen(svc->ingest))
		return HANDLED_DEFERRED;
	ingest_drain(svc->ingest); /* include everything queued before the request */
	/* a scan stops its target and reads it: always the worker's */
	if (req->kind == PROTO_SCAN) {
		char *body = c->body;

		c->body = NULL;
		if (!(w = get_worker(srv))) {
			free(body);
			reply_error(c, "cannot scan: the request worker did not start");
			return HANDLED_REPLY;
		}
		if (!worker_submit(w, slot, c->serial, req, body, c->body_len))
			return HANDLED_WORKER;
		srv->clients_busy++;
		reply_error(c, "busy: too many requests waiting, try again");
		return HANDLED_REPLY;
	}
	if (changes_core(req)) {
		if (req->kind == PROTO_RESET_PEAK)
			svc->reset_peak(svc->ctx);
		if ((req->kind == PROTO_ATTACH &&
		     svc->attach(svc->ctx, (int)req->target.pid, err, sizeof(err))) ||
		    (req->kind == PROTO_DETACH &&
		     svc->detach(svc->ctx, (int)req->target.pid, err, sizeof(err)))) {
			reply_error(c, err);
			return HANDLED_REPLY;
		}
		if (req->kind == PROTO_ATTACH_CGROUP) {
			struct proto_request status;
			char *what = xmalloc(c->body_len + 1);
			int rc;

			memcpy(what, c->body, c->body_len);
			what[c->body_len] = 0;
			free(c->body);
			c->body = NULL;
			rc = strlen(what) != c->body_len
				 ? (snprintf(err, sizeof(err), "bad request: a NUL in the cgroup"),
				    -1)
				 : svc->attach_cgroup(svc->ctx, what, req->cgroup.unit, err,
						      sizeof(err));
			free(what);
			if (rc) {
				reply_error(c, err);
				return HANDLED_REPLY;
			}
			proto_request_init(&status, PROTO_STATUS);
			reply_here(srv, c, &status);
			return HANDLED_REPLY;
		}
		/* answered as status (of the process attached or detached) */
		reply_here(srv, c, req);
		return HANDLED_REPLY;
	}
	/* stacks mean symbolizing and encoding up to the whole table, a breakdown
	 * reading a process's smaps: the worker's */
	if (req->kind != PROTO_STATUS && (w = get_worker(srv))) {
		/* a report's or rows' cgroup (cgroup=), the worker's to free */
		char *body = c->body;
		size_t body_len = c->body_len;

		c->body = NULL;
		if (!worker_submit(w, slot, c->serial, req, body, body_len))
			return HANDLED_WORKER;
		srv->clients_busy++;
		reply_error(c, "busy: too many requests waiting, try again");
		return HANDLED_REPLY;
	}
	if (c->body) { /* answered here: no cgroup filter without the worker */
		reply_error(c, "cannot filter by cgroup: the request worker did not start");
		return HANDLED_REPLY;
	}
	reply_here(srv, c, req);
	return HANDLED_REPLY;
}

static int handle_request(struct server *srv, int slot, size_t len)
{
	struct client *c = srv->clients[slot];
	char err[256];

	if (proto_request_parse(c->in, len, &c->req, err, sizeof(err))) {
		reply_error(c, err);
		return HANDLED_REPLY;
	}
	if (srv->pending_output > MAX_PENDING_OUTPUT) {
		srv->clients_busy++;
		reply_error(c, "busy: too many unread replies, try again");
		return HANDLED_REPLY;
	}
	if ((c->req.kind == PROTO_SCAN && c->req.scan.suppressions) ||
	    c->req.kind == PROTO_ATTACH_CGROUP || proto_request_cgroup(&c->req)) {
		/* the suppressions or the cgroup follow the line; part of them may have
		 * come with it */
		size_t extra = c->inlen - len;
		uint32_t want = c->req.kind == PROTO_SCAN ? c->req.scan.suppressions
				: c->req.kind == PROTO_ATTACH_CGROUP
				    ? c->req.cgroup.path
				    : proto_request_cgroup(&c->req);

		if (extra > want) {
			reply_error(c, c->req.kind == PROTO_SCAN
					   ? "bad request: more bytes than suppressions= says"
				       : c->req.kind == PROTO_ATTACH_CGROUP
					   ? "bad request: more bytes than path= says"
					   : "bad request: more bytes than cgroup= says");
			return HANDLED_REPLY;
		}
		c->body_want = want;
		c->body = xmalloc(c->body_want);
		memcpy(c->body, c->in + len, extra);
		c->body_len = extra;
		if (c->body_len < c->body_want)
			return HANDLED_READING;
	}
	return serve_request(srv, slot, &c->req);
}

static void client_after_request(struct server *srv, int slot, int handled);

/* More of a request's body; 1 once the client is done with (or gone). */
static int read_body(struct server *srv, int slot)
{
	struct client *c = srv->clients[slot];

	for (;;) {
		ssize_t n = recv(c->fd, c->body + c->body_len, c->body_want - c->body_len, 0);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0) {
			client_close(srv, slot);
			return 1;
		}
		c->body_len += (size_t)n;
		if (c->body_len == c->body_want) {
			client_after_request(srv, slot, serve_request(srv, slot, &c->req));
			return 1;
		}
	}
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

/* Flush a client of the table, keeping srv->pending_output in step; progress
 * gives the client another --client-timeout for the rest. */
static int client_flush_counted(struct server *srv, struct client *c)
{
	size_t before = c->outpos;
	int done = client_flush(c);

	srv->pending_output -= c->outpos - before;
	if (c->outpos != before)
		c->deadline_ns = time_monotonic_ns() + srv->client_timeout_ns;
	return done;
}

/* After a request was handled: send what is ready, or wait to. */
static void client_after_request(struct server *srv, int slot, int handled)
{
	struct client *c = srv->clients[slot];
	uint32_t events = EPOLLOUT;

	if (handled == HANDLED_READING)
		return; /* still EPOLLIN, within its deadline */
	if (handled == HANDLED_WORKER || handled == HANDLED_DEFERRED) {
		/* waiting on us, not on the client; only a hang-up matters */
		c->deferred = handled == HANDLED_DEFERRED;
		c->at_worker = handled == HANDLED_WORKER;
		c->deadline_ns = NO_DEADLINE;
		events = EPOLLRDHUP;
	} else {
		srv->pending_output += c->out.len;
		c->deadline_ns = time_monotonic_ns() + srv->client_timeout_ns;
		if (client_flush_counted(srv, c)) {
			client_close(srv, slot);
			return;
		}
	}
	if (srv->svc->watch(srv->svc->ctx, c->fd, events, WATCH_CLIENT, (uint32_t)slot))
		client_close(srv, slot);
}

void server_resume(struct server *srv)
{
	for (int i = 0; i < srv->nclients && !ingest_frozen(srv->svc->ingest); i++) {
		struct client *c = srv->clients[i];

		if (!c || !c->deferred)
			continue;
		c->deferred = 0;
		client_after_request(srv, i, serve_request(srv, i, &c->req));
	}
	/* then the freeze a lane waits for */
	if (!ingest_frozen(srv->svc->ingest))
		worker_resume(srv->worker);
}

/* A reply frame from the worker for the client in slot, if it is still that
 * one (serial); the buffer becomes the server's. */
static void deliver(void *ctx, int slot, uint8_t *frame, size_t len, uint64_t serial)
{
	struct server *srv = ctx;
	struct client *c = slot >= 0 && slot < srv->nclients ? srv->clients[slot] : NULL;

	if (!c || c->serial != serial || !c->at_worker) {
		free(frame); /* it hung up meanwhile */
		return;
	}
	c->at_worker = 0;
	/* the frame becomes the output buffer as it is: no copy of a large reply here */
	buf_free(&c->out);
	c->out = (struct buf){.data = frame, .len = len, .cap = len};
	c->outpos = 0;
	client_after_request(srv, slot, HANDLED_REPLY);
}

struct worker *server_worker(const struct server *srv)
{
	return srv ? srv->worker : NULL;
}

/* Drop clients past their deadline: one that never sends its line, or never
 * reads its reply, holds a slot and memory for at most the timeout. */
void server_expire(struct server *srv, uint64_t now_ns)
{
	int i;

	/* serving's periodic work too: learn where new stacks end, a slice a
	 * tick (a view reads the BPF maps: only when there are new stacks) */
	if (!ingest_frozen(srv->svc->ingest) &&
	    (!srv->tracker || srv->ends.checked < srv->tracker->stacks.count)) {
		struct daemon_view view;

		srv->svc->view(srv->svc->ctx, &view);
		srv->tracker = view.tracker;
		stack_ends_check(&view, &srv->ends, 2 * 1000 * 1000);
	}

	for (i = 0; i < srv->nclients; i++) {
		if (srv->clients[i] && now_ns >= srv->clients[i]->deadline_ns) {
			srv->clients_timed_out++;
			log_msg("dropped a client that did not finish within %.1f s (%s)",
				(double)srv->client_timeout_ns / 1e9,
				srv->clients[i]->out.len ? "it does not read its reply"
							 : "it sent no complete request");
			client_close(srv, i);
		}
	}
}

void server_accept(struct server *srv)
{
	struct client *c;
	int fd, slot;

	while ((fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		c = xcalloc(1, sizeof(*c));
		c->fd = fd;
		c->serial = ++srv->serials;
		c->deadline_ns = time_monotonic_ns() + srv->client_timeout_ns;
		if (!peer_allowed(fd)) {
			reply_error(c, "permission denied: only root and group " MEMTRACE_GROUP
				       " may use memtraced");
			client_flush(c);
			close(fd);
			buf_free(&c->out);
			free(c);
			continue;
		}
		for (slot = 0; slot < srv->nclients && srv->clients[slot]; slot++)
			;
		if (slot == srv->nclients) {
			if (srv->nclients == MAX_CLIENTS) {
				srv->clients_refused++;
				reply_error(c, "too many clients");
				client_flush(c);
				close(fd);
				buf_free(&c->out);
				free(c);
				continue;
			}
			srv->clients = xrealloc(srv->clients, (size_t)(srv->nclients + 1) *
								  sizeof(*srv->clients));
			srv->clients[srv->nclients++] = NULL;
		}
		srv->clients[slot] = c;
		if (srv->svc->watch(srv->svc->ctx, fd, EPOLLIN, WATCH_CLIENT, (uint32_t)slot))
			client_close(srv, slot);
	}
}

void server_client_event(struct server *srv, int slot, uint32_t events)
{
	struct client *c;
	char *nl;
	ssize_t n;

	if (slot < 0 || slot >= srv->nclients || !(c = srv->clients[slot]))
		return;
	if (c->deferred || c->at_worker) {
		/* its request waits for the thaw or the worker: this can only be a hang-up */
		client_close(srv, slot);
		return;
	}
	if (c->out.len) {
		/* replying: only writability matters */
		if (client_flush_counted(srv, c))
			client_close(srv, slot);
		return;
	}
	if (c->body_want) {
		read_body(srv, slot);
		return;
	}
	for (;;) {
		n = recv(c->fd, c->in + c->inlen, sizeof(c->in) - c->inlen, 0);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			client_close(srv, slot);
			return;
		}
		c->inlen += (size_t)n;
		nl = memchr(c->in, '\n', c->inlen);
		if (nl) {
			client_after_request(srv, slot,
					     handle_request(srv, slot, (size_t)(nl - c->in) + 1));
			return;
		}
		if (c->inlen == sizeof(c->in)) {
			reply_error(c, "request too long");
			client_after_request(srv, slot, HANDLED_REPLY);
			return;
		}
	}
}
