/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Loading the BPF object and attaching its programs to one target's
 * allocator. The uprobes are attached with the target's pid, so no other
 * process takes the breakpoints.
 */
#ifndef MEMTRACE_PROBES_H
#define MEMTRACE_PROBES_H

#include <stddef.h>
#include <stdint.h>

#include "allocator.h"

struct memtrace_bpf;
struct bpf_link;

struct bpf_options {
	uint32_t stack_depth;
	uint32_t stack_walker;	    /* enum mt_stack_walker */
	uint64_t ring_buffer_bytes; /* power of two, >= page size */
};

/* Open, configure and load the BPF object. NULL with a reason in err. */
struct memtrace_bpf *probes_load(const struct bpf_options *o, char *err, size_t errlen);
void probes_unload(struct memtrace_bpf *skel);
int probes_ringbuf_fd(struct memtrace_bpf *skel);

/* Events lost, summed over CPUs, by slot (0: inflight table full, then kind). */
int probes_read_lost(struct memtrace_bpf *skel, uint64_t *lost, int nslots);

struct target_probes {
	struct bpf_link *links[64]; /* 2 per probe, at most */
	int nlinks;
};

/*
 * Attach every probe of a to pid. Order matters: free first, then the return
 * probes, then the entry probes, so that an entry is never seen without its
 * return. Returns 0, or -1 with a reason in err (nothing left attached).
 */
int probes_attach(struct memtrace_bpf *skel, int pid, const struct allocator *a,
		  struct target_probes *tp, char *err, size_t errlen);
void probes_detach(struct target_probes *tp);

/* Report pid's execs (the "targets" map); 0, or -errno. */
int probes_watch(struct memtrace_bpf *skel, int pid);
/* Stop watching pid for exec (after detach). */
void probes_unwatch(struct memtrace_bpf *skel, int pid);
/* Execs of pid counted by the tracepoint since probes_watch(); 0 if unknown. */
uint64_t probes_exec_count(struct memtrace_bpf *skel, int pid);

/*
 * Trace pid's anonymous mmaps made outside the allocator, and its munmaps
 * (CPython targets in default mode: pymalloc's arenas). The syscall
 * tracepoints are attached the first time. 0, or -errno.
 */
int probes_mmap_enable(struct memtrace_bpf *skel, int pid);
void probes_mmap_disable(struct memtrace_bpf *skel, int pid);

#endif
