// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * memtraced --check and the walkers' fallback, without a kernel: the
 * verifier's statistics line and last line parsed from logs as kernels write
 * them, the fallback order and what the daemon says of it, the kernel floor
 * line, and the JSON report's shape.
 */
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "common/util.h"
#include "daemon/attach/bpfcheck.h"
#include "daemon/attach/features.h"
#include "daemon/attach/verifier.h"
#include "daemon/attach/walker.h"
#include "memtrace/event.h"

/* A success at log level 4 (6.x: verification time and stack depth first). */
static const char *const log_ok = "verification time 25924 usec\n"
				  "stack depth 144+72+88+16\n"
				  "processed 38991 insns (limit 1000000) max_states_per_insn 7 "
				  "total_states 1932 peak_states 437 mark_read 0\n";

TEST(test_stats)
{
	struct verifier_stats st;

	CHECK(verifier_parse_stats(log_ok, &st) == 0);
	CHECK_EQ_U64(st.insns, 38991);
	CHECK_EQ_U64(st.limit, 1000000);
	CHECK_EQ_U64(st.max_states_per_insn, 7);
	CHECK_EQ_U64(st.total_states, 1932);
	CHECK_EQ_U64(st.peak_states, 437);
	CHECK_EQ_U64(st.mark_read, 0);
	CHECK_EQ_U64(st.verify_usec, 25924);
	CHECK(st.has_insns && st.has_time);
	/* 5.x: the same line, no newline at the end, no verification time */
	CHECK(verifier_parse_stats("processed 39 insns (limit 1000000) max_states_per_insn 0 "
				   "total_states 3 peak_states 3 mark_read 2",
				   &st) == 0);
	CHECK_EQ_U64(st.insns, 39);
	CHECK_EQ_U64(st.total_states, 3);
	CHECK_EQ_U64(st.mark_read, 2);
	CHECK(!st.has_time && st.verify_usec == 0);
	/* a kernel that drops a figure: the others still read */
	CHECK(verifier_parse_stats("processed 7 insns (limit 1000000) max_states_per_insn 1 "
				   "total_states 2 peak_states 2\n",
				   &st) == 0);
	CHECK_EQ_U64(st.peak_states, 2);
	CHECK_EQ_U64(st.mark_read, 0);
	/* no statistics: an empty log, an error alone */
	CHECK(verifier_parse_stats("", &st) == -1);
	CHECK(verifier_parse_stats("R1 invalid mem access 'scalar'\n", &st) == -1);
	CHECK(!st.has_insns);
}

TEST(test_last_line)
{
	char line[128];

	/* a success has none */
	CHECK(verifier_last_line(log_ok, line, sizeof(line)) == -1);
	CHECK(verifier_last_line("", line, sizeof(line)) == -1);
	/* the error before the statistics */
	CHECK(verifier_last_line("0: R1=ctx() R10=fp0\n"
				 "; return ctx->sp; @ memtrace.bpf.c:12\n"
				 "R1 invalid mem access 'scalar'  \n"
				 "verification time 12 usec\n"
				 "stack depth 0\n"
				 "processed 12 insns (limit 1000000) max_states_per_insn 0 "
				 "total_states 1 peak_states 1 mark_read 1\n",
				 line, sizeof(line)) == 0);
	CHECK_STR(line, "R1 invalid mem access 'scalar'");
	/* the complexity limit: its own sentence is the line, not the statistics */
	CHECK(verifier_last_line("BPF program is too large. Processed 1000001 insn\n"
				 "processed 1000001 insns (limit 1000000) max_states_per_insn 32 "
				 "total_states 51000 peak_states 9000 mark_read 300\n",
				 line, sizeof(line)) == 0);
	CHECK_STR(line, "BPF program is too large. Processed 1000001 insn");
	/* without a newline at the end, blank lines and libbpf's framing around */
	CHECK(verifier_last_line("-- BEGIN PROG LOAD LOG --\n\nunknown func bpf_loop#181\n\n"
				 "-- END PROG LOAD LOG --",
				 line, sizeof(line)) == 0);
	CHECK_STR(line, "unknown func bpf_loop#181");
	/* cut to the room given */
	CHECK(verifier_last_line("abcdefghij\n", line, 5) == 0);
	CHECK_STR(line, "abcd");
}

