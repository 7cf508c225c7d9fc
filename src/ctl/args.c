// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * memtracectl's command line (see args.h): one table of commands with what
 * each asks memtraced for, one table of options with the commands each
 * applies to, the help text, and the parser that fills struct args from them.
 */
#include "ctl/args.h"
#include "common/util.h"
#include "ctl/view/group.h"
#include "ctl/view/sites.h"
#include "memtrace/snapshot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef MEMTRACE_VERSION
#define MEMTRACE_VERSION "unknown"
#endif

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
	OPT_MEMORY,
	OPT_UNREACHABLE,
	OPT_SUPPRESSIONS,
	OPT_MAX_PAUSE,
	OPT_CGROUP,
	OPT_UNIT,
	OPT_COUNT
};

#define ALL_COMMANDS ((1u << CMD_COUNT) - 1)
#define FROM_CMDS                                                                                  \
	(ALL_COMMANDS & ~(1u << CMD_DIFF | 1u << CMD_WATCH | 1u << CMD_RESET_PEAK |                \
			  1u << CMD_ATTACH | 1u << CMD_DETACH))
#define TOP_CMDS                                                                                   \
	(1u << CMD_REPORT | 1u << CMD_DIFF | 1u << CMD_PEAK | 1u << CMD_LEAKS | 1u << CMD_WATCH)
#define BY_CMDS		   (1u << CMD_DIFF | 1u << CMD_PEAK | 1u << CMD_WATCH | 1u << CMD_REPORT)
#define CGROUP_FILTER_CMDS (1u << CMD_REPORT | 1u << CMD_PEAK | 1u << CMD_DIFF | 1u << CMD_STATS)
#define PID_CMDS                                                                                   \
	(1u << CMD_REPORT | 1u << CMD_PEAK | 1u << CMD_LEAKS | 1u << CMD_TIMELINE | 1u << CMD_WATCH)

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
    [OPT_MEMORY] = {"--memory", 0, 1u << CMD_STATS},
    [OPT_UNREACHABLE] = {"--unreachable", 0, 1u << CMD_LEAKS},
    [OPT_SUPPRESSIONS] = {"--suppressions", 1, 1u << CMD_LEAKS},
    [OPT_MAX_PAUSE] = {"--max-pause", 1, 1u << CMD_LEAKS},
    [OPT_CGROUP] = {"--cgroup", 1, 1u << CMD_ATTACH | CGROUP_FILTER_CMDS},
    [OPT_UNIT] = {"--unit", 1, 1u << CMD_ATTACH},
};

