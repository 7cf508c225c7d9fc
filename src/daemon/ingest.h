/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Ingest (ingest.c): ring buffer records into the tracker and the targets. */
#ifndef MEMTRACE_DAEMON_INGEST_H
#define MEMTRACE_DAEMON_INGEST_H

#include <stddef.h>

struct daemon;

/* Map the ring buffer and hook the tracker's new-stack callback; 0 or -1 (errno). */
int ingest_open(struct daemon *d);

/*
 * Take every record queued in the ring buffer now: applied, or deferred
 * while the request worker reads the core (serve/worker.h), and then a
 * slice of the deferred ones applied once it thawed. Nothing, when called
 * while a drain applies a record (those queued come after it, in order).
 */
void ingest_drain(struct daemon *d);

/* The same, DRAIN_SLICE records at most: the loop's routine drains. */
void ingest_drain_slice(struct daemon *d);

/*
 * The ring buffer's producer position now (bytes ever reserved; any thread):
 * every record written before lies before it. UINT64_MAX when unknown.
 */
uint64_t ingest_ring_produced(void);
/* Its consumer position: every record before it has been drained. */
uint64_t ingest_ring_consumed(void);

/* Apply one ring buffer record (what ingest_drain does with each, in order). */
void ingest_record(struct daemon *d, const void *data, size_t len);

#endif
