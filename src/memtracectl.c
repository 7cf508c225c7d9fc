// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * memtracectl: the client. It sends one request line to memtraced's socket
 * (or reads a snapshot file), decodes the snapshot in the reply and renders
 * one view of it. Exit status: 0 ok, 1 runtime error, 2 usage error.
 */
#include "memtrace/snapshot.h"
#include "proto.h"
#include "render.h"
#include "util.h"
#include "views.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef MEMTRACE_VERSION
#define MEMTRACE_VERSION "unknown"
#endif

#define EXIT_RUNTIME 1
#define EXIT_USAGE   2

/* How long to wait for memtraced, which symbolizes before it answers. */
#define REPLY_TIMEOUT_S 300
/* A daemon's error message is one line; anything longer is not one. */
#define MAX_ERROR_REPLY 4096
/* A snapshot file: the largest payload plus room for the header. */
#define MAX_FILE_BYTES (SNAPSHOT_MAX_BYTES + 4096)

enum command { CMD_STATUS, CMD_STATS, CMD_REPORT, CMD_COUNT };

enum option {
	OPT_SOCKET,
	OPT_FROM,
	OPT_JSON,
	OPT_FORMAT,
	OPT_TOP,
	OPT_SORT,
	OPT_PID,
	OPT_HELP,
	OPT_VERSION,
	OPT_SAMPLE,
	OPT_PEAK,
	OPT_OUTPUT,
	OPT_COUNT
};

#define ALL_COMMANDS ((1u << CMD_COUNT) - 1)

static const struct {
	const char *name;
	int takes_value;
	unsigned commands; /* bit per enum command the option applies to */
} options[OPT_COUNT] = {
    [OPT_SOCKET] = {"--socket", 1, ALL_COMMANDS},
    [OPT_FROM] = {"--from", 1, ALL_COMMANDS},
    [OPT_JSON] = {"--json", 0, ALL_COMMANDS},
    [OPT_FORMAT] = {"--format", 1, ALL_COMMANDS},
    [OPT_TOP] = {"--top", 1, 1u << CMD_REPORT},
    [OPT_SORT] = {"--sort", 1, 1u << CMD_REPORT},
    [OPT_PID] = {"--pid", 1, 1u << CMD_REPORT},
    [OPT_HELP] = {"--help", 0, ALL_COMMANDS},
    [OPT_VERSION] = {"--version", 0, ALL_COMMANDS},
    [OPT_SAMPLE] = {"--sample", 1, 1u << CMD_REPORT},
    [OPT_PEAK] = {"--peak", 0, 1u << CMD_REPORT},
    [OPT_OUTPUT] = {"--output", 1, ALL_COMMANDS},
};

typedef void render_fn(struct buf *out, const struct snapshot *s, const struct render_opts *o);

static const struct {
	const char *name;
	render_fn *render;
	int stacks; /* whether the request asks for stacks */
} commands[CMD_COUNT] = {
    [CMD_STATUS] = {"status", render_status, 0},
    [CMD_STATS] = {"stats", render_stats, 1},
    [CMD_REPORT] = {"report", render_report, 1},
};

struct args {
	int command; /* enum command, -1 if none given */
	const char *socket;
	const char *from;
	const char *output; /* -o FILE, else stdout */
	struct proto_request request;
	struct render_opts render;
	unsigned given; /* bit per enum option */
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: memtracectl [--socket PATH | --from FILE] COMMAND [OPTIONS]\n"
	    "\n"
	    "Ask memtraced what the traced processes allocate.\n"
	    "\n"
	    "Commands:\n"
	    "  status [--json]       daemon uptime, events received and lost, traced processes\n"
	    "  stats [--json]        allocation counters: totals, peak, losses, per process\n"
	    "  report [OPTIONS]      the call stacks that hold (or allocated) the most memory\n"
	    "      --top N           show N stacks (default 10; 0 shows all)\n"
	    "      --sort KEY        live (default), allocated, count or peak\n"
	    "      --pid PID         only the stacks of process PID\n"
	    "      --format FORMAT   text (default), json, folded (flame graph stacks),\n"
	    "                        pprof (gzip profile.proto) or html (one page)\n"
	    "      --sample KIND     folded and html: live (default), allocated, count\n"
	    "                        or peak bytes per stack\n"
	    "      --peak            pprof: the profile of what was live at the peak\n"
	    "      -o, --output FILE write there (atomically) instead of stdout\n"
	    "\n"
	    "Options:\n"
	    "  --socket PATH         memtraced's socket (default: $MEMTRACE_SOCKET, else\n"
	    "                        %s)\n"
	    "  --from FILE           read a snapshot file instead ('-' reads stdin)\n"
	    "  --json                the same as --format json\n"
	    "  -h, --help            show this help\n"
	    "  --version             show the version\n"
	    "\n"
	    "Exit status: 0 ok, 1 runtime error, 2 usage error.\n",
	    PROTO_DEFAULT_SOCKET);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_msg("%s", msg);
	return -1;
}