static const struct {
	const char *name;
	int nargs; /* positional arguments after the command */
} commands[CMD_COUNT] = {
    [CMD_STATUS] = {"status", 0}, [CMD_STATS] = {"stats", 0},
    [CMD_REPORT] = {"report", 0}, [CMD_SNAPSHOT] = {"snapshot", 0},
    [CMD_DIFF] = {"diff", 2},	  [CMD_PEAK] = {"peak", 0},
    [CMD_LEAKS] = {"leaks", 0},	  [CMD_TIMELINE] = {"timeline", 0},
    [CMD_WATCH] = {"watch", 0},	  [CMD_RESET_PEAK] = {"reset-peak", 0},
    [CMD_ATTACH] = {"attach", 1}, [CMD_DETACH] = {"detach", 1},
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
	    "  stats [--json]        allocation counters: totals, peak, losses, per process,\n"
	    "                        and resident memory beside the live heap\n"
	    "      --memory          each traced process's mappings by kind (heap, stacks,\n"
	    "                        files...), resident, with the live heap and the heap\n"
	    "                        overhead in each\n"
	    "      --cgroup PATH     only the processes in cgroup PATH or below it, the\n"
	    "                        totals theirs\n"
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
	    "                        line, module or stack (\"key: size=, count=, average=\");\n"
	    "                        or cgroup, unit or container: where the process runs\n"
	    "      --cumulative      with --by: count a stack under each of its frames\n"
	    "      --cgroup PATH     only the stacks of processes in cgroup PATH or below\n"
	    "                        it (also for peak and diff)\n"
	    "  snapshot -o FILE      save everything (stacks, live blocks, timeline, mappings)\n"
	    "                        to FILE\n"
	    "  diff OLD NEW          what grew between two snapshot files (tracemalloc's\n"
	    "                        compare_to), largest growth first\n"
	    "      --by KEY          stack, function (default), file, line, module,\n"
	    "                        cgroup, unit or container\n"
	    "      --cumulative      count a stack under every frame, not the innermost\n"
	    "      --top N           show N groups (default 10; 0 shows all)\n"
	    "  peak [--top N] [--by KEY] [--pid PID] [--cgroup PATH]\n"
	    "                        what was live at the moment of peak_live_bytes\n"
	    "  reset-peak            start a new peak window (peak = live bytes now)\n"
	    "  attach PID            start tracing process PID (the daemon may trace many)\n"
	    "  attach --cgroup PATH  trace every process of a cgroup v2 directory or below it,\n"
	    "                        as memtraced --cgroup does (one cgroup a daemon)\n"
	    "  attach --unit NAME    the same for a systemd unit's cgroup\n"
	    "  detach PID            stop tracing PID; its probes go, its data stays\n"
	    "  leaks [--older-than DURATION] [--top N] [--pid PID]\n"
	    "                        live blocks at least that old (default 0s), by stack\n"
	    "  leaks --unreachable [--pid PID] [--top N] [--suppressions FILE]\n"
	    "        [--max-pause DURATION]\n"
	    "                        stop the process a moment, and show the live blocks no\n"
	    "                        pointer reaches (direct, indirect and possible leaks,\n"
	    "                        as LeakSanitizer and valgrind name them), by stack\n"
	    "      --suppressions FILE  LeakSanitizer's format: leak:PATTERN lines\n"
	    "      --max-pause DURATION the longest it may stand still (default 1s); past it\n"
	    "                        the scan gives up and it runs on\n"
	    "  timeline [--rows N] [--pid PID]\n"
	    "                        live bytes, resident memory and allocation rate over\n"
	    "                        time, of every process or of process PID, with the\n"
	    "                        usage and limit of each of their memory cgroups\n"
	    "  watch [--interval DURATION] [--count N] [--top N] [--by KEY] [--pid PID]\n"
	    "                        refresh live bytes, resident memory, rate, peak, losses\n"
	    "                        and the groups that grew most, every second; q or\n"
	    "                        Ctrl-C quits\n"
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

int args_parse_duration(const char *s, uint64_t *ns)
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
		a->render.sample = mt_sort_from_name(value);
		if (a->render.sample < 0 || a->render.sample == MT_SORT_TEMPORARY)
			return usage_error("bad --sample '%s' (expected live, allocated, count or "
					   "peak)",
					   value);
		break;
	case OPT_PEAK:
		a->render.peak = 1;
		break;
	case OPT_MEMORY: /* the flag of given is the option */
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
		a->view.top = (uint32_t)v;
		break;
	case OPT_SORT:
		a->sort = mt_sort_from_name(value);
		if (a->sort < 0)
			return usage_error("bad --sort '%s' (expected live, allocated, count, "
					   "peak or temporary)",
					   value);
		break;
	case OPT_CGROUP:
	case OPT_UNIT:
		if (a->cgroup)
			return usage_error("give one of --cgroup and --unit");
		if (!value[0] || strlen(value) > PROTO_MAX_CGROUP_PATH)
			return usage_error("bad %s '%s'", options[opt].name, value);
		a->cgroup = value;
		a->cgroup_unit = opt == OPT_UNIT;
		break;
	case OPT_PID:
		if (parse_u64(value, PROTO_MAX_PID, &v) || !v)
			return usage_error("bad --pid '%s' (expected 1 to %u)", value,
					   PROTO_MAX_PID);
		a->pid = (uint32_t)v;
		break;
	case OPT_BY:
		a->view.by = group_by_from_name(value);
		if (a->view.by < 0 || a->view.by == GROUP_SITE)
			return usage_error("bad --by '%s' (expected stack, function, file, line, "
					   "module, cgroup, unit or container)",
					   value);
		break;
	case OPT_CUMULATIVE:
		a->view.cumulative = 1;
		break;
	case OPT_OLDEST:
		a->render.oldest = 1;
		break;
	case OPT_OLDER_THAN:
		if (args_parse_duration(value, &a->view.older_than))
			return usage_error("bad --older-than '%s' (expected a duration such as "
					   "30s, 5m or 500ms)",
					   value);
		break;
	case OPT_INTERVAL:
		if (args_parse_duration(value, &a->interval_ns) || a->interval_ns < 100000000ull)
			return usage_error("bad --interval '%s' (expected a duration of 100ms or "
					   "more)",
					   value);
		break;
	case OPT_ITERATIONS:
		if (parse_u64(value, UINT32_MAX, &a->iterations) || !a->iterations)
			return usage_error("bad --count '%s' (expected 1 or more)", value);
		break;
	case OPT_UNREACHABLE:
		a->unreachable = 1;
		break;
	case OPT_SUPPRESSIONS:
		if (!*value)
			return usage_error("--suppressions needs a file name");
		a->suppressions = value;
		break;
	case OPT_MAX_PAUSE:
		if (args_parse_duration(value, &a->max_pause_ns) ||
		    a->max_pause_ns < PROTO_SCAN_MIN_PAUSE ||
		    a->max_pause_ns > PROTO_SCAN_MAX_PAUSE)
			return usage_error(
			    "bad --max-pause '%s' (expected a duration from 1ms to 1h)", value);
		break;
	case OPT_ROWS:
		if (parse_u64(value, 100000, &v) || !v)
			return usage_error("bad --rows '%s' (expected 1 to 100000)", value);
		a->render.rows = (uint32_t)v;
		break;
	}
	return 0;
}

