/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* memtraced's options (options.c). */
#ifndef MEMTRACE_DAEMON_OPTIONS_H
#define MEMTRACE_DAEMON_OPTIONS_H

#include <stdint.h>

struct options {
	int pid;
	char **command;
	const char *socket_path;
	uint32_t stack_depth;
	uint32_t stack_walker;
	uint64_t ring_buffer_bytes;
	uint64_t max_live_blocks;
	uint64_t max_stacks;
	uint64_t sample_interval_ms;
	uint64_t client_timeout_s;
	uint64_t temporary_threshold;
	const char *metrics_listen;
	int python_allocators;
	int follow_forks;
	const char *match_comm;
	const char *match_exe;
	const char *match_cgroup; /* --cgroup PATH */
	const char *match_unit;	  /* --unit NAME */
	uint64_t max_targets;
	uint64_t unwind_memory;
	int realtime;		/* --realtime: the loop thread at SCHED_FIFO 1 */
	int stack_walker_given; /* --stack-walker given (not the default) */
	int check;		/* --check: load every configuration's programs, then exit */
	int json;		/* --check --json */
	const char *oom_dir;	/* --oom-snapshots: where an OOM kill's snapshot goes, or NULL */
	uint64_t oom_keep;	/* --oom-keep: oom-* files kept there (0: all) */
};

/* Parse argv into o; 0, or the exit code (2) after a one-line message.
 * --help and --version print and exit. */
int parse_options(int argc, char **argv, struct options *o);

/* The limits not given, from the machine's RAM. */
void default_limits(struct options *o);

#endif
