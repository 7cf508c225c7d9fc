// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of the renderers and the JSON writer. The JSON of a known snapshot is
 * compared with whole expected strings, so that renaming or dropping a key
 * scripts rely on fails here; text output is checked line by line.
 */
#include "unit.h"

#include "ctl/render/json.h"
#include "ctl/render/report.h"
#include "ctl/render/scan.h"
#include "ctl/render/status.h"

#include <math.h>
#include <stdlib.h>

static struct snap_frame known_frames[] = {
    {0x55550001234, 0x1234, "leak_some", "/usr/bin/demo", "demo.c", 42, 0},
    {0x55550001100, 0x1100, "main", "/usr/bin/demo", NULL, 0, 0},
    {0x7f0000027249, 0x27249, NULL, "/lib/x86_64-linux-gnu/libc.so.6", NULL, 0, 0},
    {0x7fff00001234, 0, NULL, NULL, NULL, 0, 0},
};
static struct snap_frame *known_frame_refs[] = {&known_frames[0], &known_frames[1],
						&known_frames[2], &known_frames[3]};

static struct snap_probe_site known_sites[] = {
    {"malloc", "/lib/x86_64-linux-gnu/libc.so.6", 0x98930, 0, "push r12", NULL},
    {"reallocarray", "/lib/x86_64-linux-gnu/libc.so.6", 0x9a7e0, 0, "mov rax, rsi",
     "argument 2 is overwritten"},
    {"free", "/lib/x86_64-linux-gnu/libc.so.6", 0x98ef0, 3, "je 0x98fb8", NULL},
};

static struct snap_target known_targets[] = {
    {
	.pid = 1234,
	.state = SNAP_TARGET_ATTACHED,
	.exit_status = -1,
	.probes = 10,
	.command = "./demo --leak",
	.allocator = "/lib/x86_64-linux-gnu/libc.so.6",
	.traced_ns = 62500000000ull,
	.nsites = 3,
	.sites = known_sites,
    },
    {
	.pid = 77,
	.state = SNAP_TARGET_EXITED,
	.exit_status = 256, /* exit(1) */
	.probes = 0,
	.command = "sh -c \"x\"\n\x1b[31m",
	.allocator = NULL,
	.traced_ns = 1500000000ull,
    },
};

static struct snap_stack known_stacks[] = {
    {
	.pid = 1234,
	.nframes = 4,
	.frames = known_frame_refs,
	.t.allocations = 32,
	.t.bytes_allocated = 2097152,
	.t.frees = 16,
	.t.bytes_freed = 1048576,
	.t.live_allocations = 16,
	.t.live_bytes = 1048576,
	.t.peak_live_bytes = 1572864,
    },
    {
	.pid = 77,
	.t.allocations = 1,
	.t.bytes_allocated = 100,
	.t.live_allocations = 1,
	.t.live_bytes = 100,
	.t.peak_live_bytes = 100,
    },
};

/* Static storage: nothing here is freed. */
static void build_known(struct snapshot *s, int lost)
{
	memset(s, 0, sizeof(*s));
	s->version = SNAPSHOT_VERSION;
	s->tracer_version = "0.1.0";
	s->uptime_ns = 3723500000000ull;
	s->events_received = 5000;
	if (lost) {
		s->events_lost[2] = 3;
		s->events_lost[4] = 1;
	}
	s->stacks_total = 9;
	s->totals = (struct mt_counters){
	    .allocations = 48,
	    .frees = 16,
	    .bytes_allocated = 3145828,
	    .bytes_freed = 1048576,
	    .live_allocations = 32,
	    .live_bytes = 104857600,
	    .peak_live_bytes = 104857700,
	    .peak_time_ns = 12345000000ull,
	    .unknown_frees = 2,
	    .missed_frees = 1,
	    .missed_free_bytes = 64,
	    .untracked_allocations = 0,
	};
	known_targets[0].counters = s->totals;
	memset(&known_targets[1].counters, 0, sizeof(known_targets[1].counters));
	known_targets[1].counters.allocations = 1;
	s->ntargets = 2;
	s->targets = known_targets;
	s->nstacks = 2;
	s->stacks = known_stacks;
}