/* folded, pprof and html: a report of every stack, unless --top. */
static int is_profile(int format)
{
	return format == RENDER_FOLDED || format == RENDER_PPROF || format == RENDER_HTML;
}

static int profile_options(struct args *a)
{
	int f = a->render.format;

	if ((a->given & (1u << OPT_SAMPLE)) && f != RENDER_FOLDED && f != RENDER_HTML)
		return usage_error("--sample applies to --format folded and html");
	if (a->render.peak && f != RENDER_PPROF)
		return usage_error("--peak applies to --format pprof (folded and html: --sample "
				   "peak)");
	if (!is_profile(f))
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
	if (f == RENDER_PPROF && (!a->output || !strcmp(a->output, "-")) && isatty(STDOUT_FILENO))
		return usage_error(
		    "a pprof profile is binary: write it with -o FILE (or redirect)");
	return 0;
}

/* leaks --unreachable is a scan, which needs a running process, not a file. */
static int scan_options(struct args *a)
{
	if (!a->unreachable) {
		if (a->given & (1u << OPT_SUPPRESSIONS | 1u << OPT_MAX_PAUSE))
			return usage_error("%s applies to leaks --unreachable",
					   a->given & (1u << OPT_SUPPRESSIONS) ? "--suppressions"
									       : "--max-pause");
		return 0;
	}
	if (a->given & (1u << OPT_OLDER_THAN))
		return usage_error("--older-than does not apply to --unreachable (a scan reports "
				   "what no pointer reaches, whatever its age)");
	if (a->from)
		return usage_error("--unreachable scans a running process: it needs memtraced, "
				   "not a snapshot file");
	if (a->render.format != RENDER_TEXT && a->render.format != RENDER_JSON)
		return usage_error("leaks --unreachable gives text or json");
	return 0;
}

/* A rows request: the stacks of select, grouped by by, the top rows by order. */
static void rows_request(struct proto_request *r, uint32_t pid, int select, int by, int cumulative,
			 int order, uint32_t top)
{
	proto_request_init(r, PROTO_ROWS);
	r->rows.pid = pid;
	r->rows.select = select;
	r->rows.by = by;
	r->rows.cumulative = cumulative && by != GROUP_STACK;
	r->rows.order = order;
	r->rows.top = top;
}

