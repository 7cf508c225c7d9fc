// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Fetching a snapshot (see fetch.h). Whatever the other side claims, memory
 * grows only as bytes really arrive, and a daemon's error text is shown as
 * one printable line: both come from another process.
 */
#include "ctl/fetch.h"
#include "common/groupkey.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/* How long to wait for memtraced, which symbolizes before it answers. */
#define REPLY_TIMEOUT_S 300
/* A daemon's error message is one line; anything longer is not one. */
#define MAX_ERROR_REPLY 4096
/* A snapshot file: the largest payload plus room for the header. */
#define MAX_FILE_BYTES (SNAPSHOT_MAX_BYTES + 4096)

/* Read until n bytes or end of file; returns the count read, or -1. */
static ssize_t read_full(int fd, void *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)p + got, n - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static int write_full(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		p = (const char *)p + r;
		n -= (size_t)r;
	}
	return 0;
}

/*
 * Read up to max bytes (all of them when exact) into a buffer that grows as
 * bytes arrive, so that a length claimed by the other side costs nothing
 * until the bytes are really there. Returns 0, or -1 with errno (0 when the
 * data ended early or went past max).
 */
static int read_growing(int fd, size_t max, int exact, struct buf *out)
{
	struct buf b = {0};
	ssize_t r;

	for (;;) {
		size_t want = max - b.len < (1u << 20) ? max - b.len : (1u << 20);

		if (!want)
			break;
		buf_reserve(&b, want);
		r = read_full(fd, b.data + b.len, want);
		if (r < 0)
			goto fail;
		b.len += (size_t)r;
		if ((size_t)r < want)
			break;
	}
	if (exact ? b.len != max : b.len == max && read_full(fd, &(char){0}, 1) != 0) {
		errno = 0;
		goto fail;
	}
	*out = b;
	return 0;
fail:
	buf_free(&b);
	return -1;
}

static int connect_daemon(const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct timeval timeout = {.tv_sec = REPLY_TIMEOUT_S};
	int fd, err;

	if (strlen(path) >= sizeof(addr.sun_path)) {
		log_msg("%s: socket path too long", path);
		return -1;
	}
	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_msg("cannot create a socket: %s", strerror(errno));
		return -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout))) {
		log_msg("%s: cannot set a timeout: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		err = errno;
		log_msg("cannot connect to %s: %s%s", path, strerror(err),
			err == ENOENT || err == ECONNREFUSED ? " (is memtraced running?)"
			: err == EACCES || err == EPERM
			    ? " (only root and the memtrace group may use it)"
			    : "");
		close(fd);
		return -1;
	}
	return fd;
}

/* A daemon of protocol version 1 knows neither the kinds it lacks nor v=. */
static int older_daemon(const char *error, size_t len)
{
	static const char unknown[] = "bad request: unknown command ",
			  v[] = "bad request: unknown key 'v'";

	return (len >= sizeof(unknown) - 1 && !memcmp(error, unknown, sizeof(unknown) - 1)) ||
	       (len == sizeof(v) - 1 && !memcmp(error, v, len));
}

static void print_daemon_error(const uint8_t *msg, size_t len)
{
	char line[MAX_ERROR_REPLY + 1];
	size_t n = 0;

	/* One line, printable: the message is from another process. */
	for (size_t i = 0; i < len && msg[i] != '\n'; i++)
		line[n++] = msg[i] < 0x20 || msg[i] == 0x7f ? '?' : (char)msg[i];
	line[n] = '\0';
	log_msg("memtraced: %s%s", n ? line : "request failed",
		older_daemon(line, n) ? " (memtraced speaks an older protocol: use the memtracectl "
					"of its release)"
				      : "");
}

/* Ask the daemon (the line, then body's len bytes); 0 with the snapshot bytes, or -1
 * after a message. */
