// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * memtraced: the tracing daemon. Parses options, claims the socket, loads the
 * BPF programs, attaches to the target (or starts it), then runs one epoll
 * loop over the ring buffer, a drain timer, signals, target pidfds and
 * clients until SIGINT or SIGTERM. Leaving detaches every probe: the target
 * runs on exactly as it was.
 */
#include <errno.h>
#include <getopt.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "daemon.h"
#include "keeper.h"
#include "worker.h"
#include "notify.h"
#include "pystacks.h"
#include "memtrace.skel.h"
#include "symbolize.h"
#include "metrics_http.h"
#include "util.h"

#define DRAIN_INTERVAL_NS (10 * 1000 * 1000)

/*
 * Default bounds, sized from the machine's RAM so that the daemon can never
 * take the host's memory: live blocks may use a quarter of it at 128 bytes
 * each (generous: a 24-byte slot in a table at least 72% full), stacks a
 * sixteenth at 1 KiB each (entry, index and 64 frames).
 */
#define LIVE_BLOCK_COST 128
#define STACK_COST	1024
#define UNSET		UINT64_MAX

struct options {
	int pid;
	char **command;
	const char *socket_path;
	uint32_t stack_depth;
	uint32_t stack_walker;
	uint64_t ring_buffer_bytes;
	uint64_t max_live_blocks;
	uint64_t max_stacks;
	uint64_t sample_interval_ms;
	uint64_t client_timeout_s;
	uint64_t temporary_threshold;
	const char *metrics_listen;
	int python_allocators;
	int follow_forks;
	const char *match_comm;
	const char *match_exe;
	uint64_t max_targets;
	int realtime;
};

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
	    "      --stack-walker fp|kernel  our bounded frame-pointer walk (default), or\n"
	    "                             the kernel's bpf_get_stack (slower, see docs)\n"
	    "      --ring-buffer-size N   ring buffer bytes, a power of two (default 32 MiB)\n"
	    "      --max-live-blocks N    live blocks tracked before counting as untracked\n"
	    "                             (default: RAM/4 / 128 B; 0: no limit)\n"
	    "      --max-stacks N         distinct stacks kept (default: RAM/16 / 1 KiB)\n"
	    "      --client-timeout S     drop clients not done in S s (default 10)\n"
	    "      --sample-interval MS   memory-over-time sampling interval (default 1000)\n"
	    "      --temporary-threshold N  a block freed before N more allocations of its\n"
	    "                             thread is temporary (default 1; 0: off)\n"
	    "      --metrics-listen ADDR  serve Prometheus metrics at http://ADDR/metrics;\n"
	    "                             ADDR is HOST:PORT or PORT (host 127.0.0.1)\n"
	    "      --python-allocators    also probe CPython's PyObject_Malloc family\n"
	    "                             (exact object counts; slow: see docs/python.md)\n"
	    "      --follow-forks         trace the children a target forks, from their\n"
	    "                             first call, each under its own pid\n"
	    "      --comm NAME            whole host: trace every process named NAME, running\n"
	    "                             now or started later (from its first instruction)\n"
	    "      --exe PATH             whole host: the same for processes running PATH\n"
	    "      --max-targets N        --comm/--exe: at most N traced at once (default 64)\n"
	    "      --realtime             drain the ring buffer at real-time priority\n"
	    "                             (SCHED_FIFO 1; requests are still served at nice 10)\n"
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

static int parse_options(int argc, char **argv, struct options *o)
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
		OPT_MAX_TARGETS,
		OPT_REALTIME
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
	    {"max-targets", required_argument, NULL, OPT_MAX_TARGETS},
	    {"realtime", no_argument, NULL, OPT_REALTIME},
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
	o->ring_buffer_bytes = 32u << 20;
	o->sample_interval_ms = 1000;
	o->client_timeout_s = 10;
	o->max_live_blocks = o->max_stacks = UNSET;
	o->temporary_threshold = 1;
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
			if (!strcmp(optarg, "fp"))
				o->stack_walker = MT_WALK_FP;
			else if (!strcmp(optarg, "kernel"))
				o->stack_walker = MT_WALK_KERNEL;
			else
				return usage_error("--stack-walker must be fp or kernel", optarg);
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
	if (o->match_comm && o->match_exe)
		return usage_error("give either --comm or --exe, not both", NULL);
	if ((o->match_comm || o->match_exe) && (o->pid || o->command))
		return usage_error("--comm and --exe select their own targets: no --pid or command",
				   NULL);
	if (!o->max_targets)
		o->max_targets = 64;
	return 0;
}

static void default_limits(struct options *o)
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

static int debug_events; /* MEMTRACE_DEBUG_EVENTS=1: print each event */

/* Its pid may be reused by a process that is not this CPython. */
static void python_frames_off(struct daemon *d, int pid)
{
	uint32_t key = (uint32_t)pid;

	bpf_map__delete_elem(d->skel->maps.pyconf, &key, sizeof(key), 0);
	probes_mmap_disable(d->skel, pid);
}

static int python_frames(struct daemon *d, int pid);
static void python_arenas(struct daemon *d, struct target *tg);
static int loop_add(struct daemon *d, int fd, uint32_t tag, uint32_t index);
static void target_matched(struct daemon *d, int pid);

/* Is CAP_KILL effective? (Root without it cannot SIGCONT other users' processes.) */
static int have_cap_kill(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {{0}};

	if (syscall(SYS_capget, &hdr, data))
		return 1; /* cannot tell: let kill() say */
	return (data[CAP_KILL / 32].effective >> (CAP_KILL % 32)) & 1;
}

static void unmatch(struct daemon *d, struct target *tg);
static int pidfd_open(int pid);

/* Continue a process the BPF programs stopped (exec, ld.so, --comm match). */
static void continue_stopped(struct daemon *d, int pid)
{
	uint32_t key = (uint32_t)pid;

	if (kill(pid, SIGCONT) && errno != ESRCH)
		log_msg("cannot continue pid %d: %s", pid, strerror(errno));
	/* the keeper need not continue it */
	bpf_map__delete_elem(d->skel->maps.stopped, &key, sizeof(key), 0);
}

