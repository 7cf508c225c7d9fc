/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --oom-snapshots DIR: the files an OOM kill leaves (oomsnap.c). The
 * snapshot of what the killed target had live is built and encoded by the
 * request worker's whole lane (worker_submit_oom), never on the loop; this
 * writes its bytes to DIR/oom-PID-TIME.mts (a temporary name first, renamed
 * when complete) and prunes the oldest oom-* files beyond --oom-keep.
 */
#ifndef MEMTRACE_SERVE_OOMSNAP_H
#define MEMTRACE_SERVE_OOMSNAP_H

#include <stddef.h>
#include <stdint.h>

/* One snapshot to write: the target's pid, when it was killed (wall clock),
 * where, and how many oom-* files to keep (0: all). */
struct oomsnap_job {
	uint32_t pid;
	uint64_t unix_ns;
	const char *dir; /* the daemon's option string: lives as long as the daemon */
	uint64_t keep;
};

/* DIR can take the snapshots (a folder, a file can be made in it): 0, or -1
 * with a one-line reason in err. */
int oomsnap_check_dir(const char *dir, char *err, size_t errlen);

/* Write bytes for job j, then prune: 0 with the file's path in path, or -1
 * with a one-line reason in err (nothing left behind). */
int oomsnap_write(const struct oomsnap_job *j, const uint8_t *bytes, size_t len, char *path,
		  size_t pathlen, char *err, size_t errlen);

/* Remove the oldest oom-*.mts files of dir beyond keep (by modification
 * time): how many were removed. */
int oomsnap_prune(const char *dir, uint64_t keep);

#endif
