// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `memtraced --metrics-listen ADDR`: the counters of docs/metrics.md in the
 * Prometheus text exposition format (version 0.0.4) at GET /metrics, served
 * by a tiny HTTP/1.x server on the daemon's epoll loop. One request per
 * connection, then close. Everything is bounded: request headers
 * (MAX_REQUEST bytes), connections (MAX_CLIENTS) and time (a connection
 * that has not finished within CLIENT_TIMEOUT_NS is dropped), so a scraper
 * can never stall ingest. Written by hand because it answers one GET: an
 * HTTP library would bring threads or a second event loop into a daemon that
 * has one.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/serve/metrics.h"
#include "daemon/serve/metrics_http.h"
#include "daemon/ingest/ingest.h"
#include "common/util.h"

#define MAX_CLIENTS	  16
#define MAX_REQUEST	  8192
#define CLIENT_TIMEOUT_NS (10ull * 1000 * 1000 * 1000)

struct metrics_client {
	int fd;
	uint64_t start_ns;
	size_t inlen;
	char in[MAX_REQUEST];
	struct buf out;
	size_t outpos;
};

struct metrics_http {
	int listen_fd;
	const struct service *svc;
	struct metrics_client *clients[MAX_CLIENTS];
};

/* "HOST:PORT", "[V6]:PORT" or "PORT" (then 127.0.0.1). */
static int split_addr(const char *addr, char *host, size_t hostlen, const char **port)
{
	const char *colon;
	size_t n;

	if (addr[0] == '[') {
		const char *end = strchr(addr, ']');

		if (!end || end[1] != ':')
			return -1;
		n = (size_t)(end - addr - 1);
		if (n >= hostlen)
			return -1;
		memcpy(host, addr + 1, n);
		host[n] = '\0';
		*port = end + 2;
		return 0;
	}
	colon = strrchr(addr, ':');
	if (!colon) {
		snprintf(host, hostlen, "127.0.0.1");
		*port = addr;
		return 0;
	}
	n = (size_t)(colon - addr);
	if (n >= hostlen)
		return -1;
	memcpy(host, addr, n);
	host[n] = '\0';
	if (!n)
		snprintf(host, hostlen, "127.0.0.1");
	*port = colon + 1;
	return 0;
}

int metrics_addr_valid(const char *addr)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE};
	struct addrinfo *res = NULL;
	char host[128];
	const char *port;
	uint64_t portnum;

	if (split_addr(addr, host, sizeof(host), &port) || parse_u64(port, 65535, &portnum) ||
	    getaddrinfo(host, port, &hints, &res))
		return 0;
	freeaddrinfo(res);
	return 1;
}

struct metrics_http *metrics_http_listen(const char *addr, const struct service *svc, char *err,
					 size_t errlen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE};
	struct addrinfo *res = NULL;
	struct metrics_http *m;
	char host[128];
	const char *port;
	uint64_t portnum;
	int fd = -1, one = 1, rc;

	if (split_addr(addr, host, sizeof(host), &port) || parse_u64(port, 65535, &portnum)) {
		snprintf(err, errlen, "--metrics-listen %s: expected HOST:PORT with a numeric host",
			 addr);
		return NULL;
	}
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "--metrics-listen %s: %s", addr, gai_strerror(rc));
		return NULL;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, MAX_CLIENTS)) {
		snprintf(err, errlen, "--metrics-listen %s: %s", addr, strerror(errno));
		goto fail;
	}
	freeaddrinfo(res);
	res = NULL;
	m = xcalloc(1, sizeof(*m));
	m->listen_fd = fd;
	m->svc = svc;
	if (svc->watch(svc->ctx, fd, EPOLLIN, WATCH_METRICS_LISTEN, 0)) {
		snprintf(err, errlen, "--metrics-listen: epoll: %s", strerror(errno));
		metrics_http_close(m);
		return NULL;
	}
	log_msg("serving Prometheus metrics on http://%s%s%s:%s/metrics",
		strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", port);
	return m;
fail:
	if (fd >= 0)
		close(fd);
	if (res)
		freeaddrinfo(res);
	return NULL;
}

static void client_close(struct metrics_http *m, uint32_t slot)
{
	struct metrics_client *c = m->clients[slot];

	if (!c)
		return;
	m->svc->unwatch(m->svc->ctx, c->fd);
	close(c->fd);
	buf_free(&c->out);
	free(c);
	m->clients[slot] = NULL;
}

