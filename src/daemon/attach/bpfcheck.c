// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * memtraced --check (see bpfcheck.h). Seven loads of the whole object, the
 * configurations whose programs differ: each walker's stage programs (dwarf,
 * fp, kernel, caller: only the chosen walker's load), and three that change
 * other programs' code through the read-only configuration the verifier
 * sees as constants: stacks sent in full instead of as ids (the emit
 * stage), --comm and --exe (the exec tracepoint's match), --follow-forks and
 * the hold at exec (the exec tracepoint too), on the default walker. A
 * program refused in a configuration is left out and the rest loaded again,
 * so that every program gets a verdict.
 */
#include "daemon/attach/bpfcheck.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <bpf/libbpf.h>

#include "daemon/attach/probes.h"
#include "daemon/attach/walker.h"
#include "common/util.h"
#include "memtrace/event.h"
#include "memtrace.skel.h"

/* A program's most processed instructions in r among those loaded; its row, or NULL. */
static const struct check_prog *most_insns(const struct check_report *r)
{
	const struct check_prog *most = NULL;

	for (int i = 0; i < r->nprogs; i++)
		if (r->progs[i].loaded == 1 && r->progs[i].st.has_insns &&
		    (!most || r->progs[i].st.insns > most->st.insns))
			most = &r->progs[i];
	return most;
}

int bpfcheck_headroom_ok(const struct check_report *r)
{
	const struct check_prog *most = most_insns(r);

	return !most || most->st.insns <= BPFCHECK_HEADROOM_INSNS;
}

int bpfcheck_default_loads(const struct check_report *r)
{
	return r->nconfigs > 0 && r->configs[0].loaded;
}

/* ---- JSON ------------------------------------------------------------------- */

static void json_str(struct buf *b, const char *s)
{
	buf_put(b, "\"", 1);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			buf_printf(b, "\\%c", c);
		else if (c < 0x20)
			buf_printf(b, "\\u%04x", c);
		else
			buf_put(b, s, 1);
	}
	buf_put(b, "\"", 1);
}

static void json_key(struct buf *b, int *first, const char *key)
{
	if (!*first)
		buf_put(b, ",", 1);
	*first = 0;
	json_str(b, key);
	buf_put(b, ":", 1);
}

static void json_u64_or_null(struct buf *b, int *first, const char *key, int has, uint64_t v)
{
	json_key(b, first, key);
	if (has)
		buf_printf(b, "%" PRIu64, v);
	else
		buf_printf(b, "null");
}

static void json_str_or_null(struct buf *b, int *first, const char *key, const char *s)
{
	json_key(b, first, key);
	if (s)
		json_str(b, s);
	else
		buf_printf(b, "null");
}

void bpfcheck_render_json(const struct check_report *r, struct buf *b)
{
	const struct check_prog *most = most_insns(r);
	int first = 1, f;

	buf_put(b, "{", 1);
	json_key(b, &first, "kernel");
	f = 1;
	buf_put(b, "{", 1);
	json_str_or_null(b, &f, "release", r->release);
	json_str_or_null(b, &f, "version", r->version);
	buf_put(b, "}", 1);
	json_str_or_null(b, &first, "kernel_floor", MEMTRACE_KERNEL_FLOOR);
	json_key(b, &first, "features");
	f = 1;
	buf_put(b, "{", 1);
	for (int i = 0; i < r->nfeatures; i++) {
		json_key(b, &f, r->features[i].key);
		buf_printf(b, r->features[i].present > 0 ? "true" : "false");
	}
	buf_put(b, "}", 1);
	json_key(b, &first, "features_required");
	buf_put(b, "[", 1);
	f = 1;
	for (int i = 0; i < r->nfeatures; i++) {
		if (!r->features[i].required)
			continue;
		if (!f)
			buf_put(b, ",", 1);
		f = 0;
		json_str(b, r->features[i].key);
	}
	buf_put(b, "]", 1);
	json_key(b, &first, "programs");
	buf_put(b, "[", 1);
	for (int i = 0; i < r->nprogs; i++) {
		const struct check_prog *p = &r->progs[i];
		const struct verifier_stats *st = &p->st;

		buf_printf(b, "%s{", i ? "," : "");
		f = 1;
		json_str_or_null(b, &f, "config", p->config);
		json_str_or_null(b, &f, "program", p->program);
		json_key(b, &f, "loaded");
		buf_printf(b, p->loaded == 1 ? "true" : "false");
		json_key(b, &f, "tried");
		buf_printf(b, p->loaded >= 0 ? "true" : "false");
		json_u64_or_null(b, &f, "processed_insns", st->has_insns, st->insns);
		json_u64_or_null(b, &f, "limit", 1, st->limit ? st->limit : VERIFIER_INSN_LIMIT);
		json_u64_or_null(b, &f, "states", st->has_insns, st->total_states);
		json_u64_or_null(b, &f, "peak_states", st->has_insns, st->peak_states);
		json_u64_or_null(b, &f, "max_states_per_insn", st->has_insns,
				 st->max_states_per_insn);
		json_u64_or_null(b, &f, "verify_usec", st->has_time, st->verify_usec);
		json_str_or_null(b, &f, "error", p->loaded == 1 ? NULL : p->error);
		buf_put(b, "}", 1);
	}
	buf_put(b, "]", 1);
	json_key(b, &first, "configs");
	buf_put(b, "[", 1);
	for (int i = 0; i < r->nconfigs; i++) {
		const struct check_config *c = &r->configs[i];

		buf_printf(b, "%s{", i ? "," : "");
		f = 1;
		json_str_or_null(b, &f, "config", c->name);
		json_str_or_null(b, &f, "varies", c->what);
		json_key(b, &f, "loaded");
		buf_printf(b, c->loaded ? "true" : "false");
		json_key(b, &f, "seconds");
		buf_printf(b, "%.3f", c->seconds);
		json_str_or_null(b, &f, "error", c->loaded ? NULL : c->error);
		buf_put(b, "}", 1);
	}
	buf_put(b, "]", 1);
	json_u64_or_null(b, &first, "limit", 1,
			 most && most->st.limit ? most->st.limit : VERIFIER_INSN_LIMIT);
	json_u64_or_null(b, &first, "headroom_insns", 1, BPFCHECK_HEADROOM_INSNS);
	json_u64_or_null(b, &first, "max_processed_insns", most != NULL, most ? most->st.insns : 0);
	json_key(b, &first, "headroom_ok");
	buf_printf(b, bpfcheck_headroom_ok(r) ? "true" : "false");
	json_key(b, &first, "default_loads");
	buf_printf(b, bpfcheck_default_loads(r) ? "true" : "false");
	buf_printf(b, "}\n");
}

