// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * memtraced: the tracing daemon. Parses options (options.c), claims the
 * socket (serve/server.c), loads the BPF programs (attach/probes.c),
 * attaches to the target or starts it (targets.c), then runs the event loop
 * (loop.c, which also wires the parts together) until SIGINT or SIGTERM.
 * Leaving detaches every probe: the target runs on exactly as it was.
 */
#include <errno.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "daemon/daemon.h"
#include "daemon/loop.h"
#include "daemon/watch.h"
#include "daemon/options.h"
#include "daemon/sample.h"
#include "daemon/targets.h"
#include "daemon/matches.h"
#include "daemon/proc/cgpath.h"
#include "daemon/attach/bpfcheck.h"
#include "daemon/attach/detacher.h"
#include "daemon/attach/features.h"
#include "daemon/attach/keeper.h"
#include "daemon/attach/probes.h"
#include "daemon/attach/pydispatch.h"
#include "daemon/attach/verifier.h"
#include "daemon/attach/walker.h"
#include "daemon/elf/elfmod.h"
#include "daemon/proc/process.h"
#include "daemon/proc/sampler.h"
#include "daemon/serve/metrics_http.h"
#include "daemon/serve/notify.h"
#include "daemon/serve/oomsnap.h"
#include "daemon/serve/server.h"
#include "daemon/serve/service.h"
#include "daemon/symbols/pystacks.h"
#include "daemon/symbols/symbolize.h"
#include "daemon/unwind/unwind.h"
#include "common/util.h"
#include "memtrace.skel.h"

/* Is CAP_KILL effective? (Root without it cannot SIGCONT other users' processes.) */
static int have_cap_kill(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {{0}};

	if (syscall(SYS_capget, &hdr, data))
		return 1; /* cannot tell: let kill() say */
	return (data[CAP_KILL / 32].effective >> (CAP_KILL % 32)) & 1;
}

/* ---- start and stop ------------------------------------------------------- */

/* The BPF programs' configuration from the options; 0, or -1 with err. */
static int bpf_options_from(const struct options *o, struct bpf_options *bo, char *err,
			    size_t errlen)
{
	memset(bo, 0, sizeof(*bo));
	bo->stack_depth = o->stack_depth;
	bo->stack_walker = o->stack_walker;
	bo->ring_buffer_bytes = o->ring_buffer_bytes;
	bo->match_comm = o->match_comm;
	bo->match_follow = (uint32_t)o->follow_forks;
	bo->max_matches = (uint32_t)o->max_targets;
	/* without CAP_KILL another user's process could not be continued:
	 * then a new program's allocator is resolved after it started */
	bo->hold_exec = (uint32_t)have_cap_kill();
	/* MEMTRACE_STACK_IDS=0 sends every stack in full, as before stack ids
	 * (make bench compares the two) */
	bo->stack_ids_off =
	    getenv("MEMTRACE_STACK_IDS") && !strcmp(getenv("MEMTRACE_STACK_IDS"), "0");
	pydispatch_can_hold = (int)bo->hold_exec; /* the setters' probes stop the target */
	if (o->match_exe) {
		struct stat st;

		if (stat(o->match_exe, &st)) {
			snprintf(err, errlen, "--exe %s: %s", o->match_exe, strerror(errno));
			return -1;
		}
		/* the kernel's dev_t, as the exec tracepoint sees it */
		bo->match_dev = (uint64_t)major(st.st_dev) << 20 | minor(st.st_dev);
		bo->match_ino = st.st_ino;
	}
	return 0;
}

