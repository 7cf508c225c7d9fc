// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of memtracectl's command line (src/ctl/args.c): durations, what each
 * command asks memtraced for (the request a view needs, whatever the user
 * typed), and usage errors as one line each, before anything is fetched.
 */
#include "unit.h"
#include "capture.h"

#include "common/util.h"
#include "ctl/args.h"

#include <stdlib.h>

/* argc and argv of "memtracectl ARGS..." */
#define ARGC(...) ((int)(sizeof((char *[]){"memtracectl", __VA_ARGS__}) / sizeof(char *)))
#define ARGV(...) ((char *[]){"memtracectl", __VA_ARGS__, NULL})

#define PARSE(a, ...) args_parse(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), (a))

/* A usage error: -1 and exactly the line want on stderr. */
static void check_usage_error(const char *want, int argc, char **argv)
{
	struct args a;
	char *err;

	capture_stderr_begin();
	CHECK_EQ_U64(args_parse(argc, argv, &a), (uint64_t)-1);
	err = capture_stderr_end();
	CHECK_STR(err, want);
	free(err);
}

#define USAGE_ERROR(want, ...)                                                                     \
	check_usage_error("memtrace: " want "\n", ARGC(__VA_ARGS__), ARGV(__VA_ARGS__))

TEST(test_durations)
{
	static const struct {
		const char *text;
		uint64_t ns;
	} good[] = {{"30s", 30000000000ull},
		    {"500ms", 500000000ull},
		    {"5m", 300000000000ull},
		    {"2h", 7200000000000ull},
		    {"1d", 86400000000000ull},
		    {"1.5", 1500000000ull},
		    {"0", 0},
		    {"250us", 250000ull},
		    {"7ns", 7}};
	static const char *const bad[] = {"", "-1s", "+1s", " 1s", "1 s", "5x", "s", "1e30d"};
	uint64_t ns;

	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		ns = 1;
		CHECK(!args_parse_duration(good[i].text, &ns));
		CHECK_EQ_U64(ns, good[i].ns);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(args_parse_duration(bad[i], &ns) == -1);
}

TEST(test_defaults)
{
	struct args a;

	unsetenv("MEMTRACE_SOCKET");
	CHECK(!PARSE(&a, "report"));
	CHECK_EQ_U64(a.command, CMD_REPORT);
	CHECK_STR(a.socket, PROTO_DEFAULT_SOCKET);
	CHECK(!a.from && !a.output && !a.grouped);
	CHECK_EQ_U64(a.request.kind, PROTO_REPORT);
	CHECK_EQ_U64(a.request.report.top, 10);
	CHECK_EQ_U64(a.request.report.sort, MT_SORT_LIVE);
	CHECK_EQ_U64(a.request.report.pid, 0);
	CHECK_EQ_U64(a.request.report.ages, 0);
	CHECK_EQ_U64(a.memory.kind, 0);
	CHECK_EQ_U64(a.render.format, RENDER_TEXT);

	setenv("MEMTRACE_SOCKET", "/tmp/other.sock", 1);
	CHECK(!PARSE(&a, "status", "--json"));
	CHECK_STR(a.socket, "/tmp/other.sock");
	CHECK_EQ_U64(a.request.kind, PROTO_STATUS);
	CHECK_EQ_U64(a.render.format, RENDER_JSON);
	/* --socket wins over the environment, before or after the command */
	CHECK(!PARSE(&a, "status", "--socket=/run/x.sock"));
	CHECK_STR(a.socket, "/run/x.sock");
	unsetenv("MEMTRACE_SOCKET");
}

/* What a rows request asks, field by field. */
static void check_rows(const struct proto_request *r, uint32_t pid, int select, int by,
		       int cumulative, int order, uint32_t top)
{
	CHECK_EQ_U64(r->kind, PROTO_ROWS);
	CHECK_EQ_U64(r->rows.pid, pid);
	CHECK_EQ_U64(r->rows.select, select);
	CHECK_EQ_U64(r->rows.by, by);
	CHECK_EQ_U64(r->rows.cumulative, cumulative);
	CHECK_EQ_U64(r->rows.order, order);
	CHECK_EQ_U64(r->rows.top, top);
}