static void ldso_release(struct target *tg)
{
	bpf_link__destroy(tg->ldso_link); /* NULL: nothing */
	tg->ldso_link = NULL;
}

/*
 * pid starts a new generation (an exec, or attached again): whatever the
 * tracker, the symbolizer and the Python reader keep under pid moves to a
 * retired key of its own, so the new program starts empty and the old
 * data stays readable, symbolized against the old program's maps.
 */
static void retire_pid(struct daemon *d, int pid)
{
	uint32_t key = tracker_retire(&d->tracker, (uint32_t)pid);

	if (!key)
		return;
	symbolizer_rename(d->sym, pid, (int)key);
	pystacks_rename(d->py, pid, (int)key);
	for (int i = 0; i < d->ntargets; i++) {
		if (d->targets[i].space == (uint32_t)pid)
			d->targets[i].space = key;
	}
}

/* A new slot in d->targets (which may move). */
static int target_new(struct daemon *d, int pid)
{
	struct target *tg;

	d->targets = xrealloc(d->targets, (size_t)(d->ntargets + 1) * sizeof(*d->targets));
	tg = &d->targets[d->ntargets];
	memset(tg, 0, sizeof(*tg));
	tg->pid = pid;
	tg->pidfd = -1;
	tg->exit_status = -1;
	tg->parent = -1;
	return d->ntargets++;
}

/* How long a new program may take to map its libraries before we give up. */
#define RESOLVE_TIMEOUT_NS (10ull * 1000 * 1000 * 1000)

/*
 * Target i executed a new program. Its events up to the exec (ordered before
 * the exec event in the ring buffer) stay with it, now marked "execed"; a
 * new entry of the same pid traces the new program from its first call:
 * the probes stay attached to the process, so calls into a library the new
 * program maps again (libc, nearly always) are counted at once; the
 * allocator is resolved again once the new program's libraries are mapped
 * (target_resolve), and only the probes that differ are changed.
 */
static void target_execed(struct daemon *d, int i)
{
	struct target *tg = &d->targets[i], *nt;
	uint64_t now = time_monotonic_ns();
	int j, pid = tg->pid;

	if (tg->state != SNAP_TARGET_ATTACHED)
		return;
	tracker_target_exec(&d->tracker, (uint32_t)pid);
	python_frames_off(d, pid);
	retire_pid(d, pid);
	j = target_new(d, pid);
	tg = &d->targets[i];
	nt = &d->targets[j];
	tg->state = SNAP_TARGET_EXECED;
	tg->end_ns = now;
	nt->state = SNAP_TARGET_ATTACHED;
	nt->is_child = tg->is_child;
	tg->is_child = 0;
	nt->pidfd = tg->pidfd;
	tg->pidfd = -1;
	nt->probes = tg->probes;
	memset(&tg->probes, 0, sizeof(tg->probes));
	nt->parent = tg->parent;
	nt->matched = tg->matched;
	tg->matched = 0;
	for (int k = 0; k < d->ntargets; k++) {
		if (d->targets[k].parent == i)
			d->targets[k].parent = j; /* the links they inherit moved */
	}
	nt->command = target_read_command(pid);
	nt->attach_ns = now;
	nt->space = (uint32_t)pid;
	nt->resolve_pending = 1;
	nt->execs_seen = tg->execs_seen + 1;
	if (nt->pidfd >= 0) {
		struct epoll_event ev = {.events = EPOLLIN,
					 .data.u64 = (uint64_t)TAG_PIDFD << 32 | (uint32_t)j};

		epoll_ctl(d->epfd, EPOLL_CTL_MOD, nt->pidfd, &ev);
	}
	if (!tracker_add_target(&d->tracker, (uint32_t)pid, now))
		log_msg("pid %d: cannot track the new program: out of memory", pid);
	log_msg("pid %d executed a new program (%s): the data from before the exec stays "
		"readable; tracing the new program",
		pid, nt->command);
}

/* The new program of target i is not traced: say why, keep its data. */
static void target_give_up(struct daemon *d, int i, const char *why)
{
	struct target *tg = &d->targets[i];

	probes_detach(&tg->probes);
	ldso_release(tg);
	tg->resolve_pending = 0;
	tg->state = SNAP_TARGET_DETACHED;
	tg->end_ns = time_monotonic_ns();
	tracker_target_exec(&d->tracker, (uint32_t)tg->pid);
	free(tg->note);
	tg->note = xstrdup(why);
	log_msg("pid %d: %s", tg->pid, why);
}

/*
 * The probes a forked child carries from its ancestors (their perf events
 * are inherited): the keys only, links marked non-NULL and never used.
 */
static void inherited_probes(struct daemon *d, int i, struct target_probes *out)
{
	memset(out, 0, sizeof(*out));
	for (int p = d->targets[i].parent, hops = 0; p >= 0 && hops < 1024;
	     p = d->targets[p].parent, hops++) {
		const struct target_probes *tp = &d->targets[p].probes;

		for (int k = 0; k < tp->nlinks && out->nlinks < (int)ARRAY_SIZE(out->links); k++) {
			if (!tp->links[k])
				continue;
			out->keys[out->nlinks] = tp->keys[k];
			out->links[out->nlinks++] = tp->links[k];
		}
	}
}

/*
 * A followed target forked: the child is traced already (it inherited the
 * probes in copy_process, before it ran); give it an entry of its own.
 */