/* ---- text ------------------------------------------------------------------- */

static const struct check_prog *find_prog(const struct check_report *r, const char *config,
					  const char *program)
{
	for (int i = 0; i < r->nprogs; i++)
		if (!strcmp(r->progs[i].config, config) && !strcmp(r->progs[i].program, program))
			return &r->progs[i];
	return NULL;
}

void bpfcheck_render_text(const struct check_report *r, struct buf *b)
{
	const struct check_prog *most = most_insns(r);
	int width = 7, shown = 0;

	buf_printf(b, "kernel %s %s\n\nkernel features (memtrace needs Linux %s or newer):\n",
		   r->release, r->version, MEMTRACE_KERNEL_FLOOR);
	for (int i = 0; i < r->nfeatures; i++) {
		const struct kfeature *k = &r->features[i];
		char name[128];

		snprintf(name, sizeof(name), "%s%s%s%s", k->name, k->what ? " (" : "",
			 k->what ? k->what : "", k->what ? ")" : "");
		buf_printf(b, "  %-4s %-62s since %s%s\n",
			   k->present > 0 ? "yes"
			   : k->present	  ? "?"
					  : "no",
			   name, k->since, k->required ? "" : ", to attach");
	}
	for (int i = 0; i < r->nprogs; i++)
		if ((int)strlen(r->progs[i].program) > width)
			width = (int)strlen(r->progs[i].program);
	buf_printf(b,
		   "\nprocessed instructions/states of each program, by configuration "
		   "(limit %d a program):\n%-*s",
		   VERIFIER_INSN_LIMIT, width, "program");
	for (int c = 0; c < r->nconfigs; c++)
		buf_printf(b, " %14s", r->configs[c].name);
	buf_printf(b, "\n");
	/* the programs in the order they first appear */
	for (int i = 0; i < r->nprogs; i++) {
		const struct check_prog *p = &r->progs[i];
		int seen = 0;

		for (int k = 0; k < i && !seen; k++)
			seen = !strcmp(r->progs[k].program, p->program);
		if (seen)
			continue;
		buf_printf(b, "%-*s", width, p->program);
		for (int c = 0; c < r->nconfigs; c++) {
			const struct check_prog *q = find_prog(r, r->configs[c].name, p->program);
			char cell[32];

			if (!q)
				snprintf(cell, sizeof(cell), "-");
			else if (q->loaded < 0)
				snprintf(cell, sizeof(cell), "not tried");
			else if (!q->loaded)
				snprintf(cell, sizeof(cell), "REFUSED");
			else if (q->st.has_insns)
				snprintf(cell, sizeof(cell), "%" PRIu64 "/%" PRIu64, q->st.insns,
					 q->st.total_states);
			else
				snprintf(cell, sizeof(cell), "?");
			buf_printf(b, " %14s", cell);
		}
		buf_printf(b, "\n");
	}
	buf_printf(b, "\nconfigurations (load: wall time; verification: the verifier's time, "
		      "summed):\n");
	for (int c = 0; c < r->nconfigs; c++) {
		const struct check_config *cf = &r->configs[c];
		uint64_t usec = 0;

		for (int i = 0; i < r->nprogs; i++)
			if (r->progs[i].config == cf->name || !strcmp(r->progs[i].config, cf->name))
				usec += r->progs[i].st.verify_usec;
		buf_printf(b, "  %-14s %-8s load %6.3f s  verification %6.3f s  %s\n", cf->name,
			   cf->loaded ? "loaded" : "REFUSED", cf->seconds, (double)usec / 1e6,
			   cf->what);
	}
	for (int i = 0; i < r->nprogs; i++) {
		const struct check_prog *p = &r->progs[i];

		if (p->loaded == 1)
			continue;
		if (!shown++)
			buf_printf(b, "\nnot loaded:\n");
		buf_printf(b, "  %s %s: %s%s\n", p->config, p->program,
			   p->loaded ? "not tried: " : "",
			   p->error[0] ? p->error : "(no reason given)");
	}
	if (most)
		buf_printf(b,
			   "\nmost processed instructions: %" PRIu64 " (%s, %s) of %d allowed: "
			   "headroom %s (a quarter of the limit: %d)\n",
			   most->st.insns, most->program, most->config, VERIFIER_INSN_LIMIT,
			   bpfcheck_headroom_ok(r) ? "ok" : "SHORT", BPFCHECK_HEADROOM_INSNS);
	buf_printf(b, "the default configuration (%s) %s\n",
		   r->nconfigs ? r->configs[0].name : "dwarf",
		   bpfcheck_default_loads(r) ? "loads" : "does NOT load");
}