/* The core and the settings; 0, or -1 (out of memory). */
static int daemon_init(struct daemon *d, const struct options *o)
{
	memset(d, 0, sizeof(*d));
	d->epfd = -1;
	d->start_ns = time_monotonic_ns();
	d->set.python_allocators = o->python_allocators;
	d->set.follow_forks = o->follow_forks;
	d->set.max_targets = (int)o->max_targets;
	d->set.match_comm = o->match_comm;
	d->set.match_exe = o->match_exe;
	/* a cgroup's: matches_cgroup_start */
	d->set.oom_dir = o->oom_dir;
	d->set.oom_keep = o->oom_keep;
	if ((o->match_comm || o->match_exe) &&
	    asprintf(&d->set.match_what, "%s %s", o->match_comm ? "--comm" : "--exe",
		     o->match_comm ? o->match_comm : o->match_exe) < 0)
		return -1;
	d->set.options = (struct snap_options){
	    .stack_depth = o->stack_depth,
	    .ring_buffer_bytes = o->ring_buffer_bytes,
	    .max_live_blocks = o->max_live_blocks,
	    .max_stacks = o->max_stacks,
	    .sample_interval_ns = o->sample_interval_ms * 1000000ull,
	    .temporary_threshold = o->temporary_threshold,
	};
	if (tracker_init(&d->tracker, o->max_live_blocks, (uint32_t)o->max_stacks))
		return -1;
	d->tracker.temporary_threshold = (uint32_t)o->temporary_threshold;
	timeline_init(&d->timeline, o->sample_interval_ms * 1000000ull);
	d->sampler = rss_sampler_new();
	d->sym = symbolizer_new();
	d->py = pystacks_new();
	d->ingest.tracker = &d->tracker;
	d->ingest.sym = d->sym;
	d->ingest.py = d->py;
	ingest_init(&d->ingest);
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	return 0;
}

static void daemon_cleanup(struct daemon *d)
{
	server_close(d->server); /* first: its worker may be reading the core */
	detacher_stop();
	targets_free(d);
	elfmod_trim_shared();
	metrics_http_close(d->metrics);
	ingest_close(&d->ingest);
	unwind_free(d->unwind);
	if (d->skel)
		probes_unload(d->skel);
	if (d->sym)
		symbolizer_free(d->sym);
	pystacks_free(d->py);
	rss_sampler_free(d->sampler);
	resident_free(&d->resident);
	timeline_free(&d->timeline);
	tracker_destroy(&d->tracker);
	free(d->set.match_what);
	free(d->set.match_cgroup);
	if (d->epfd >= 0)
		close(d->epfd);
}

/* The first target: the command started (stopped before its first
 * instruction; *child is its pid) or the pid given. */
static int first_target(struct daemon *d, const struct options *o, int *child, char *err,
			size_t errlen)
{
	int i;

	if (!o->command && !o->pid) {
		if (!o->match_comm && !o->match_exe && !o->match_cgroup && !o->match_unit)
			log_msg("no target yet: add them with memtracectl attach PID");
		return 0;
	}
	if (o->command) {
		*child = process_spawn(o->command, err, errlen);
		if (*child < 0)
			return -1;
		i = target_new(d, *child);
		d->targets[i]->is_child = true;
	} else {
		i = target_new(d, o->pid);
	}
	return target_attach(d, i, err, errlen);
}

/* The kernel's release, as uname -r gives it. */
static const char *kernel_release(void)
{
	static struct utsname u;

	return uname(&u) ? "unknown" : u.release;
}

/*
 * A kernel without a feature the programs use: one line before anything is
 * loaded (the verifier would say it in its own words, many of them). 0, or
 * -1 with the line in err.
 */
static int kernel_floor(char *err, size_t errlen)
{
	struct kfeature f[FEATURES_COUNT];

	features_probe(f);
	return features_floor_line(f, FEATURES_COUNT, kernel_release(), err, errlen) ? 0 : -1;
}

/*
 * Load the BPF programs with the walker asked for, or the next the verifier
 * takes (probes_load): one line for each fallback; the walker in use and why
 * into d->set. 0, or -1 with err.
 */
