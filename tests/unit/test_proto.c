// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of the socket protocol: each kind of request parses to its own
 * parameters and formats back to the same (a round trip per kind), every
 * kind of bad line is refused with a one-line reason (another kind's key, a
 * version 1 line, a value out of range), and the reply frame header.
 */
#include "unit.h"

#include "memtrace/snapshot.h"
#include "common/groupkey.h"
#include "common/proto.h"

#include <stdlib.h>

static int parse(const char *line, struct proto_request *r, char *err, size_t errlen)
{
	return proto_request_parse(line, strlen(line), r, err, errlen);
}

/* line must fail with exactly want, on one line. */
static void check_bad(const char *line, size_t len, const char *want)
{
	struct proto_request r;
	char err[256];

	if (proto_request_parse(line, len, &r, err, sizeof(err)) != -1) {
		fprintf(stderr, "accepted: '%.*s'\n", (int)len, line);
		CHECK(0);
		return;
	}
	CHECK_STR(err, want);
	CHECK(!strchr(err, '\n'));
}

/* A string literal, NUL bytes inside it included. */
#define CHECK_BAD(literal, want) check_bad(literal, sizeof(literal) - 1, want)

/* r formats as want, which parses back to r exactly. */
static void check_round_trip(const struct proto_request *r, const char *want)
{
	struct proto_request back;
	char line[PROTO_MAX_REQUEST], err[256];
	int n = proto_request_format(r, line, sizeof(line));

	CHECK(n > 0);
	if (n <= 0)
		return;
	CHECK_STR(line, want);
	CHECK_EQ_U64(n, strlen(line));
	CHECK(proto_request_parse(line, (size_t)n, &back, err, sizeof(err)) == 0);
	CHECK_STR(err, "");
	CHECK(!memcmp(r, &back, sizeof(back)));
}

TEST(test_defaults)
{
	struct proto_request r;

	memset(&r, 0xff, sizeof(r));
	proto_request_init(&r, PROTO_REPORT);
	CHECK_EQ_U64(r.kind, PROTO_REPORT);
	CHECK_EQ_U64(r.report.pid, 0);
	CHECK_EQ_U64(r.report.sort, MT_SORT_LIVE);
	CHECK_EQ_U64(r.report.top, 0);
	CHECK_EQ_U64(r.report.ages, 0);
	proto_request_init(&r, PROTO_ROWS);
	CHECK_EQ_U64(r.rows.select, MT_SORT_LIVE);
	CHECK_EQ_U64(r.rows.by, GROUP_NONE);
	CHECK_EQ_U64(r.rows.order, MT_SORT_LIVE);
	proto_request_init(&r, PROTO_SCAN);
	CHECK_EQ_U64(r.scan.max_pause_ns, PROTO_SCAN_DEFAULT_PAUSE);
	CHECK_EQ_U64(r.scan.suppressions, 0);
	CHECK_STR(proto_kind_name(PROTO_RESET_PEAK), "reset-peak");
	CHECK(proto_kind_name(0) == NULL);
	CHECK(proto_kind_name(PROTO_KIND_COUNT) == NULL);
}