static void target_forked(struct daemon *d, uint32_t ptgid, int child)
{
	struct target *parent, *c;
	uint64_t now = time_monotonic_ns();
	uint32_t key = (uint32_t)ptgid;
	struct mt_py_config pc;
	int p = -1, j;

	for (int i = 0; i < d->ntargets; i++) {
		if (d->targets[i].pid == (int)ptgid && d->targets[i].state == SNAP_TARGET_ATTACHED)
			p = i;
	}
	if (p < 0 || child <= 0)
		return;
	retire_pid(d, child); /* an earlier process with this pid */
	j = target_new(d, child);
	parent = &d->targets[p];
	c = &d->targets[j];
	c->parent = p;
	/* the child runs the parent's program until it executes another (an exec
	 * event follows then); /proc may be gone already if it exited at once */
	c->command = parent->command ? xstrdup(parent->command) : target_read_command(child);
	c->alloc.path = parent->alloc.path ? xstrdup(parent->alloc.path) : NULL;
	c->attach_ns = now;
	c->space = (uint32_t)child;
	c->state = SNAP_TARGET_ATTACHED;
	if (!tracker_add_target(&d->tracker, (uint32_t)child, now))
		log_msg("pid %d: cannot track the child: out of memory", child);
	c->pidfd = pidfd_open(child);
	if (c->pidfd >= 0 && loop_add(d, c->pidfd, TAG_PIDFD, (uint32_t)j)) {
		close(c->pidfd);
		c->pidfd = -1;
	}
	if (c->pidfd < 0) { /* gone already: its events are all queued */
		c->state = SNAP_TARGET_EXITED;
		c->end_ns = now;
		probes_unwatch(d->skel, child);
	}
	/* a forked CPython is the same CPython */
	if (!bpf_map__lookup_elem(d->skel->maps.pyconf, &key, sizeof(key), &pc, sizeof(pc), 0)) {
		key = (uint32_t)child;
		bpf_map__update_elem(d->skel->maps.pyconf, &key, sizeof(key), &pc, sizeof(pc),
				     BPF_ANY);
		pystacks_fork(d->py, (int)ptgid, child);
	}
	symbolizer_fork(d->sym, (int)ptgid, child);
	log_msg("pid %d forked pid %d: traced from its first call", (int)ptgid, child);
}

/*
 * After an exec: once the dynamic linker has mapped the new program's
 * libraries (or at once for a static program), find its allocator and
 * move the probes over. Called on every drain tick while pending.
 */
static void target_resolve(struct daemon *d, int i)
{
	struct target *tg = &d->targets[i];
	struct target_probes np, inh;
	struct allocator a = {0};
	char err[512], why[600], *note;
	uint64_t now = time_monotonic_ns();
	int late = now - tg->attach_ns > RESOLVE_TIMEOUT_NS;
	struct pollfd pfd = {.fd = tg->pidfd, .events = POLLIN};

	if (tg->pidfd >= 0 && poll(&pfd, 1, 0) > 0)
		return; /* it exited (its maps may be half gone): the pidfd event is next */
	if (allocator_ldso_symbol(tg->pid, "_dl_debug_state") &&
	    allocator_linker_state(tg->pid) != 0 && !late)
		return; /* ld.so is still mapping libraries */
	if (allocator_resolve(tg->pid, &a, err, sizeof(err))) {
		allocator_free(&a);
		if (target_check_pid(tg->pid))
			return; /* exited: its pidfd says so next */
		if (!late && allocator_ldso_symbol(tg->pid, "_dl_debug_state"))
			return; /* not all mapped yet */
		snprintf(why, sizeof(why), "the new program is not traced: %s", err);
		target_give_up(d, i, why);
		return;
	}
	if (d->python_allocators)
		allocator_resolve_python(tg->pid, &a);
	inherited_probes(d, i, &inh);
	if (probes_attach_keeping(d->skel, tg->pid, &a, d->follow_forks, &np, &tg->probes, &inh,
				  err, sizeof(err))) {
		allocator_free(&a);
		snprintf(why, sizeof(why), "the new program is not traced: %s", err);
		target_give_up(d, i, why);
		return;
	}
	probes_detach(&tg->probes); /* the old program's that the new one does not map */
	tg->probes = np;
	allocator_free(&tg->alloc);
	tg->alloc = a;
	tg->resolve_pending = 0;
	ldso_release(tg);
	free(tg->command);
	tg->command = target_read_command(tg->pid);
	if ((note = allocator_python_note(tg->pid))) {
		free(tg->note);
		tg->note = note;
	}
	if (python_frames(d, tg->pid))
		python_arenas(d, tg); /* after the probes: malloc's own mmaps are its own */
	log_msg("pid %d: the new program's allocator is %s: %d probes, after %llu us", tg->pid,
		tg->alloc.path, probes_count(&tg->probes),
		(unsigned long long)(now - tg->attach_ns) / 1000);
}

/* The newest entry of pid waiting for its new program's allocator, or -1. */
static int pending_entry(struct daemon *d, int pid)
{
	for (int i = d->ntargets - 1; i >= 0; i--) {
		if (d->targets[i].pid == pid && d->targets[i].state == SNAP_TARGET_ATTACHED &&
		    d->targets[i].resolve_pending)
			return i;
	}
	return -1;
}

/*
 * The new program of entry i reached ld.so's _dl_debug_state, stopped there
 * (or is stopped at its exec, for a static program): once the linker's map
 * is complete, resolve its allocator now, before its libraries' code runs.
 */
static void resolve_held(struct daemon *d, int i)
{
	if (allocator_linker_state(d->targets[i].pid) > 0)
		return; /* still adding objects: the next report will do */
	target_resolve(d, i);
	if (!d->targets[i].resolve_pending)
		ldso_release(&d->targets[i]);
}

/*
 * A target executed a new program, stopped at its first instruction when
 * stopped is set (the exec tracepoint). Hold it in its ld.so until the
 * libraries are mapped (MT_EV_LDSO): an allocator the new program preloads
 * (jemalloc in LD_PRELOAD, say) is then probed before it is first called.
 */
static void target_exec_event(struct daemon *d, uint32_t tgid, int stopped)
{
	int n = d->ntargets, i; /* target_execed appends */
	char *path = NULL;
	uint64_t off;

	for (i = 0; i < n; i++) {
		if (d->targets[i].pid == (int)tgid)
			target_execed(d, i);
	}
	i = pending_entry(d, (int)tgid);
	if (i >= 0 && stopped && !allocator_ldso_probe((int)tgid, &path, &off)) {
		d->targets[i].ldso_link = probes_attach_ldso(d->skel, (int)tgid, path, off);
		if (!d->targets[i].ldso_link)
			log_msg("pid %d: cannot hold it in ld.so (%s): its allocator is resolved "
				"once ld.so is done",
				(int)tgid, strerror(errno));
	} else if (i >= 0 && stopped) {
		resolve_held(d, i); /* a static program: all there is is mapped */
	}
	free(path);
	if (stopped)
		continue_stopped(d, (int)tgid);
}

