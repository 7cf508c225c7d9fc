// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * memtraced's command line: the options, their checks and defaults. Bad
 * input is one line on stderr and exit code 2 (parse_options returns it).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/options.h"
#include "daemon/attach/walker.h"
#include "daemon/serve/metrics_http.h"
#include "daemon/unwind/unwind.h"
#include "common/proto.h"
#include "common/util.h"
#include "memtrace/event.h"

/*
 * Default bounds, sized from the machine's RAM so that the daemon can never
 * take the host's memory: live blocks may use a quarter of it at 128 bytes
 * each (generous: an 18-byte slot in a table at least 72% full), stacks a
 * sixteenth at 1 KiB each (entry, index and 64 frames).
 */
#define LIVE_BLOCK_COST 128
#define STACK_COST	1024
#define UNSET		UINT64_MAX

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: memtraced [options] --pid PID\n"
	    "       memtraced [options] -- COMMAND [ARGS...]\n"
	    "       memtraced [options]      (idle: add targets with memtracectl attach PID)\n"
	    "\n"
	    "Trace every allocation of a running process (--pid) or of a command it\n"
	    "starts, and serve reports to memtracectl on a Unix socket.\n"
	    "\n"
	    "  -p, --pid PID              attach to a running process\n"
	    "  -s, --socket PATH          listen here (default %s)\n"
	    "      --stack-depth N        user frames kept per allocation, 1-%d (default 64)\n"
	    "      --stack-walker W       dwarf: unwind tables from call frame information,\n"
	    "                             frame pointers where there is none (default);\n"
	    "                             fp: frame pointers; kernel: bpf_get_stack;\n"
	    "                             caller: the call site alone. When the kernel's\n"
	    "                             verifier refuses a walker, the next loads: dwarf,\n"
	    "                             fp, caller (kernel: fp, caller)\n"
	    "      --unwind-memory N      unwind tables at most (bytes, K, M, G; 256M)\n"
	    "      --ring-buffer-size N   ring buffer bytes, a power of two (default 32 MiB)\n"
	    "      --max-live-blocks N    live blocks tracked before counting as untracked\n"
	    "                             (default: RAM/4 / 128 B; 0: no limit)\n"
	    "      --max-stacks N         distinct stacks kept (default: RAM/16 / 1 KiB)\n"
	    "      --client-timeout S     drop clients not done in S s (default 10)\n"
	    "      --sample-interval MS   memory-over-time sampling interval: live heap and\n"
	    "                             resident memory (default 1000)\n"
	    "      --temporary-threshold N  a block freed before N more allocations of its\n"
	    "                             thread is temporary (default 1; 0: off)\n"
	    "      --metrics-listen ADDR  serve Prometheus metrics at http://ADDR/metrics;\n"
	    "                             ADDR is HOST:PORT or PORT (host 127.0.0.1)\n"
	    "      --python-allocators    also probe CPython's PyObject_Malloc family\n"
	    "                             (exact object counts; slow: see docs/python.md)\n"
	    "      --follow-forks         trace the children a target forks, from their\n"
	    "                             first call, each under its own pid, whatever\n"
	    "                             they execute\n"
	    "      --comm NAME            whole host: trace each process that comes to run a\n"
	    "                             program named NAME (/proc/PID/comm): those named so\n"
	    "                             at start, each that executes such a program (from\n"
	    "                             its first instruction), and every child a traced\n"
	    "                             one forks (from its first call, with its parent's\n"
	    "                             heap). One that executes a program of another name\n"
	    "                             is traced no more (without --follow-forks); a later\n"
	    "                             rename (prctl) changes nothing\n"
	    "      --exe PATH             whole host: the same for the file PATH\n"
	    "      --cgroup PATH          trace every process in a cgroup v2 directory or\n"
	    "                             below it (PATH under the cgroup2 mount, or relative\n"
	    "                             to its root): those there at start, each that\n"
	    "                             executes a program there (from its first\n"
	    "                             instruction), their children, and those moved in\n"
	    "                             (attached as they run); one moved out is detached\n"
	    "      --unit NAME            the same for a systemd unit's cgroup (NAME, or\n"
	    "                             NAME.service)\n"
	    "      --max-targets N        --comm/--exe/--cgroup/--unit: at most N traced at\n"
	    "                             once (default 64, at most 1000); matches past it\n"
	    "                             are not traced, counted (matches_over_limit) and\n"
	    "                             logged\n"
	    "      --oom-snapshots DIR    when the kernel's OOM killer kills a traced process,\n"
	    "                             write a snapshot of what it had live to\n"
	    "                             DIR/oom-PID-TIME.mts (written off the drain)\n"
	    "      --oom-keep N           keep the newest N oom-* snapshots in DIR, remove\n"
	    "                             older ones (default 16; 0: keep all)\n"
	    "      --realtime             drain the ring buffer at real-time priority\n"
	    "                             (SCHED_FIFO 1; requests are still served at nice 10)\n"
	    "      --check                load every BPF program in every configuration\n"
	    "                             memtraced can use (attaching nothing), print what\n"
	    "                             the verifier said and the kernel features; exit 0\n"
	    "                             when the default configuration loads\n"
	    "      --json                 --check's report as JSON\n"
	    "  -h, --help                 this help\n"
	    "  -V, --version              print the version\n",
	    PROTO_DEFAULT_SOCKET, MT_MAX_FRAMES);
}