void metrics_http_close(struct metrics_http *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < MAX_CLIENTS; i++)
		client_close(m, i);
	close(m->listen_fd);
	free(m);
}

void metrics_http_accept(struct metrics_http *m)
{
	for (;;) {
		int fd = accept4(m->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		uint32_t slot;

		if (fd < 0)
			return; /* EAGAIN, or a connection that went away */
		for (slot = 0; slot < MAX_CLIENTS && m->clients[slot]; slot++)
			;
		if (slot == MAX_CLIENTS) {
			close(fd); /* busy: the scraper retries */
			continue;
		}
		if (m->svc->watch(m->svc->ctx, fd, EPOLLIN, WATCH_METRICS_CLIENT, slot)) {
			close(fd);
			continue;
		}
		m->clients[slot] = xcalloc(1, sizeof(struct metrics_client));
		m->clients[slot]->fd = fd;
		m->clients[slot]->start_ns = time_monotonic_ns();
	}
}

/* ---- one request --------------------------------------------------------- */

static void respond(struct metrics_http *m, struct metrics_client *c, int status,
		    const char *reason, const char *type, const struct buf *body)
{
	buf_printf(&c->out,
		   "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		   "Connection: close\r\n\r\n",
		   status, reason, type, body ? body->len : strlen(reason) + 1);
	if (body)
		buf_put(&c->out, body->data, body->len);
	else
		buf_printf(&c->out, "%s\n", reason);
}

/* A complete request head is in c->in: answer it. */
static void handle_request(struct metrics_http *m, struct metrics_client *c)
{
	char method[16], target[256];
	struct buf body = {0};

	if (sscanf(c->in, "%15s %255s HTTP/1.", method, target) != 2) {
		respond(m, c, 400, "Bad Request", "text/plain", NULL);
		return;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		respond(m, c, 405, "Method Not Allowed", "text/plain", NULL);
		return;
	}
	if (strcmp(target, "/metrics") && strncmp(target, "/metrics?", 9)) {
		respond(m, c, 404, "Not Found", "text/plain", NULL);
		return;
	}
	struct daemon_view view;

	ingest_drain(m->svc->ingest); /* the numbers as of now */
	m->svc->view(m->svc->ctx, &view);
	metrics_render(&view, &body);
	respond(m, c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", &body);
	if (!strcmp(method, "HEAD")) /* the head only */
		c->out.len -= body.len;
	buf_free(&body);
}

static int flush_out(struct metrics_client *c)
{
	while (c->outpos < c->out.len) {
		ssize_t n =
		    send(c->fd, c->out.data + c->outpos, c->out.len - c->outpos, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
		c->outpos += (size_t)n;
	}
	return 1; /* all sent */
}

void metrics_http_client_event(struct metrics_http *m, uint32_t slot, uint32_t events)
{
	struct metrics_client *c = slot < MAX_CLIENTS ? m->clients[slot] : NULL;
	int rc;

	if (!c)
		return;
	if (!c->out.len) {
		ssize_t n = recv(c->fd, c->in + c->inlen, sizeof(c->in) - 1 - c->inlen, 0);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			client_close(m, slot);
			return;
		}
		c->inlen += (size_t)n;
		c->in[c->inlen] = '\0';
		if (memchr(c->in, '\0', c->inlen)) {
			respond(m, c, 400, "Bad Request", "text/plain", NULL);
		} else if (strstr(c->in, "\r\n\r\n") || strstr(c->in, "\n\n")) {
			handle_request(m, c);
		} else if (c->inlen == sizeof(c->in) - 1) {
			respond(m, c, 431, "Request Header Fields Too Large", "text/plain", NULL);
		} else {
			return; /* more to come */
		}
		shutdown(c->fd, SHUT_RD);
	}
	rc = flush_out(c);
	if (rc < 0 || (rc > 0 && c->outpos == c->out.len)) {
		client_close(m, slot);
		return;
	}
	if (rc == 0) { /* wait until the socket can take more */
		m->svc->watch(m->svc->ctx, c->fd, EPOLLOUT, WATCH_METRICS_CLIENT, slot);
	}
	(void)events;
}

void metrics_http_tick(struct metrics_http *m, uint64_t now_ns)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < MAX_CLIENTS; i++) {
		struct metrics_client *c = m->clients[i];

		if (c && now_ns - c->start_ns > CLIENT_TIMEOUT_NS)
			client_close(m, i);
	}
}