/*
 * The one request each command sends, of the kind its view needs. Views
 * that group or count leaks have the daemon do it and send only the rows
 * shown, with what the others add up to (a heap of a hundred thousand stacks
 * would otherwise travel whole); a file gets the same narrowing in fetch.c.
 */
static void make_request(struct args *a)
{
	struct proto_request *r = &a->request;
	int f = a->render.format;

	switch (a->command) {
	case CMD_STATS: /* its top allocation sites, by bytes and by count */
		rows_request(r, 0, MT_SORT_ALLOCATED, GROUP_SITE, 0, MT_SORT_ALLOCATED,
			     STATS_TOP_SITES);
		if (a->given & (1u << OPT_MEMORY))
			proto_request_init(&a->memory, PROTO_MEMORY);
		break;
	case CMD_REPORT:
		if (a->grouped) { /* every stack that allocated, so rows hold all their calls */
			rows_request(r, a->pid, MT_SORT_COUNT, a->view.by, a->view.cumulative,
				     a->view.sort, a->view.top);
			break;
		}
		proto_request_init(r, PROTO_REPORT);
		r->report.pid = a->pid;
		r->report.sort = a->sort;
		r->report.top = a->view.top;
		r->report.ages = a->render.oldest;
		if (!is_profile(f))
			break;
		/* every stack with a nonzero value unless --top, ordered by what it shows */
		if (!(a->given & (1u << OPT_TOP)))
			r->report.top = 0;
		if (f == RENDER_PPROF)
			r->report.sort = a->render.peak ? MT_SORT_PEAK : MT_SORT_ALLOCATED;
		else if (f == RENDER_HTML) /* the page switches between samples itself */
			r->report.sort = MT_SORT_ALLOCATED;
		else
			r->report.sort = a->render.sample;
		break;
	case CMD_PEAK: /* the stacks live at the peak, grouped */
		rows_request(r, a->pid, MT_SORT_PEAK, a->view.by, a->view.cumulative, MT_SORT_PEAK,
			     a->view.top);
		break;
	case CMD_LEAKS:
		if (a->unreachable) {
			proto_request_init(r, PROTO_SCAN);
			r->scan.pid = a->pid;
			r->scan.top = a->view.top;
			r->scan.max_pause_ns = a->max_pause_ns;
			break;
		}
		proto_request_init(r, PROTO_LEAKS);
		r->leaks.pid = a->pid;
		r->leaks.older_than_ns = a->view.older_than;
		r->leaks.top = a->view.top;
		break;
	case CMD_WATCH: /* every stack (of pid): it groups them all */
		proto_request_init(r, PROTO_REPORT);
		r->report.pid = a->pid;
		break;
	case CMD_SNAPSHOT:
	case CMD_DIFF: /* files, whole */
		proto_request_init(r, PROTO_SNAPSHOT);
		break;
	case CMD_RESET_PEAK:
		proto_request_init(r, PROTO_RESET_PEAK);
		break;
	case CMD_ATTACH:
	case CMD_DETACH:
		if (a->cgroup) {
			proto_request_init(r, PROTO_ATTACH_CGROUP);
			r->cgroup.path = (uint32_t)strlen(a->cgroup);
			r->cgroup.unit = a->cgroup_unit;
			break;
		}
		proto_request_init(r, a->command == CMD_ATTACH ? PROTO_ATTACH : PROTO_DETACH);
		r->target.pid = a->pid;
		break;
	default: /* status, timeline (of pid): no stacks */
		proto_request_init(r, PROTO_STATUS);
		r->status.pid = a->pid;
		break;
	}
}

/*
 * --cgroup PATH: the daemon keeps the stacks of the cgroup itself (cgroup=,
 * the path after the line). From a file, the snapshot's stacks are asked
 * for as the daemon would send them (none grouped, none left out by --top),
 * and the client keeps those of the cgroup, then groups them (or keeps the
 * report's top) as the daemon would have.
 */