static void target_ldso_event(struct daemon *d, uint32_t tgid)
{
	int i = pending_entry(d, (int)tgid);

	if (i >= 0 && d->targets[i].ldso_link)
		resolve_held(d, i);
	continue_stopped(d, (int)tgid);
}

/*
 * The exec event can be lost with a full ring buffer (then counted in
 * events_lost); the tracepoint's count in the targets map cannot. A target
 * still attached with a count is one whose event is queued (handled in
 * order by the next drain) or was lost: only in the latter case act here.
 */
static void check_execs(struct daemon *d)
{
	uint64_t lost[MT_LOST_SLOTS];

	for (int i = 0; i < d->ntargets; i++) {
		struct target *tg = &d->targets[i];

		if (tg->state != SNAP_TARGET_ATTACHED ||
		    probes_exec_count(d->skel, tg->pid) <= tg->execs_seen)
			continue;
		daemon_consume(d);
		tg = &d->targets[i]; /* the drain may have added targets */
		if (tg->state != SNAP_TARGET_ATTACHED)
			continue; /* its event was queued: handled in order */
		if (probes_read_lost(d->skel, lost, MT_LOST_SLOTS) ||
		    lost[MT_EV_EXEC] <= d->exec_events_lost)
			continue; /* not lost: it is being written right now */
		d->exec_events_lost++;
		log_msg("the exec event of pid %d was lost (ring buffer full)", tg->pid);
		target_execed(d, i);
	}
}

void daemon_ingest(struct daemon *d, const void *data, size_t len)
{
	const struct mt_event *ev = data;

	if (debug_events && len >= sizeof(*ev))
		fprintf(stderr,
			"event kind=%u func=%s tid=%u addr=%#llx old=%#llx size=%llu frames=%u\n",
			ev->kind, allocator_func_name(ev->func), ev->tid,
			(unsigned long long)ev->addr, (unsigned long long)ev->old_addr,
			(unsigned long long)ev->size, ev->nframes);
	tracker_event(&d->tracker, data, len);
	if (len >= sizeof(*ev) && ev->kind == MT_EV_EXEC)
		target_exec_event(d, ev->tgid, ev->addr == 1);
	if (len >= sizeof(*ev) && ev->kind == MT_EV_LDSO)
		target_ldso_event(d, ev->tgid);
	if (len >= sizeof(*ev) && ev->kind == MT_EV_FORK)
		target_forked(d, ev->tgid, (int)ev->addr);
	if (len >= sizeof(*ev) && ev->kind == MT_EV_MATCH)
		target_matched(d, (int)ev->tgid);
}

static int handle_ringbuf_event(void *ctx, void *data, size_t len)
{
	struct daemon *d = ctx;

	if (worker_frozen(d))
		worker_defer_event(d, data, len); /* applied in order at the thaw */
	else
		daemon_ingest(d, data, len);
	return 0;
}

void daemon_consume(struct daemon *d)
{
	uint64_t now = time_monotonic_ns();

	/* the ingest figure: the longest the ring buffer waited for a drain */
	if (d->last_drain_ns && now - d->last_drain_ns > d->drain_gap_max_ns)
		d->drain_gap_max_ns = now - d->last_drain_ns;
	d->last_drain_ns = now;
	if (d->rb)
		ring_buffer__consume(d->rb);
	worker_catch_up(d); /* after a request's freeze: apply a slice of what waited */
}

static void on_new_stack(void *arg, uint32_t tgid, const uint64_t *frames, uint32_t n)
{
	struct daemon *d = arg;

	uint32_t native = 0;

	while (native < n && !(frames[native] & MT_PY_WORD))
		native++;
	/* while the process is alive: learn the modules these frames are in */
	symbolizer_note(d->sym, (int)tgid, frames, native);
	/* and read the code objects of its Python frames */
	if (native < n)
		pystacks_note(d->py, (int)tgid, frames + native, n - native);
}