TEST(test_fallback_order)
{
	/* dwarf, then fp, then caller; kernel falls back as fp does */
	CHECK(walker_next(MT_WALK_DWARF) == MT_WALK_FP);
	CHECK(walker_next(MT_WALK_FP) == MT_WALK_CALLER);
	CHECK(walker_next(MT_WALK_CALLER) == -1);
	CHECK(walker_next(MT_WALK_KERNEL) == MT_WALK_FP);
	CHECK(walker_next(99) == -1);
	/* every walker reaches caller, and nothing after it: no loop */
	for (int w = 0; w <= MT_WALK_CALLER; w++) {
		int steps = 0, at = w;

		while (walker_next(at) >= 0 && steps < 10) {
			at = walker_next(at);
			steps++;
		}
		CHECK(at == MT_WALK_CALLER && steps < 4);
	}
	CHECK(walker_parse("caller") == MT_WALK_CALLER);
	CHECK(walker_parse("dwarf") == MT_WALK_DWARF);
	CHECK(walker_parse("fp") == MT_WALK_FP);
	CHECK(walker_parse("kernel") == MT_WALK_KERNEL);
	CHECK(walker_parse("DWARF") == -1 && walker_parse("") == -1);
	CHECK_STR(walker_name(MT_WALK_CALLER), "caller");
	CHECK_STR(walker_name(-1), "unknown");
}

TEST(test_reason)
{
	struct walker_refusal r[2] = {
	    {.walker = MT_WALK_DWARF, .program = "walk_dwarf", .line = "R1 invalid mem access"},
	    {.walker = MT_WALK_FP, .program = "walk_fp", .line = ""},
	};
	char out[512];

	walker_reason(0, r, 0, out, sizeof(out));
	CHECK_STR(out, "default");
	walker_reason(1, r, 0, out, sizeof(out));
	CHECK_STR(out, "chosen");
	walker_reason(0, r, 1, out, sizeof(out));
	CHECK_STR(out, "dwarf refused by the verifier: walk_dwarf: R1 invalid mem access");
	walker_reason(1, r, 2, out, sizeof(out));
	CHECK_STR(out, "dwarf (chosen) refused by the verifier: walk_dwarf: R1 invalid mem access; "
		       "fp refused by the verifier: walk_fp");
	walker_fallback_line(0, &r[0], MT_WALK_FP, out, sizeof(out));
	CHECK_STR(out, "the dwarf stack walker's programs do not load on this kernel (walk_dwarf: "
		       "R1 invalid mem access); using fp");
	walker_fallback_line(1, &r[1], MT_WALK_CALLER, out, sizeof(out));
	CHECK_STR(out, "the fp stack walker chosen (--stack-walker fp) does not load on this "
		       "kernel (walk_fp); using caller");
}

TEST(test_floor)
{
	struct kfeature f[3] = {
	    {.key = "bpf_loop", .name = "bpf_loop", .since = "5.17", .required = 1, .present = 0},
	    {.key = "attach_cookie",
	     .name = "uprobe cookies",
	     .since = "5.15",
	     .required = 1,
	     .present = 0},
	    {.key = "uprobe_pmu", .name = "perf uprobe PMU", .since = "4.17", .present = 0},
	};
	char out[256];

	CHECK(features_missing(f, 3, out, sizeof(out)) == 2);
	CHECK_STR(out, "bpf_loop, uprobe cookies");
	CHECK(features_floor_line(f, 3, "5.10.0-32-amd64", out, sizeof(out)) == 0);
	CHECK_STR(out, "this kernel (5.10.0-32-amd64) lacks bpf_loop, uprobe cookies; memtrace "
		       "needs Linux " MEMTRACE_KERNEL_FLOOR " or newer");
	/* a probe that could not tell is not a lack; nor is a feature only attaching uses */
	f[0].present = -1;
	f[1].present = 1;
	CHECK(features_missing(f, 3, out, sizeof(out)) == 0);
	CHECK_STR(out, "");
	CHECK(features_floor_line(f, 3, "6.1.0", out, sizeof(out)) == -1);
}

/* The text between the key's colon and the next ',' or '}' (a scalar). */
static const char *json_value(const char *json, const char *key, char *out, size_t outlen)
{
	char pat[64];
	const char *p;
	size_t n;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(json, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	n = strcspn(p, ",}");
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, p, n);
	out[n] = 0;
	return out;
}