TEST(test_requests)
{
	struct args a;

	/* views that group: the daemon groups the stacks and sends the top rows */
	CHECK(!PARSE(&a, "peak", "--top", "3", "--by", "line", "--pid", "9"));
	check_rows(&a.request, 9, MT_SORT_PEAK, GROUP_LINE, 0, MT_SORT_PEAK, 3);
	CHECK_EQ_U64(a.view.top, 3);
	CHECK_EQ_U64(a.view.by, GROUP_LINE);
	CHECK(!PARSE(&a, "peak"));
	CHECK_EQ_U64(a.view.by, GROUP_STACK);
	check_rows(&a.request, 0, MT_SORT_PEAK, GROUP_STACK, 0, MT_SORT_PEAK, 10);
	CHECK(!PARSE(&a, "diff", "old.mts", "new.mts"));
	CHECK_EQ_U64(a.view.by, GROUP_FUNCTION);
	CHECK_STR(a.files[0], "old.mts");
	CHECK_STR(a.files[1], "new.mts");
	CHECK_EQ_U64(a.request.kind, PROTO_SNAPSHOT);

	/* by a target label: the daemon groups them too */
	CHECK(!PARSE(&a, "report", "--by", "cgroup"));
	check_rows(&a.request, 0, MT_SORT_COUNT, GROUP_CGROUP, 0, MT_SORT_LIVE, 10);
	CHECK(!PARSE(&a, "peak", "--by", "container", "--top", "0"));
	check_rows(&a.request, 0, MT_SORT_PEAK, GROUP_CONTAINER, 0, MT_SORT_PEAK, 0);
	/* --cgroup PATH: the daemon filters (the path after the line, cgroup=) */
	CHECK(!PARSE(&a, "report", "--by", "unit", "--cgroup", "/system.slice", "--pid", "7"));
	check_rows(&a.request, 7, MT_SORT_COUNT, GROUP_UNIT, 0, MT_SORT_LIVE, 10);
	CHECK_EQ_U64(a.request.rows.cgroup, strlen("/system.slice"));
	CHECK_STR(a.cgroup_filter, "/system.slice");
	CHECK(a.cgroup == NULL && a.grouped);
	CHECK(!PARSE(&a, "report", "--cgroup", "/a", "--top", "4", "--sort", "allocated"));
	CHECK_EQ_U64(a.request.kind, PROTO_REPORT);
	CHECK_EQ_U64(a.request.report.cgroup, 2);
	CHECK_EQ_U64(a.request.report.top, 4);
	CHECK(!PARSE(&a, "report", "--by", "line"));
	CHECK_EQ_U64(a.request.rows.cgroup, 0);
	/* from a file: the stacks themselves, filtered and grouped here */
	CHECK(!PARSE(&a, "--from", "f.mts", "report", "--by", "unit", "--cgroup", "/s", "--pid",
		     "7"));
	CHECK_EQ_U64(a.request.kind, PROTO_REPORT);
	CHECK_EQ_U64(a.request.report.sort, MT_SORT_COUNT);
	CHECK_EQ_U64(a.request.report.top, 0);
	CHECK_EQ_U64(a.request.report.pid, 7);
	CHECK_EQ_U64(a.request.report.cgroup, 0);
	CHECK(!PARSE(&a, "--from", "f.mts", "peak", "--cgroup", "/a"));
	CHECK_EQ_U64(a.request.kind, PROTO_REPORT);
	CHECK_EQ_U64(a.request.report.sort, MT_SORT_PEAK);
	CHECK(!PARSE(&a, "--from", "f.mts", "report", "--cgroup", "/a", "--top", "4", "--sort",
		     "allocated"));
	CHECK_EQ_U64(a.request.report.top, 0);
	CHECK_EQ_U64(a.filter_top, 4);
	CHECK_EQ_U64(a.request.report.sort, MT_SORT_ALLOCATED);
	CHECK(!PARSE(&a, "diff", "--cgroup", "/a", "old.mts", "new.mts"));
	CHECK_STR(a.cgroup_filter, "/a");
	CHECK_EQ_U64(a.nfiles, 2);
	CHECK(!PARSE(&a, "attach", "--cgroup", "/a"));
	CHECK_STR(a.cgroup, "/a");
	CHECK(a.cgroup_filter == NULL);

	/* leaks: counted per stack in the daemon, only blocks that old */
	CHECK(!PARSE(&a, "leaks", "--older-than", "2s", "--top", "4"));
	CHECK_EQ_U64(a.request.kind, PROTO_LEAKS);
	CHECK_EQ_U64(a.request.leaks.older_than_ns, 2000000000ull);
	CHECK_EQ_U64(a.request.leaks.top, 4);
	CHECK_EQ_U64(a.request.leaks.pid, 0);
	CHECK_EQ_U64(a.view.older_than, 2000000000ull);

	/* stats: its top sites; with --memory the breakdowns, a request of their own */
	CHECK(!PARSE(&a, "stats", "--memory"));
	check_rows(&a.request, 0, MT_SORT_ALLOCATED, GROUP_SITE, 0, MT_SORT_ALLOCATED, 5);
	CHECK_EQ_U64(a.memory.kind, PROTO_MEMORY);
	CHECK_EQ_U64(a.memory.memory.pid, 0);
	CHECK(!PARSE(&a, "stats"));
	CHECK_EQ_U64(a.memory.kind, 0);
	/* snapshot: everything, the breakdowns too */
	CHECK(!PARSE(&a, "snapshot", "-o", "x.mts"));
	CHECK_EQ_U64(a.request.kind, PROTO_SNAPSHOT);
	CHECK(PARSE(&a, "report", "--memory") == -1);

	/* report --by: every stack that allocated, grouped in the daemon by the sort */
	CHECK(!PARSE(&a, "report", "--by", "file", "--sort", "allocated", "--top", "4",
		     "--cumulative"));
	CHECK(a.grouped);
	check_rows(&a.request, 0, MT_SORT_COUNT, GROUP_FILE, 1, MT_SORT_ALLOCATED, 4);
	CHECK_EQ_U64(a.view.sort, MT_SORT_ALLOCATED);
	CHECK_EQ_U64(a.view.top, 4);
	CHECK(!PARSE(&a, "report", "--by", "stack"));
	check_rows(&a.request, 0, MT_SORT_COUNT, GROUP_STACK, 0, MT_SORT_LIVE, 10);

	/* a report: its own sort, top, pid and ages */
	CHECK(!PARSE(&a, "report", "--sort", "temporary", "--top", "0", "--pid", "77", "--oldest"));
	CHECK_EQ_U64(a.request.kind, PROTO_REPORT);
	CHECK_EQ_U64(a.request.report.sort, MT_SORT_TEMPORARY);
	CHECK_EQ_U64(a.request.report.top, 0);
	CHECK_EQ_U64(a.request.report.pid, 77);
	CHECK_EQ_U64(a.request.report.ages, 1);
	CHECK_EQ_U64(a.render.sort, MT_SORT_TEMPORARY);
	CHECK_EQ_U64(a.render.pid, 77);

	/* profiles: every stack unless --top, ordered by what they show */
	CHECK(!PARSE(&a, "report", "--format", "pprof", "-o", "heap.pb.gz"));
	CHECK_EQ_U64(a.request.report.top, 0);
	CHECK_EQ_U64(a.request.report.sort, MT_SORT_ALLOCATED);
	CHECK_STR(a.output, "heap.pb.gz");
	CHECK(!PARSE(&a, "report", "--format=pprof", "--peak", "--output=p.pb.gz"));
	CHECK_EQ_U64(a.request.report.sort, MT_SORT_PEAK);
	CHECK(!PARSE(&a, "report", "--format", "folded", "--sample", "count", "--top", "5"));
	CHECK_EQ_U64(a.request.report.top, 5);
	CHECK_EQ_U64(a.request.report.sort, MT_SORT_COUNT);
	CHECK(!PARSE(&a, "report", "--format", "html", "-o", "r.html"));
	CHECK_EQ_U64(a.request.report.sort, MT_SORT_ALLOCATED);

	/* watch: every stack by live bytes, grouped here */
	CHECK(!PARSE(&a, "watch", "--interval", "250ms", "--count", "3"));
	CHECK_EQ_U64(a.interval_ns, 250000000ull);
	CHECK_EQ_U64(a.iterations, 3);
	CHECK_EQ_U64(a.request.kind, PROTO_REPORT);
	CHECK_EQ_U64(a.request.report.top, 0);
	CHECK_EQ_U64(a.request.report.sort, MT_SORT_LIVE);

	/* the control commands, and those that show no stacks */
	CHECK(!PARSE(&a, "attach", "1234"));
	CHECK_EQ_U64(a.request.kind, PROTO_ATTACH);
	CHECK_EQ_U64(a.request.target.pid, 1234);
	CHECK(!PARSE(&a, "detach", "99"));
	CHECK_EQ_U64(a.request.kind, PROTO_DETACH);
	CHECK_EQ_U64(a.request.target.pid, 99);
	CHECK(!PARSE(&a, "reset-peak"));
	CHECK_EQ_U64(a.request.kind, PROTO_RESET_PEAK);
	CHECK(!PARSE(&a, "timeline"));
	CHECK_EQ_U64(a.request.kind, PROTO_STATUS);
	CHECK_EQ_U64(a.request.status.pid, 0);
	CHECK(!PARSE(&a, "timeline", "--pid", "31"));
	CHECK_EQ_U64(a.request.status.pid, 31);
	CHECK_EQ_U64(a.view.pid, 31);
	CHECK(!PARSE(&a, "watch", "--pid", "32"));
	CHECK_EQ_U64(a.request.report.pid, 32);
	CHECK_EQ_U64(a.view.pid, 32);
	CHECK(!PARSE(&a, "--from", "s.mts", "snapshot", "-o", "-"));
	CHECK_EQ_U64(a.request.kind, PROTO_SNAPSHOT);

	/* leaks --unreachable: a scan, a request of its own kind */
	CHECK(!PARSE(&a, "leaks", "--unreachable", "--pid", "42", "--top", "7", "--max-pause",
		     "250ms", "--suppressions", "lsan.supp", "--json"));
	CHECK(a.unreachable);
	CHECK_EQ_U64(a.request.kind, PROTO_SCAN);
	CHECK_EQ_U64(a.request.scan.pid, 42);
	CHECK_EQ_U64(a.request.scan.top, 7);
	CHECK_EQ_U64(a.request.scan.max_pause_ns, 250000000ull);
	CHECK_STR(a.suppressions, "lsan.supp");
	CHECK_EQ_U64(a.render.format, RENDER_JSON);
	CHECK(!PARSE(&a, "leaks", "--unreachable"));
	CHECK_EQ_U64(a.request.scan.top, 10);
	CHECK_EQ_U64(a.request.scan.pid, 0);
	CHECK_EQ_U64(a.request.scan.max_pause_ns, PROTO_SCAN_DEFAULT_PAUSE);
}

