/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The Prometheus endpoint of memtraced (--metrics-listen): a bounded,
 * non-blocking HTTP server on the daemon's epoll loop. Metric names are in
 * docs/metrics.md.
 */
#ifndef MEMTRACE_METRICS_HTTP_H
#define MEMTRACE_METRICS_HTTP_H

#include <stdint.h>

#include "common/util.h"

struct daemon;

/* Is addr a HOST:PORT (or PORT) metrics_http_listen() accepts? */
int metrics_addr_valid(const char *addr);
/* Listen on "HOST:PORT" (numeric host; "PORT" alone means 127.0.0.1). */
int metrics_http_listen(struct daemon *d, const char *addr, char *err, size_t errlen);
void metrics_http_close(struct daemon *d);
void metrics_http_accept(struct daemon *d);
void metrics_http_client_event(struct daemon *d, uint32_t slot, uint32_t events);
/* Drop connections that have taken too long. */
void metrics_http_tick(struct daemon *d, uint64_t now_ns);
/* The exposition text, for the endpoint and for tests. */
void metrics_render(struct daemon *d, struct buf *out);

#endif