typedef void render_fn(struct buf *out, const struct snapshot *s, const struct render_opts *o);

/* Render into a NUL-terminated string the caller frees. */
static char *render_str(render_fn *fn, const struct snapshot *s, const struct render_opts *o)
{
	struct buf b = {0};

	fn(&b, s, o);
	buf_put(&b, "", 1);
	return (char *)b.data;
}

/* stats of one snapshot: its sites and the rest. */
static void render_stats_one(struct buf *out, const struct snapshot *s, const struct render_opts *o)
{
	render_stats(out, s, s, o);
}

static int has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (!strncmp(p, line, n) && (p[n] == '\n' || p[n] == '\0'))
			return 1;
	fprintf(stderr, "no line \"%s\" in:\n%s", line, text);
	return 0;
}

static int starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

#define COUNTERS_JSON                                                                              \
	"\"allocations\":48,\"frees\":16,\"bytes_allocated\":3145828,\"bytes_freed\":1048576,"     \
	"\"live_allocations\":32,\"live_bytes\":104857600,\"peak_live_bytes\":104857700,"          \
	"\"peak_time\":12.345,\"unknown_frees\":2,\"missed_frees\":1,\"missed_free_bytes\":64,"    \
	"\"untracked_allocations\":0,\"stackless_allocations\":0,\"temporary_allocations\":0,"     \
	"\"temporary_bytes\":0,\"inherited_allocations\":0,\"inherited_bytes\":0,"                 \
	"\"inherited_released\":0,\"inherited_released_bytes\":0"

#define EVENTS_JSON                                                                                \
	"\"events_received\":5000,\"events_lost\":4,\"events_lost_by_kind\":{\"alloc\":0,"         \
	"\"free\":3,\"realloc_enter\":0,\"realloc\":1}"

/* The histogram, allocator mix and sites of stats (no histogram in build_known). */
#define SITES_JSON                                                                                 \
	"[{\"name\":\"leak_some\",\"function\":\"leak_some\",\"module\":\"/usr/bin/demo\","        \
	"\"file\":\"demo.c\",\"line\":42,\"allocations\":32,\"bytes_allocated\":2097152,"          \
	"\"live_allocations\":16,\"live_bytes\":1048576},{\"name\":null,\"allocations\":1,"        \
	"\"bytes_allocated\":100,\"live_allocations\":1,\"live_bytes\":100}]"
#define STATS_EXTRA_JSON                                                                           \
	"\"size_histogram\":[],\"allocator_mix\":{},\"top_sites_by_bytes_allocated\":" SITES_JSON  \
	",\"top_sites_by_allocations\":" SITES_JSON

TEST(test_stats_json)
{
	struct render_opts o = {.format = RENDER_JSON};
	struct snapshot s;
	char *out;

	build_known(&s, 1);
	out = render_str(render_stats_one, &s, &o);
	CHECK_STR(
	    out,
	    "{" COUNTERS_JSON "," EVENTS_JSON ",\"stacks_total\":9,\"targets\":["
	    "{\"pid\":1234,\"command\":\"./demo --leak\",\"state\":\"attached\","
	    "\"exit_code\":null,\"exit_signal\":null,"
	    "\"allocator\":\"/lib/x86_64-linux-gnu/libc.so.6\",\"note\":null,\"probes\":10,"
	    "\"traced_seconds\":62.5,\"counters\":{" COUNTERS_JSON "}},"
	    "{\"pid\":77,\"command\":\"sh -c \\\"x\\\"\\n\\u001b[31m\",\"state\":\"exited\","
	    "\"exit_code\":1,\"exit_signal\":null,\"allocator\":null,\"note\":null,\"probes\":0,"
	    "\"traced_seconds\":1.5,\"counters\":{\"allocations\":1,\"frees\":0,"
	    "\"bytes_allocated\":0,\"bytes_freed\":0,\"live_allocations\":0,\"live_bytes\":0,"
	    "\"peak_live_bytes\":0,\"peak_time\":0.0,\"unknown_frees\":0,\"missed_frees\":0,"
	    "\"missed_free_bytes\":0,\"untracked_allocations\":0,\"stackless_allocations\":0,"
	    "\"temporary_allocations\":0,\"temporary_bytes\":0,\"inherited_allocations\":0,"
	    "\"inherited_bytes\":0,\"inherited_released\":0,\"inherited_released_bytes\":0}}]"
	    "," STATS_EXTRA_JSON "}\n");
	free(out);
}

