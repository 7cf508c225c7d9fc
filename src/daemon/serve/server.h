/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The Unix socket server (server.c): one request line in, one reply frame
 * out (common/proto.h), every client bounded in time and memory. It acts on
 * the daemon only through the service it is given.
 */
#ifndef MEMTRACE_SERVE_SERVER_H
#define MEMTRACE_SERVE_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/serve/service.h"

struct server;
struct worker;

/* Claim path (a lock beside it says which daemon owns it), listen, and
 * watch it through svc (WATCH_LISTEN). NULL with a one-line reason in err. */
struct server *server_listen(const char *path, const struct service *svc,
			     uint64_t client_timeout_ns, char *err, size_t errlen);
/* Close every client and the socket, remove its path. NULL: nothing. */
void server_close(struct server *srv);
const char *server_path(const struct server *srv);

/* The loop's events: a connection to accept (WATCH_LISTEN), the client in
 * slot (WATCH_CLIENT), and the drain timer (drop clients past their deadline). */
void server_accept(struct server *srv);
void server_client_event(struct server *srv, int slot, uint32_t events);
void server_expire(struct server *srv, uint64_t now_ns);

/* The request worker, once a request started it (NULL before). */
struct worker *server_worker(const struct server *srv);
/* Ingest caught up after a freeze (its resumed hook): answer the requests
 * that waited for that, then let the worker freeze again. */
void server_resume(struct server *srv);

/* Hand an OOM kill's snapshot (r: a snapshot of its pid) to the request
 * worker, started if need be, which writes it to j's file (oomsnap.h).
 * 0, or -1 (no worker, or too many waiting). */
struct oomsnap_job;
struct proto_request;
int server_oom_snapshot(struct server *srv, const struct proto_request *r,
			const struct oomsnap_job *j);

#endif