static int fetch_from_socket(const struct proto_request *req, const char *socket_path,
			     const void *body, size_t len, struct buf *data)
{
	uint8_t hdr[PROTO_REPLY_HEADER];
	char line[PROTO_MAX_REQUEST];
	int fd, n, status, rc = -1;
	uint32_t size;
	ssize_t r;

	n = proto_request_format(req, line, sizeof(line));
	if (n < 0) {
		log_msg("cannot format the request");
		return -1;
	}
	fd = connect_daemon(socket_path);
	if (fd < 0)
		return -1;
	if (req->kind == PROTO_SCAN) {
		/* a scan may stand each target still for max_pause: wait for that too */
		struct timeval t = {.tv_sec = REPLY_TIMEOUT_S +
					      4 * (time_t)(req->scan.max_pause_ns / 1000000000ull)};

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof(t));
	}
	/* A daemon that refuses us (permission, too many clients) answers and
	 * closes before reading: its reply is then waiting behind the EPIPE. */
	if ((write_full(fd, line, (size_t)n) || (len && write_full(fd, body, len))) &&
	    errno != EPIPE && errno != ECONNRESET) {
		log_msg("%s: cannot send the request: %s", socket_path, strerror(errno));
		goto out;
	}
	r = read_full(fd, hdr, sizeof(hdr));
	if (r < 0) {
		log_msg("%s: cannot read the reply: %s", socket_path,
			errno == EAGAIN ? "timed out" : strerror(errno));
		goto out;
	}
	if (r < (ssize_t)sizeof(hdr) || proto_reply_parse_header(hdr, &status, &size)) {
		log_msg("%s: %s", socket_path,
			r ? "the reply is not from memtraced" : "memtraced closed the connection");
		goto out;
	}
	if (status && size > MAX_ERROR_REPLY) {
		log_msg("%s: memtraced sent an error too long to show", socket_path);
		goto out;
	}
	if (read_growing(fd, size, 1, data)) {
		log_msg("%s: cannot read the reply: %s", socket_path,
			errno == EAGAIN ? "timed out"
			: errno		? strerror(errno)
					: "connection closed before its end");
		goto out;
	}
	if (status) {
		print_daemon_error(data->data, data->len);
		buf_free(data);
		goto out;
	}
	rc = 0;
out:
	close(fd);
	return rc;
}

static int fetch_from_file(const char *path, struct buf *data)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;

	if (fd < 0) {
		log_msg("cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	if (read_growing(fd, MAX_FILE_BYTES, 0, data)) {
		log_msg("%s: %s", path, errno ? strerror(errno) : "too large for a snapshot");
		if (fd != STDIN_FILENO)
			close(fd);
		return -1;
	}
	if (fd != STDIN_FILENO)
		close(fd);
	return 0;
}

/*
 * What the daemon does for a request that selects stacks, done here for a
 * file: the stacks it would pick, in its order (rows and leaks are then
 * counted from every one of them here).
 */
static int select_from_file(const struct proto_request *req, const char *file, struct snapshot *s)
{
	uint32_t pid = proto_request_pid(req);
	int found = !pid;

	for (uint32_t i = 0; i < s->ntargets && !found; i++)
		found = s->targets[i].pid == pid;
	if (!found) {
		log_msg("%s: pid %u is not in this snapshot", file, pid);
		return -1;
	}
	if (req->kind == PROTO_REPORT)
		snapshot_select(s, req->report.sort, req->report.top, pid);
	else if (req->kind == PROTO_ROWS)
		snapshot_select(s, req->rows.select, 0, pid);
	else
		snapshot_select(s, MT_SORT_LIVE, 0, pid); /* leaks: the stacks with live bytes */
	return 0;
}

int fetch_filter_cgroup(struct snapshot *s, const char *path, const char *what)
{
	uint32_t kept = 0, nblocks = 0, *remap;
	struct mt_stack_counters sum = {0};

	if (s->kind != SNAP_STACKS) {
		log_msg("%s: its stacks were grouped or chosen by the daemon: --cgroup needs a "
			"snapshot of stacks",
			what);
		return -1;
	}
	remap = xmalloc((s->nstacks ? s->nstacks : 1) * sizeof(*remap));
	for (uint32_t i = 0; i < s->nstacks; i++) {
		remap[i] = UINT32_MAX;
		if (!group_target_in_cgroup(s, s->stacks[i].pid, path))
			continue;
		mt_stack_counters_add(&sum, &s->stacks[i].t);
		remap[i] = kept;
		s->stacks[kept++] = s->stacks[i];
	}
	/* the dropped stacks' frames stay in the snapshot's arrays until snapshot_free */
	for (uint32_t i = 0; s->block_list && i < s->block_list->nblocks; i++) {
		struct snap_block *b = s->block_list->blocks;
		uint32_t to = b[i].stack < s->nstacks ? remap[b[i].stack] : UINT32_MAX;

		if (to != UINT32_MAX) {
			b[nblocks] = b[i];
			b[nblocks++].stack = to;
		}
	}
	if (s->block_list)
		s->block_list->nblocks = nblocks;
	free(remap);
	if (s->stacks_total == s->nstacks)
		s->stacks_total = kept;
	s->nstacks = kept;
	s->totals.live_bytes = sum.live_bytes;
	s->totals.live_allocations = sum.live_allocations;
	s->totals.allocations = sum.allocations;
	s->totals.bytes_allocated = sum.bytes_allocated;
	/* what the kept stacks held at the moment of the whole trace's peak */
	s->totals.peak_live_bytes = sum.peak_live_bytes;
	return 0;
}

