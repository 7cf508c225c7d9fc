/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * memtracectl's command line: the commands, the options each applies to, and
 * what they ask of memtraced (one request of the kind the view needs, made
 * once from the options) and of the view and the renderer. Every check of
 * the command line is made here, before anything is fetched, so a usage
 * error costs no request.
 */
#ifndef MEMTRACE_CTL_ARGS_H
#define MEMTRACE_CTL_ARGS_H

#include <stdint.h>

#include "common/proto.h"
#include "ctl/render/render.h"
#include "ctl/view/rows.h"

enum command {
	CMD_STATUS,
	CMD_STATS,
	CMD_REPORT,
	CMD_SNAPSHOT,
	CMD_DIFF,
	CMD_PEAK,
	CMD_LEAKS,
	CMD_TIMELINE,
	CMD_WATCH,
	CMD_RESET_PEAK,
	CMD_ATTACH,
	CMD_DETACH,
	CMD_COUNT
};

struct args {
	int command; /* enum command, -1 if none given */
	const char *socket;
	const char *from;
	const char *output;	      /* -o FILE, else stdout */
	struct proto_request request; /* what the command asks memtraced for */
	/*
	 * stats --memory: the breakdowns by mapping, a request of their own
	 * (PROTO_MEMORY) beside request's site rows; kind 0 otherwise.
	 */
	struct proto_request memory;
	struct render_opts render;
	struct view_opts view;
	int grouped;	      /* report --by / --cumulative */
	const char *files[2]; /* diff OLD NEW */
	int nfiles;
	uint64_t interval_ns; /* watch */
	uint64_t iterations;  /* watch: 0 = until q */
	int unreachable;      /* leaks --unreachable: a scan (request.scan) */
	/* the options as given, before they make the request */
	uint32_t pid;		  /* --pid; 0 = every target */
	int sort;		  /* --sort (enum mt_sort) */
	uint64_t max_pause_ns;	  /* --max-pause */
	const char *suppressions; /* --suppressions FILE, or NULL */
	const char *cgroup;	  /* attach --cgroup PATH or --unit NAME, or NULL */
	int cgroup_unit;	  /* it is --unit's */
	/* report, peak, diff --cgroup PATH: only the stacks of processes in PATH or
	 * below it, kept by the daemon (the request's cgroup=, the path after its
	 * line), from a file by the client (fetch_filter_cgroup()); NULL: all */
	const char *cgroup_filter;
	uint32_t filter_top; /* report --from FILE --cgroup: the stacks shown, once filtered */
	unsigned given;	     /* bit per option given (args.c's enum option) */
};

/*
 * Parse argv into a. Options may come before or after the command; each is
 * checked against the command once it is known. Returns 0; 1 when --help or
 * --version was handled (printed to stdout); -1 on a usage error, after a
 * one-line message.
 */
int args_parse(int argc, char **argv, struct args *a);

/*
 * "30s", "500ms", "5m", "2h", "1d", or a bare number of seconds (decimals
 * allowed) into nanoseconds; returns 0, or -1 when s is not a duration.
 */
int args_parse_duration(const char *s, uint64_t *ns);

#endif
