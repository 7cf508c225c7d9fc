// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The verifier's per-program logs, and what they say (see verifier.h). */
#include "daemon/attach/verifier.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "common/util.h"

/* Room for the statistics and an error: at log level 4 the verifier writes
 * nothing else (a full log would fail the load with ENOSPC). */
#define VERIFIER_LOG_BYTES (64 * 1024)

/* A line that starts with prefix; *rest: what follows it. */
static int starts(const char *line, const char *prefix, const char **rest)
{
	size_t n = strlen(prefix);

	if (strncmp(line, prefix, n))
		return 0;
	if (rest)
		*rest = line + n;
	return 1;
}

/* name's figure in line ("total_states 12"); 0 when it is not there. */
static uint64_t figure(const char *line, const char *name)
{
	const char *p = strstr(line, name);

	return p ? strtoull(p + strlen(name), NULL, 10) : 0;
}

int verifier_parse_stats(const char *log, struct verifier_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (const char *line = log; line && *line;) {
		const char *end = strchr(line, '\n'), *rest;
		char copy[256];
		size_t len = end ? (size_t)(end - line) : strlen(line);

		if (len >= sizeof(copy))
			len = sizeof(copy) - 1;
		memcpy(copy, line, len);
		copy[len] = 0;
		if (starts(copy, "processed ", &rest) && strstr(rest, " insns")) {
			st->has_insns = 1;
			st->insns = strtoull(rest, NULL, 10);
			st->limit = figure(copy, "(limit ");
			st->max_states_per_insn = figure(copy, "max_states_per_insn ");
			st->total_states = figure(copy, "total_states ");
			st->peak_states = figure(copy, "peak_states ");
			st->mark_read = figure(copy, "mark_read ");
		} else if (starts(copy, "verification time ", &rest)) {
			st->has_time = 1;
			st->verify_usec = strtoull(rest, NULL, 10);
		}
		line = end ? end + 1 : NULL;
	}
	return st->has_insns ? 0 : -1;
}

/* Not the verifier's word on the program: its statistics, libbpf's framing. */
static int is_noise(const char *line, size_t len)
{
	static const char *const prefixes[] = {
	    "processed ",	    "verification time ", "stack depth ", "-- BEGIN PROG LOAD LOG",
	    "-- END PROG LOAD LOG",
	};

	while (len && (*line == ' ' || *line == '\t')) {
		line++;
		len--;
	}
	if (!len)
		return 1;
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (len >= strlen(prefixes[i]) && !strncmp(line, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

int verifier_last_line(const char *log, char *out, size_t outlen)
{
	const char *best = NULL;
	size_t best_len = 0;

	for (const char *line = log; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		while (len &&
		       (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r'))
			len--;
		if (!is_noise(line, len)) {
			best = line;
			best_len = len;
		}
		line = end ? end + 1 : NULL;
	}
	if (!best || !outlen)
		return -1;
	if (best_len >= outlen)
		best_len = outlen - 1;
	memcpy(out, best, best_len);
	out[best_len] = 0;
	return 0;
}

/* The program libbpf last said it failed to load ("" since verifier_logs_set). */
static char failed_prog[128];

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512], name[128];
	va_list copy;

	va_copy(copy, ap);
	vsnprintf(line, sizeof(line), fmt, copy);
	va_end(copy);
	if (!failed_prog[0] && level == LIBBPF_WARN &&
	    (sscanf(line, "libbpf: prog '%127[^']': BPF program load failed", name) == 1 ||
	     sscanf(line, "prog '%127[^']': BPF program load failed", name) == 1))
		snprintf(failed_prog, sizeof(failed_prog), "%s", name);
	if (level == LIBBPF_WARN && getenv("MEMTRACE_DEBUG"))
		return fputs(line, stderr);
	return 0;
}

void verifier_quiet_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}

int verifier_logs_set(struct bpf_object *obj, struct verifier_logs *vl)
{
	struct bpf_program *prog;

	memset(vl, 0, sizeof(*vl));
	failed_prog[0] = 0;
	bpf_object__for_each_program(prog, obj)
	{
		struct verifier_log *l;

		if (!bpf_program__autoload(prog))
			continue;
		vl->progs = xrealloc(vl->progs, (size_t)(vl->n + 1) * sizeof(*vl->progs));
		l = &vl->progs[vl->n++];
		l->prog = prog;
		l->name = bpf_program__name(prog);
		l->buf = xcalloc(1, VERIFIER_LOG_BYTES);
		if (bpf_program__set_log_buf(prog, l->buf, VERIFIER_LOG_BYTES) ||
		    bpf_program__set_log_level(prog, 4 /* BPF_LOG_STATS */))
			return -1;
	}
	return 0;
}

void verifier_logs_free(struct verifier_logs *vl)
{
	for (int i = 0; i < vl->n; i++) {
		/* the object may outlive the buffers: it must not write into them */
		bpf_program__set_log_buf(vl->progs[i].prog, NULL, 0);
		free(vl->progs[i].buf);
	}
	free(vl->progs);
	memset(vl, 0, sizeof(*vl));
}

int verifier_logs_refused(const struct verifier_logs *vl, char *why, size_t whylen)
{
	int last = -1;

	if (whylen)
		why[0] = 0;
	for (int i = 0; failed_prog[0] && i < vl->n; i++) {
		if (!strcmp(vl->progs[i].name, failed_prog)) {
			verifier_last_line(vl->progs[i].buf, why, whylen);
			return i;
		}
	}
	for (int i = 0; i < vl->n; i++)
		if (vl->progs[i].buf[0])
			last = i;
	if (last < 0)
		return -1;
	if (!verifier_last_line(vl->progs[last].buf, why, whylen))
		return last;
	/* that one was accepted: the next one failed before the verifier said a word */
	return last + 1 < vl->n ? last + 1 : -1;
}