TEST(test_usage_errors)
{
	USAGE_ERROR("no command given (see memtracectl --help)", "--json");
	USAGE_ERROR("unknown command 'bogus' (see memtracectl --help)", "bogus");
	USAGE_ERROR("unknown option '--bogus' (see memtracectl --help)", "status", "--bogus");
	USAGE_ERROR("--top does not apply to status", "status", "--top", "3");
	USAGE_ERROR("--json takes no value", "status", "--json=1");
	USAGE_ERROR("--top needs a value", "report", "--top");
	USAGE_ERROR("bad --top 'x' (expected 0 to 1000000)", "report", "--top", "x");
	USAGE_ERROR("--cumulative does not apply to --by stack", "report", "--by", "stack",
		    "--cumulative");
	USAGE_ERROR("--cumulative does not apply to --by unit", "report", "--by", "unit",
		    "--cumulative");
	USAGE_ERROR("bad --by 'pod' (expected stack, function, file, line, module, cgroup, unit or "
		    "container)",
		    "peak", "--by", "pod");
	USAGE_ERROR("bad --cgroup 'system.slice' (expected a cgroup path from the hierarchy's "
		    "root, as status shows it: /system.slice)",
		    "report", "--cgroup", "system.slice");
	USAGE_ERROR("--cgroup does not apply to leaks", "leaks", "--cgroup", "/a");
	USAGE_ERROR("report --by gives text or json", "report", "--by", "line", "--format", "html");
	USAGE_ERROR("--socket and --from exclude each other", "--socket", "/s", "--from", "f",
		    "status");
	USAGE_ERROR("diff needs 2 snapshot files (see memtracectl --help)", "diff", "a.mts");
	USAGE_ERROR("diff can read only one of its files from stdin", "diff", "-", "-");
	USAGE_ERROR("snapshot needs -o FILE", "snapshot");
	USAGE_ERROR("attach needs a pid", "attach", "0");
	USAGE_ERROR("unexpected argument 'extra'", "status", "extra");
	USAGE_ERROR("--sort does not apply to --format folded (see --sample)", "report", "--format",
		    "folded", "--sort", "live");
	USAGE_ERROR("bad --interval '10ms' (expected a duration of 100ms or more)", "watch",
		    "--interval", "10ms");
	USAGE_ERROR("--older-than does not apply to --unreachable (a scan reports what no pointer "
		    "reaches, whatever its age)",
		    "leaks", "--unreachable", "--older-than", "1s");
	USAGE_ERROR("--unreachable scans a running process: it needs memtraced, not a snapshot "
		    "file",
		    "--from", "f.mts", "leaks", "--unreachable");
	USAGE_ERROR("--suppressions applies to leaks --unreachable", "leaks", "--suppressions",
		    "x");
	USAGE_ERROR("--max-pause applies to leaks --unreachable", "leaks", "--max-pause", "1s");
	USAGE_ERROR("bad --max-pause '0' (expected a duration from 1ms to 1h)", "leaks",
		    "--unreachable", "--max-pause", "0");
	USAGE_ERROR("--unreachable does not apply to report", "report", "--unreachable");
	USAGE_ERROR("leaks --unreachable gives text or json", "leaks", "--unreachable", "--format",
		    "folded");
}

UNIT_MAIN()
