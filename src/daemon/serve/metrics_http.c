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

#include "daemon/daemon.h"
#include "daemon/serve/metrics_http.h"
#include "common/util.h"

#define MAX_CLIENTS	  16
#define MAX_REQUEST	  8192
#define CLIENT_TIMEOUT_NS (10ull * 1000 * 1000 * 1000)
#define MAX_LABEL_BYTES	  256 /* of a command line in a label */

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
	struct metrics_client *clients[MAX_CLIENTS];
};

static int add_fd(struct daemon *d, int fd, uint32_t tag, uint32_t index, uint32_t events)
{
	struct epoll_event ev = {.events = events};

	ev.data.u64 = (uint64_t)tag << 32 | index;
	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev);
}

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

int metrics_http_listen(struct daemon *d, const char *addr, char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE};
	struct addrinfo *res = NULL;
	char host[128];
	const char *port;
	uint64_t portnum;
	int fd = -1, one = 1, rc;

	if (split_addr(addr, host, sizeof(host), &port) || parse_u64(port, 65535, &portnum)) {
		snprintf(err, errlen, "--metrics-listen %s: expected HOST:PORT with a numeric host",
			 addr);
		return -1;
	}
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "--metrics-listen %s: %s", addr, gai_strerror(rc));
		return -1;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, MAX_CLIENTS)) {
		snprintf(err, errlen, "--metrics-listen %s: %s", addr, strerror(errno));
		goto fail;
	}
	freeaddrinfo(res);
	res = NULL;
	d->metrics = xcalloc(1, sizeof(*d->metrics));
	d->metrics->listen_fd = fd;
	if (add_fd(d, fd, TAG_METRICS_LISTEN, 0, EPOLLIN)) {
		snprintf(err, errlen, "--metrics-listen: epoll: %s", strerror(errno));
		metrics_http_close(d);
		return -1;
	}
	log_msg("serving Prometheus metrics on http://%s%s%s:%s/metrics",
		strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", port);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	if (res)
		freeaddrinfo(res);
	return -1;
}

static void client_close(struct daemon *d, uint32_t slot)
{
	struct metrics_client *c = d->metrics->clients[slot];

	if (!c)
		return;
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	buf_free(&c->out);
	free(c);
	d->metrics->clients[slot] = NULL;
}

void metrics_http_close(struct daemon *d)
{
	if (!d->metrics)
		return;
	for (uint32_t i = 0; i < MAX_CLIENTS; i++)
		client_close(d, i);
	close(d->metrics->listen_fd);
	free(d->metrics);
	d->metrics = NULL;
}

void metrics_http_accept(struct daemon *d)
{
	for (;;) {
		int fd = accept4(d->metrics->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		uint32_t slot;

		if (fd < 0)
			return; /* EAGAIN, or a connection that went away */
		for (slot = 0; slot < MAX_CLIENTS && d->metrics->clients[slot]; slot++)
			;
		if (slot == MAX_CLIENTS) {
			close(fd); /* busy: the scraper retries */
			continue;
		}
		if (add_fd(d, fd, TAG_METRICS_CLIENT, slot, EPOLLIN)) {
			close(fd);
			continue;
		}
		d->metrics->clients[slot] = xcalloc(1, sizeof(struct metrics_client));
		d->metrics->clients[slot]->fd = fd;
		d->metrics->clients[slot]->start_ns = time_monotonic_ns();
	}
}

/* ---- the exposition ------------------------------------------------------ */

/* A later generation of the same pid (after an exec, or attached again). */
static int superseded(const struct daemon *d, int i)
{
	for (int k = i + 1; k < d->ntargets; k++) {
		if (d->targets[k].pid == d->targets[i].pid)
			return 1;
	}
	return 0;
}

static void put_label_value(struct buf *b, const char *s)
{
	size_t n = 0;

	for (; s && *s && n < MAX_LABEL_BYTES; s++, n++) {
		if (*s == '\\' || *s == '"')
			buf_printf(b, "\\%c", *s);
		else if (*s == '\n')
			buf_printf(b, "\\n");
		else
			buf_put(b, s, 1);
	}
}

void metrics_render(struct daemon *d, struct buf *b)
{
	uint64_t lost[MT_LOST_SLOTS] = {0};

	buf_printf(b, "# HELP memtrace_up 1 while memtraced serves metrics.\n"
		      "# TYPE memtrace_up gauge\nmemtrace_up 1\n");
	buf_printf(b,
		   "# HELP memtrace_uptime_seconds Time since memtraced started.\n"
		   "# TYPE memtrace_uptime_seconds gauge\nmemtrace_uptime_seconds %.3f\n",
		   (double)(time_monotonic_ns() - d->start_ns) / 1e9);
	buf_printf(b,
		   "# HELP memtrace_events_received_total Events read from the BPF ring buffer.\n"
		   "# TYPE memtrace_events_received_total counter\n"
		   "memtrace_events_received_total %llu\n",
		   (unsigned long long)d->tracker.events_received);
	probes_read_lost(d->skel, lost, MT_LOST_SLOTS);
	buf_printf(b, "# HELP memtrace_events_lost_total Events the ring buffer could not take, "
		      "by kind.\n# TYPE memtrace_events_lost_total counter\n");
	for (unsigned k = 0; k < MT_LOST_SLOTS && k < MT_LOST_KIND_COUNT; k++)
		buf_printf(b, "memtrace_events_lost_total{kind=\"%s\"} %llu\n",
			   mt_lost_kind_name(k), (unsigned long long)lost[k]);
	for (size_t m = 0; m < MT_NCOUNTERS; m++) {
		const struct mt_counter_desc *desc = &mt_counter_descs[m];

		buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", desc->prometheus, desc->help,
			   desc->prometheus, desc->prometheus_type);
		for (int i = 0; i < d->ntargets; i++) {
			const struct target *tg = &d->targets[i];
			const struct tracker_target *tt =
			    tracker_find_space(&d->tracker, tg->space);
			uint64_t v = 0;

			if (superseded(d, i))
				continue; /* one series per pid: its newest generation */

			if (tt)
				v = mt_counter_get(&tt->c, m);
			buf_printf(b, "%s{pid=\"%d\",command=\"", desc->prometheus, tg->pid);
			put_label_value(b, tg->command);
			if (desc->unit == MT_UNIT_NS)
				buf_printf(b, "\"} %.9f\n", (double)v / 1e9);
			else
				buf_printf(b, "\"} %llu\n", (unsigned long long)v);
		}
	}
	buf_printf(b, "# HELP memtrace_target_state 1 for the state each target is in.\n"
		      "# TYPE memtrace_target_state gauge\n");
	for (int i = 0; i < d->ntargets; i++) {
		buf_printf(b, "memtrace_target_state{pid=\"%d\",command=\"", d->targets[i].pid);
		put_label_value(b, d->targets[i].command);
		buf_printf(b, "\",state=\"%s\"} 1\n",
			   snap_target_state_name((uint32_t)d->targets[i].state));
	}
}

