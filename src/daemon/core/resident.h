/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Each target's resident memory as sampled (resident.c): its last figures
 * (include/memtrace/resident.h), when they were read, and the largest
 * resident_bytes sampled since tracing began or the last reset-peak, with
 * when. Entries are by the daemon's target index (entries are only ever
 * appended there, so an index stays one generation of one process). Pure
 * bookkeeping: what is read, and when, is the sampler's (src/daemon/sample.c).
 */
#ifndef MEMTRACE_CORE_RESIDENT_H
#define MEMTRACE_CORE_RESIDENT_H

#include <stdint.h>

#include "memtrace/cgroup.h"
#include "memtrace/resident.h"

struct resident_target {
	int sampled;	  /* figures were read at least once */
	int failed;	  /* the last reading failed (said once in the log) */
	uint64_t time_ns; /* when the last figures were read, since tracing began */
	struct mt_resident last;
	uint64_t peak_bytes;   /* the largest resident_bytes sampled in the window */
	uint64_t peak_time_ns; /* when, since tracing began */
	/* its cgroup: labels read when the entry was made and with each sample
	 * (NULL: never read), its memory cgroup's figures of the last sample */
	struct mt_cgroup_labels *labels;
	int cgroup_sampled;	    /* cgroup figures (or why none) were read at least once */
	uint64_t cgroup_time_ns;    /* when, since tracing began */
	struct mt_cgroup_memory cg; /* version 0: none (cgroup_why says why) */
	char *cgroup_why;	    /* why none, or where they come from; NULL: nothing */
	int cgroup_failed; /* the last reading of its cgroup failed (said once in the log) */
};

struct resident_table {
	struct resident_target *v;
	uint32_t n;
};

/* Target index's figures r, read at time_ns: its last, and its peak if larger. */
void resident_record(struct resident_table *t, uint32_t index, uint64_t time_ns,
		     const struct mt_resident *r);
/* Target index's reading failed: 1 the first time in a row (to say it), else 0. */
int resident_failed(struct resident_table *t, uint32_t index);
/* Target index's cgroup labels, read now (the figures are left as they are). */
void resident_set_labels(struct resident_table *t, uint32_t index,
			 const struct mt_cgroup_labels *l);
/*
 * A forked child's labels at its fork, without reading /proc: its parent's
 * (parent_index's; the child is in its parent's cgroup when it is made), and
 * its NSpid, which is its own: child_pid when the parent is in the pid
 * namespace /proc shows (its NSpid is its pid), else 0 (not known; the
 * caller may read it). 1 when the child got labels (the parent had some),
 * 0 otherwise. A cgroup the child was made in by clone3(CLONE_INTO_CGROUP),
 * or a pid namespace of its own (CLONE_NEWPID), are known only when it is
 * read: the next sample reads them anew. parent_pid == child_pid: the same
 * process's new program (an exec), its NSpid as it was.
 */
int resident_inherit_labels(struct resident_table *t, uint32_t child_index, uint32_t parent_index,
			    int parent_pid, int child_pid);
/* Target index's memory cgroup figures m read at time_ns, why ("" or a note). */
void resident_record_cgroup(struct resident_table *t, uint32_t index, uint64_t time_ns,
			    const struct mt_cgroup_memory *m, const char *why);
/* Target index's cgroup could not be read: 1 the first time in a row (to say it), else 0. */
int resident_cgroup_failed(struct resident_table *t, uint32_t index);
/* Its entry when its cgroup was read (labels or figures), else NULL (or t is NULL). */
const struct resident_target *resident_get_cgroup(const struct resident_table *t, uint32_t index);
/* Its entry, or NULL when never sampled (or t is NULL). */
const struct resident_target *resident_get(const struct resident_table *t, uint32_t index);
/* A new peak window at time_ns: each target's peak becomes its last figure. */
void resident_reset_peak(struct resident_table *t, uint64_t time_ns);
void resident_free(struct resident_table *t);

#endif