int fetch_checked(const struct proto_request *req, const char *socket_path, const char *file,
		  struct buf *raw, struct snapshot_counts *counts)
{
	char err[256];

	memset(raw, 0, sizeof(*raw));
	if (file ? fetch_from_file(file, raw) : fetch_from_socket(req, socket_path, NULL, 0, raw))
		return -1;
	if (snapshot_scan(raw->data, raw->len, counts, err, sizeof(err))) {
		log_msg("%s: %s", file ? file : socket_path, err);
		buf_free(raw);
		return -1;
	}
	return 0;
}

int fetch_snapshot(const struct proto_request *req, const char *socket_path, const char *file,
		   int whole, struct snapshot *snap, struct buf *raw)
{
	struct buf data = {0};
	char err[256];
	int rc;

	rc = file ? fetch_from_file(file, &data)
		  : fetch_from_socket(req, socket_path, NULL, 0, &data);
	if (rc)
		return -1;
	rc = snapshot_decode(data.data, data.len, snap, err, sizeof(err));
	if (rc) {
		log_msg("%s: %s", file ? file : socket_path, err);
		buf_free(&data);
		return -1;
	}
	if (file && !whole &&
	    (req->kind == PROTO_REPORT || req->kind == PROTO_ROWS || req->kind == PROTO_LEAKS) &&
	    select_from_file(req, file, snap)) {
		snapshot_free(snap);
		buf_free(&data);
		return -1;
	}
	if (raw)
		*raw = data;
	else
		buf_free(&data);
	return 0;
}

int fetch_body(const struct proto_request *req, const char *socket_path, const void *body,
	       size_t len, struct snapshot *snap)
{
	struct buf data = {0};
	char err[256];

	if (fetch_from_socket(req, socket_path, body, len, &data))
		return -1;
	if (snapshot_decode(data.data, data.len, snap, err, sizeof(err))) {
		log_msg("%s: %s", socket_path, err);
		buf_free(&data);
		return -1;
	}
	buf_free(&data);
	return 0;
}

int fetch_scan(const struct proto_request *req, const char *socket_path, const void *body,
	       size_t len, struct snapshot *snap)
{
	if (fetch_body(req, socket_path, body, len, snap))
		return -1;
	if (snap->kind != SNAP_SCAN) {
		log_msg("%s: the answer holds no scan (an older memtraced?)", socket_path);
		snapshot_free(snap);
		return -1;
	}
	return 0;
}

void fetch_filter_cgroup_targets(struct snapshot *s, const char *path)
{
	uint32_t kept = 0, *remap = xmalloc((s->ntargets ? s->ntargets : 1) * sizeof(*remap));
	struct mt_counters sum = {0};

	for (uint32_t i = 0; i < s->ntargets; i++) {
		struct snap_target *t = &s->targets[i];

		remap[i] = UINT32_MAX;
		if (!t->cgroup.known || !(group_cgroup_below(t->cgroup.memory_path, path) ||
					  group_cgroup_below(t->cgroup.path, path))) {
			free(t->sites); /* its strings are the snapshot's */
			continue;
		}
		mt_counters_merge(&sum, &t->counters);
		remap[i] = kept;
		s->targets[kept++] = *t;
	}
	if (s->breakdowns) {
		struct snap_breakdowns *b = s->breakdowns;
		uint32_t n = 0;

		for (uint32_t i = 0; i < b->nmemory; i++) {
			uint32_t to = b->memory[i].target < s->ntargets ? remap[b->memory[i].target]
									: UINT32_MAX;

			if (to != UINT32_MAX) {
				b->memory[n] = b->memory[i];
				b->memory[n++].target = to;
			}
		}
		b->nmemory = n;
	}
	if (s->timeline_targets) {
		free(s->timeline_targets->figures);
		free(s->timeline_targets);
		s->timeline_targets = NULL;
	}
	free(remap);
	s->ntargets = kept;
	s->totals = sum;
}