static int set_option(struct args *a, int opt, const char *value)
{
	uint64_t v;

	switch (opt) {
	case OPT_SOCKET:
		a->socket = value;
		break;
	case OPT_FROM:
		a->from = value;
		break;
	case OPT_JSON:
		a->render.format = RENDER_JSON;
		break;
	case OPT_FORMAT:
		if (!strcmp(value, "json"))
			a->render.format = RENDER_JSON;
		else if (!strcmp(value, "text"))
			a->render.format = RENDER_TEXT;
		else if (!strcmp(value, "folded"))
			a->render.format = RENDER_FOLDED;
		else if (!strcmp(value, "pprof"))
			a->render.format = RENDER_PPROF;
		else if (!strcmp(value, "html"))
			a->render.format = RENDER_HTML;
		else
			return usage_error(
			    "bad --format '%s' (expected text, json, folded, pprof or "
			    "html)",
			    value);
		break;
	case OPT_SAMPLE:
		a->render.sample = view_sample_from_name(value);
		if (a->render.sample < 0)
			return usage_error("bad --sample '%s' (expected live, allocated, count or "
					   "peak)",
					   value);
		break;
	case OPT_PEAK:
		a->render.peak = 1;
		break;
	case OPT_OUTPUT:
		if (!*value)
			return usage_error("--output needs a file name");
		a->output = value;
		break;
	case OPT_TOP:
		if (parse_u64(value, PROTO_MAX_TOP, &v))
			return usage_error("bad --top '%s' (expected 0 to %u)", value,
					   PROTO_MAX_TOP);
		a->request.top = (uint32_t)v;
		break;
	case OPT_SORT:
		a->request.sort = snap_sort_from_name(value);
		if (a->request.sort < 0)
			return usage_error("bad --sort '%s' (expected live, allocated, count or "
					   "peak)",
					   value);
		break;
	case OPT_PID:
		if (parse_u64(value, PROTO_MAX_PID, &v) || !v)
			return usage_error("bad --pid '%s' (expected 1 to %u)", value,
					   PROTO_MAX_PID);
		a->request.pid = (uint32_t)v;
		break;
	}
	return 0;
}

/*
 * folded, pprof and html show every stack with a non-zero value unless --top
 * is given, and ask for the stacks ordered by the number they show.
 */
static int profile_options(struct args *a)
{
	int f = a->render.format;
	int profile = f == RENDER_FOLDED || f == RENDER_PPROF || f == RENDER_HTML;

	if ((a->given & (1u << OPT_SAMPLE)) && f != RENDER_FOLDED && f != RENDER_HTML)
		return usage_error("--sample applies to --format folded and html");
	if (a->render.peak && f != RENDER_PPROF)
		return usage_error("--peak applies to --format pprof (folded and html: --sample "
				   "peak)");
	if (!profile)
		return 0;
	if (a->command != CMD_REPORT)
		return usage_error("--format %s applies to report", f == RENDER_PPROF  ? "pprof"
								    : f == RENDER_HTML ? "html"
										       : "folded");
	if ((a->given & (1u << OPT_SORT)))
		return usage_error("--sort does not apply to --format %s (see --sample)",
				   f == RENDER_PPROF  ? "pprof"
				   : f == RENDER_HTML ? "html"
						      : "folded");
	if (f == RENDER_PPROF && !a->output && isatty(STDOUT_FILENO))
		return usage_error(
		    "a pprof profile is binary: write it with -o FILE (or redirect)");
	if (!(a->given & (1u << OPT_TOP)))
		a->request.top = 0;
	if (f == RENDER_PPROF)
		a->request.sort = a->render.peak ? SNAP_SORT_PEAK : SNAP_SORT_ALLOCATED;
	else if (f == RENDER_HTML) /* the page switches between samples itself */
		a->request.sort = SNAP_SORT_ALLOCATED;
	else
		a->request.sort = view_sample_sort(a->render.sample);
	return 0;
}

