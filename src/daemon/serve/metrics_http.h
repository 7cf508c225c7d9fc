/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The Prometheus endpoint of memtraced (--metrics-listen): a bounded,
 * non-blocking HTTP server on the daemon's epoll loop, answering GET
 * /metrics with metrics_render() (metrics.h).
 */
#ifndef MEMTRACE_METRICS_HTTP_H
#define MEMTRACE_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/serve/service.h"

struct metrics_http;

/* Is addr a HOST:PORT (or PORT) metrics_http_listen() accepts? */
int metrics_addr_valid(const char *addr);
/* Listen on "HOST:PORT" (numeric host; "PORT" alone means 127.0.0.1) and
 * watch it through svc (WATCH_METRICS_LISTEN). NULL with a one-line reason in err. */
struct metrics_http *metrics_http_listen(const char *addr, const struct service *svc, char *err,
					 size_t errlen);
/* NULL: nothing. */
void metrics_http_close(struct metrics_http *m);
void metrics_http_accept(struct metrics_http *m);
void metrics_http_client_event(struct metrics_http *m, uint32_t slot, uint32_t events);
/* Drop connections that have taken too long. */
void metrics_http_tick(struct metrics_http *m, uint64_t now_ns);

#endif