static int usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, "memtraced: %s%s%s (see memtraced --help)\n", msg, arg ? ": " : "",
		arg ? arg : "");
	return 2;
}

int parse_options(int argc, char **argv, struct options *o)
{
	enum {
		OPT_DEPTH = 256,
		OPT_RINGBUF,
		OPT_MAX_LIVE,
		OPT_MAX_STACKS,
		OPT_WALKER,
		OPT_SAMPLE,
		OPT_CLIENT_TIMEOUT,
		OPT_TEMPORARY,
		OPT_METRICS,
		OPT_PYALLOC,
		OPT_FOLLOW,
		OPT_COMM,
		OPT_EXE,
		OPT_CGROUP,
		OPT_UNIT,
		OPT_MAX_TARGETS,
		OPT_REALTIME,
		OPT_UNWIND_MEMORY,
		OPT_CHECK,
		OPT_JSON,
		OPT_OOM_SNAPSHOTS,
		OPT_OOM_KEEP
	};
	static const struct option longopts[] = {
	    {"pid", required_argument, NULL, 'p'},
	    {"socket", required_argument, NULL, 's'},
	    {"stack-depth", required_argument, NULL, OPT_DEPTH},
	    {"stack-walker", required_argument, NULL, OPT_WALKER},
	    {"ring-buffer-size", required_argument, NULL, OPT_RINGBUF},
	    {"max-live-blocks", required_argument, NULL, OPT_MAX_LIVE},
	    {"max-stacks", required_argument, NULL, OPT_MAX_STACKS},
	    {"sample-interval", required_argument, NULL, OPT_SAMPLE},
	    {"client-timeout", required_argument, NULL, OPT_CLIENT_TIMEOUT},
	    {"temporary-threshold", required_argument, NULL, OPT_TEMPORARY},
	    {"metrics-listen", required_argument, NULL, OPT_METRICS},
	    {"python-allocators", no_argument, NULL, OPT_PYALLOC},
	    {"follow-forks", no_argument, NULL, OPT_FOLLOW},
	    {"comm", required_argument, NULL, OPT_COMM},
	    {"exe", required_argument, NULL, OPT_EXE},
	    {"cgroup", required_argument, NULL, OPT_CGROUP},
	    {"unit", required_argument, NULL, OPT_UNIT},
	    {"max-targets", required_argument, NULL, OPT_MAX_TARGETS},
	    {"realtime", no_argument, NULL, OPT_REALTIME},
	    {"unwind-memory", required_argument, NULL, OPT_UNWIND_MEMORY},
	    {"check", no_argument, NULL, OPT_CHECK},
	    {"json", no_argument, NULL, OPT_JSON},
	    {"oom-snapshots", required_argument, NULL, OPT_OOM_SNAPSHOTS},
	    {"oom-keep", required_argument, NULL, OPT_OOM_KEEP},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	uint64_t v;
	int c;

	memset(o, 0, sizeof(*o));
	o->socket_path =
	    getenv("MEMTRACE_SOCKET") ? getenv("MEMTRACE_SOCKET") : PROTO_DEFAULT_SOCKET;
	o->stack_depth = 64;
	o->stack_walker = MT_WALK_DWARF;
	o->unwind_memory = UNWIND_DEFAULT_MEMORY;
	o->ring_buffer_bytes = 32u << 20;
	o->sample_interval_ms = 1000;
	o->client_timeout_s = 10;
	o->max_live_blocks = o->max_stacks = UNSET;
	o->temporary_threshold = 1;
	o->oom_keep = 16;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+p:s:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_u64(optarg, 1u << 22, &v) || !v)
				return usage_error("bad pid", optarg);
			o->pid = (int)v;
			break;
		case 's':
			o->socket_path = optarg;
			break;
		case OPT_DEPTH:
			if (parse_u64(optarg, MT_MAX_FRAMES, &v) || !v)
				return usage_error("bad --stack-depth", optarg);
			o->stack_depth = (uint32_t)v;
			break;
		case OPT_WALKER:
			if (walker_parse(optarg) < 0)
				return usage_error(
				    "--stack-walker must be dwarf, fp, kernel or caller", optarg);
			o->stack_walker = (uint32_t)walker_parse(optarg);
			o->stack_walker_given = 1;
			break;
		case OPT_RINGBUF:
			if (parse_u64(optarg, 1ull << 30, &v) || v < 4096 || (v & (v - 1)))
				return usage_error("--ring-buffer-size must be a power of two "
						   "between 4096 and 1 GiB",
						   optarg);
			o->ring_buffer_bytes = v;
			break;
		case OPT_MAX_LIVE:
			if (parse_u64(optarg, UINT64_MAX, &v))
				return usage_error("bad --max-live-blocks", optarg);
			o->max_live_blocks = v;
			break;
		case OPT_MAX_STACKS:
			if (parse_u64(optarg, UINT32_MAX - 1, &v))
				return usage_error("bad --max-stacks", optarg);
			o->max_stacks = v;
			break;
		case OPT_SAMPLE:
			if (parse_u64(optarg, 86400000, &v) || v < 10)
				return usage_error("--sample-interval must be 10 to 86400000 ms",
						   optarg);
			o->sample_interval_ms = v;
			break;
		case OPT_REALTIME:
			o->realtime = 1;
			break;
		case OPT_CLIENT_TIMEOUT:
			if (parse_u64(optarg, 3600, &v) || !v)
				return usage_error("--client-timeout must be 1 to 3600 seconds",
						   optarg);
			o->client_timeout_s = v;
			break;
		case OPT_TEMPORARY:
			if (parse_u64(optarg, 1000000, &v))
				return usage_error("--temporary-threshold must be 0 to 1000000",
						   optarg);
			o->temporary_threshold = v;
			break;
		case OPT_METRICS:
			if (!metrics_addr_valid(optarg))
				return usage_error(
				    "bad --metrics-listen (expected HOST:PORT with a "
				    "numeric host, or PORT)",
				    optarg);
			o->metrics_listen = optarg;
			break;
		case OPT_PYALLOC:
			o->python_allocators = 1;
			break;
		case OPT_FOLLOW:
			o->follow_forks = 1;
			break;
		case OPT_COMM:
			if (!optarg[0] || strlen(optarg) > 15 || strchr(optarg, '/'))
				return usage_error("--comm takes a process name of 1 to 15 "
						   "characters (as in /proc/PID/comm)",
						   optarg);
			o->match_comm = optarg;
			break;
		case OPT_EXE:
			if (optarg[0] != '/')
				return usage_error("--exe takes an absolute path", optarg);
			o->match_exe = optarg;
			break;
		case OPT_CGROUP:
			if (!optarg[0])
				return usage_error("--cgroup takes a cgroup v2 directory", optarg);
			o->match_cgroup = optarg;
			break;
		case OPT_UNIT:
			if (!optarg[0] || strchr(optarg, '/'))
				return usage_error(
				    "--unit takes a unit's name (nginx.service, say)", optarg);
			o->match_unit = optarg;
			break;
		case OPT_UNWIND_MEMORY:
			if (unwind_parse_size(optarg, &o->unwind_memory))
				return usage_error("--unwind-memory takes 1M to 4G bytes (K, M, G)",
						   optarg);
			break;
		case OPT_CHECK:
			o->check = 1;
			break;
		case OPT_JSON:
			o->json = 1;
			break;
		case OPT_OOM_SNAPSHOTS:
			if (!optarg[0])
				return usage_error("--oom-snapshots takes a folder", NULL);
			o->oom_dir = optarg;
			break;
		case OPT_OOM_KEEP:
			if (parse_u64(optarg, 1000000, &o->oom_keep))
				return usage_error("--oom-keep takes 0 to 1000000", optarg);
			break;
		case OPT_MAX_TARGETS:
			if (parse_u64(optarg, 1000, &o->max_targets) || !o->max_targets)
				return usage_error("--max-targets takes 1 to 1000", optarg);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("memtraced %s\n", MEMTRACE_VERSION);
			exit(0);
		default:
			return usage_error("unknown or incomplete option", argv[optind - 1]);
		}
	}
	if (optind < argc)
		o->command = &argv[optind];
	if (o->pid && o->command)
		return usage_error("give either --pid or a command, not both", NULL);
	if (!!o->match_comm + !!o->match_exe + !!o->match_cgroup + !!o->match_unit > 1)
		return usage_error("give one of --comm, --exe, --cgroup and --unit", NULL);
	if ((o->match_comm || o->match_exe || o->match_cgroup || o->match_unit) &&
	    (o->pid || o->command))
		return usage_error(
		    "--comm, --exe, --cgroup and --unit select their own targets: no "
		    "--pid or command",
		    NULL);
	if (o->json && !o->check)
		return usage_error("--json goes with --check", NULL);
	if (o->check && (o->pid || o->command || o->match_comm || o->match_exe || o->match_cgroup ||
			 o->match_unit))
		return usage_error("--check loads the programs and attaches nothing: no --pid, "
				   "command, --comm, --exe, --cgroup or --unit",
				   NULL);
	if (!o->max_targets)
		o->max_targets = 64;
	return 0;
}

void default_limits(struct options *o)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t ram = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 1ull << 30;

	if (o->max_live_blocks == UNSET)
		o->max_live_blocks = ram / 4 / LIVE_BLOCK_COST;
	if (o->max_stacks == UNSET) {
		o->max_stacks = ram / 16 / STACK_COST;
		if (o->max_stacks > UINT32_MAX - 1)
			o->max_stacks = UINT32_MAX - 1;
	}
}