/*
 * Options may come before or after the command; each is checked against the
 * command once it is known. Returns 0, 1 when --help or --version was
 * handled, or -1 on a usage error.
 */
static int parse_args(int argc, char **argv, struct args *a)
{
	const char *env = getenv("MEMTRACE_SOCKET");

	memset(a, 0, sizeof(*a));
	a->command = -1;
	a->socket = env && *env ? env : PROTO_DEFAULT_SOCKET;
	proto_request_init(&a->request);
	a->request.top = 10;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *value = NULL, *eq;
		size_t namelen;
		int opt;

		if (arg[0] != '-') {
			int c;

			for (c = 0; c < CMD_COUNT; c++)
				if (!strcmp(arg, commands[c].name))
					break;
			if (a->command >= 0)
				return usage_error("unexpected argument '%s'", arg);
			if (c == CMD_COUNT)
				return usage_error("unknown command '%s' (see memtracectl --help)",
						   arg);
			a->command = c;
			continue;
		}
		if (!strcmp(arg, "-h"))
			arg = "--help";
		if (!strcmp(arg, "-o"))
			arg = "--output";
		eq = strchr(arg, '=');
		namelen = eq ? (size_t)(eq - arg) : strlen(arg);
		for (opt = 0; opt < OPT_COUNT; opt++)
			if (strlen(options[opt].name) == namelen &&
			    !strncmp(arg, options[opt].name, namelen))
				break;
		if (opt == OPT_COUNT)
			return usage_error("unknown option '%.*s' (see memtracectl --help)",
					   (int)namelen, arg);
		if (options[opt].takes_value) {
			if (eq)
				value = eq + 1;
			else if (i + 1 < argc)
				value = argv[++i];
			else
				return usage_error("%s needs a value", options[opt].name);
		} else if (eq) {
			return usage_error("%s takes no value", options[opt].name);
		}
		if (opt == OPT_HELP) {
			usage(stdout);
			return 1;
		}
		if (opt == OPT_VERSION) {
			printf("memtracectl %s\n", MEMTRACE_VERSION);
			return 1;
		}
		a->given |= 1u << opt;
		if (set_option(a, opt, value))
			return -1;
	}
	if (a->command < 0)
		return usage_error("no command given (see memtracectl --help)");
	for (int opt = 0; opt < OPT_COUNT; opt++)
		if ((a->given & (1u << opt)) && !(options[opt].commands & (1u << a->command)))
			return usage_error("%s does not apply to %s", options[opt].name,
					   commands[a->command].name);
	if ((a->given & (1u << OPT_SOCKET)) && a->from)
		return usage_error("--socket and --from exclude each other");
	a->request.stacks = commands[a->command].stacks;
	if (!a->request.stacks)
		a->request.top = 0;
	if (a->command == CMD_STATS) { /* every stack, for the top sites */
		a->request.top = 0;
		a->request.sort = SNAP_SORT_ALLOCATED;
	}
	if (profile_options(a))
		return -1;
	a->render.sort = a->request.sort;
	a->render.pid = a->request.pid;
	a->render.pretty = 1;
	return 0;
}

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
static int read_growing(int fd, size_t max, int exact, uint8_t **data, size_t *len)
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
	*data = b.data;
	*len = b.len;
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

static void print_daemon_error(const uint8_t *msg, size_t len)
{
	char line[MAX_ERROR_REPLY + 1];
	size_t n = 0;

	/* One line, printable: the message is from another process. */
	for (size_t i = 0; i < len && msg[i] != '\n'; i++)
		line[n++] = msg[i] < 0x20 || msg[i] == 0x7f ? '?' : (char)msg[i];
	line[n] = '\0';
	log_msg("memtraced: %s", n ? line : "request failed");
}