/* Each kind: what its line holds, parsed and formatted back. */
TEST(test_round_trip_per_kind)
{
	struct proto_request r;

	proto_request_init(&r, PROTO_STATUS);
	check_round_trip(&r, "status v=2 pid=0\n");
	r.status.pid = 5;
	check_round_trip(&r, "status v=2 pid=5\n");
	CHECK_EQ_U64(proto_request_pid(&r), 5);
	proto_request_init(&r, PROTO_SNAPSHOT);
	check_round_trip(&r, "snapshot v=2\n");
	proto_request_init(&r, PROTO_RESET_PEAK);
	check_round_trip(&r, "reset-peak v=2\n");

	proto_request_init(&r, PROTO_REPORT);
	r.report.pid = 77;
	r.report.sort = MT_SORT_TEMPORARY;
	r.report.top = 10;
	r.report.ages = 1;
	check_round_trip(&r, "report v=2 pid=77 sort=temporary top=10 ages=1\n");
	CHECK_EQ_U64(proto_request_pid(&r), 77);

	proto_request_init(&r, PROTO_ROWS);
	r.rows.pid = 5;
	r.rows.select = MT_SORT_COUNT;
	r.rows.by = GROUP_LINE;
	r.rows.cumulative = 1;
	r.rows.order = MT_SORT_ALLOCATED;
	r.rows.top = 4;
	check_round_trip(
	    &r, "rows v=2 pid=5 select=count by=line cumulative=1 order=allocated top=4\n");
	r.rows.by = GROUP_SITE;
	r.rows.cumulative = 0;
	check_round_trip(
	    &r, "rows v=2 pid=5 select=count by=site cumulative=0 order=allocated top=4\n");
	CHECK_EQ_U64(proto_request_pid(&r), 5);
	CHECK_EQ_U64(proto_request_cgroup(&r), 0);
	/* cgroup=: written only when a path follows (an older daemon refuses the key) */
	r.rows.by = GROUP_CGROUP;
	r.rows.cgroup = 9;
	check_round_trip(&r, "rows v=2 pid=5 select=count by=cgroup cumulative=0 order=allocated "
			     "top=4 cgroup=9\n");
	CHECK_EQ_U64(proto_request_cgroup(&r), 9);
	proto_request_init(&r, PROTO_REPORT);
	r.report.cgroup = PROTO_MAX_CGROUP_PATH;
	check_round_trip(&r, "report v=2 pid=0 sort=live top=0 ages=0 cgroup=4095\n");
	CHECK_EQ_U64(proto_request_cgroup(&r), PROTO_MAX_CGROUP_PATH);

	proto_request_init(&r, PROTO_LEAKS);
	r.leaks.pid = 9;
	r.leaks.older_than_ns = PROTO_MAX_OLDER_THAN;
	r.leaks.top = PROTO_MAX_TOP;
	check_round_trip(&r, "leaks v=2 pid=9 older_than=4611686018427387904 top=1000000\n");

	proto_request_init(&r, PROTO_MEMORY);
	check_round_trip(&r, "memory v=2 pid=0\n");
	r.memory.pid = PROTO_MAX_PID;
	check_round_trip(&r, "memory v=2 pid=4194304\n");

	proto_request_init(&r, PROTO_ATTACH);
	r.target.pid = 1234;
	check_round_trip(&r, "attach v=2 pid=1234\n");
	CHECK_EQ_U64(proto_request_pid(&r), 1234);
	r.kind = PROTO_DETACH;
	check_round_trip(&r, "detach v=2 pid=1234\n");

	proto_request_init(&r, PROTO_SCAN);
	r.scan.pid = 77;
	r.scan.top = 5;
	r.scan.max_pause_ns = 250000000;
	r.scan.suppressions = PROTO_MAX_SUPPRESSIONS;
	check_round_trip(&r, "scan v=2 pid=77 top=5 max_pause=250000000 suppressions=1048576\n");
	CHECK_EQ_U64(proto_request_pid(&r), 77);
	proto_request_init(&r, PROTO_STATUS);
	CHECK_EQ_U64(proto_request_pid(&r), 0);
}