TEST(test_report_json)
{
	struct render_opts o = {.format = RENDER_JSON};
	struct snapshot s;
	char *out;

	build_known(&s, 1);
	out = render_str(render_report, &s, &o);
	CHECK_STR(out,
		  "{\"pid\":null,\"totals\":{" COUNTERS_JSON "}," EVENTS_JSON ",\"stacks_total\":9,"
		  "\"truncated_stacks\":[],\"entries\":["
		  "{\"pid\":1234,\"live_bytes\":1048576,\"live_allocations\":16,\"allocations\":32,"
		  "\"bytes_allocated\":2097152,\"frees\":16,\"bytes_freed\":1048576,"
		  "\"peak_live_bytes\":1572864,\"temporary_allocations\":0,\"temporary_bytes\":0,"
		  "\"frames\":["
		  "{\"address\":5863972540980,\"offset\":4660,\"function\":\"leak_some\","
		  "\"module\":\"/usr/bin/demo\",\"file\":\"demo.c\",\"line\":42,\"inlined\":false},"
		  "{\"address\":5863972540672,\"offset\":4352,\"function\":\"main\","
		  "\"module\":\"/usr/bin/demo\",\"file\":null,\"line\":null,\"inlined\":false},"
		  "{\"address\":139637976887881,\"offset\":160329,\"function\":null,"
		  "\"module\":\"/lib/x86_64-linux-gnu/libc.so.6\",\"file\":null,\"line\":null,"
		  "\"inlined\":false},"
		  "{\"address\":140733193392692,\"offset\":null,\"function\":null,"
		  "\"module\":null,\"file\":null,\"line\":null,\"inlined\":false}],"
		  "\"stack_end\":\"complete\"},"
		  "{\"pid\":77,\"live_bytes\":100,\"live_allocations\":1,\"allocations\":1,"
		  "\"bytes_allocated\":100,\"frees\":0,\"bytes_freed\":0,\"peak_live_bytes\":100,"
		  "\"temporary_allocations\":0,\"temporary_bytes\":0,"
		  "\"frames\":[],\"stack_end\":\"complete\"}]}\n");
	free(out);

	/* Limited to one pid: its counters are the totals. */
	o.pid = 77;
	s.nstacks = 0;
	out = render_str(render_report, &s, &o);
	CHECK(starts_with(out, "{\"pid\":77,\"totals\":{\"allocations\":1,\"frees\":0,"));
	CHECK(strstr(out, "\"entries\":[]}\n") != NULL);
	free(out);
}