/* Ask the daemon; returns 0 with the snapshot bytes, or -1 after a message. */
static int fetch_from_socket(const struct args *a, uint8_t **data, size_t *len)
{
	uint8_t hdr[PROTO_REPLY_HEADER];
	char line[PROTO_MAX_REQUEST];
	int fd, n, status, rc = -1;
	uint32_t size;
	ssize_t r;

	n = proto_request_format(&a->request, line, sizeof(line));
	if (n < 0) {
		log_msg("cannot format the request");
		return -1;
	}
	fd = connect_daemon(a->socket);
	if (fd < 0)
		return -1;
	if (write_full(fd, line, (size_t)n)) {
		log_msg("%s: cannot send the request: %s", a->socket, strerror(errno));
		goto out;
	}
	r = read_full(fd, hdr, sizeof(hdr));
	if (r < 0) {
		log_msg("%s: cannot read the reply: %s", a->socket,
			errno == EAGAIN ? "timed out" : strerror(errno));
		goto out;
	}
	if (r < (ssize_t)sizeof(hdr) || proto_reply_parse_header(hdr, &status, &size)) {
		log_msg("%s: %s", a->socket,
			r ? "the reply is not from memtraced" : "memtraced closed the connection");
		goto out;
	}
	if (status && size > MAX_ERROR_REPLY) {
		log_msg("%s: memtraced sent an error too long to show", a->socket);
		goto out;
	}
	if (read_growing(fd, size, 1, data, len)) {
		log_msg("%s: cannot read the reply: %s", a->socket,
			errno == EAGAIN ? "timed out"
			: errno		? strerror(errno)
					: "connection closed before its end");
		goto out;
	}
	if (status) {
		print_daemon_error(*data, *len);
		free(*data);
		*data = NULL;
		goto out;
	}
	rc = 0;
out:
	close(fd);
	return rc;
}

static int fetch_from_file(const char *path, uint8_t **data, size_t *len)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;

	if (fd < 0) {
		log_msg("cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	if (read_growing(fd, MAX_FILE_BYTES, 0, data, len)) {
		log_msg("%s: %s", path, errno ? strerror(errno) : "too large for a snapshot");
		if (fd != STDIN_FILENO)
			close(fd);
		return -1;
	}
	if (fd != STDIN_FILENO)
		close(fd);
	return 0;
}

/* What the daemon does for a request, done here for a file. */
static int select_from_file(const struct args *a, struct snapshot *s)
{
	int found = !a->request.pid;

	for (uint32_t i = 0; i < s->ntargets && !found; i++)
		found = s->targets[i].pid == a->request.pid;
	if (!found) {
		log_msg("%s: pid %u is not in this snapshot", a->from, a->request.pid);
		return -1;
	}
	snapshot_select(s, a->request.sort, a->request.top, a->request.pid);
	return 0;
}

/* Write b to path through a temporary file in the same directory and a rename. */
static int write_file(const char *path, const struct buf *b)
{
	size_t len = strlen(path);
	char *tmp = xmalloc(len + 32);
	int fd, err = 0;

	snprintf(tmp, len + 32, "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		log_msg("cannot create %s: %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	for (size_t off = 0; off < b->len && !err;) {
		ssize_t w = write(fd, b->data + off, b->len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			err = errno;
		else
			off += (size_t)w;
	}
	if (!err && fsync(fd))
		err = errno;
	if (close(fd) && !err)
		err = errno;
	if (!err && rename(tmp, path))
		err = errno;
	if (err) {
		log_msg("cannot write %s: %s", path, strerror(err));
		unlink(tmp);
	}
	free(tmp);
	return err ? -1 : 0;
}

static int write_stdout(const struct buf *b)
{
	if ((b->len && fwrite(b->data, 1, b->len, stdout) != b->len) || fflush(stdout)) {
		log_msg("stdout: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct snapshot snap;
	struct buf out = {0};
	struct args a;
	uint8_t *data = NULL;
	size_t len = 0;
	char err[256];
	int rc;

	util_progname = "memtracectl";
	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc > 0 ? 0 : EXIT_USAGE;

	rc = a.from ? fetch_from_file(a.from, &data, &len) : fetch_from_socket(&a, &data, &len);
	if (rc)
		return EXIT_RUNTIME;
	rc = snapshot_decode(data, len, &snap, err, sizeof(err));
	free(data);
	if (rc) {
		log_msg("%s: %s", a.from ? a.from : a.socket, err);
		return EXIT_RUNTIME;
	}
	if (a.from && a.request.stacks && select_from_file(&a, &snap)) {
		snapshot_free(&snap);
		return EXIT_RUNTIME;
	}
	switch (a.render.format) {
	case RENDER_FOLDED:
		render_folded(&out, &snap, &a.render);
		break;
	case RENDER_PPROF:
		rc = render_pprof(&out, &snap, &a.render);
		break;
	case RENDER_HTML:
		render_html(&out, &snap, &a.render);
		break;
	default:
		commands[a.command].render(&out, &snap, &a.render);
		break;
	}
	snapshot_free(&snap);
	if (!rc)
		rc = a.output ? write_file(a.output, &out) : write_stdout(&out);
	buf_free(&out);
	return rc ? EXIT_RUNTIME : 0;
}