/* ---- one request --------------------------------------------------------- */

static void respond(struct daemon *d, struct metrics_client *c, int status, const char *reason,
		    const char *type, const struct buf *body)
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
static void handle_request(struct daemon *d, struct metrics_client *c)
{
	char method[16], target[256];
	struct buf body = {0};

	if (sscanf(c->in, "%15s %255s HTTP/1.", method, target) != 2) {
		respond(d, c, 400, "Bad Request", "text/plain", NULL);
		return;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		respond(d, c, 405, "Method Not Allowed", "text/plain", NULL);
		return;
	}
	if (strcmp(target, "/metrics") && strncmp(target, "/metrics?", 9)) {
		respond(d, c, 404, "Not Found", "text/plain", NULL);
		return;
	}
	daemon_consume(d); /* the numbers as of now */
	metrics_render(d, &body);
	respond(d, c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", &body);
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

void metrics_http_client_event(struct daemon *d, uint32_t slot, uint32_t events)
{
	struct metrics_client *c = slot < MAX_CLIENTS ? d->metrics->clients[slot] : NULL;
	int rc;

	if (!c)
		return;
	if (!c->out.len) {
		ssize_t n = recv(c->fd, c->in + c->inlen, sizeof(c->in) - 1 - c->inlen, 0);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			client_close(d, slot);
			return;
		}
		c->inlen += (size_t)n;
		c->in[c->inlen] = '\0';
		if (memchr(c->in, '\0', c->inlen)) {
			respond(d, c, 400, "Bad Request", "text/plain", NULL);
		} else if (strstr(c->in, "\r\n\r\n") || strstr(c->in, "\n\n")) {
			handle_request(d, c);
		} else if (c->inlen == sizeof(c->in) - 1) {
			respond(d, c, 431, "Request Header Fields Too Large", "text/plain", NULL);
		} else {
			return; /* more to come */
		}
		shutdown(c->fd, SHUT_RD);
	}
	rc = flush_out(c);
	if (rc < 0 || (rc > 0 && c->outpos == c->out.len)) {
		client_close(d, slot);
		return;
	}
	if (rc == 0) { /* wait until the socket can take more */
		struct epoll_event ev = {.events = EPOLLOUT};

		ev.data.u64 = (uint64_t)TAG_METRICS_CLIENT << 32 | slot;
		epoll_ctl(d->epfd, EPOLL_CTL_MOD, c->fd, &ev);
	}
	(void)events;
}

void metrics_http_tick(struct daemon *d, uint64_t now_ns)
{
	if (!d->metrics)
		return;
	for (uint32_t i = 0; i < MAX_CLIENTS; i++) {
		struct metrics_client *c = d->metrics->clients[i];

		if (c && now_ns - c->start_ns > CLIENT_TIMEOUT_NS)
			client_close(d, i);
	}
}
