/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The daemon's state: one struct per subsystem, composed here. One thread
 * changes it (the event loop), so it has no locks; the request lanes read it
 * only while ingest holds it frozen for them (ingest/ingest.h). The serving
 * side (serve/) never sees this struct: it reads the state through the view
 * and acts through the service that loop.c makes of it (serve/service.h).
 */
#ifndef MEMTRACE_DAEMON_H
#define MEMTRACE_DAEMON_H

#include <stdint.h>

#include "daemon/core/resident.h"
#include "daemon/core/timeline.h"
#include "daemon/core/tracker.h"
#include "daemon/ingest/ingest.h"
#include "memtrace/snapshot.h"

struct target;
struct memtrace_bpf;
struct symbolizer;
struct pystacks;
struct unwinder;
struct server;
struct metrics_http;
struct rss_sampler;

struct cgmatch;

/* How the targets are traced (from the command line). */
struct daemon_settings {
	int python_allocators;	      /* --python-allocators: probe PyObject_Malloc & co. */
	int follow_forks;	      /* --follow-forks: children become targets */
	int max_targets;	      /* --max-targets: matched (--comm/--exe) targets alive */
	const char *match_comm;	      /* --comm NAME, or NULL */
	const char *match_exe;	      /* --exe PATH, or NULL */
	struct cgmatch *match_cgroup; /* --cgroup/--unit resolved, or NULL */
	char *match_what;	      /* "--comm NAME" or "--exe PATH"; NULL: not whole-host */
	struct snap_options options;  /* as given on the command line, for snapshots */
	/* the stack walker whose programs loaded (enum mt_stack_walker; the
	 * one asked for, or one after it: attach/walker.h), and why it runs:
	 * "default", "chosen", or what the verifier refused before it */
	int walker;
	char walker_reason[768];
	int walker_refused;  /* walkers the verifier refused before it */
	const char *oom_dir; /* --oom-snapshots: an OOM kill's snapshot goes there; NULL none */
	uint64_t oom_keep;   /* --oom-keep */
};

/* More than the BPF object's programs (bpf/memtrace.bpf.c: about 30). */
#define DAEMON_MAX_PROGRAMS 64

struct daemon {
	/* the accounting core (core/) */
	struct tracker tracker;
	struct timeline timeline; /* memory over time, sampled on the drain timer */
	/* resident memory, sampled with the timeline (sample.c) */
	struct resident_table resident;
	struct rss_sampler *sampler;
	/* the targets (targets.c) */
	/* the entries, each allocated on its own (it never moves): only this
	 * table of them grows, by half (a pre-fork server makes thousands) */
	struct target **targets;
	int ntargets, targets_cap;
	uint64_t exec_events_lost; /* lost exec events already acted on */
	/* matches not traced because --max-targets were traced, counted here
	 * (the BPF side counts its own: matches_over_limit in docs/metrics.md
	 * is the sum); how many of them the log has told of, and when */
	uint64_t matches_over_limit;
	uint64_t over_limit_logged;
	uint64_t over_limit_log_ns;
	struct daemon_settings set;
	/* the kernel side (attach/) and its ring buffer into the core (ingest/) */
	struct memtrace_bpf *skel;
	struct ingest ingest;
	/* reading the targets' code and Python frames (symbols/) */
	struct symbolizer *sym;
	struct pystacks *py;
	/* unwind tables for the BPF stack walk (unwind/); NULL under other walkers */
	struct unwinder *unwind;
	/* serving (serve/) */
	struct server *server;
	struct metrics_http *metrics; /* --metrics-listen; NULL without */
	int epfd;
	uint64_t start_ns;
	/* how the loop keeps up (status, section SEC_DAEMON), since start or reset-peak */
	uint64_t loop_busy_max_ns; /* the most CPU time the loop used on one wakeup */
	/* runs of our programs the kernel skipped (probes_runs_skipped): by
	 * program as the log last told, and when it may tell again */
	uint64_t runs_skipped_logged[DAEMON_MAX_PROGRAMS];
	uint64_t runs_skipped_log_ns;
};

#endif
