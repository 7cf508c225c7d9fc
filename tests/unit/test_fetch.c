// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of fetching a snapshot (src/ctl/fetch.c): from a file, narrowed as
 * the daemon would narrow it (or whole); from a daemon on a socket, played
 * here by a child process that checks the request line and answers; and the
 * one-line messages for a daemon's error, a missing daemon and a bad file.
 */
#include "unit.h"
#include "capture.h"

#include "common/groupkey.h"
#include "ctl/fetch.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static struct snap_frame frame_a = {0x1010, 0x10, "alpha", "/usr/bin/prog", "prog.c", 10};
static struct snap_frame frame_b = {0x1020, 0x20, "beta", "/usr/bin/prog", "prog.c", 20};
static struct snap_frame *ref_a[] = {&frame_a}, *ref_b[] = {&frame_b};

static struct snap_stack stacks[] = {
    {.pid = 11, .nframes = 1, .frames = ref_a, .t.allocations = 1, .t.live_bytes = 10},
    {.pid = 22, .nframes = 1, .frames = ref_b, .t.allocations = 5, .t.live_bytes = 500},
    {.pid = 11, .nframes = 1, .frames = ref_b, .t.allocations = 2, .t.live_bytes = 200},
};

static struct snap_target targets[] = {
    {.pid = 11, .state = SNAP_TARGET_ATTACHED, .exit_status = -1},
    {.pid = 22, .state = SNAP_TARGET_ATTACHED, .exit_status = -1},
};

static char dir[64];

static struct buf encoded(void)
{
	struct snapshot s = {.version = SNAPSHOT_VERSION,
			     .ntargets = 2,
			     .targets = targets,
			     .nstacks = 3,
			     .stacks = stacks,
			     .stacks_total = 3};
	struct buf b = {0};

	if (snapshot_encode(&s, &b.data, &b.len))
		abort();
	return b;
}

static void write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(p, 1, n, f) != n || fclose(f))
		abort();
}

static struct proto_request request(uint32_t top, uint32_t pid)
{
	struct proto_request r;

	proto_request_init(&r, PROTO_REPORT);
	r.report.top = top;
	r.report.pid = pid;
	r.report.sort = MT_SORT_LIVE;
	return r;
}

TEST(test_file_narrowed_or_whole)
{
	struct buf bytes = encoded(), raw = {0};
	struct proto_request req = request(1, 0);
	struct snapshot s;
	char path[128], *err;

	snprintf(path, sizeof(path), "%s/s.mts", dir);
	write_bytes(path, bytes.data, bytes.len);

	/* narrowed: the largest stack only, as the daemon answers top=1 */
	CHECK(!fetch_snapshot(&req, "/nonexistent.sock", path, 0, &s, NULL));
	CHECK_EQ_U64(s.nstacks, 1);
	CHECK_EQ_U64(s.stacks[0].t.live_bytes, 500);
	snapshot_free(&s);

	/* pid=11: its stacks only */
	req = request(0, 11);
	CHECK(!fetch_snapshot(&req, NULL, path, 0, &s, NULL));
	CHECK_EQ_U64(s.nstacks, 2);
	CHECK_EQ_U64(s.stacks[0].pid, 11);
	CHECK_EQ_U64(s.stacks[1].pid, 11);
	snapshot_free(&s);

	/* whole: every stack, and the bytes as they were */
	req = request(1, 0);
	CHECK(!fetch_snapshot(&req, NULL, path, 1, &s, &raw));
	CHECK_EQ_U64(s.nstacks, 3);
	CHECK(raw.len == bytes.len && !memcmp(raw.data, bytes.data, bytes.len));
	snapshot_free(&s);
	buf_free(&raw);

	/* rows: every stack of the selection (the client groups them), in the order of reports */
	proto_request_init(&req, PROTO_ROWS);
	req.rows.select = MT_SORT_COUNT;
	req.rows.by = GROUP_FUNCTION;
	req.rows.top = 1;
	CHECK(!fetch_snapshot(&req, NULL, path, 0, &s, NULL));
	CHECK_EQ_U64(s.nstacks, 3);
	CHECK_EQ_U64(s.stacks[0].t.allocations, 5);
	CHECK_EQ_U64(s.stacks[2].t.allocations, 1);
	snapshot_free(&s);
	/* leaks: every stack of pid 22 with live bytes */
	proto_request_init(&req, PROTO_LEAKS);
	req.leaks.pid = 22;
	req.leaks.top = 1;
	CHECK(!fetch_snapshot(&req, NULL, path, 0, &s, NULL));
	CHECK_EQ_U64(s.nstacks, 1);
	CHECK_EQ_U64(s.stacks[0].pid, 22);
	snapshot_free(&s);
	/* status: no stacks asked for, none dropped */
	proto_request_init(&req, PROTO_STATUS);
	CHECK(!fetch_snapshot(&req, NULL, path, 0, &s, NULL));
	CHECK_EQ_U64(s.nstacks, 3);
	snapshot_free(&s);

	/* a pid the file does not hold */
	req = request(0, 33);
	capture_stderr_begin();
	CHECK(fetch_snapshot(&req, NULL, path, 0, &s, NULL) == -1);
	err = capture_stderr_end();
	CHECK(strstr(err, "s.mts: pid 33 is not in this snapshot\n") != NULL);
	free(err);

	/* not a snapshot */
	write_bytes(path, "hello\n", 6);
	capture_stderr_begin();
	CHECK(fetch_snapshot(&req, NULL, path, 0, &s, &raw) == -1);
	err = capture_stderr_end();
	CHECK(strstr(err, "s.mts: snapshot: ") != NULL);
	CHECK(strchr(err, '\n') == err + strlen(err) - 1);
	CHECK(!raw.data);
	free(err);
	unlink(path);
	buf_free(&bytes);
}

