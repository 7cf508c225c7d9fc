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
#include "outputs.h"
#include "views.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <termios.h>
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

enum command {
	CMD_STATUS,
	CMD_STATS,
	CMD_REPORT,
	CMD_SNAPSHOT,
	CMD_DIFF,
	CMD_PEAK,
	CMD_LEAKS,
	CMD_TIMELINE,
	CMD_WATCH,
	CMD_RESET_PEAK,
	CMD_ATTACH,
	CMD_DETACH,
	CMD_COUNT
};

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
	OPT_OUTPUT,
	OPT_BY,
	OPT_CUMULATIVE,
	OPT_OLDER_THAN,
	OPT_INTERVAL,
	OPT_ITERATIONS,
	OPT_ROWS,
	OPT_OLDEST,
	OPT_SAMPLE,
	OPT_PEAK,
	OPT_COUNT
};

#define ALL_COMMANDS ((1u << CMD_COUNT) - 1)
#define FROM_CMDS                                                                                  \
	(ALL_COMMANDS & ~(1u << CMD_DIFF | 1u << CMD_WATCH | 1u << CMD_RESET_PEAK |                \
			  1u << CMD_ATTACH | 1u << CMD_DETACH))
#define TOP_CMDS                                                                                   \
	(1u << CMD_REPORT | 1u << CMD_DIFF | 1u << CMD_PEAK | 1u << CMD_LEAKS | 1u << CMD_WATCH)
#define BY_CMDS	 (1u << CMD_DIFF | 1u << CMD_PEAK | 1u << CMD_WATCH | 1u << CMD_REPORT)
#define PID_CMDS (1u << CMD_REPORT | 1u << CMD_PEAK | 1u << CMD_LEAKS)

static const struct {
	const char *name;
	int takes_value;
	unsigned commands; /* bit per enum command the option applies to */
} options[OPT_COUNT] = {
    [OPT_SOCKET] = {"--socket", 1, ALL_COMMANDS},
    [OPT_FROM] = {"--from", 1, FROM_CMDS},
    [OPT_JSON] = {"--json", 0, ALL_COMMANDS & ~(1u << CMD_SNAPSHOT)},
    [OPT_FORMAT] = {"--format", 1, ALL_COMMANDS & ~(1u << CMD_SNAPSHOT)},
    [OPT_TOP] = {"--top", 1, TOP_CMDS},
    [OPT_SORT] = {"--sort", 1, 1u << CMD_REPORT},
    [OPT_PID] = {"--pid", 1, PID_CMDS},
    [OPT_HELP] = {"--help", 0, ALL_COMMANDS},
    [OPT_VERSION] = {"--version", 0, ALL_COMMANDS},
    [OPT_OUTPUT] = {"--output", 1, (1u << CMD_SNAPSHOT) | (1u << CMD_REPORT)},
    [OPT_BY] = {"--by", 1, BY_CMDS},
    [OPT_CUMULATIVE] = {"--cumulative", 0, BY_CMDS},
    [OPT_OLDER_THAN] = {"--older-than", 1, 1u << CMD_LEAKS},
    [OPT_INTERVAL] = {"--interval", 1, 1u << CMD_WATCH},
    [OPT_ITERATIONS] = {"--count", 1, 1u << CMD_WATCH},
    [OPT_ROWS] = {"--rows", 1, 1u << CMD_TIMELINE},
    [OPT_OLDEST] = {"--oldest", 0, 1u << CMD_REPORT},
    [OPT_SAMPLE] = {"--sample", 1, 1u << CMD_REPORT},
    [OPT_PEAK] = {"--peak", 0, 1u << CMD_REPORT},
};

typedef void render_fn(struct buf *out, const struct snapshot *s, const struct render_opts *o);
typedef void view_fn(struct buf *out, const struct snapshot *s, const struct view_opts *o);