static int load_programs(struct daemon *d, const struct options *o, const struct bpf_options *bo,
			 char *err, size_t errlen)
{
	struct probes_loaded pl;
	char line[768];

	d->skel = probes_load(bo, &pl, err, errlen);
	for (int i = 0; i < pl.nrefused; i++) {
		const struct walker_refusal *r = &pl.refused[i];
		int next = i + 1 < pl.nrefused ? pl.refused[i + 1].walker
			   : d->skel	       ? pl.walker
					       : -1;

		if (next >= 0) {
			walker_fallback_line(o->stack_walker_given && !i, r, next, line,
					     sizeof(line));
			log_msg("%s", line);
		}
	}
	if (!d->skel) {
		const struct walker_refusal *r;

		if (!pl.nrefused || pl.walker >= 0)
			return -1; /* not the verifier, or after the load: err says why */
		r = &pl.refused[pl.nrefused - 1];
		snprintf(err, errlen,
			 "no stack walker's programs load on this kernel (%s; the last tried, %s: "
			 "%s%s%s); memtrace needs Linux %s or newer, and memtraced --check tells "
			 "what the verifier said of each program",
			 kernel_release(), walker_name(r->walker), r->program,
			 r->line[0] ? ": " : "", r->line, MEMTRACE_KERNEL_FLOOR);
		return -1;
	}
	d->set.walker = pl.walker;
	d->set.walker_refused = pl.nrefused;
	walker_reason(o->stack_walker_given, pl.refused, pl.nrefused, d->set.walker_reason,
		      sizeof(d->set.walker_reason));
	return 0;
}

