/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Reading the targets' resident memory off the event loop (sampler.c). A
 * read of smaps_rollup is a walk of the process's page tables: 2.5 ms per
 * GiB resident in 4 KiB pages on the test machine, 15 ms for 3 GiB, which
 * the loop must not wait for (docs/design.md, "Resident memory"). So the
 * loop asks for a round of readings (one per target) and goes on; a thread
 * of its own (memtrace-rss, nice 10) reads them with rss_read(), and the
 * loop takes the round on a later tick. One round at a time: a round asked
 * for while the last one is read is refused, and that sample has no
 * resident figures.
 */
#ifndef MEMTRACE_PROC_SAMPLER_H
#define MEMTRACE_PROC_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/cgroup.h"
#include "memtrace/resident.h"

struct rss_request {
	uint32_t index; /* the caller's: which target this is */
	int pid;
};

struct rss_reading {
	uint32_t index;
	int pid;
	int err;       /* 0, or -errno from rss_read() */
	char why[200]; /* its one-line reason when err */
	struct mt_resident r;
	/* its cgroup, read with it (proc/cgroup.h): cg_err 0, or -errno when
	 * /proc/PID/cgroup could not be read (labels and cg then unread) */
	int cg_err;
	struct mt_cgroup_labels labels;
	struct mt_cgroup_memory cg;
	char cg_why[512]; /* why no figures, or where they come from; cg_err's reason */
};

struct rss_sampler;

/* The thread starts on the first round; without one, rounds are read in place. */
struct rss_sampler *rss_sampler_new(void);

/*
 * Read each process of req[0..n) (copied), as round number round: 0, or
 * -EBUSY while the last round is still being read.
 */
int rss_sampler_ask(struct rss_sampler *s, uint64_t round, const struct rss_request *req, size_t n);

/*
 * The readings of the last round once every one is read: 1 with *round,
 * *out (the sampler's until the next ask) and *n; 0 while none is ready.
 */
int rss_sampler_take(struct rss_sampler *s, uint64_t *round, const struct rss_reading **out,
		     size_t *n);

/* Stop the thread (after the reading it is at) and free everything. */
void rss_sampler_free(struct rss_sampler *s);

#endif