TEST(test_json)
{
	struct check_prog progs[3] = {
	    {.config = "dwarf", .program = "walk_dwarf", .loaded = 1},
	    {.config = "fp", .program = "walk_fp", .loaded = 0, .error = "R1 \"bad\"\taccess"},
	    {.config = "fp", .program = "stage_emit", .loaded = -1, .error = "not tried"},
	};
	struct check_config configs[2] = {
	    {.name = "dwarf", .what = "the default", .loaded = 1, .seconds = 0.25},
	    {.name = "fp", .what = "--stack-walker fp", .loaded = 0, .error = "walk_fp: R1"},
	};
	struct check_report r = {.release = "6.1.0-28-amd64",
				 .version = "#1 SMP Debian",
				 .progs = progs,
				 .nprogs = 3,
				 .configs = configs,
				 .nconfigs = 2,
				 .nfeatures = 2};
	struct buf b = {0};
	char v[64];
	const char *json;
	int depth = 0, ok = 1;

	verifier_parse_stats(log_ok, &progs[0].st);
	r.features[0] =
	    (struct kfeature){.key = "bpf_loop", .name = "bpf_loop", .required = 1, .present = 1};
	r.features[1] = (struct kfeature){.key = "uprobe_pmu", .name = "uprobe PMU", .present = 0};
	bpfcheck_render_json(&r, &b);
	buf_put(&b, "", 1);
	json = (const char *)b.data;
	/* one object, brackets balanced outside strings, no raw control character */
	for (const char *p = json, *in = NULL; *p; p++) {
		if (in) {
			if (*p == '\\')
				p++;
			else if (*p == '"')
				in = NULL;
			else if ((unsigned char)*p < 0x20)
				ok = 0;
			continue;
		}
		if (*p == '"')
			in = p;
		else if (*p == '{' || *p == '[')
			depth++;
		else if (*p == '}' || *p == ']')
			ok &= --depth >= 0;
	}
	CHECK(ok && depth == 0 && json[0] == '{');
	CHECK(strstr(json, "\"kernel\":{\"release\":\"6.1.0-28-amd64\",\"version\":\"#1 SMP "
			   "Debian\"}"));
	CHECK(strstr(json, "\"features\":{\"bpf_loop\":true,\"uprobe_pmu\":false}"));
	CHECK(strstr(json, "\"features_required\":[\"bpf_loop\"]"));
	CHECK(strstr(json, "{\"config\":\"dwarf\",\"program\":\"walk_dwarf\",\"loaded\":true,"
			   "\"tried\":true,\"processed_insns\":38991,\"limit\":1000000,"
			   "\"states\":1932,\"peak_states\":437,\"max_states_per_insn\":7,"
			   "\"verify_usec\":25924,\"error\":null}"));
	CHECK(strstr(json, "\"program\":\"walk_fp\",\"loaded\":false,\"tried\":true,"
			   "\"processed_insns\":null,\"limit\":1000000,\"states\":null"));
	CHECK(strstr(json, "\"error\":\"R1 \\\"bad\\\"\\u0009access\""));
	CHECK(strstr(json, "\"program\":\"stage_emit\",\"loaded\":false,\"tried\":false"));
	CHECK(strstr(json, "\"configs\":[{\"config\":\"dwarf\",\"varies\":\"the default\","
			   "\"loaded\":true,\"seconds\":0.250,\"error\":null},{\"config\":\"fp\","
			   "\"varies\":\"--stack-walker fp\",\"loaded\":false,\"seconds\":0.000,"
			   "\"error\":\"walk_fp: R1\"}]"));
	CHECK_STR(json_value(json, "headroom_ok", v, sizeof(v)), "true");
	CHECK_STR(json_value(json, "default_loads", v, sizeof(v)), "true");
	CHECK_STR(json_value(json, "max_processed_insns", v, sizeof(v)), "38991");
	CHECK_STR(json_value(json, "headroom_insns", v, sizeof(v)), "250000");
	CHECK_STR(json_value(json, "kernel_floor", v, sizeof(v)), "\"" MEMTRACE_KERNEL_FLOOR "\"");
	buf_free(&b);

	/* past a quarter of the limit, and the default refused */
	progs[0].st.insns = BPFCHECK_HEADROOM_INSNS + 1;
	configs[0].loaded = 0;
	CHECK(!bpfcheck_headroom_ok(&r));
	CHECK(!bpfcheck_default_loads(&r));
	/* a program refused counts in no headroom */
	progs[0].loaded = 0;
	CHECK(bpfcheck_headroom_ok(&r));
	bpfcheck_render_json(&r, &b);
	buf_put(&b, "", 1);
	json = (const char *)b.data;
	CHECK_STR(json_value(json, "default_loads", v, sizeof(v)), "false");
	CHECK_STR(json_value(json, "max_processed_insns", v, sizeof(v)), "null");
	buf_free(&b);

	/* the text names the refusal and the verdict */
	bpfcheck_render_text(&r, &b);
	buf_put(&b, "", 1);
	CHECK(strstr((const char *)b.data, "fp walk_fp: R1 \"bad\"\taccess"));
	CHECK(strstr((const char *)b.data, "the default configuration (dwarf) does NOT load"));
	buf_free(&b);
}

UNIT_MAIN()
