/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A target's cgroup (docs/metrics.md, "Cgroup"), its names defined once:
 * the labels a process carries (its cgroup path, the systemd unit and the
 * container its path names, its pid in its own pid namespace) and the
 * figures of its memory cgroup sampled beside resident memory (usage, the
 * limits, memory.stat's breakdown, memory.events' counters). The parsers
 * (src/daemon/proc/cgroup.c), the snapshot's wire order, stats text and
 * JSON and the Prometheus names come from these tables.
 */
#ifndef MEMTRACE_CGROUP_H
#define MEMTRACE_CGROUP_H

#include <stddef.h>
#include <stdint.h>

/* A limit that is not set ("max" on cgroup v2, the kernel's huge default on v1). */
#define MT_CGROUP_NO_LIMIT UINT64_MAX

/* Label sizes, with their NUL; a longer cgroup path is not a label (cgroup.c says so). */
#define MT_CGROUP_PATH_MAX    1024
#define MT_CGROUP_UNIT_MAX    256
#define MT_CGROUP_ID_MAX      80
#define MT_CGROUP_RUNTIME_MAX 16
#define MT_CGROUP_POD_MAX     40

/*
 * What a process's cgroup says of it. Empty strings where it says nothing
 * (no unit, no container); nspid 0 when not known.
 */
struct mt_cgroup_labels {
	char path[MT_CGROUP_PATH_MAX]; /* its cgroup v2 path ("0::"), else its v1 memory one */
	char memory_path[MT_CGROUP_PATH_MAX]; /* the memory cgroup its figures are of; "" none */
	char unit[MT_CGROUP_UNIT_MAX];	      /* the innermost systemd unit of the path */
	char container[MT_CGROUP_ID_MAX];     /* the container id the path names */
	char runtime[MT_CGROUP_RUNTIME_MAX];  /* docker, podman, containerd, cri-o, kubepods */
	char pod[MT_CGROUP_POD_MAX];	      /* a Kubernetes pod's uid */
	int32_t nspid;			      /* its pid in its own pid namespace */
};

/* Which memory controller the figures come from. */
enum mt_cgroup_version {
	MT_CGROUP_NONE = 0, /* none read: the process's cgroup has no memory controller files */
	MT_CGROUP_V1 = 1,   /* the v1 memory controller (hybrid hosts) */
	MT_CGROUP_V2 = 2,   /* the unified hierarchy's memory controller */
};

/*
 * X(field, name, Prometheus name, Prometheus type, v2 file key, v1 file key,
 * help). A key is "file" (the file holds one value) or "file:key" (a
 * "key value" line of it); NULL: that version has no such figure. The wire
 * order is the table's: new figures go at the end. Bytes, or counts of
 * events.
 */
#define MT_CGROUP_FIGURES(X)                                                                       \
	X(usage_bytes, "cgroup_usage_bytes", "memtrace_cgroup_usage_bytes", "gauge",               \
	  "memory.current", "memory.usage_in_bytes",                                               \
	  "Memory charged to the process's memory cgroup (all its processes, page cache "          \
	  "included).")                                                                            \
	X(limit_bytes, "cgroup_limit_bytes", "memtrace_cgroup_limit_bytes", "gauge", "memory.max", \
	  "memory.limit_in_bytes",                                                                 \
	  "The cgroup's hard memory limit: past it the kernel reclaims, then OOM-kills "           \
	  "(+Inf: none).")                                                                         \
	X(high_bytes, "cgroup_high_bytes", "memtrace_cgroup_high_bytes", "gauge", "memory.high",   \
	  NULL, "The cgroup's throttling limit (v2 memory.high; +Inf: none).")                     \
	X(anon_bytes, "cgroup_anon_bytes", "memtrace_cgroup_anon_bytes", "gauge",                  \
	  "memory.stat:anon", "memory.stat:total_rss", "Anonymous memory of the cgroup.")          \
	X(file_bytes, "cgroup_file_bytes", "memtrace_cgroup_file_bytes", "gauge",                  \
	  "memory.stat:file", "memory.stat:total_cache", "Page cache charged to the cgroup.")      \
	X(kernel_bytes, "cgroup_kernel_bytes", "memtrace_cgroup_kernel_bytes", "gauge",            \
	  "memory.stat:kernel", NULL, "Kernel memory charged to the cgroup (v2).")                 \
	X(slab_bytes, "cgroup_slab_bytes", "memtrace_cgroup_slab_bytes", "gauge",                  \
	  "memory.stat:slab", NULL, "Slab memory charged to the cgroup (v2).")                     \
	X(sock_bytes, "cgroup_sock_bytes", "memtrace_cgroup_sock_bytes", "gauge",                  \
	  "memory.stat:sock", NULL, "Network buffers charged to the cgroup (v2).")                 \
	X(shmem_bytes, "cgroup_shmem_bytes", "memtrace_cgroup_shmem_bytes", "gauge",               \
	  "memory.stat:shmem", "memory.stat:total_shmem",                                          \
	  "Shared memory and tmpfs of the cgroup.")                                                \
	X(high_events, "cgroup_high_events", "memtrace_cgroup_high_events_total", "counter",       \
	  "memory.events:high", NULL, "Times the cgroup went over memory.high and was throttled.") \
	X(max_events, "cgroup_max_events", "memtrace_cgroup_max_events_total", "counter",          \
	  "memory.events:max", "memory.failcnt",                                                   \
	  "Times the cgroup's usage was about to go over its limit (v1: memory.failcnt).")         \
	X(oom_events, "cgroup_oom_events", "memtrace_cgroup_oom_events_total", "counter",          \
	  "memory.events:oom", NULL, "Times the cgroup hit its limit and reclaim failed (v2).")    \
	X(oom_kills, "cgroup_oom_kills", "memtrace_cgroup_oom_kills_total", "counter",             \
	  "memory.events:oom_kill", "memory.oom_control:oom_kill",                                 \
	  "Processes of the cgroup the OOM killer killed.")

struct mt_cgroup_figures {
#define MT_CGROUP_FIELD(field, ...) uint64_t field;
	MT_CGROUP_FIGURES(MT_CGROUP_FIELD)
#undef MT_CGROUP_FIELD
};

enum {
#define MT_CGROUP_ONE(...) +1
	MT_NCGROUP = 0 MT_CGROUP_FIGURES(MT_CGROUP_ONE)
#undef MT_CGROUP_ONE
};

/* A memory cgroup's figures as read at one moment. */
struct mt_cgroup_memory {
	uint32_t version; /* enum mt_cgroup_version */
	uint32_t have;	  /* bit i: figure i was read (its version has it, the file was there) */
	struct mt_cgroup_figures f;
};

struct mt_cgroup_desc {
	const char *name;	/* as in docs/metrics.md, text and JSON */
	size_t offset;		/* in struct mt_cgroup_figures */
	const char *prometheus; /* metric name */
	const char *prometheus_type;
	const char *v2, *v1; /* where each version has it, or NULL */
	const char *help;
};

extern const struct mt_cgroup_desc mt_cgroup_descs[];

static inline uint64_t mt_cgroup_get(const struct mt_cgroup_figures *f, size_t i)
{
	return *(const uint64_t *)((const char *)f + mt_cgroup_descs[i].offset);
}

static inline void mt_cgroup_set(struct mt_cgroup_figures *f, size_t i, uint64_t v)
{
	*(uint64_t *)((char *)f + mt_cgroup_descs[i].offset) = v;
}

/* "v1", "v2"; "none" otherwise. */
const char *mt_cgroup_version_name(uint32_t version);

#endif
