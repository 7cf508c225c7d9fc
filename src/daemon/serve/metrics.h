/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The Prometheus exposition of the daemon's state (metrics.c). */
#ifndef MEMTRACE_SERVE_METRICS_H
#define MEMTRACE_SERVE_METRICS_H

#include "daemon/serve/service.h"
#include "common/util.h"

/* Append the exposition text of v to out. Metric names: docs/metrics.md. */
void metrics_render(const struct daemon_view *v, struct buf *out);

#endif
