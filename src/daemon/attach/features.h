/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The kernel features memtrace's BPF object relies on, probed on the running
 * kernel (libbpf's probes: a map of that type, a program calling that
 * helper), and the oldest Linux memtrace supports. A kernel without one of
 * the required ones is told so in one line before anything is loaded: the
 * verifier's refusal would say less (memtraced, memtraced --check).
 */
#ifndef MEMTRACE_ATTACH_FEATURES_H
#define MEMTRACE_ATTACH_FEATURES_H

#include <stddef.h>

/*
 * The oldest kernel memtrace supports: the oldest the CI matrix tests
 * (Debian 12's). What the object needs arrived by 5.19 (the newest:
 * bpf_ringbuf_reserve_dynptr, 5.19; bpf_loop 5.17; uprobe cookies and
 * bpf_task_pt_regs 5.15; task storage and bpf_get_current_task_btf 5.11).
 */
#define MEMTRACE_KERNEL_FLOOR "6.1"

struct kfeature {
	const char *key;   /* its name in --check --json's "features" */
	const char *name;  /* in text ("uprobe cookies") */
	const char *what;  /* how it shows ("bpf_get_attach_cookie"), or NULL */
	const char *since; /* the Linux release that brought it */
	int required;	   /* the programs of every configuration use it */
	int present;	   /* 1 yes, 0 no, -1 the probe could not tell (not counted missing) */
};

#define FEATURES_COUNT 12

/* Probe the running kernel for each feature (root). */
void features_probe(struct kfeature f[FEATURES_COUNT]);

/*
 * The required features f lacks, as a list into out ("bpf_loop, uprobe
 * cookies"; "" when none); how many. Pure (unit tested).
 */
int features_missing(const struct kfeature *f, size_t n, char *out, size_t outlen);

/*
 * The line a kernel lacking required features gets ("this kernel
 * (5.10.0-32-amd64) lacks bpf_loop, ...; memtrace needs Linux 6.1 or
 * newer"), into out; 0, or -1 when it lacks none. release: uname's.
 */
int features_floor_line(const struct kfeature *f, size_t n, const char *release, char *out,
			size_t outlen);

#endif