static void filter_request(struct args *a)
{
	struct proto_request *r = &a->request;
	uint32_t pid = a->pid;

	if (!a->from && a->command != CMD_DIFF) {
		if (r->kind == PROTO_ROWS)
			r->rows.cgroup = (uint32_t)strlen(a->cgroup_filter);
		else if (r->kind == PROTO_REPORT)
			r->report.cgroup = (uint32_t)strlen(a->cgroup_filter);
		return;
	}

	if (r->kind == PROTO_ROWS) {
		int select = r->rows.select;

		proto_request_init(r, PROTO_REPORT);
		r->report.pid = pid;
		r->report.sort = select;
		r->report.top = 0;
		return;
	}
	if (r->kind == PROTO_REPORT) {
		a->filter_top = r->report.top;
		r->report.top = 0;
	}
}

int args_parse(int argc, char **argv, struct args *a)
{
	const char *env = getenv("MEMTRACE_SOCKET");

	memset(a, 0, sizeof(*a));
	a->command = -1;
	a->socket = env && *env ? env : PROTO_DEFAULT_SOCKET;
	a->view.top = 10;
	a->view.by = GROUP_NONE;
	a->max_pause_ns = PROTO_SCAN_DEFAULT_PAUSE;
	a->render.rows = 20;
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
	if (a->cgroup && a->command != CMD_ATTACH) { /* a filter, not a match */
		if (a->cgroup[0] != '/' || strlen(a->cgroup) > PROTO_MAX_CGROUP_PATH)
			return usage_error("bad --cgroup '%s' (expected a cgroup path from the "
					   "hierarchy's root, as status shows it: /system.slice)",
					   a->cgroup);
		a->cgroup_filter = a->cgroup;
		a->cgroup = NULL;
	}
	if (a->cgroup && a->nfiles)
		return usage_error("attach takes a pid or %s, not both",
				   a->cgroup_unit ? "--unit" : "--cgroup");
	if ((a->command == CMD_ATTACH || a->command == CMD_DETACH) && !a->cgroup) {
		uint64_t pid;

		if (!a->nfiles || parse_u64(a->files[0], PROTO_MAX_PID, &pid) || !pid)
			return usage_error("%s needs a pid", commands[a->command].name);
		a->pid = (uint32_t)pid;
	}
	if (a->nfiles < commands[a->command].nargs && !a->cgroup)
		return usage_error("%s needs %d snapshot files (see memtracectl --help)",
				   commands[a->command].name, commands[a->command].nargs);
	if (a->command == CMD_SNAPSHOT && !a->output)
		return usage_error("snapshot needs -o FILE");
	if (a->command == CMD_DIFF && !strcmp(a->files[0], "-") && !strcmp(a->files[1], "-"))
		return usage_error("diff can read only one of its files from stdin");
	if (a->view.by == GROUP_NONE)
		a->view.by = a->command == CMD_PEAK ? GROUP_STACK : GROUP_FUNCTION;
	if (a->view.cumulative && (a->view.by == GROUP_STACK || group_by_target(a->view.by)))
		return usage_error("--cumulative does not apply to --by %s",
				   group_by_name(a->view.by));
	/* report --by: rows by the sort key */
	a->grouped = a->command == CMD_REPORT && (a->given & (1u << OPT_BY | 1u << OPT_CUMULATIVE));
	if (a->grouped && a->render.format != RENDER_TEXT && a->render.format != RENDER_JSON)
		return usage_error("report --by gives text or json");
	a->view.sort = a->sort;
	if (scan_options(a))
		return -1;
	if (profile_options(a))
		return -1;
	make_request(a);
	/* what a view shows: a report's stacks' order, and whose they are */
	a->render.sort = a->request.kind == PROTO_REPORT ? a->request.report.sort : a->sort;
	if (a->cgroup_filter)
		filter_request(a);
	a->render.pid = a->pid;
	a->view.pid = a->pid;
	a->render.pretty = 1;
	return 0;
}