static const struct {
	const char *name;
	render_fn *render; /* one of these two renders the one snapshot fetched */
	view_fn *view;
	int stacks; /* whether the request asks for stacks */
	int sort;   /* the stacks the request asks for (views ask for all of them) */
	int blocks; /* whether it asks for the live block list */
	int nargs;  /* positional arguments after the command */
} commands[CMD_COUNT] = {
    [CMD_STATUS] = {"status", render_status, NULL, 0, SNAP_SORT_LIVE, 0, 0},
    [CMD_STATS] = {"stats", render_stats, NULL, 1, SNAP_SORT_ALLOCATED, 0, 0},
    [CMD_REPORT] = {"report", render_report, NULL, 1, SNAP_SORT_LIVE, 0, 0},
    [CMD_SNAPSHOT] = {"snapshot", NULL, NULL, 1, SNAP_SORT_COUNT, 1, 0},
    [CMD_DIFF] = {"diff", NULL, NULL, 1, SNAP_SORT_LIVE, 0, 2},
    [CMD_PEAK] = {"peak", NULL, render_peak, 1, SNAP_SORT_PEAK, 0, 0},
    [CMD_LEAKS] = {"leaks", NULL, render_leaks, 1, SNAP_SORT_LIVE, 1, 0},
    [CMD_TIMELINE] = {"timeline", NULL, render_timeline, 0, SNAP_SORT_LIVE, 0, 0},
    [CMD_WATCH] = {"watch", NULL, NULL, 1, SNAP_SORT_LIVE, 0, 0},
    [CMD_RESET_PEAK] = {"reset-peak", render_stats, NULL, 0, SNAP_SORT_LIVE, 0, 0},
    [CMD_ATTACH] = {"attach", render_status, NULL, 0, SNAP_SORT_LIVE, 0, 1},
    [CMD_DETACH] = {"detach", render_status, NULL, 0, SNAP_SORT_LIVE, 0, 1},
};