int main(int argc, char **argv)
{
	struct itimerspec its = {.it_interval = {0, DRAIN_INTERVAL_NS},
				 .it_value = {0, DRAIN_INTERVAL_NS}};
	struct service svc;
	struct bpf_options bo;
	struct options o;
	struct daemon d;
	sigset_t mask;
	char err[512];
	int rc, sigfd = -1, timerfd = -1, child = -1;
	struct cgmatch *cgroup = NULL;

	util_progname = "memtraced";
	/* a tracer on a production host makes no network calls: no debuginfod */
	unsetenv("DEBUGINFOD_URLS");
	rc = parse_options(argc, argv, &o);
	if (rc)
		return rc;
	if (o.check)
		return bpfcheck_run(o.json);
	if (geteuid() != 0) {
		log_msg("must run as root (it loads BPF programs and reads other processes)");
		return 1;
	}
	verifier_quiet_libbpf(); /* libbpf says nothing without MEMTRACE_DEBUG */
	if (kernel_floor(err, sizeof(err))) {
		log_msg("%s", err);
		return 1;
	}
	if ((o.match_comm || o.match_exe || o.match_cgroup || o.match_unit) && !have_cap_kill()) {
		log_msg("--comm/--exe/--cgroup/--unit need CAP_KILL: a match of another user could "
			"not be continued after its stop at exec (docs/packaging.md)");
		return 1;
	}
	if (o.match_cgroup || o.match_unit) {
		cgroup = xrealloc(NULL, sizeof(*cgroup));
		if (cgmatch_resolve(o.match_cgroup, o.match_unit, cgroup, err, sizeof(err))) {
			log_msg("%s %s: %s", o.match_cgroup ? "--cgroup" : "--unit",
				o.match_cgroup ? o.match_cgroup : o.match_unit, err);
			free(cgroup);
			return 1;
		}
	}
	if (o.oom_dir && oomsnap_check_dir(o.oom_dir, err, sizeof(err))) {
		log_msg("%s", err);
		free(cgroup);
		return 2; /* a bad argument, as the options' */
	}
	if (o.pid && (rc = process_check_pid(o.pid))) {
		log_msg("cannot attach to pid %d: %s", o.pid, process_check_reason(rc));
		return 1;
	}
	/* Signals arrive through the loop; the child unblocks them before exec. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);

	default_limits(&o);
	if (daemon_init(&d, &o)) {
		log_msg("out of memory");
		return 1;
	}
	loop_wire(&d, &svc);
	d.server = server_listen(o.socket_path, &svc, o.client_timeout_s * 1000000000ull, err,
				 sizeof(err));
	if (!d.server)
		goto fail;
	if (o.metrics_listen &&
	    !(d.metrics = metrics_http_listen(o.metrics_listen, &svc, err, sizeof(err))))
		goto fail;
	if (bpf_options_from(&o, &bo, err, sizeof(err)))
		goto fail;
	if (load_programs(&d, &o, &bo, err, sizeof(err)))
		goto fail;
	/* the walker loaded: a fallback from dwarf has no use for unwind tables */
	if (d.set.walker == MT_WALK_DWARF)
		d.unwind = unwind_new(d.skel, o.unwind_memory);
	d.ingest.unwind = d.unwind;
	/* never closed: the keeper continues what the BPF programs stopped (a
	 * --comm match, a target's new program) when it reads EOF */
	if (keeper_start(bpf_map__fd(d.skel->maps.stopped)) < 0) {
		snprintf(err, sizeof(err), "cannot start the keeper process: %s", strerror(errno));
		goto fail;
	}
	if (ingest_open(&d.ingest, probes_ringbuf_fd(d.skel))) {
		snprintf(err, sizeof(err), "cannot map the ring buffer: %s", strerror(errno));
		goto fail;
	}
	sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (d.epfd < 0 || sigfd < 0 || timerfd < 0 || timerfd_settime(timerfd, 0, &its, NULL) ||
	    loop_watch(d.epfd, ingest_epoll_fd(&d.ingest), EPOLLIN, TAG_RINGBUF, 0) ||
	    loop_watch(d.epfd, sigfd, EPOLLIN, TAG_SIGNAL, 0) ||
	    loop_watch(d.epfd, timerfd, EPOLLIN, TAG_TIMER, 0)) {
		snprintf(err, sizeof(err), "cannot set up the event loop: %s", strerror(errno));
		goto fail;
	}
	if (first_target(&d, &o, &child, err, sizeof(err)))
		goto fail;
	if (cgroup) {
		char what[sizeof(cgroup->path) + 16];

		snprintf(what, sizeof(what), "%s %s", o.match_cgroup ? "--cgroup" : "--unit",
			 o.match_cgroup ? o.match_cgroup : o.match_unit);
		rc = matches_cgroup_start(&d, cgroup, what, err, sizeof(err));
		cgroup = NULL; /* the daemon's now */
		if (rc)
			goto fail;
	}
	if (o.match_comm || o.match_exe) {
		/* matches stopped since the programs were loaded come first */
		ingest_drain(&d.ingest);
		rc = attach_matching(&d, o.match_comm, o.match_exe, 0);
		ingest_drain(&d.ingest); /* the forks of those attached come as events */
		rc += attach_matching(&d, o.match_comm, o.match_exe, 1);
		log_msg("whole-host mode: %d matching processes traced now; new ones as they "
			"start, or as a match forks them",
			rc);
	}
	if (child > 0 && process_spawn_resume(child)) {
		snprintf(err, sizeof(err), "cannot start pid %d: %s", child, strerror(errno));
		goto fail;
	}
	child = -1;
	log_msg("listening on %s; limits: %llu live blocks, %llu stacks (0: none)",
		server_path(d.server), (unsigned long long)o.max_live_blocks,
		(unsigned long long)o.max_stacks);
	notify_ready();

	if (o.realtime)
		loop_realtime(); /* this thread only: not the lanes, not children */
	rc = run_loop(&d, sigfd, timerfd);
	if (probes_oom_lost(d.skel))
		log_msg("%llu OOM kills of traced processes were not marked: the ring buffer was "
			"full",
			(unsigned long long)probes_oom_lost(d.skel));
	if (d.skel->bss->inflight_spills)
		log_msg("%llu allocator calls kept their in-flight record in task storage: "
			"their thread's slot was held by another thread's call",
			(unsigned long long)d.skel->bss->inflight_spills);
	close(sigfd);
	close(timerfd);
	daemon_cleanup(&d);
	return rc;
fail:
	log_msg("%s", err);
	free(cgroup);
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
