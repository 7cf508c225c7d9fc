/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the kernel's verifier says of each BPF program: a log buffer per
 * program at log level BPF_LOG_STATS (4), which holds, even when the program
 * loads, "processed N insns (limit L) max_states_per_insn A total_states B
 * peak_states C mark_read D" and "verification time N usec", and when it
 * does not, the verifier's error before them. Used by the load
 * (probes.c: which walker's programs the verifier refused, and why) and by
 * memtraced --check (bpfcheck.c). The parsers are pure (unit tested).
 */
#ifndef MEMTRACE_ATTACH_VERIFIER_H
#define MEMTRACE_ATTACH_VERIFIER_H

#include <stddef.h>
#include <stdint.h>

struct bpf_object;
struct bpf_program;

/* The default most instructions the verifier processes for one program. */
#define VERIFIER_INSN_LIMIT 1000000

/* The statistics of a log; a figure the log does not give stays 0. */
struct verifier_stats {
	uint64_t insns; /* processed instructions */
	uint64_t limit; /* at most (BPF_COMPLEXITY_LIMIT_INSNS) */
	uint64_t max_states_per_insn;
	uint64_t total_states;
	uint64_t peak_states;
	uint64_t mark_read;
	uint64_t verify_usec; /* "verification time N usec" */
	int has_insns;	      /* the "processed" line was there */
	int has_time;	      /* the "verification time" line was there */
};

/* Parse log's statistics into st (zeroed first). 0, or -1 when it has no
 * "processed N insns" line. */
int verifier_parse_stats(const char *log, struct verifier_stats *st);

/*
 * The verifier's last meaningful line of log into out (at most outlen - 1
 * bytes): the last line that is not one of its statistics, nor blank, nor
 * libbpf's framing. 0, or -1 when log has none (the program was accepted,
 * or the load failed before the verifier ran).
 */
int verifier_last_line(const char *log, char *out, size_t outlen);

/* Each program of an object that loads, with its log. */
struct verifier_log {
	struct bpf_program *prog;
	const char *name;
	char *buf; /* VERIFIER_LOG_BYTES, NUL-terminated */
};

struct verifier_logs {
	int n;
	struct verifier_log *progs; /* in the object's order: the order libbpf loads them */
};

/*
 * Give each program of obj that loads (autoload set: call after choosing
 * them) a log buffer at log level BPF_LOG_STATS. 0, or -1 (libbpf refused).
 */
int verifier_logs_set(struct bpf_object *obj, struct verifier_logs *vl);
void verifier_logs_free(struct verifier_logs *vl);

/*
 * After a failed load of the object: the program the kernel refused (index
 * into vl->progs; why: the verifier's last line, "" when it said nothing),
 * or -1 when no program was (the load failed before, outside the verifier).
 * libbpf names the program it failed on (verifier_quiet_libbpf's callback
 * reads it); without that, it is the last program with a log, or the one
 * after it when that log is a success's.
 */
int verifier_logs_refused(const struct verifier_logs *vl, char *why, size_t whylen);

/*
 * libbpf's messages: none unless MEMTRACE_DEBUG is set (then warnings, on
 * stderr); the program a failed load names is kept for
 * verifier_logs_refused().
 */
void verifier_quiet_libbpf(void);

#endif