TEST(test_status_json)
{
	struct render_opts o = {.format = RENDER_JSON};
	struct snapshot s;
	char *out;

	build_known(&s, 1);
	known_targets[1].exit_status = 9; /* killed by SIGKILL */
	out = render_str(render_status, &s, &o);
	known_targets[1].exit_status = 256;
	CHECK_STR(out,
		  "{\"tracer_version\":\"0.1.0\",\"uptime\":3723.5," EVENTS_JSON
		  ",\"stacks_total\":9,\"truncated_stacks\":[],\"unwind\":null,\"targets\":["
		  "{\"pid\":1234,\"command\":\"./demo --leak\",\"state\":\"attached\","
		  "\"exit_code\":null,\"exit_signal\":null,"
		  "\"allocator\":\"/lib/x86_64-linux-gnu/libc.so.6\",\"note\":null,\"probes\":10,"
		  "\"probe_sites\":[{\"function\":\"malloc\",\"object\":"
		  "\"/lib/x86_64-linux-gnu/libc.so.6\",\"offset\":624944,\"at\":0,"
		  "\"instruction\":\"push r12\",\"why\":null,\"via\":null},"
		  "{\"function\":\"reallocarray\",\"object\":\"/lib/x86_64-linux-gnu/libc.so.6\","
		  "\"offset\":632800,\"at\":0,\"instruction\":\"mov rax, rsi\","
		  "\"why\":\"argument 2 is overwritten\",\"via\":null},"
		  "{\"function\":\"free\",\"object\":\"/lib/x86_64-linux-gnu/libc.so.6\","
		  "\"offset\":626416,\"at\":3,\"instruction\":\"je 0x98fb8\","
		  "\"why\":null,\"via\":null}],"
		  "\"traced_seconds\":62.5},"
		  "{\"pid\":77,\"command\":\"sh -c \\\"x\\\"\\n\\u001b[31m\","
		  "\"state\":\"exited\",\"exit_code\":null,\"exit_signal\":9,"
		  "\"allocator\":null,\"note\":null,\"probes\":0,\"probe_sites\":[],"
		  "\"traced_seconds\":1.5}]}\n");
	free(out);
}

TEST(test_pretty_json)
{
	struct render_opts o = {.format = RENDER_JSON, .pretty = 1};
	struct snapshot s = {0};
	char *out;

	out = render_str(render_status, &s, &o);
	CHECK_STR(out, "{\n"
		       "  \"tracer_version\": null,\n"
		       "  \"uptime\": 0.0,\n"
		       "  \"events_received\": 0,\n"
		       "  \"events_lost\": 0,\n"
		       "  \"events_lost_by_kind\": {\n"
		       "    \"alloc\": 0,\n"
		       "    \"free\": 0,\n"
		       "    \"realloc_enter\": 0,\n"
		       "    \"realloc\": 0\n"
		       "  },\n"
		       "  \"stacks_total\": 0,\n"
		       "  \"truncated_stacks\": [],\n"
		       "  \"unwind\": null,\n"
		       "  \"targets\": []\n"
		       "}\n");
	free(out);
}

TEST(test_stats_text)
{
	struct render_opts o = {.format = RENDER_TEXT};
	struct snapshot s;
	char *out;

	build_known(&s, 1);
	out = render_str(render_stats_one, &s, &o);
	CHECK(has_line(out, "allocations            48"));
	CHECK(has_line(out, "frees                  16"));
	CHECK(has_line(out, "bytes_allocated        3145828 (3.0 MiB)"));
	CHECK(has_line(out, "bytes_freed            1048576 (1.0 MiB)"));
	CHECK(has_line(out, "live_allocations       32"));
	CHECK(has_line(out, "live_bytes             104857600 (100.0 MiB)"));
	CHECK(has_line(out, "peak_live_bytes        104857700 (100.0 MiB)"));
	CHECK(has_line(out, "peak_time              12.345 s"));
	CHECK(has_line(out, "unknown_frees          2"));
	CHECK(has_line(out, "missed_frees           1"));
	CHECK(has_line(out, "missed_free_bytes      64 (64 B)"));
	CHECK(has_line(out, "untracked_allocations  0"));
	CHECK(has_line(out, "events_received        5000"));
	CHECK(has_line(out, "events_lost            4 (alloc 0, free 3, realloc_enter 0, "
			    "realloc 1)"));
	CHECK(has_line(out, "warning: 4 events were lost (ring buffer full); frees, live and "
			    "peak numbers may be distorted"));
	CHECK(has_line(out, "target 1234 attached, live 100.0 MiB in 32 blocks: ./demo --leak"));
	/* The escape sequence in the command line does not reach the terminal. */
	CHECK(has_line(out, "target 77 exited(1), live 0 B in 0 blocks: sh -c \"x\"??[31m"));
	free(out);

	build_known(&s, 0);
	out = render_str(render_stats_one, &s, &o);
	CHECK(has_line(out, "events_lost            0"));
	CHECK(!strstr(out, "warning"));
	CHECK(!strstr(out, "inherited")); /* no forked child: not a number of this trace */
	free(out);

	/* a forked child's: the longest name still has a space before its number */
	s.totals.inherited_released = 3;
	s.totals.inherited_released_bytes = 2760;
	out = render_str(render_stats_one, &s, &o);
	CHECK(has_line(out, "inherited_released     3"));
	CHECK(has_line(out, "inherited_released_bytes 2760 (2.7 KiB)"));
	free(out);
}