static int loop_add(struct daemon *d, int fd, uint32_t tag, uint32_t index)
{
	struct epoll_event ev = {.events = EPOLLIN};

	ev.data.u64 = (uint64_t)tag << 32 | index;
	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int pidfd_open(int pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Python frames for a CPython target: tell the BPF walker where they are.
 * 1 when they are on. */
static int python_frames(struct daemon *d, int pid)
{
	struct mt_py_config pc;
	char desc[4200], why[4300];
	uint32_t key = (uint32_t)pid;
	int rc;

	rc = pystacks_config(d->py, pid, &pc, desc, sizeof(desc), why, sizeof(why));
	if (rc < 0) {
		log_msg("pid %d: %s", pid, why);
	} else if (rc == 0) {
		if (why[0]) /* the offsets' sources disagree, or one could not be used */
			log_msg("pid %d: %s", pid, why);
		if (bpf_map__update_elem(d->skel->maps.pyconf, &key, sizeof(key), &pc, sizeof(pc),
					 BPF_ANY)) {
			log_msg("pid %d: cannot enable Python frames: %s", pid, strerror(errno));
			return 0;
		}
		d->skel->bss->python_targets = 1;
		log_msg("pid %d: %s: Python frames on", pid, desc);
		return 1;
	}
	return 0;
}

#define ARENAS_NOTE                                                                                \
	"pymalloc arenas traced: small objects are seen as the arenas (anonymous mmap, kind "      \
	"mmap) that hold them, not one by one"

/*
 * Default mode, CPython target: pymalloc serves small objects from arenas it
 * maps itself, outside malloc; trace those mmaps (docs/python.md). Not with
 * --python-allocators, whose PyObject_Malloc events already count what the
 * arenas hold.
 */
static void python_arenas(struct daemon *d, struct target *tg)
{
	char *note;
	int rc;

	if (d->python_allocators)
		return;
	rc = probes_mmap_enable(d->skel, tg->pid);
	if (rc) {
		log_msg("pid %d: cannot trace pymalloc arenas (mmap tracepoints): %s", tg->pid,
			strerror(-rc));
		return;
	}
	log_msg("pid %d: %s", tg->pid, ARENAS_NOTE);
	if (tg->note && asprintf(&note, "%s; %s", tg->note, ARENAS_NOTE) >= 0) {
		free(tg->note);
		tg->note = note;
	} else if (!tg->note) {
		tg->note = xstrdup(ARENAS_NOTE);
	}
}

/* Attach to d->targets[i], which is alive (and stopped, when we started it). */
static int target_attach(struct daemon *d, int i, char *err, size_t errlen)
{
	struct target *tg = &d->targets[i];
	int rc, py = 0;

	retire_pid(d, tg->pid); /* traced before: that data stays, apart */
	tg = &d->targets[i];
	tg->state = SNAP_TARGET_ATTACHING;
	tg->command = target_read_command(tg->pid);
	tg->exit_status = -1;
	tg->pidfd = pidfd_open(tg->pid);
	if (tg->pidfd < 0) {
		snprintf(err, errlen, "cannot attach to pid %d: %s", tg->pid, strerror(errno));
		return -1;
	}
	if (tg->at_exec) {
		/* its libraries come later: target_resolve() finishes the job */
		if (allocator_resolve_at_exec(tg->pid, &tg->alloc, err, errlen))
			return -1;
		tg->resolve_pending = 1;
	} else {
		if (allocator_resolve(tg->pid, &tg->alloc, err, errlen))
			return -1;
		if (d->python_allocators && !allocator_resolve_python(tg->pid, &tg->alloc))
			log_msg("pid %d: --python-allocators: no loaded object exports "
				"PyObject_Malloc",
				tg->pid);
		free(tg->note);
		tg->note = allocator_python_note(tg->pid);
		if (tg->note)
			log_msg("pid %d: %s", tg->pid, tg->note);
		py = python_frames(d, tg->pid);
	}
	tg->attach_ns = time_monotonic_ns();
	tg->space = (uint32_t)tg->pid;
	if (!tracker_add_target(&d->tracker, (uint32_t)tg->pid, tg->attach_ns)) {
		snprintf(err, errlen, "cannot track pid %d: out of memory", tg->pid);
		return -1;
	}
	rc = probes_watch(d->skel, tg->pid, d->follow_forks);
	if (rc) {
		snprintf(err, errlen, "cannot watch pid %d for exec: %s", tg->pid, strerror(-rc));
		return -1;
	}
	rc = probes_attach(d->skel, tg->pid, &tg->alloc, d->follow_forks, &tg->probes, err, errlen);
	if (rc)
		return -1;
	/* after the allocator's probes: the mmaps malloc makes are its own */
	if (py)
		python_arenas(d, tg);
	if (loop_add(d, tg->pidfd, TAG_PIDFD, (uint32_t)i)) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		return -1;
	}
	tg->state = SNAP_TARGET_ATTACHED;
	symbolizer_note_process(d->sym, tg->pid);
	log_msg("attached to pid %d (%s): %d probes on %s%s%s%s%s", tg->pid, tg->command,
		probes_count(&tg->probes), tg->alloc.path, tg->alloc.cxx_path ? " and " : "",
		tg->alloc.cxx_path ? tg->alloc.cxx_path : "", tg->alloc.py_path ? " and " : "",
		tg->alloc.py_path ? tg->alloc.py_path : "");
	return 0;
}

static void target_exited(struct daemon *d, int i)
{
	struct target *tg = &d->targets[i];
	int status;

	daemon_consume(d);   /* its last events are queued before its exit */
	tg = &d->targets[i]; /* the drain may have added targets (forks) */
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, tg->pidfd, NULL);
	close(tg->pidfd);
	tg->pidfd = -1;
	if (tg->is_child && waitpid(tg->pid, &status, WNOHANG) == tg->pid)
		tg->exit_status = status;
	python_frames_off(d, tg->pid); /* first: mmaps then are malloc's own until the end */
	/* with --follow-forks its children may run on with copies of its
	 * probes, which live as long as the originals: keep them until the
	 * daemon stops */
	if (!d->follow_forks)
		probes_detach(&tg->probes);
	ldso_release(tg);
	probes_unwatch(d->skel, tg->pid);
	unmatch(d, tg);
	tg->state = SNAP_TARGET_EXITED;
	tg->end_ns = time_monotonic_ns();
	if (tg->exit_status >= 0 && WIFEXITED(tg->exit_status))
		log_msg("pid %d exited with status %d; its data stays readable", tg->pid,
			WEXITSTATUS(tg->exit_status));
	else if (tg->exit_status >= 0 && WIFSIGNALED(tg->exit_status))
		log_msg("pid %d was killed by signal %d; its data stays readable", tg->pid,
			WTERMSIG(tg->exit_status));
	else
		log_msg("pid %d exited; its data stays readable", tg->pid);
}

/* Stop (0) or resume (1) watching target i's exit; resuming fires at once if it exited. */
static void pidfd_arm(struct daemon *d, int i, int on)
{
	struct epoll_event ev = {.events = on ? EPOLLIN : 0};

	if (d->targets[i].pidfd < 0)
		return;
	ev.data.u64 = (uint64_t)TAG_PIDFD << 32 | (uint32_t)i;
	epoll_ctl(d->epfd, EPOLL_CTL_MOD, d->targets[i].pidfd, &ev);
}

void daemon_resume(struct daemon *d)
{
	for (int k = 0; k < d->ntargets; k++)
		pidfd_arm(d, k, 1); /* exits seen meanwhile: handled now, after their events */
	server_resume(d);
}

static void daemon_cleanup(struct daemon *d)
{
	int i;

	worker_stop(d); /* first: it may be reading what is freed below */

	for (i = 0; i < d->ntargets; i++) {
		struct target *tg = &d->targets[i];

		probes_detach(&tg->probes);
		ldso_release(tg);
		if (tg->pidfd >= 0)
			close(tg->pidfd);
		allocator_free(&tg->alloc);
		free(tg->command);
		free(tg->note);
	}
	free(d->targets);
	metrics_http_close(d);
	server_close(d);
	if (d->rb)
		ring_buffer__free(d->rb);
	if (d->skel)
		probes_unload(d->skel);
	if (d->sym)
		symbolizer_free(d->sym);
	pystacks_free(d->py);
	tracker_destroy(&d->tracker);
	if (d->epfd >= 0)
		close(d->epfd);
}