/*
 * Play memtraced for one connection at path: read the request line, check
 * it is want (the child's exit status says), answer status and reply.
 */
static pid_t serve_once(const char *path, const char *want, int status, const void *reply,
			size_t len)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	pid_t pid;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) || listen(lfd, 1))
		abort();
	pid = fork();
	if (pid < 0)
		abort();
	if (!pid) {
		uint8_t hdr[PROTO_REPLY_HEADER];
		char line[PROTO_MAX_REQUEST] = {0};
		int fd = accept(lfd, NULL, NULL), ok = 0;
		size_t got = 0;

		while (fd >= 0 && got < sizeof(line) - 1 && !strchr(line, '\n')) {
			ssize_t r = read(fd, line + got, sizeof(line) - 1 - got);

			if (r <= 0)
				break;
			got += (size_t)r;
		}
		ok = !strcmp(line, want);
		proto_reply_header(hdr, status, (uint32_t)len);
		if (write(fd, hdr, sizeof(hdr)) != sizeof(hdr) ||
		    write(fd, reply, len) != (ssize_t)len)
			ok = 0;
		_exit(ok ? 0 : 1);
	}
	close(lfd);
	return pid;
}

static int child_ok(pid_t pid)
{
	int st;

	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

TEST(test_socket)
{
	static const char daemon_error[] = "no such pid\x1b[2J\nsecond line";
	struct buf bytes = encoded();
	struct proto_request req = request(2, 0);
	struct snapshot s;
	char path[128], line[PROTO_MAX_REQUEST], *err;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/d.sock", dir);
	proto_request_format(&req, line, sizeof(line));

	/* the daemon narrows: what it sends is taken as it is */
	pid = serve_once(path, line, 0, bytes.data, bytes.len);
	CHECK(!fetch_snapshot(&req, path, NULL, 0, &s, NULL));
	CHECK(child_ok(pid));
	CHECK_EQ_U64(s.nstacks, 3);
	snapshot_free(&s);
	unlink(path);

	/* an error: one printable line, whatever the daemon sent */
	pid = serve_once(path, line, 1, daemon_error, sizeof(daemon_error) - 1);
	capture_stderr_begin();
	CHECK(fetch_snapshot(&req, path, NULL, 0, &s, NULL) == -1);
	err = capture_stderr_end();
	CHECK(child_ok(pid));
	CHECK_STR(err, "memtrace: memtraced: no such pid?[2J\n");
	free(err);
	unlink(path);

	/* a daemon of protocol version 1 refuses the kinds it lacks, and v=: said so */
	{
		static const char *const old[] = {"bad request: unknown command 'report'",
						  "bad request: unknown key 'v'"};

		for (int i = 0; i < 2; i++) {
			pid = serve_once(path, line, 1, old[i], strlen(old[i]));
			capture_stderr_begin();
			CHECK(fetch_snapshot(&req, path, NULL, 0, &s, NULL) == -1);
			err = capture_stderr_end();
			CHECK(child_ok(pid));
			CHECK(strstr(err, old[i]) != NULL);
			CHECK(strstr(err,
				     " (memtraced speaks an older protocol: use the memtracectl "
				     "of its release)\n") != NULL);
			free(err);
			unlink(path);
		}
	}

	/* nobody there */
	capture_stderr_begin();
	CHECK(fetch_snapshot(&req, path, NULL, 0, &s, NULL) == -1);
	err = capture_stderr_end();
	CHECK(strstr(err, "cannot connect to ") != NULL);
	CHECK(strstr(err, "d.sock: No such file or directory (is memtraced running?)\n") != NULL);
	free(err);
	buf_free(&bytes);
}

int main(int argc, char **argv)
{
	int rc;

	snprintf(dir, sizeof(dir), "/tmp/memtrace-test-fetch.XXXXXX");
	if (!mkdtemp(dir))
		abort();
	rc = UNIT_RUN(argc, argv);
	rmdir(dir); /* the tests removed what they made in it */
	return rc;
}