TEST(test_report_text)
{
	struct render_opts o = {.format = RENDER_TEXT};
	struct snapshot s;
	char *out;

	build_known(&s, 0);
	out = render_str(render_report, &s, &o);
	CHECK_STR(out, "total: live 100.0 MiB in 32 blocks, peak 100.0 MiB, allocated 3.0 MiB "
		       "in 48 calls, freed 1.0 MiB in 16; 2 of 9 stacks shown\n"
		       "\n"
		       "#1  live 1.0 MiB in 16 blocks  (allocated 2.0 MiB in 32 calls, freed "
		       "1.0 MiB in 16)  pid 1234\n"
		       "    leak_some (demo+0x1234) at demo.c:42\n"
		       "    main (demo+0x1100)\n"
		       "    libc.so.6+0x27249\n"
		       "    0x7fff00001234\n"
		       "\n"
		       "#2  live 100 B in 1 blocks  (allocated 100 B in 1 calls, freed 0 B in 0)"
		       "  pid 77\n"
		       "    (no stack)\n");
	free(out);

	/* One pid, sorted by peak, events lost. */
	build_known(&s, 1);
	s.nstacks = 1;
	o.pid = 1234;
	o.sort = MT_SORT_PEAK;
	out = render_str(render_report, &s, &o);
	CHECK(has_line(out, "pid 1234: live 100.0 MiB in 32 blocks, peak 100.0 MiB, allocated "
			    "3.0 MiB in 48 calls, freed 1.0 MiB in 16; 1 stacks shown"));
	CHECK(has_line(out, "warning: 4 events were lost (ring buffer full); frees, live and "
			    "peak numbers may be distorted"));
	CHECK(has_line(out, "#1  live 1.0 MiB in 16 blocks  (allocated 2.0 MiB in 32 calls, "
			    "freed 1.0 MiB in 16)  peak 1.5 MiB"));
	free(out);
}

TEST(test_status_text)
{
	struct render_opts o = {.format = RENDER_TEXT};
	struct snapshot s;
	char *out;

	build_known(&s, 0);
	out = render_str(render_status, &s, &o);
	CHECK_STR(out, "memtraced 0.1.0, up 1h 02m 03s: 5000 events received, 0 lost\n"
		       "PID   STATE      PROBES  TRACED  ALLOCATOR  COMMAND\n"
		       "1234  attached   10      1m 02s  libc.so.6  ./demo --leak\n"
		       "77    exited(1)  0       1.5s    -          sh -c \"x\"??[31m\n");
	free(out);

	memset(&s, 0, sizeof(s));
	s.uptime_ns = 90061000000000ull;
	out = render_str(render_status, &s, &o);
	CHECK_STR(out, "memtraced, up 1d 01h 01m: 0 events received, 0 lost\nno targets\n");
	free(out);
}

/* Whole-host mode (section SEC_MATCH): status and stats say what matches and what was not traced.
 */