/* Memory over time: a point per sampling interval, once a target is traced. */
static void daemon_sample(struct daemon *d)
{
	uint64_t now = time_monotonic_ns();

	if (d->tracker.ntargets && now >= d->tracker.start_ns)
		timeline_sample(&d->timeline, now - d->tracker.start_ns, &d->tracker.totals);
}

/* target_attach() failed for entry i (the last): undo what it did. */
static void attach_failed(struct daemon *d, int i)
{
	struct target *tg = &d->targets[i];
	int pid = tg->pid;

	/* nothing of it may stay live: probes are undone by probes_attach */
	if (tg->pidfd >= 0) {
		epoll_ctl(d->epfd, EPOLL_CTL_DEL, tg->pidfd, NULL);
		close(tg->pidfd);
	}
	probes_unwatch(d->skel, pid);
	python_frames_off(d, pid);
	if (tracker_find_target(&d->tracker, (uint32_t)pid)) {
		/* accounting began: keep the entry, marked detached */
		tracker_target_exec(&d->tracker, (uint32_t)pid);
		tg->pidfd = -1;
		tg->state = SNAP_TARGET_DETACHED;
		tg->end_ns = time_monotonic_ns();
	} else {
		allocator_free(&tg->alloc);
		free(tg->command);
		free(tg->note);
		d->ntargets--;
	}
}

/* A matched target is gone (exited, detached): it leaves the cap. */
static void unmatch(struct daemon *d, struct target *tg)
{
	if (!tg->matched)
		return;
	tg->matched = 0;
	__atomic_fetch_sub(&d->skel->bss->matched, 1, __ATOMIC_RELAXED);
}

/*
 * Whole-host mode: pid executed a program matching --comm/--exe, and is
 * stopped (SIGSTOP from the exec tracepoint) before its first instruction.
 * Attach, then let it go: it is traced from its first call. It is always
 * continued, attached or not.
 */
static void target_matched(struct daemon *d, int pid)
{
	char err[512];
	int i, live = 0, known = 0;

	for (i = 0; i < d->ntargets; i++) {
		live += d->targets[i].matched && d->targets[i].state == SNAP_TARGET_ATTACHED;
		known |= d->targets[i].pid == pid && d->targets[i].state == SNAP_TARGET_ATTACHED;
	}
	if (known) {
		/* attached by the scan at start already */
		__atomic_fetch_sub(&d->skel->bss->matched, 1, __ATOMIC_RELAXED);
	} else if (live >= d->max_targets) {
		probes_unwatch(d->skel, pid);
		__atomic_fetch_sub(&d->skel->bss->matched, 1, __ATOMIC_RELAXED);
		log_msg("pid %d matches, but %d targets are traced (--max-targets): not traced",
			pid, live);
	} else {
		i = target_new(d, pid);
		d->targets[i].matched = 1;
		d->targets[i].at_exec = 1;
		if (target_attach(d, i, err, sizeof(err))) {
			log_msg("pid %d matches, but %s", pid, err);
			unmatch(d, &d->targets[i]);
			attach_failed(d, i);
		} else {
			log_msg("pid %d (%s) matches: traced from its first instruction", pid,
				d->targets[i].command);
		}
	}
	continue_stopped(d, pid);
}

/*
 * Whole-host mode at start: attach to the matching processes that run
 * already (later ones come through the exec tracepoint).
 */
static void attach_matching(struct daemon *d, const char *comm, dev_t dev, ino_t ino)
{
	struct dirent *de;
	DIR *dir;
	int n = 0;

	daemon_consume(d); /* matches stopped since the programs were loaded come first */
	dir = opendir("/proc");
	if (!dir) {
		log_msg("cannot read /proc: %s", strerror(errno));
		return;
	}
	while ((de = readdir(dir))) {
		char path[64], name[32] = "", err[512];
		int pid = atoi(de->d_name), i, live = 0, known = 0;
		struct stat st;
		FILE *f;

		if (pid <= 0 || pid == getpid())
			continue;
		if (comm) {
			snprintf(path, sizeof(path), "/proc/%d/comm", pid);
			f = fopen(path, "re");
			if (!f)
				continue;
			if (!fgets(name, sizeof(name), f))
				name[0] = 0;
			fclose(f);
			name[strcspn(name, "\n")] = 0;
			if (strcmp(name, comm))
				continue;
		} else {
			snprintf(path, sizeof(path), "/proc/%d/exe", pid);
			if (stat(path, &st) || st.st_dev != dev || st.st_ino != ino)
				continue;
		}
		for (i = 0; i < d->ntargets; i++) {
			live +=
			    d->targets[i].matched && d->targets[i].state == SNAP_TARGET_ATTACHED;
			known |=
			    d->targets[i].pid == pid && d->targets[i].state == SNAP_TARGET_ATTACHED;
		}
		if (known)
			continue;
		if (live >= d->max_targets) {
			log_msg("pid %d matches, but %d targets are traced (--max-targets): not "
				"traced",
				pid, live);
			continue;
		}
		if (daemon_attach(d, pid, err, sizeof(err))) {
			log_msg("pid %d matches, but %s", pid, err);
			continue;
		}
		d->targets[d->ntargets - 1].matched = 1;
		__atomic_fetch_add(&d->skel->bss->matched, 1, __ATOMIC_RELAXED);
		n++;
	}
	closedir(dir);
	log_msg("whole-host mode: %d matching processes traced now; new ones as they start", n);
}

int daemon_attach(struct daemon *d, int pid, char *err, size_t errlen)
{
	int i, rc;

	for (i = 0; i < d->ntargets; i++) {
		if (d->targets[i].pid == pid && d->targets[i].state == SNAP_TARGET_ATTACHED) {
			snprintf(err, errlen, "pid %d is traced already", pid);
			return -1;
		}
	}
	rc = target_check_pid(pid);
	if (rc) {
		snprintf(err, errlen, "cannot attach to pid %d: %s", pid, strerror(-rc));
		return -1;
	}
	/* traced before (detached, or an earlier process with this pid): a new
	 * entry, the old one's data stays as it was */
	i = target_new(d, pid);
	if (target_attach(d, i, err, errlen)) {
		attach_failed(d, i);
		return -1;
	}
	return 0;
}

