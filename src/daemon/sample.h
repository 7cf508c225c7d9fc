/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Memory over time (sample.c): on the drain timer, a timeline point of the
 * live heap each --sample-interval, and for that point a round of resident
 * memory readings of the targets traced then, read off the loop
 * (proc/sampler.h) and folded into the point and each target's figures
 * (core/resident.h) on a later tick.
 */
#ifndef MEMTRACE_DAEMON_SAMPLE_H
#define MEMTRACE_DAEMON_SAMPLE_H

#include <stdint.h>

struct daemon;

/* Take a finished round of readings, then sample if an interval has passed.
 * Never while the request worker reads the core. */
void sample_tick(struct daemon *d);

/* A new peak window (reset-peak) for the sampled resident memory too. */
void sample_reset_peak(struct daemon *d, uint64_t now_ns);

#endif