struct args {
	int command; /* enum command, -1 if none given */
	const char *socket;
	const char *from;
	const char *output; /* -o FILE, else stdout */
	struct proto_request request;
	struct render_opts render;
	struct view_opts view;
	int grouped;	      /* report --by / --cumulative */
	int group_sort;	      /* the rows' order (enum snap_sort) */
	const char *files[2]; /* diff OLD NEW */
	int nfiles;
	uint64_t interval_ns; /* watch */
	uint64_t iterations;  /* watch: 0 = until q */
	unsigned given;	      /* bit per enum option */
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
	    "      --sort KEY        live (default), allocated, count, peak or temporary\n"
	    "      --pid PID         only the stacks of process PID\n"
	    "      --format FORMAT   text (default), json, folded (flame graph stacks),\n"
	    "                        pprof (gzip profile.proto) or html (one page)\n"
	    "      --sample KIND     folded and html: live (default), allocated, count\n"
	    "                        or peak bytes per stack\n"
	    "      --peak            pprof: the profile of what was live at the peak\n"
	    "      -o, --output FILE write there (atomically) instead of stdout\n"
	    "      --oldest          show the age of each stack's oldest live block\n"
	    "      --by KEY          group as tracemalloc's statistics: function, file,\n"
	    "                        line, module or stack (\"key: size=, count=, average=\")\n"
	    "      --cumulative      with --by: count a stack under each of its frames\n"
	    "  snapshot -o FILE      save everything (stacks, live blocks, timeline) to FILE\n"
	    "  diff OLD NEW          what grew between two snapshot files (tracemalloc's\n"
	    "                        compare_to), largest growth first\n"
	    "      --by KEY          stack, function (default), file, line or module\n"
	    "      --cumulative      count a stack under every frame, not the innermost\n"
	    "      --top N           show N groups (default 10; 0 shows all)\n"
	    "  peak [--top N] [--by KEY] [--pid PID]\n"
	    "                        what was live at the moment of peak_live_bytes\n"
	    "  reset-peak            start a new peak window (peak = live bytes now)\n"
	    "  attach PID            start tracing process PID (the daemon may trace many)\n"
	    "  detach PID            stop tracing PID; its probes go, its data stays\n"
	    "  leaks [--older-than DURATION] [--top N] [--pid PID]\n"
	    "                        live blocks at least that old (default 0s), by stack\n"
	    "  timeline [--rows N]   live bytes and allocation rate over time\n"
	    "  watch [--interval DURATION] [--count N] [--top N] [--by KEY]\n"
	    "                        refresh live bytes, rate, peak, losses and the groups\n"
	    "                        that grew most, every second; q or Ctrl-C quits\n"
	    "\n"
	    "DURATION is a number with a unit: 500ms, 30s, 5m, 2h (no unit: seconds).\n"
	    "\n"
	    "Options:\n"
	    "  --socket PATH         memtraced's socket (default: $MEMTRACE_SOCKET, else\n"
	    "                        %s)\n"
	    "  --from FILE           read a snapshot file instead ('-' reads stdin)\n"
	    "  --json                the same as --format json\n"
	    "  -o, --output FILE     where snapshot writes ('-' is stdout)\n"
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

/* "30s", "500ms", "5m", "2h", "1d", or a bare number of seconds (decimals allowed). */
static int parse_duration(const char *s, uint64_t *ns)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"ns", 1},	  {"us", 1e3},	 {"ms", 1e6},	 {"s", 1e9},
		     {"m", 60e9}, {"h", 3600e9}, {"d", 86400e9}, {"", 1e9}};
	char *end;
	double v;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		v *= units[i].ns;
		if (!(v < (double)PROTO_MAX_OLDER_THAN))
			return -1;
		*ns = (uint64_t)v;
		return 0;
	}
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
		a->view.top = (uint32_t)v;
		break;
	case OPT_SORT:
		a->request.sort = snap_sort_from_name(value);
		if (a->request.sort < 0)
			return usage_error("bad --sort '%s' (expected live, allocated, count, "
					   "peak or temporary)",
					   value);
		break;
	case OPT_PID:
		if (parse_u64(value, PROTO_MAX_PID, &v) || !v)
			return usage_error("bad --pid '%s' (expected 1 to %u)", value,
					   PROTO_MAX_PID);
		a->request.pid = (uint32_t)v;
		break;
	case OPT_BY:
		a->view.by = group_by_from_name(value);
		if (a->view.by < 0)
			return usage_error("bad --by '%s' (expected stack, function, file, line or "
					   "module)",
					   value);
		break;
	case OPT_CUMULATIVE:
		a->view.cumulative = 1;
		break;
	case OPT_OLDEST:
		a->render.oldest = 1;
		a->request.ages = 1;
		break;
	case OPT_OLDER_THAN:
		if (parse_duration(value, &a->view.older_than))
			return usage_error("bad --older-than '%s' (expected a duration such as "
					   "30s, 5m or 500ms)",
					   value);
		break;
	case OPT_INTERVAL:
		if (parse_duration(value, &a->interval_ns) || a->interval_ns < 100000000ull)
			return usage_error("bad --interval '%s' (expected a duration of 100ms or "
					   "more)",
					   value);
		break;
	case OPT_ITERATIONS:
		if (parse_u64(value, UINT32_MAX, &a->iterations) || !a->iterations)
			return usage_error("bad --count '%s' (expected 1 or more)", value);
		break;
	case OPT_ROWS:
		if (parse_u64(value, 100000, &v) || !v)
			return usage_error("bad --rows '%s' (expected 1 to 100000)", value);
		a->view.rows = (uint32_t)v;
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
	a->view.top = 10;
	a->view.by = -1;
	a->view.rows = 20;
	a->interval_ns = 1000000000ull;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *value = NULL, *eq;
		size_t namelen;
		int opt;

		if (arg[0] != '-' || !strcmp(arg, "-")) {
			int c;

			if (a->command >= 0 && a->nfiles < commands[a->command].nargs) {
				a->files[a->nfiles++] = arg;
				continue;
			}

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
	if (a->command == CMD_ATTACH || a->command == CMD_DETACH) {
		uint64_t pid;

		if (!a->nfiles || parse_u64(a->files[0], PROTO_MAX_PID, &pid) || !pid)
			return usage_error("%s needs a pid", commands[a->command].name);
		a->request.command = a->command == CMD_ATTACH ? PROTO_CMD_ATTACH : PROTO_CMD_DETACH;
		a->request.pid = (uint32_t)pid;
	}
	if (a->nfiles < commands[a->command].nargs)
		return usage_error("%s needs %d snapshot files (see memtracectl --help)",
				   commands[a->command].name, commands[a->command].nargs);
	if (a->command == CMD_SNAPSHOT && !a->output)
		return usage_error("snapshot needs -o FILE");
	if (a->command == CMD_DIFF && !strcmp(a->files[0], "-") && !strcmp(a->files[1], "-"))
		return usage_error("diff can read only one of its files from stdin");
	if (a->view.by < 0)
		a->view.by = a->command == CMD_PEAK ? GROUP_STACK : GROUP_FUNCTION;
	if (a->view.cumulative && a->view.by == GROUP_STACK)
		return usage_error("--cumulative does not apply to --by stack");
	a->request.stacks = commands[a->command].stacks;
	if (a->command == CMD_RESET_PEAK)
		a->request.command = PROTO_CMD_RESET_PEAK;
	if (a->command != CMD_REPORT) {
		/* every stack: views group and sum them all */
		a->request.top = 0;
		a->request.sort = commands[a->command].sort;
	}
	/* report --by: group every stack (of the sort key) in the client */
	a->grouped = a->command == CMD_REPORT && (a->given & (1u << OPT_BY | 1u << OPT_CUMULATIVE));
	if (a->grouped) {
		if (a->render.format != RENDER_TEXT && a->render.format != RENDER_JSON)
			return usage_error("report --by gives text or json");
		a->request.top = 0;
		/* every stack that allocated, so rows hold all their calls */
		a->group_sort = a->request.sort;
		a->request.sort = SNAP_SORT_COUNT;
	}
	a->request.blocks = commands[a->command].blocks;
	if (a->command == CMD_SNAPSHOT)
		a->request.ages = 1;
	a->request.older_than_ns = a->command == CMD_LEAKS ? a->view.older_than : 0;
	if (!a->request.stacks)
		a->request.top = 0;
	a->view.format = a->render.format;
	a->view.pretty = 1;
	if (a->command == CMD_STATS) { /* every stack, for the top sites */
		a->request.top = 0;
		a->request.sort = SNAP_SORT_ALLOCATED;
	}
	/*
	 * Views that group or count leaks: the daemon does it and sends only
	 * the rows shown, with what the others add up to (a heap of a hundred
	 * thousand stacks would otherwise travel whole). A file is grouped here.
	 */
	if (a->grouped || a->command == CMD_PEAK) {
		a->request.group = PROTO_GROUP_STACK + a->view.by;
		a->request.cumulative = a->view.cumulative && a->view.by != GROUP_STACK;
		a->request.order = a->command == CMD_PEAK ? SNAP_SORT_PEAK : a->group_sort;
		a->request.top = (uint32_t)a->view.top;
	} else if (a->command == CMD_STATS) {
		a->request.group = PROTO_GROUP_SITE;
		a->request.order = SNAP_SORT_ALLOCATED;
		a->request.top = STATS_TOP_SITES;
	} else if (a->command == CMD_LEAKS) {
		a->request.leaks = 1;
		a->request.blocks = 0;
		a->request.top = (uint32_t)a->view.top;
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
	/* A daemon that refuses us (permission, too many clients) answers and
	 * closes before reading: its reply is then waiting behind the EPIPE. */
	if (write_full(fd, line, (size_t)n) && errno != EPIPE && errno != ECONNRESET) {
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
static int select_from_file(const struct args *a, const char *file, struct snapshot *s)
{
	int found = !a->request.pid;

	for (uint32_t i = 0; i < s->ntargets && !found; i++)
		found = s->targets[i].pid == a->request.pid;
	if (!found) {
		log_msg("%s: pid %u is not in this snapshot", file, a->request.pid);
		return -1;
	}
	/* rows and leaks are counted from every stack here */
	snapshot_select(s, a->request.sort,
			a->request.group || a->request.leaks ? 0 : a->request.top, a->request.pid);
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

/* Fetch (socket or file), decode and, for a file, select what the request would. */
static int fetch_snapshot(const struct args *a, const char *file, struct snapshot *snap,
			  uint8_t **raw, size_t *raw_len)
{
	uint8_t *data = NULL;
	size_t len = 0;
	char err[256];
	int rc;

	rc = file ? fetch_from_file(file, &data, &len) : fetch_from_socket(a, &data, &len);
	if (rc)
		return -1;
	rc = snapshot_decode(data, len, snap, err, sizeof(err));
	if (rc) {
		log_msg("%s: %s", file ? file : a->socket, err);
		free(data);
		return -1;
	}
	if (raw) {
		*raw = data;
		*raw_len = len;
	} else {
		free(data);
	}
	/* snapshot copies a file whole; diff compares every stack */
	if (file && a->request.stacks && a->command != CMD_SNAPSHOT && a->command != CMD_DIFF &&
	    select_from_file(a, file, snap)) {
		snapshot_free(snap);
		if (raw)
			free(*raw);
		return -1;
	}
	return 0;
}

static int write_all_fd(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = write(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/*
 * Write a snapshot file atomically: a temporary file in the same directory,
 * fsync, rename over the name, fsync the directory. A reader (or a crash)
 * sees the old file or the whole new one, never a part.
 */
static int write_snapshot_file(const char *path, const uint8_t *data, size_t len)
{
	char *tmp, *dircopy;
	int fd, dfd, err;

	if (!strcmp(path, "-")) {
		if (!write_all_fd(STDOUT_FILENO, data, len))
			return 0;
		log_msg("stdout: %s", strerror(errno));
		return -1;
	}
	tmp = xmalloc(strlen(path) + 32);
	sprintf(tmp, "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		log_msg("cannot create %s: %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	if (write_all_fd(fd, data, len) || fsync(fd)) {
		err = errno;
		close(fd);
		unlink(tmp);
		log_msg("cannot write %s: %s", tmp, strerror(err));
		free(tmp);
		return -1;
	}
	if (close(fd) || rename(tmp, path)) {
		err = errno;
		unlink(tmp);
		log_msg("cannot write %s: %s", path, strerror(err));
		free(tmp);
		return -1;
	}
	free(tmp);
	dircopy = xstrdup(path);
	dfd = open(dirname(dircopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd); /* the rename itself survives a crash */
		close(dfd);
	}
	free(dircopy);
	return 0;
}

static int run_snapshot(const struct args *a)
{
	struct snapshot_counts counts;
	uint8_t *raw = NULL;
	size_t len = 0;
	char err[256];
	int rc;

	/* checked and counted as it streams through zlib, not decoded: a
	 * million blocks would be tens of MB of model for three numbers */
	rc = a->from ? fetch_from_file(a->from, &raw, &len) : fetch_from_socket(a, &raw, &len);
	if (rc)
		return EXIT_RUNTIME;
	if (snapshot_scan(raw, len, &counts, err, sizeof(err))) {
		log_msg("%s: %s", a->from ? a->from : a->socket, err);
		free(raw);
		return EXIT_RUNTIME;
	}
	rc = write_snapshot_file(a->output, raw, len);
	if (!rc && strcmp(a->output, "-"))
		fprintf(stderr,
			"memtracectl: wrote %s: %zu bytes, %" PRIu64 " stacks, %" PRIu64
			" live blocks, %" PRIu64 " timeline points\n",
			a->output, len, counts.stacks, counts.blocks, counts.timeline_points);
	free(raw);
	return rc ? EXIT_RUNTIME : 0;
}

static int run_diff(const struct args *a)
{
	struct snapshot old, new;
	struct buf out = {0};
	int rc;

	if (fetch_snapshot(a, a->files[0], &old, NULL, NULL))
		return EXIT_RUNTIME;
	if (fetch_snapshot(a, a->files[1], &new, NULL, NULL)) {
		snapshot_free(&old);
		return EXIT_RUNTIME;
	}
	render_diff(&out, &old, &new, &a->view);
	snapshot_free(&old);
	snapshot_free(&new);
	rc = write_stdout(&out);
	buf_free(&out);
	return rc ? EXIT_RUNTIME : 0;
}

static volatile sig_atomic_t watch_stop;

static void on_stop_signal(int sig)
{
	(void)sig;
	watch_stop = 1;
}

/*
 * Wait up to ns for the next refresh; returns 1 when the user asked to quit
 * (q on a terminal, or SIGINT/SIGTERM).
 */
static int watch_wait(uint64_t ns, int keys)
{
	uint64_t end = time_monotonic_ns() + ns;

	while (!watch_stop) {
		uint64_t now = time_monotonic_ns();
		struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
		char c;
		int r;

		if (now >= end)
			return 0;
		r = poll(&p, keys ? 1 : 0, (int)((end - now + 999999) / 1000000));
		if (r > 0 && read(STDIN_FILENO, &c, 1) == 1 && (c == 'q' || c == 'Q'))
			return 1;
		if (r > 0 && !(p.revents & POLLIN))
			keys = 0; /* stdin closed or broken: stop listening to it */
	}
	return 1;
}

static int run_watch(const struct args *a)
{
	struct watch_state w = {0};
	struct termios saved, raw;
	struct sigaction sa = {.sa_handler = on_stop_signal};
	int tty = isatty(STDOUT_FILENO), keys = tty && isatty(STDIN_FILENO), rc = 0;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (keys && !tcgetattr(STDIN_FILENO, &saved)) {
		raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	} else {
		keys = 0;
	}
	for (uint64_t n = 0; !watch_stop; n++) {
		struct snapshot snap;
		struct buf out = {0};

		if (fetch_snapshot(a, NULL, &snap, NULL, NULL)) {
			rc = EXIT_RUNTIME;
			break;
		}
		render_watch(&out, &w, &snap, &a->view, tty);
		snapshot_free(&snap);
		if (!tty)
			buf_put(&out, "\n", 1);
		rc = write_stdout(&out) ? EXIT_RUNTIME : 0;
		buf_free(&out);
		if (rc || (a->iterations && n + 1 >= a->iterations))
			break;
		if (watch_wait(a->interval_ns, keys))
			break;
	}
	if (keys)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	watch_state_free(&w);
	return rc;
}

int main(int argc, char **argv)
{
	struct snapshot snap;
	struct buf out = {0};
	struct args a;
	int rc;

	util_progname = "memtracectl";
	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc > 0 ? 0 : EXIT_USAGE;

	switch (a.command) {
	case CMD_SNAPSHOT:
		return run_snapshot(&a);
	case CMD_DIFF:
		return run_diff(&a);
	case CMD_WATCH:
		return run_watch(&a);
	}
	if (fetch_snapshot(&a, a.from, &snap, NULL, NULL))
		return EXIT_RUNTIME;
	if (a.command == CMD_LEAKS && !snap.has_blocks && !snap.has_leaks) {
		log_msg("%s: this snapshot has no live block list (save one with memtracectl "
			"snapshot -o FILE)",
			a.from);
		snapshot_free(&snap);
		return EXIT_RUNTIME;
	}
	if (commands[a.command].view) {
		commands[a.command].view(&out, &snap, &a.view);
	} else if (a.grouped) {
		render_report_grouped(&out, &snap, &a.view, a.group_sort);
	} else {
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
	}
	snapshot_free(&snap);
	if (!rc)
		rc = a.output ? write_file(a.output, &out) : write_stdout(&out);
	buf_free(&out);
	return rc ? EXIT_RUNTIME : 0;
}
