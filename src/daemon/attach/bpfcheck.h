/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * memtraced --check [--json]: load every program of the BPF object in every
 * configuration the daemon can use, attach nothing, and say what the
 * verifier made of each (loaded or why not, processed instructions and
 * states against the limit, verification time), with the kernel features
 * memtrace relies on (features.h). The exit code says whether the default
 * configuration (the dwarf walker) loads. The report and its renders are
 * plain data and pure functions (unit tested); bpfcheck_run() does the
 * loading.
 */
#ifndef MEMTRACE_ATTACH_BPFCHECK_H
#define MEMTRACE_ATTACH_BPFCHECK_H

#include <stdint.h>

#include "daemon/attach/features.h"
#include "daemon/attach/verifier.h"

struct buf;

/* A program loaded should leave this much of the limit: a quarter of it. */
#define BPFCHECK_HEADROOM_INSNS 250000

/* One program in one configuration. */
struct check_prog {
	const char *config; /* its configuration's name */
	char program[64];
	/* 1 loaded; 0 refused (error: the verifier's last line); -1 not tried
	 * (error: why: the load stopped before it) */
	int loaded;
	struct verifier_stats st; /* when the verifier ran: has_insns */
	char error[256];
};

/* One configuration: the programs it loads, loaded together. */
struct check_config {
	const char *name; /* "dwarf", "fp", "kernel", "caller", "dwarf-no-ids", ... */
	const char *what; /* what it varies, for the text */
	int loaded;	  /* every one of its programs loaded */
	double seconds;	  /* wall time of its loads (again, without a refused program) */
	char error[512];  /* the first refusal: "walk_fp: <the verifier's last line>" */
};

struct check_report {
	char release[65], version[65]; /* uname -r, uname -v */
	struct kfeature features[FEATURES_COUNT];
	int nfeatures;
	struct check_prog *progs;
	int nprogs;
	struct check_config *configs; /* the default first */
	int nconfigs;
};

/* Every program loaded is within BPFCHECK_HEADROOM_INSNS. */
int bpfcheck_headroom_ok(const struct check_report *r);
/* The default configuration (the first) loads. */
int bpfcheck_default_loads(const struct check_report *r);

/* The report as one JSON object (docs/usage.md, "memtraced --check"). */
void bpfcheck_render_json(const struct check_report *r, struct buf *b);
/* The report as text: features, a table of programs by configuration. */
void bpfcheck_render_text(const struct check_report *r, struct buf *b);

/* memtraced --check [--json]: the exit code (0: the default configuration
 * loads). Needs root. */
int bpfcheck_run(int json);

#endif
