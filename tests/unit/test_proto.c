// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of the socket protocol: request lines that must parse (and to what),
 * every kind of line that must be refused with a one-line reason, request
 * formatting that parses back, and the reply frame header.
 */
#include "unit.h"

#include "memtrace/snapshot.h"
#include "common/proto.h"

#include <stdlib.h>

static int parse(const char *line, struct proto_request *r, char *err, size_t errlen)
{
	return proto_request_parse(line, strlen(line), r, err, errlen);
}

/* line must fail with exactly want. */
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

TEST(test_defaults)
{
	struct proto_request r;

	memset(&r, 0xff, sizeof(r));
	proto_request_init(&r);
	CHECK_EQ_U64(r.command, PROTO_CMD_SNAPSHOT);
	CHECK_EQ_U64(r.top, 0);
	CHECK_EQ_U64(r.sort, MT_SORT_LIVE);
	CHECK_EQ_U64(r.pid, 0);
	CHECK_EQ_U64(r.stacks, 1);
}

TEST(test_valid_lines)
{
	struct proto_request r;
	char err[256];

	CHECK(parse("snapshot\n", &r, err, sizeof(err)) == 0);
	CHECK_STR(err, "");
	CHECK_EQ_U64(r.top, 0);
	CHECK_EQ_U64(r.stacks, 1);
	CHECK(parse("snapshot", &r, err, sizeof(err)) == 0);

	CHECK(parse("snapshot top=10 sort=allocated pid=1234 stacks=0\n", &r, err, sizeof(err)) ==
	      0);
	CHECK_EQ_U64(r.command, PROTO_CMD_SNAPSHOT);
	CHECK_EQ_U64(r.top, 10);
	CHECK_EQ_U64(r.sort, MT_SORT_ALLOCATED);
	CHECK_EQ_U64(r.pid, 1234);
	CHECK_EQ_U64(r.stacks, 0);

	/* Any order, extra spaces, limits inclusive. */
	CHECK(parse("snapshot  pid=4194304 sort=peak   top=1000000 ", &r, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r.top, 1000000);
	CHECK_EQ_U64(r.pid, 4194304);
	CHECK_EQ_U64(r.sort, MT_SORT_PEAK);
	CHECK(parse("snapshot sort=count", &r, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r.sort, MT_SORT_COUNT);
	CHECK(parse("snapshot sort=live top=0 pid=0 stacks=1", &r, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r.sort, MT_SORT_LIVE);
}

TEST(test_longest_line)
{
	char line[PROTO_MAX_REQUEST + 2];
	struct proto_request r;
	char err[256];
	size_t n;

	/* PROTO_MAX_REQUEST bytes with the newline is the longest allowed. */
	n = (size_t)snprintf(line, sizeof(line), "snapshot");
	memset(line + n, ' ', PROTO_MAX_REQUEST - n - 1);
	line[PROTO_MAX_REQUEST - 1] = '\n';
	CHECK(proto_request_parse(line, PROTO_MAX_REQUEST, &r, err, sizeof(err)) == 0);
	line[PROTO_MAX_REQUEST - 1] = ' ';
	line[PROTO_MAX_REQUEST] = '\n';
	check_bad(line, PROTO_MAX_REQUEST + 1, "bad request: line longer than 1024 bytes");
}

TEST(test_invalid_lines)
{
	CHECK_BAD("", "bad request: empty line");
	CHECK_BAD("\n", "bad request: empty line");
	CHECK_BAD("   \n", "bad request: empty line");
	CHECK_BAD("snap\n", "bad request: unknown command 'snap'");
	CHECK_BAD("SNAPSHOT\n", "bad request: unknown command 'SNAPSHOT'");
	CHECK_BAD("top=1 snapshot", "bad request: unknown command 'top=1'");
	CHECK_BAD("snapshot snapshot", "bad request: expected key=value, got 'snapshot'");
	CHECK_BAD("snapshot top", "bad request: expected key=value, got 'top'");
	CHECK_BAD("snapshot depth=3", "bad request: unknown key 'depth'");
	CHECK_BAD("snapshot =3", "bad request: unknown key ''");
	CHECK_BAD("snapshot top=", "bad request: bad top '' (expected 0 to 1000000)");
	CHECK_BAD("snapshot top=x", "bad request: bad top 'x' (expected 0 to 1000000)");
	CHECK_BAD("snapshot top=-1", "bad request: bad top '-1' (expected 0 to 1000000)");
	CHECK_BAD("snapshot top=+1", "bad request: bad top '+1' (expected 0 to 1000000)");
	CHECK_BAD("snapshot top=1e3", "bad request: bad top '1e3' (expected 0 to 1000000)");
	CHECK_BAD("snapshot top=1000001", "bad request: bad top '1000001' (expected 0 to 1000000)");
	CHECK_BAD("snapshot top=99999999999999999999999",
		  "bad request: bad top '99999999999999999999999' (expected 0 to 1000000)");
	CHECK_BAD("snapshot pid=4194305", "bad request: bad pid '4194305' (expected 0 to 4194304)");
	CHECK_BAD("snapshot stacks=2", "bad request: bad stacks '2' (expected 0 to 1)");
	CHECK_BAD("snapshot stacks=yes", "bad request: bad stacks 'yes' (expected 0 to 1)");
	CHECK_BAD(
	    "snapshot sort=size",
	    "bad request: bad sort 'size' (expected live, allocated, count, peak or temporary)");
	CHECK_BAD("snapshot sort=",
		  "bad request: bad sort '' (expected live, allocated, count, peak or temporary)");
	CHECK_BAD("snapshot top=1 top=2", "bad request: top given twice");
	CHECK_BAD("snapshot top=1=2", "bad request: bad top '1=2' (expected 0 to 1000000)");
	CHECK_BAD("snapshot top=1\x00", "bad request: NUL byte in line");
	CHECK_BAD("snapshot\x00 top=1\n", "bad request: NUL byte in line");
	CHECK_BAD("snapshot\r\n", "bad request: character 0x0d in line");
	CHECK_BAD("snapshot\ttop=1", "bad request: character 0x09 in line");
	CHECK_BAD("snapshot top=\xc3\xa9", "bad request: character 0xc3 in line");
	CHECK_BAD("snapshot\nsnapshot\n", "bad request: more than one line");
	CHECK_BAD("snapshot\n\n", "bad request: more than one line");
}

/* Quoted pieces of a bad line are cut short. */
TEST(test_error_quotes_bounded)
{
	char line[600], err[256];
	struct proto_request r;

	snprintf(line, sizeof(line), "snapshot %0500d=1", 7);
	CHECK(parse(line, &r, err, sizeof(err)) == -1);
	CHECK(strlen(err) < 80);
	CHECK(parse(line, &r, err, 8) == -1); /* a small err buffer is filled, not overrun */
	CHECK_STR(err, "bad req");
}

TEST(test_format)
{
	struct proto_request r, back;
	char line[PROTO_MAX_REQUEST], err[256];
	int n;

	proto_request_init(&r);
	r.top = 10;
	r.sort = MT_SORT_PEAK;
	r.pid = 77;
	r.stacks = 0;
	n = proto_request_format(&r, line, sizeof(line));
	CHECK_STR(line, "snapshot top=10 sort=peak pid=77 stacks=0\n");
	CHECK_EQ_U64(n, strlen(line));
	CHECK(proto_request_parse(line, (size_t)n, &back, err, sizeof(err)) == 0);
	CHECK(!memcmp(&r, &back, sizeof(r)));

	CHECK(proto_request_format(&r, line, 10) == -1);
	r.sort = MT_SORT_KEY_COUNT;
	CHECK(proto_request_format(&r, line, sizeof(line)) == -1);
	r.sort = MT_SORT_LIVE;
	r.top = PROTO_MAX_TOP + 1;
	CHECK(proto_request_format(&r, line, sizeof(line)) == -1);
	r.top = 0;
	r.stacks = 2;
	CHECK(proto_request_format(&r, line, sizeof(line)) == -1);
}

TEST(test_blocks_and_reset_peak)
{
	struct proto_request r, back;
	char line[PROTO_MAX_REQUEST], err[256];
	int n;

	CHECK(parse("snapshot blocks=1 older_than=30000000000\n", &r, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r.command, PROTO_CMD_SNAPSHOT);
	CHECK_EQ_U64(r.blocks, 1);
	CHECK_EQ_U64(r.older_than_ns, 30000000000ull);
	CHECK(parse("reset-peak stacks=0", &r, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r.command, PROTO_CMD_RESET_PEAK);
	CHECK_EQ_U64(r.blocks, 0);
	CHECK_BAD("snapshot blocks=2", "bad request: bad blocks '2' (expected 0 to 1)");
	CHECK_BAD("snapshot older_than=4611686018427387905",
		  "bad request: bad older_than '4611686018427387905' (expected 0 to "
		  "4611686018427387904)");
	CHECK_BAD("snapshot older_than=1 older_than=2", "bad request: older_than given twice");
	CHECK_BAD("reset_peak", "bad request: unknown command 'reset_peak'");
	CHECK(parse("snapshot ages=1", &r, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r.ages, 1);
	CHECK_BAD("snapshot ages=2", "bad request: bad ages '2' (expected 0 to 1)");

	proto_request_init(&r);
	r.blocks = 1;
	r.older_than_ns = 5;
	n = proto_request_format(&r, line, sizeof(line));
	CHECK_STR(line, "snapshot top=0 sort=live pid=0 stacks=1 blocks=1 older_than=5\n");
	CHECK(proto_request_parse(line, (size_t)n, &back, err, sizeof(err)) == 0);
	CHECK(!memcmp(&r, &back, sizeof(r)));
	proto_request_init(&r);
	r.command = PROTO_CMD_RESET_PEAK;
	r.stacks = 0;
	n = proto_request_format(&r, line, sizeof(line));
	CHECK_STR(line, "reset-peak top=0 sort=live pid=0 stacks=0\n");
	CHECK(proto_request_parse(line, (size_t)n, &back, err, sizeof(err)) == 0);
	CHECK(!memcmp(&r, &back, sizeof(r)));
	r.ages = 1;
	n = proto_request_format(&r, line, sizeof(line));
	CHECK_STR(line, "reset-peak top=0 sort=live pid=0 stacks=0 ages=1\n");
	CHECK(proto_request_parse(line, (size_t)n, &back, err, sizeof(err)) == 0);
	CHECK(!memcmp(&r, &back, sizeof(r)));
	r.blocks = 2;
	CHECK(proto_request_format(&r, line, sizeof(line)) == -1);

	/* memory=1: the breakdowns by kind of mapping */
	CHECK(parse("snapshot memory=1", &r, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r.memory, 1);
	CHECK_BAD("snapshot memory=2", "bad request: bad memory '2' (expected 0 to 1)");
	CHECK_BAD("snapshot memory=1 memory=1", "bad request: memory given twice");
	proto_request_init(&r);
	r.memory = 1;
	r.ages = 1;
	n = proto_request_format(&r, line, sizeof(line));
	CHECK_STR(line, "snapshot top=0 sort=live pid=0 stacks=1 ages=1 memory=1\n");
	CHECK(proto_request_parse(line, (size_t)n, &back, err, sizeof(err)) == 0);
	CHECK(!memcmp(&r, &back, sizeof(r)));
}

/* A scan has parameters of its own: the others' keys do not apply to it. */
TEST(test_scan_requests)
{
	struct proto_request r, back;
	char line[PROTO_MAX_REQUEST], err[256];
	int n;

	CHECK(parse("scan\n", &r, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r.command, PROTO_CMD_SCAN);
	CHECK_EQ_U64(r.scan.pid, 0);
	CHECK_EQ_U64(r.scan.top, 0);
	CHECK_EQ_U64(r.scan.max_pause_ns, PROTO_SCAN_DEFAULT_PAUSE);
	CHECK_EQ_U64(r.scan.suppressions, 0);
	CHECK(parse("scan pid=77 top=5 max_pause=250000000 suppressions=1048576", &r, err,
		    sizeof(err)) == 0);
	CHECK_EQ_U64(r.scan.pid, 77);
	CHECK_EQ_U64(r.scan.top, 5);
	CHECK_EQ_U64(r.scan.max_pause_ns, 250000000);
	CHECK_EQ_U64(r.scan.suppressions, PROTO_MAX_SUPPRESSIONS);
	/* the snapshot request's fields keep their defaults: nothing is overloaded */
	CHECK_EQ_U64(r.pid, 0);
	CHECK_EQ_U64(r.top, 0);
	n = proto_request_format(&r, line, sizeof(line));
	CHECK_STR(line, "scan pid=77 top=5 max_pause=250000000 suppressions=1048576\n");
	CHECK(proto_request_parse(line, (size_t)n, &back, err, sizeof(err)) == 0);
	CHECK(!memcmp(&r, &back, sizeof(r)));
	CHECK_BAD("scan sort=live", "bad request: sort does not apply to scan");
	CHECK_BAD("scan leaks=1", "bad request: leaks does not apply to scan");
	CHECK_BAD("scan speed=9", "bad request: unknown key 'speed'");
	CHECK_BAD("scan max_pause=999999",
		  "bad request: bad max_pause '999999' (expected 1000000 to 3600000000000)");
	CHECK_BAD("scan max_pause=3600000000001",
		  "bad request: bad max_pause '3600000000001' (expected 1000000 to 3600000000000)");
	CHECK_BAD("scan suppressions=1048577",
		  "bad request: bad suppressions '1048577' (expected 0 to 1048576)");
	CHECK_BAD("scan pid=1 pid=2", "bad request: pid given twice");
	CHECK_BAD("snapshot max_pause=1000000", "bad request: unknown key 'max_pause'");
	r.scan.max_pause_ns = 10;
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

int main(void)
{
	RUN(test_defaults);
	RUN(test_valid_lines);
	RUN(test_longest_line);
	RUN(test_invalid_lines);
	RUN(test_error_quotes_bounded);
	RUN(test_format);
	RUN(test_blocks_and_reset_peak);
	RUN(test_scan_requests);
	RUN(test_reply_header);
	return UNIT_DONE();
}