/* ---- loading ---------------------------------------------------------------- */

struct config_def {
	const char *name, *what;
	int walker, ids_off, comm, exe, follow, no_hold;
};

/*
 * Every value of every setting that changes code (the walker, stack ids,
 * the match, --follow-forks, the hold at exec that CAP_KILL allows) in at
 * least one load; the last three on the default walker (docs/usage.md).
 */
static const struct config_def configs[] = {
    {"dwarf", "the default: the DWARF walker", MT_WALK_DWARF, 0, 0, 0, 0, 0},
    {"fp", "--stack-walker fp", MT_WALK_FP, 0, 0, 0, 0, 0},
    {"kernel", "--stack-walker kernel", MT_WALK_KERNEL, 0, 0, 0, 0, 0},
    {"caller", "--stack-walker caller (the last fallback)", MT_WALK_CALLER, 0, 0, 0, 0, 0},
    {"dwarf-no-ids",
     "stacks in full (MEMTRACE_STACK_IDS=0), --follow-forks, no CAP_KILL (no hold at exec)",
     MT_WALK_DWARF, 1, 0, 0, 1, 1},
    {"dwarf-comm", "--comm with --follow-forks", MT_WALK_DWARF, 0, 1, 0, 1, 0},
    {"dwarf-exe", "--exe", MT_WALK_DWARF, 0, 0, 1, 0, 0},
};

static double now_seconds(void)
{
	return (double)time_monotonic_ns() / 1e9;
}

/* The row of program in configuration c, made when first seen. */
static struct check_prog *prog_row(struct check_report *r, const char *config, const char *program)
{
	struct check_prog *p;

	for (int i = 0; i < r->nprogs; i++)
		if (r->progs[i].config == config && !strcmp(r->progs[i].program, program))
			return &r->progs[i];
	r->progs = xrealloc(r->progs, (size_t)(r->nprogs + 1) * sizeof(*r->progs));
	p = &r->progs[r->nprogs++];
	memset(p, 0, sizeof(*p));
	p->config = config;
	snprintf(p->program, sizeof(p->program), "%s", program);
	p->loaded = -1;
	return p;
}

/*
 * One load of configuration c's object without the programs in refused
 * (names, NUL-separated): each program's verdict into r. 1 loaded; 0 a
 * program was refused (its name appended to refused); -1 the load failed
 * outside the verifier (c->error says why).
 */
static int load_once(struct check_report *r, struct check_config *c, const struct bpf_options *o,
		     struct buf *refused)
{
	struct memtrace_bpf *skel = memtrace_bpf__open();
	struct verifier_logs vl = {0};
	struct bpf_program *prog;
	char why[256];
	int rc, bad;