/* Stop tracing entry i: probes off (events until now still drain), state detached. */
static void detach_probes(struct daemon *d, int i)
{
	struct target *tg = &d->targets[i];

	python_frames_off(d, tg->pid); /* first: mmaps then are malloc's own until the end */
	probes_detach(&tg->probes);
	ldso_release(tg);
	probes_unwatch(d->skel, tg->pid);
}

static void detach_finish(struct daemon *d, int i)
{
	struct target *tg = &d->targets[i];

	tracker_target_exec(&d->tracker, (uint32_t)tg->pid); /* later events are not its */
	tg->resolve_pending = 0;
	unmatch(d, tg);
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, tg->pidfd, NULL);
	close(tg->pidfd);
	tg->pidfd = -1;
	tg->state = SNAP_TARGET_DETACHED;
	tg->end_ns = time_monotonic_ns();
	log_msg("detached from pid %d (%s); its data stays readable", tg->pid, tg->command);
}

int daemon_detach(struct daemon *d, int pid, char *err, size_t errlen)
{
	char *gone;
	int i, k, n, more;

	for (i = 0; i < d->ntargets; i++) {
		if (d->targets[i].pid == pid && d->targets[i].state == SNAP_TARGET_ATTACHED)
			break;
	}
	if (i == d->ntargets) {
		snprintf(err, errlen, "pid %d is not traced", pid);
		return -1;
	}
	/* with --follow-forks its descendants run on copies of its probes,
	 * which go with them: they are detached too */
	gone = xcalloc((size_t)d->ntargets, 1);
	gone[i] = 1;
	detach_probes(d, i);
	do {
		more = 0;
		for (k = 0; k < d->ntargets; k++) {
			struct target *c = &d->targets[k];

			if (!gone[k] && c->state == SNAP_TARGET_ATTACHED && c->parent >= 0 &&
			    gone[c->parent]) {
				gone[k] = more = 1;
				detach_probes(d, k);
			}
		}
	} while (more);
	n = d->ntargets;
	daemon_consume(d); /* their events up to the detach (may add entries) */
	for (k = 0; k < n; k++) {
		if (gone[k] && d->targets[k].state == SNAP_TARGET_ATTACHED)
			detach_finish(d, k);
	}
	/* children forked while it was being detached */
	for (k = n; k < d->ntargets; k++) {
		struct target *c = &d->targets[k];

		if (c->state == SNAP_TARGET_ATTACHED && c->parent >= 0 &&
		    d->targets[c->parent].state == SNAP_TARGET_DETACHED) {
			detach_probes(d, k);
			detach_finish(d, k);
		}
	}
	free(gone);
	return 0;
}