TEST(test_match_render)
{
	struct render_opts text = {.format = RENDER_TEXT}, json = {.format = RENDER_JSON};
	struct snap_match m = {
	    .what = "--comm postgres", .max_targets = 8, .traced = 7, .over_limit = 3};
	struct snapshot s;
	char *out;

	build_known(&s, 0);
	s.match = &m;
	out = render_str(render_status, &s, &text);
	CHECK(has_line(out, "whole-host mode: --comm postgres, a match's forks included; 7 traced "
			    "now, at most 8 at once (--max-targets)"));
	CHECK(has_line(out, "warning: 3 matching processes were not traced: --max-targets were "
			    "traced already (matches_over_limit)"));
	free(out);
	out = render_str(render_stats_one, &s, &text);
	CHECK(has_line(out, "matches_over_limit     3"));
	free(out);
	out = render_str(render_status, &s, &json);
	CHECK(strstr(out, ",\"match\":{\"what\":\"--comm postgres\",\"max_targets\":8,"
			  "\"traced\":7,\"matches_over_limit\":3},\"targets\":[") != NULL);
	free(out);
	out = render_str(render_stats_one, &s, &json);
	CHECK(strstr(out, "\"matches_over_limit\":3}") != NULL);
	free(out);
	/* none over the limit: no warning, the figure still there */
	m.over_limit = 0;
	out = render_str(render_status, &s, &text);
	CHECK(!strstr(out, "warning"));
	free(out);
	out = render_str(render_stats_one, &s, &text);
	CHECK(has_line(out, "matches_over_limit     0"));
	free(out);
	/* not whole-host: nothing of it */
	s.match = NULL;
	out = render_str(render_stats_one, &s, &text);
	CHECK(!strstr(out, "matches_over_limit"));
	free(out);
}

/* The stack walker (section SEC_WALKER): status, stats and report say which and why. */
TEST(test_walker_render)
{
	struct render_opts text = {.format = RENDER_TEXT}, json = {.format = RENDER_JSON};
	struct snap_walker wk = {.name = "fp", .reason = "chosen"};
	struct snapshot s;
	char *out;

	build_known(&s, 0);
	out = render_str(render_status, &s, &text); /* a snapshot before it: nothing */
	CHECK(!strstr(out, "stack walker"));
	free(out);
	out = render_str(render_report, &s, &json);
	CHECK(!strstr(out, "stack_walker"));
	free(out);
	s.walker = &wk;
	out = render_str(render_status, &s, &text);
	CHECK(has_line(out, "stack walker: fp (chosen)"));
	free(out);
	out = render_str(render_report, &s, &text);
	CHECK(has_line(out, "stack walker: fp (chosen)"));
	free(out);
	out = render_str(render_stats_one, &s, &text);
	CHECK(has_line(out, "stack_walker           fp (chosen)"));
	free(out);
	wk = (struct snap_walker){
	    .name = "caller",
	    .reason = "dwarf refused by the verifier: walk_dwarf: R1 \"x\"; fp refused by the "
		      "verifier: walk_fp",
	    .refused = 2};
	out = render_str(render_status, &s, &json);
	CHECK(strstr(out, "\"stack_walker\":{\"name\":\"caller\",\"reason\":\"dwarf refused by "
			  "the verifier: walk_dwarf: R1 \\\"x\\\"; fp refused by the verifier: "
			  "walk_fp\",\"refused\":2}") != NULL);
	free(out);
	out = render_str(render_stats_one, &s, &json);
	CHECK(strstr(out, "\"stack_walker\":{\"name\":\"caller\"") != NULL);
	free(out);
	out = render_str(render_report, &s, &json);
	CHECK(strstr(out, "\"stack_walker\":{\"name\":\"caller\"") != NULL);
	free(out);
	s.walker = NULL;
}

static char *escaped(const char *s, size_t len)
{
	struct buf b = {0};

	json_escape(&b, s, len);
	buf_put(&b, "", 1);
	return (char *)b.data;
}

#define CHECK_ESCAPE(in, want)                                                                     \
	do {                                                                                       \
		char *got_ = escaped(in, sizeof(in) - 1);                                          \
		CHECK_STR(got_, want);                                                             \
		free(got_);                                                                        \
	} while (0)