	if (!skel) {
		snprintf(c->error, sizeof(c->error), "cannot open the BPF object: %s",
			 strerror(errno));
		return -1;
	}
	rc = probes_configure(skel, o);
	bpf_object__for_each_program(prog, skel->obj)
	{
		for (size_t at = 0; !rc && at < refused->len;
		     at += strlen((char *)refused->data + at) + 1)
			if (!strcmp((char *)refused->data + at, bpf_program__name(prog)))
				rc = bpf_program__set_autoload(prog, false);
	}
	if (rc || verifier_logs_set(skel->obj, &vl)) {
		snprintf(c->error, sizeof(c->error), "cannot configure the BPF object");
		verifier_logs_free(&vl);
		memtrace_bpf__destroy(skel);
		return -1;
	}
	rc = memtrace_bpf__load(skel);
	bad = rc ? verifier_logs_refused(&vl, why, sizeof(why)) : -1;
	for (int i = 0; i < vl.n; i++) {
		struct check_prog *p = prog_row(r, c->name, vl.progs[i].name);

		verifier_parse_stats(vl.progs[i].buf, &p->st);
		if (!rc || (bad >= 0 && i < bad)) {
			p->loaded = 1;
		} else if (i == bad) {
			p->loaded = 0;
			snprintf(p->error, sizeof(p->error), "%s", why[0] ? why : strerror(-rc));
		} else {
			p->loaded = -1;
			snprintf(p->error, sizeof(p->error), "%s",
				 bad >= 0 ? "the load stopped at a program refused before it"
					  : strerror(-rc));
		}
	}
	if (!rc && (rc = probes_fill_stages(skel)))
		snprintf(c->error, sizeof(c->error), "cannot fill the stage program arrays: %s",
			 strerror(-rc));
	else if (rc && bad >= 0 && !c->error[0])
		snprintf(c->error, sizeof(c->error), "%s: %s", vl.progs[bad].name,
			 why[0] ? why : strerror(-rc));
	else if (rc && bad < 0)
		snprintf(c->error, sizeof(c->error), "cannot load the BPF programs: %s%s",
			 strerror(-rc),
			 rc == -EPERM ? " (memtraced needs root: CAP_BPF and CAP_PERFMON)" : "");
	if (bad >= 0)
		buf_put(refused, vl.progs[bad].name, strlen(vl.progs[bad].name) + 1);
	verifier_logs_free(&vl);
	memtrace_bpf__destroy(skel);
	return !rc ? 1 : bad >= 0 ? 0 : -1;
}

static void check_config(struct check_report *r, struct check_config *c, const struct config_def *d)
{
	struct bpf_options o = {
	    .stack_depth = 64,
	    .stack_walker = (uint32_t)d->walker,
	    .ring_buffer_bytes = 32u << 20,
	    .max_matches = 64,
	    .hold_exec = (uint32_t)!d->no_hold,
	    .stack_ids_off = (uint32_t)d->ids_off,
	    .match_follow = (uint32_t)d->follow,
	};
	struct buf refused = {0};
	double start = now_seconds();
	int rc, tries = 0;
	struct stat st;

	if (d->comm)
		o.match_comm = "memtracecheck";
	if (d->exe && !stat("/proc/self/exe", &st)) {
		/* the kernel's dev_t, as the exec tracepoint sees it */
		o.match_dev = (uint64_t)major(st.st_dev) << 20 | minor(st.st_dev);
		o.match_ino = st.st_ino;
	}
	/* a refused program left out, the rest again: each refusal is one more load */
	while ((rc = load_once(r, c, &o, &refused)) == 0 && ++tries < 16)
		;
	c->loaded = rc == 1 && !refused.len;
	c->seconds = now_seconds() - start;
	buf_free(&refused);
}

static void report_free(struct check_report *r)
{
	free(r->progs);
	free(r->configs);
}

int bpfcheck_run(int json)
{
	struct check_report r = {0};
	struct utsname u;
	struct buf out = {0};
	int rc;

	if (geteuid() != 0) {
		log_msg("--check must run as root (it loads BPF programs)");
		return 1;
	}
	verifier_quiet_libbpf();
	if (!uname(&u)) {
		snprintf(r.release, sizeof(r.release), "%s", u.release);
		snprintf(r.version, sizeof(r.version), "%s", u.version);
	}
	features_probe(r.features);
	r.nfeatures = FEATURES_COUNT;
	r.nconfigs = (int)ARRAY_SIZE(configs);
	r.configs = xcalloc(ARRAY_SIZE(configs), sizeof(*r.configs));
	for (size_t i = 0; i < ARRAY_SIZE(configs); i++) {
		r.configs[i].name = configs[i].name;
		r.configs[i].what = configs[i].what;
		check_config(&r, &r.configs[i], &configs[i]);
	}
	if (json)
		bpfcheck_render_json(&r, &out);
	else
		bpfcheck_render_text(&r, &out);
	fwrite(out.data, 1, out.len, stdout);
	fflush(stdout);
	rc = bpfcheck_default_loads(&r) ? 0 : 1;
	buf_free(&out);
	report_free(&r);
	return rc;
}
