/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Ingest (ingest.c): ring buffer records into the tracker and the targets. */
#ifndef MEMTRACE_DAEMON_INGEST_H
#define MEMTRACE_DAEMON_INGEST_H

struct daemon;

/* Map the ring buffer and hook the tracker's new-stack callback; 0 or -1 (errno). */
int ingest_open(struct daemon *d);

/* Apply every record queued in the ring buffer now. */
void ingest_drain(struct daemon *d);

#endif