TEST(test_json_escape)
{
	CHECK_ESCAPE("", "\"\"");
	CHECK_ESCAPE("plain /path", "\"plain /path\"");
	CHECK_ESCAPE("q\"b\\", "\"q\\\"b\\\\\"");
	CHECK_ESCAPE("\n\r\t\b\f", "\"\\n\\r\\t\\b\\f\"");
	CHECK_ESCAPE("\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"");
	CHECK_ESCAPE("a\0b", "\"a\\u0000b\"");
	/* Valid UTF-8 passes through, all of 2, 3 and 4 bytes. */
	CHECK_ESCAPE("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
		     "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
	/* Line and paragraph separators are escaped for JavaScript's sake. */
	CHECK_ESCAPE("\xe2\x80\xa8\xe2\x80\xa9", "\"\\u2028\\u2029\"");
	/* Each byte of invalid UTF-8 becomes one U+FFFD. */
	CHECK_ESCAPE("\xff", "\"\\ufffd\"");
	CHECK_ESCAPE("a\x80z", "\"a\\ufffdz\"");
	CHECK_ESCAPE("\xc0\xaf", "\"\\ufffd\\ufffd\"");			      /* overlong '/' */
	CHECK_ESCAPE("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");	      /* surrogate */
	CHECK_ESCAPE("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* > U+10FFFF */
	CHECK_ESCAPE("\xe2\x82", "\"\\ufffd\\ufffd\"");			      /* cut short */
	CHECK_ESCAPE("\xe2\x82x", "\"\\ufffd\\ufffdx\"");
}

TEST(test_json_writer)
{
	struct json_writer w;
	struct buf b = {0};

	json_init(&w, &b, 0);
	json_begin_array(&w);
	json_u64(&w, UINT64_MAX);
	json_i64(&w, INT64_MIN);
	json_double(&w, 1.5);
	json_double(&w, 2);
	json_double(&w, 0.1);
	json_double(&w, 1e21);
	json_double(&w, -0.0);
	json_double(&w, NAN);
	json_double(&w, INFINITY);
	json_bool(&w, 1);
	json_bool(&w, 0);
	json_string(&w, NULL);
	json_string_len(&w, "abc", 2);
	json_begin_object(&w);
	json_end_object(&w);
	json_begin_array(&w);
	json_end_array(&w);
	json_begin_object(&w);
	json_kv_u64(&w, "a\"", 1);
	json_key(&w, "b");
	json_begin_array(&w);
	json_null(&w);
	json_end_array(&w);
	json_end_object(&w);
	json_end_array(&w);
	buf_put(&b, "", 1);
	CHECK_STR((char *)b.data, "[18446744073709551615,-9223372036854775808,1.5,2.0,0.1,1e+21,"
				  "-0.0,null,null,true,false,null,\"ab\",{},[],"
				  "{\"a\\\"\":1,\"b\":[null]}]");
	CHECK_EQ_U64(w.depth, 0);
	buf_free(&b);

	json_init(&w, &b, 1);
	json_begin_object(&w);
	json_key(&w, "list");
	json_begin_array(&w);
	json_u64(&w, 1);
	json_begin_object(&w);
	json_kv_string(&w, "k", "v");
	json_end_object(&w);
	json_end_array(&w);
	json_kv_double(&w, "x", 0.25);
	json_end_object(&w);
	buf_put(&b, "", 1);
	CHECK_STR((char *)b.data, "{\n"
				  "  \"list\": [\n"
				  "    1,\n"
				  "    {\n"
				  "      \"k\": \"v\"\n"
				  "    }\n"
				  "  ],\n"
				  "  \"x\": 0.25\n"
				  "}");
	buf_free(&b);
}

/* leaks --unreachable: the header line, the suppressions, the entries; the JSON's keys. */
static void build_scan(struct snapshot *s, struct snap_scan_entry *e,
		       struct snap_scan_suppression *p, uint32_t *pids)
{
	build_known(s, 0);
	s->kind = SNAP_SCAN;
	s->scan.f = (struct snap_scan_figures){.targets = 1,
					       .threads = 3,
					       .pause_ns = 12345678,
					       .scan_ns = 45000000,
					       .max_pause_ns = 1000000000,
					       .bytes_scanned = 3 << 20,
					       .mappings = 24,
					       .live_blocks = 26,
					       .live_bytes = 1600,
					       .blocks = {5, 6, 4},
					       .bytes = {240, 240, 672},
					       .suppressed_blocks = 1,
					       .suppressed_bytes = 16,
					       .entries_total = 3};
	e[0] = (struct snap_scan_entry){
	    .stack = 0, .kind = SNAP_LEAK_DIRECT, .blocks = 5, .bytes = 240};
	e[1] = (struct snap_scan_entry){
	    .stack = 1, .kind = SNAP_LEAK_INDIRECT, .blocks = 6, .bytes = 240};
	s->scan.entries = e;
	s->scan.nentries = 2;
	p[0] = (struct snap_scan_suppression){.pattern = "^libfoo", .blocks = 1, .bytes = 16};
	s->scan.suppressions = p;
	s->scan.nsuppressions = 1;
	pids[0] = 1234;
	s->scan.pids = pids;
	s->scan.npids = 1;
}

TEST(test_scan_text)
{
	struct snapshot s;
	struct snap_scan_entry e[2];
	struct snap_scan_suppression p[1];
	uint32_t pids[1];
	struct render_opts o = {0};
	char *text;

	build_scan(&s, e, p, pids);
	text = render_str(render_scan, &s, &o);
	CHECK(has_line(
	    text, "scan of pid 1234: stood still 12.3 ms, 3.0 MiB scanned in 3 threads; 26 "
		  "live blocks: direct 5 blocks (240 B), indirect 6 blocks (240 B), "
		  "possible 4 blocks (672 B); 2 of 3 entries, direct first, most bytes first"));
	CHECK(has_line(text, "suppressed 1 block (16 B): leak:^libfoo 1 block (16 B)"));
	CHECK(has_line(text, "#1  direct: 5 blocks, 240 B"));
	CHECK(has_line(text, "#2  indirect: 6 blocks, 240 B"));
	CHECK(has_line(text, "    leak_some (demo+0x1234) at demo.c:42"));
	free(text);
}

TEST(test_scan_json)
{
	struct snapshot s;
	struct snap_scan_entry e[2];
	struct snap_scan_suppression p[1];
	uint32_t pids[1];
	struct render_opts o = {.format = RENDER_JSON};
	char *text;

	build_scan(&s, e, p, pids);
	text = render_str(render_scan, &s, &o);
	CHECK(starts_with(text,
			  "{\"scan\":{\"pids\":[1234],\"targets\":1,\"threads\":3,"
			  "\"pause_seconds\":0.012345678,\"scan_seconds\":0.045,"
			  "\"max_pause_seconds\":1.0,\"bytes_scanned\":3145728,"
			  "\"bytes_unreadable\":0,\"mappings\":24,\"live_blocks\":26,"
			  "\"live_bytes\":1600,\"direct\":{\"blocks\":5,\"bytes\":240},"
			  "\"indirect\":{\"blocks\":6,\"bytes\":240},\"possible\":{"
			  "\"blocks\":4,\"bytes\":672},\"suppressed\":{\"blocks\":1,\"bytes\":"
			  "16,\"suppressions\":[{\"pattern\":\"^libfoo\",\"blocks\":1,"
			  "\"bytes\":16}]},\"blocks_unread\":0,\"blocks_overlapping\":0,"
			  "\"events_lost\":0,\"entries_total\":3},\"entries\":[{\"pid\":1234,"
			  "\"kind\":\"direct\",\"blocks\":5,\"bytes\":240,\"frames\":["));
	CHECK(strstr(text, "{\"pid\":77,\"kind\":\"indirect\",\"blocks\":6,\"bytes\":240,") !=
	      NULL);
	free(text);
}

UNIT_MAIN()