static int run_loop(struct daemon *d, int sigfd, int timerfd)
{
	struct epoll_event events[32];
	struct signalfd_siginfo si;
	uint64_t ticks, busy_from, busy;
	int n, i;

	for (;;) {
		n = epoll_wait(d->epfd, events, ARRAY_SIZE(events), -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			log_msg("epoll_wait: %s", strerror(errno));
			return 1;
		}
		busy_from = time_thread_cpu_ns();
		for (i = 0; i < n; i++) {
			uint32_t tag = (uint32_t)(events[i].data.u64 >> 32);
			uint32_t index = (uint32_t)events[i].data.u64;

			switch (tag) {
			case TAG_RINGBUF:
				daemon_consume(d);
				break;
			case TAG_TIMER:
				if (read(timerfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
					log_msg("timerfd: %s", strerror(errno));
				daemon_consume(d);
				/* while the worker reads the core, it does not change */
				if (!worker_frozen(d)) {
					daemon_sample(d);
					check_execs(d);
				}
				for (int k = 0; k < d->ntargets && !worker_frozen(d); k++) {
					if (d->targets[k].resolve_pending &&
					    d->targets[k].state == SNAP_TARGET_ATTACHED)
						target_resolve(d, k);
				}
				server_expire(d, time_monotonic_ns());
				metrics_http_tick(d, time_monotonic_ns());
				break;
			case TAG_SIGNAL:
				if (read(sigfd, &si, sizeof(si)) != sizeof(si))
					break;
				if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM) {
					log_msg("%s: detaching and exiting",
						strsignal((int)si.ssi_signo));
					daemon_consume(d);
					return 0;
				}
				break;
			case TAG_LISTEN:
				server_accept(d);
				break;
			case TAG_CLIENT:
				server_client_event(d, (int)index, events[i].events);
				break;
			case TAG_METRICS_LISTEN:
				metrics_http_accept(d);
				break;
			case TAG_METRICS_CLIENT:
				metrics_http_client_event(d, index, events[i].events);
				break;
			case TAG_PIDFD:
				if ((int)index >= d->ntargets || d->targets[index].pidfd < 0)
					break;
				if (worker_frozen(d)) /* after its last events: at the thaw */
					pidfd_arm(d, (int)index, 0);
				else
					target_exited(d, (int)index);
				break;
			case TAG_WORKER:
				worker_event(d);
				break;
			}
		}
		/* the loop's own share of a drain gap: the CPU it used on one
		 * wakeup (waiting for a CPU meanwhile is the machine's share) */
		busy = time_thread_cpu_ns() - busy_from;
		if (busy > d->loop_busy_max_ns)
			d->loop_busy_max_ns = busy;
	}
}

int main(int argc, char **argv)
{
	struct itimerspec its = {.it_interval = {0, DRAIN_INTERVAL_NS},
				 .it_value = {0, DRAIN_INTERVAL_NS}};
	struct bpf_options bo;
	struct options o;
	struct daemon d;
	sigset_t mask;
	char err[512];
	int rc, sigfd = -1, timerfd = -1, child = -1;
	dev_t match_dev = 0;
	ino_t match_ino = 0;

	util_progname = "memtraced";
	debug_events = getenv("MEMTRACE_DEBUG_EVENTS") != NULL;
	/* a tracer on a production host makes no network calls: no debuginfod */
	unsetenv("DEBUGINFOD_URLS");
	rc = parse_options(argc, argv, &o);
	if (rc)
		return rc;
	memset(&d, 0, sizeof(d));
	d.epfd = d.listen_fd = d.lock_fd = -1;
	d.start_ns = time_monotonic_ns();
	d.client_timeout_ns = o.client_timeout_s * 1000000000ull;
	d.python_allocators = o.python_allocators;
	d.follow_forks = o.follow_forks;
	if (geteuid() != 0) {
		log_msg("must run as root (it loads BPF programs and reads other processes)");
		return 1;
	}
	if ((o.match_comm || o.match_exe) && !have_cap_kill()) {
		log_msg("--comm/--exe need CAP_KILL: a match of another user could not be "
			"continued after its stop at exec (docs/packaging.md)");
		return 1;
	}
	if (o.pid && (rc = target_check_pid(o.pid))) {
		log_msg("cannot attach to pid %d: %s", o.pid, strerror(-rc));
		return 1;
	}
	/* Signals arrive through the loop; the child unblocks them before exec. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);

	default_limits(&o);
	if (tracker_init(&d.tracker, o.max_live_blocks, (uint32_t)o.max_stacks)) {
		log_msg("out of memory");
		return 1;
	}
	timeline_init(&d.timeline, o.sample_interval_ms * 1000000ull);
	d.tracker.temporary_threshold = (uint32_t)o.temporary_threshold;
	d.options = (struct snap_options){
	    .stack_depth = o.stack_depth,
	    .ring_buffer_bytes = o.ring_buffer_bytes,
	    .max_live_blocks = o.max_live_blocks,
	    .max_stacks = o.max_stacks,
	    .sample_interval_ns = o.sample_interval_ms * 1000000ull,
	    .temporary_threshold = o.temporary_threshold,
	};
	d.sym = symbolizer_new();
	d.py = pystacks_new();
	d.tracker.on_new_stack = on_new_stack;
	d.tracker.on_new_stack_arg = &d;
	d.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (server_listen(&d, o.socket_path, err, sizeof(err)))
		goto fail;
	if (o.metrics_listen && metrics_http_listen(&d, o.metrics_listen, err, sizeof(err)))
		goto fail;
	bo.stack_depth = o.stack_depth;
	bo.stack_walker = o.stack_walker;
	bo.ring_buffer_bytes = o.ring_buffer_bytes;
	bo.match_comm = o.match_comm;
	bo.match_follow = (uint32_t)o.follow_forks;
	bo.max_matches = (uint32_t)o.max_targets;
	/* without CAP_KILL another user's process could not be continued:
	 * then a new program's allocator is resolved after it started */
	bo.hold_exec = (uint32_t)have_cap_kill();
	d.max_targets = (int)o.max_targets;
	if (o.match_exe) {
		struct stat st;

		if (stat(o.match_exe, &st)) {
			snprintf(err, sizeof(err), "--exe %s: %s", o.match_exe, strerror(errno));
			goto fail;
		}
		/* the kernel's dev_t, as the exec tracepoint sees it */
		bo.match_dev = (uint64_t)major(st.st_dev) << 20 | minor(st.st_dev);
		bo.match_ino = st.st_ino;
		match_dev = st.st_dev;
		match_ino = st.st_ino;
	}
	d.skel = probes_load(&bo, err, sizeof(err));
	if (!d.skel)
		goto fail;
	/* never closed: the keeper continues what the BPF programs stopped (a
	 * --comm match, a target's new program) when it reads EOF */
	if (keeper_start(bpf_map__fd(d.skel->maps.stopped)) < 0) {
		snprintf(err, sizeof(err), "cannot start the keeper process: %s", strerror(errno));
		goto fail;
	}
	d.rb = ring_buffer__new(probes_ringbuf_fd(d.skel), handle_ringbuf_event, &d, NULL);
	if (!d.rb) {
		snprintf(err, sizeof(err), "cannot map the ring buffer: %s", strerror(errno));
		goto fail;
	}
	sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (d.epfd < 0 || sigfd < 0 || timerfd < 0 || timerfd_settime(timerfd, 0, &its, NULL) ||
	    loop_add(&d, ring_buffer__epoll_fd(d.rb), TAG_RINGBUF, 0) ||
	    loop_add(&d, d.listen_fd, TAG_LISTEN, 0) || loop_add(&d, sigfd, TAG_SIGNAL, 0) ||
	    loop_add(&d, timerfd, TAG_TIMER, 0)) {
		snprintf(err, sizeof(err), "cannot set up the event loop: %s", strerror(errno));
		goto fail;
	}

	d.targets = xcalloc(1, sizeof(*d.targets));
	d.ntargets = o.command || o.pid ? 1 : 0;
	d.targets[0].pidfd = -1;
	if (!d.ntargets) {
		log_msg("no target yet: add them with memtracectl attach PID");
	} else if (o.command) {
		child = target_spawn(o.command, err, sizeof(err));
		if (child < 0)
			goto fail;
		d.targets[0].pid = child;
		d.targets[0].is_child = 1;
	} else {
		d.targets[0].pid = o.pid;
	}
	if (d.ntargets && target_attach(&d, 0, err, sizeof(err)))
		goto fail;
	if (o.match_comm || o.match_exe)
		attach_matching(&d, o.match_comm, match_dev, match_ino);
	if (child > 0 && target_spawn_resume(child)) {
		snprintf(err, sizeof(err), "cannot start pid %d: %s", child, strerror(errno));
		goto fail;
	}
	child = -1;
	log_msg("listening on %s; limits: %llu live blocks, %llu stacks (0: none)", d.socket_path,
		(unsigned long long)o.max_live_blocks, (unsigned long long)o.max_stacks);
	notify_ready();

	if (o.realtime)
		worker_loop_realtime(); /* this thread only: not the lanes, not children */
	rc = run_loop(&d, sigfd, timerfd);
	close(sigfd);
	close(timerfd);
	daemon_cleanup(&d);
	return rc;
fail:
	log_msg("%s", err);
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (sigfd >= 0)
		close(sigfd);
	if (timerfd >= 0)
		close(timerfd);
	daemon_cleanup(&d);
	return 1;
}