TEST(test_valid_lines)
{
	struct proto_request r;
	char err[256];

	/* keys in any order, extra spaces, v= anywhere, defaults for the rest */
	CHECK(parse("report  top=1000000 v=2   pid=4194304 ", &r, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r.kind, PROTO_REPORT);
	CHECK_EQ_U64(r.report.top, 1000000);
	CHECK_EQ_U64(r.report.pid, 4194304);
	CHECK_EQ_U64(r.report.sort, MT_SORT_LIVE);
	CHECK(parse("status v=2", &r, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r.kind, PROTO_STATUS);
	CHECK(parse("rows v=2 by=stack\n", &r, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r.rows.by, GROUP_STACK);
	CHECK_EQ_U64(r.rows.top, 0);
	CHECK(parse("scan v=2\n", &r, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r.scan.max_pause_ns, PROTO_SCAN_DEFAULT_PAUSE);
	CHECK(parse("leaks v=2 older_than=30000000000", &r, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r.leaks.older_than_ns, 30000000000ull);
}

TEST(test_longest_line)
{
	char line[PROTO_MAX_REQUEST + 2];
	struct proto_request r;
	char err[256];
	size_t n;

	/* PROTO_MAX_REQUEST bytes with the newline is the longest allowed. */
	n = (size_t)snprintf(line, sizeof(line), "status v=2");
	memset(line + n, ' ', PROTO_MAX_REQUEST - n - 1);
	line[PROTO_MAX_REQUEST - 1] = '\n';
	CHECK(proto_request_parse(line, PROTO_MAX_REQUEST, &r, err, sizeof(err)) == 0);
	line[PROTO_MAX_REQUEST - 1] = ' ';
	line[PROTO_MAX_REQUEST] = '\n';
	check_bad(line, PROTO_MAX_REQUEST + 1, "bad request: line longer than 1024 bytes");
	/* as many words as fit */
	for (n = 0; n + 2 <= PROTO_MAX_REQUEST - 1; n += 2)
		memcpy(line + n, "x ", 2);
	line[PROTO_MAX_REQUEST - 1] = '\n';
	check_bad(line, PROTO_MAX_REQUEST,
		  "bad request: unknown request 'x' (expected status, snapshot, report, rows, "
		  "leaks, memory, scan, attach, detach or reset-peak)");
}

TEST(test_invalid_lines)
{
	CHECK_BAD("", "bad request: empty line");
	CHECK_BAD("\n", "bad request: empty line");
	CHECK_BAD("   \n", "bad request: empty line");
	CHECK_BAD("snap v=2\n", "bad request: unknown request 'snap' (expected status, snapshot, "
				"report, rows, leaks, memory, scan, attach, detach or reset-peak)");
	CHECK_BAD("REPORT v=2\n", "bad request: unknown request 'REPORT' (expected status, "
				  "snapshot, report, rows, leaks, memory, scan, attach, detach or "
				  "reset-peak)");
	CHECK_BAD("top=1 report", "bad request: unknown request 'top=1' (expected status, "
				  "snapshot, report, rows, leaks, memory, scan, attach, detach or "
				  "reset-peak)");
	CHECK_BAD("report v=2 report", "bad request: expected key=value, got 'report'");
	CHECK_BAD("report v=2 top", "bad request: expected key=value, got 'top'");
	CHECK_BAD("report v=2 depth=3", "bad request: unknown key 'depth'");
	CHECK_BAD("report v=2 =3", "bad request: unknown key ''");
	CHECK_BAD("report v=2 top=", "bad request: bad top '' (expected 0 to 1000000)");
	CHECK_BAD("report v=2 top=x", "bad request: bad top 'x' (expected 0 to 1000000)");
	CHECK_BAD("report v=2 top=-1", "bad request: bad top '-1' (expected 0 to 1000000)");
	CHECK_BAD("report v=2 top=+1", "bad request: bad top '+1' (expected 0 to 1000000)");
	CHECK_BAD("report v=2 top=1e3", "bad request: bad top '1e3' (expected 0 to 1000000)");
	CHECK_BAD("report v=2 top=1000001",
		  "bad request: bad top '1000001' (expected 0 to 1000000)");
	CHECK_BAD("report v=2 top=99999999999999999999999",
		  "bad request: bad top '99999999999999999999999' (expected 0 to 1000000)");
	CHECK_BAD("report v=2 pid=4194305",
		  "bad request: bad pid '4194305' (expected 0 to 4194304)");
	CHECK_BAD("report v=2 ages=2", "bad request: bad ages '2' (expected 0 to 1)");
	CHECK_BAD("report v=2 ages=yes", "bad request: bad ages 'yes' (expected 0 to 1)");
	CHECK_BAD(
	    "report v=2 sort=size",
	    "bad request: bad sort 'size' (expected live, allocated, count, peak or temporary)");
	CHECK_BAD("report v=2 sort=",
		  "bad request: bad sort '' (expected live, allocated, count, peak or temporary)");
	CHECK_BAD("report v=2 top=1 top=2", "bad request: top given twice");
	CHECK_BAD("report v=2 top=1=2", "bad request: bad top '1=2' (expected 0 to 1000000)");
	CHECK_BAD("report v=2 top=1\x00", "bad request: NUL byte in line");
	CHECK_BAD("report\x00 v=2\n", "bad request: NUL byte in line");
	CHECK_BAD("report v=2\r\n", "bad request: character 0x0d in line");
	CHECK_BAD("report\tv=2", "bad request: character 0x09 in line");
	CHECK_BAD("report v=2 top=\xc3\xa9", "bad request: character 0xc3 in line");
	CHECK_BAD("report v=2\nreport v=2\n", "bad request: more than one line");
	CHECK_BAD("status v=2\n\n", "bad request: more than one line");
}

/* Each kind takes its own keys: another kind's is refused, not reinterpreted. */
TEST(test_keys_of_other_kinds)
{
	CHECK_BAD("status v=2 top=10", "bad request: top does not apply to status");
	CHECK_BAD("snapshot v=2 pid=3", "bad request: pid does not apply to snapshot");
	CHECK_BAD("report v=2 by=line", "bad request: by does not apply to report");
	CHECK_BAD("report v=2 older_than=5", "bad request: older_than does not apply to report");
	CHECK_BAD("rows v=2 by=line sort=live", "bad request: sort does not apply to rows");
	CHECK_BAD("rows v=2 by=line ages=1", "bad request: ages does not apply to rows");
	CHECK_BAD("leaks v=2 sort=live", "bad request: sort does not apply to leaks");
	CHECK_BAD("memory v=2 top=1", "bad request: top does not apply to memory");
	CHECK_BAD("scan v=2 sort=live", "bad request: sort does not apply to scan");
	CHECK_BAD("scan v=2 older_than=1", "bad request: older_than does not apply to scan");
	CHECK_BAD("attach v=2 pid=1 top=1", "bad request: top does not apply to attach");
	CHECK_BAD("reset-peak v=2 pid=1", "bad request: pid does not apply to reset-peak");
	CHECK_BAD("report v=2 max_pause=1000000",
		  "bad request: max_pause does not apply to report");
	/* version 1's keys are no key of version 2 */
	CHECK_BAD("report v=2 stacks=1", "bad request: unknown key 'stacks'");
	CHECK_BAD("report v=2 leaks=1", "bad request: unknown key 'leaks'");
	CHECK_BAD("report v=2 blocks=1", "bad request: unknown key 'blocks'");
	CHECK_BAD("report v=2 memory=1", "bad request: unknown key 'memory'");
}

/* Values each kind checks: required keys, ranges, combinations that mean nothing. */
TEST(test_kind_values)
{
	CHECK_BAD("rows v=2", "bad request: rows needs by=");
	CHECK_BAD("rows v=2 by=none",
		  "bad request: bad by 'none' (expected stack, function, file, line, module, "
		  "site, cgroup, unit or container)");
	CHECK_BAD("rows v=2 by=cgroup cumulative=1",
		  "bad request: cumulative=1 does not apply to by=cgroup");
	CHECK_BAD("rows v=2 by=cgroup cgroup=4096",
		  "bad request: bad cgroup '4096' (expected 0 to 4095)");
	CHECK_BAD("leaks v=2 cgroup=3", "bad request: cgroup does not apply to leaks");
	CHECK_BAD("rows v=2 by=stack cumulative=1",
		  "bad request: cumulative=1 does not apply to by=stack");
	CHECK_BAD("rows v=2 by=site cumulative=1",
		  "bad request: cumulative=1 does not apply to by=site");
	CHECK_BAD("rows v=2 by=line select=big",
		  "bad request: bad select 'big' (expected live, allocated, count, peak or "
		  "temporary)");
	CHECK_BAD("attach v=2", "bad request: attach needs pid=");
	CHECK_BAD("detach v=2 pid=0", "bad request: bad pid '0' (expected 1 to 4194304)");
	CHECK_BAD("leaks v=2 older_than=4611686018427387905",
		  "bad request: bad older_than '4611686018427387905' (expected 0 to "
		  "4611686018427387904)");
	CHECK_BAD("leaks v=2 older_than=1 older_than=2", "bad request: older_than given twice");
	CHECK_BAD("scan v=2 max_pause=999999",
		  "bad request: bad max_pause '999999' (expected 1000000 to 3600000000000)");
	CHECK_BAD("scan v=2 max_pause=3600000000001",
		  "bad request: bad max_pause '3600000000001' (expected 1000000 to 3600000000000)");
	CHECK_BAD("scan v=2 suppressions=1048577",
		  "bad request: bad suppressions '1048577' (expected 0 to 1048576)");
	CHECK_BAD("scan v=2 pid=1 pid=2", "bad request: pid given twice");
	CHECK_BAD("scan v=2 speed=9", "bad request: unknown key 'speed'");
}

/* The version: a version 1 line (no v=, as older clients send) gets a clear error. */
TEST(test_versions)
{
	CHECK_BAD("snapshot top=10 sort=live pid=0 stacks=1\n",
		  "bad request: snapshot without v=2: a protocol version 1 request, older than "
		  "this memtraced's (2): use the memtracectl of its release");
	CHECK_BAD("scan pid=12 top=5 max_pause=1000000 suppressions=10",
		  "bad request: scan without v=2: a protocol version 1 request, older than this "
		  "memtraced's (2): use the memtracectl of its release");
	CHECK_BAD("reset-peak top=0 sort=live pid=0 stacks=0",
		  "bad request: reset-peak without v=2: a protocol version 1 request, older than "
		  "this memtraced's (2): use the memtracectl of its release");
	CHECK_BAD("status", "bad request: status without v=2: a protocol version 1 request, "
			    "older than this memtraced's (2): use the memtracectl of its release");
	CHECK_BAD("status v=1", "bad request: protocol version 1 is older than this memtraced's "
				"(2): use the memtracectl of its release");
	CHECK_BAD("status v=3", "bad request: protocol version 3 is newer than this memtraced's "
				"(2)");
	CHECK_BAD("status v=x", "bad request: bad v 'x' (expected 2)");
	CHECK_BAD("status v=", "bad request: bad v '' (expected 2)");
	CHECK_BAD("status v=2 v=2", "bad request: v given twice");
}

/* Quoted pieces of a bad line are cut short. */
TEST(test_error_quotes_bounded)
{
	char line[600], err[256];
	struct proto_request r;

	snprintf(line, sizeof(line), "report v=2 %0500d=1", 7);
	CHECK(parse(line, &r, err, sizeof(err)) == -1);
	CHECK(strlen(err) < 80);
	CHECK(parse(line, &r, err, 8) == -1); /* a small err buffer is filled, not overrun */
	CHECK_STR(err, "bad req");
}

TEST(test_format_refuses)
{
	struct proto_request r;
	char line[PROTO_MAX_REQUEST];

	proto_request_init(&r, PROTO_REPORT);
	CHECK(proto_request_format(&r, line, 10) == -1); /* too small */
	r.report.sort = MT_SORT_KEY_COUNT;
	CHECK(proto_request_format(&r, line, sizeof(line)) == -1);
	r.report.sort = MT_SORT_LIVE;
	r.report.top = PROTO_MAX_TOP + 1;
	CHECK(proto_request_format(&r, line, sizeof(line)) == -1);
	r.report.top = 0;
	r.report.ages = 2;
	CHECK(proto_request_format(&r, line, sizeof(line)) == -1);
	proto_request_init(&r, PROTO_ROWS); /* by= has no default */
	CHECK(proto_request_format(&r, line, sizeof(line)) == -1);
	r.rows.by = GROUP_STACK;
	r.rows.cumulative = 1;
	CHECK(proto_request_format(&r, line, sizeof(line)) == -1);
	proto_request_init(&r, PROTO_ATTACH); /* pid 0 */
	CHECK(proto_request_format(&r, line, sizeof(line)) == -1);
	proto_request_init(&r, PROTO_SCAN);
	r.scan.max_pause_ns = 10;
	CHECK(proto_request_format(&r, line, sizeof(line)) == -1);
	r.kind = 0;
	CHECK(proto_request_format(&r, line, sizeof(line)) == -1);
	r.kind = PROTO_KIND_COUNT;
	CHECK(proto_request_format(&r, line, sizeof(line)) == -1);
}

TEST(test_reply_header)
{
	uint8_t hdr[PROTO_REPLY_HEADER];
	uint32_t len;
	int status;

	proto_reply_header(hdr, 0, 0x01020304);
	CHECK(!memcmp(hdr, "MTR1\x00\x04\x03\x02\x01", PROTO_REPLY_HEADER));
	CHECK(proto_reply_parse_header(hdr, &status, &len) == 0);
	CHECK_EQ_U64(status, 0);
	CHECK_EQ_U64(len, 0x01020304);

	proto_reply_header(hdr, 1, 17);
	CHECK(proto_reply_parse_header(hdr, &status, &len) == 0);
	CHECK_EQ_U64(status, 1);
	CHECK_EQ_U64(len, 17);

	proto_reply_header(hdr, 0, PROTO_MAX_REPLY);
	CHECK(proto_reply_parse_header(hdr, &status, &len) == 0);
	proto_reply_header(hdr, 0, PROTO_MAX_REPLY + 1);
	CHECK(proto_reply_parse_header(hdr, &status, &len) == -1);
	proto_reply_header(hdr, 2, 1);
	CHECK(proto_reply_parse_header(hdr, &status, &len) == -1);
	proto_reply_header(hdr, 0, 1);
	hdr[3] = '2';
	CHECK(proto_reply_parse_header(hdr, &status, &len) == -1);
}

UNIT_MAIN()
