// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The event loop: one thread, one epoll set over the ring buffer, the drain
 * timer, signals, each target's pidfd, and what serving watches (the socket,
 * its clients, the request worker, the metrics endpoint). Nothing blocks in
 * it; the timer drains the ring buffer every DRAIN_INTERVAL_NS and moves
 * pending targets on.
 *
 * Here too the daemon's parts are wired together: ingest's hooks move the
 * targets on (targets.c) and let serving go on after a freeze; the service
 * serving acts through (serve/service.h) is made of the daemon's state.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/loop.h"
#include "daemon/sample.h"
#include "daemon/watch.h"
#include "daemon/targets.h"
#include "daemon/events.h"
#include "daemon/matches.h"
#include "daemon/attach/probes.h"
#include "daemon/attach/walker.h"
#include "daemon/elf/elfmod.h"
#include "daemon/proc/cgpath.h"
#include "daemon/serve/metrics_http.h"
#include "daemon/serve/server.h"
#include "daemon/serve/service.h"
#include "daemon/serve/worker.h"
#include "daemon/unwind/unwind.h"
#include "common/util.h"

/* ---- ingest's hooks --------------------------------------------------- */

/* A control record moves a target on. */
static void on_control(void *ctx, const struct mt_event *ev)
{
	events_control(ctx, ev);
}

/* Every record before the drain is applied: children that were gone before
 * we could watch them have had their last events. */
static void on_drained(void *ctx)
{
	targets_release_pending(ctx);
}

/* Ingest caught up after a freeze: target exits seen meanwhile are acted on
 * now, after their events; then the requests that waited. */
static void on_resumed(void *ctx)
{
	struct daemon *d = ctx;

	for (int k = 0; k < d->ntargets; k++)
		target_pidfd_arm(d, k, 1);
	if (d->server)
		server_resume(d->server);
}

/* ---- the service serving acts through (serve/service.h) ------------------- */

static void view_target_of(const void *targets, int k, struct view_target *out)
{
	const struct daemon *d = targets;
	const struct target *tg = d->targets[k];

	*out = (struct view_target){.pid = tg->pid,
				    .gen = tg->gen,
				    .state = lc_snap_state(tg->phase),
				    .exit_status = tg->exit_status,
				    .probes = target_nlinks(tg),
				    .settling = lc_settling(tg->phase),
				    .command = tg->command,
				    .note = tg->note,
				    .alloc = tg->alloc,
				    .alloc_path = target_alloc_path(tg),
				    .attach_ns = tg->attach_ns,
				    .end_ns = tg->end_ns,
				    .oom = &tg->oom};
}

static void service_view(void *ctx, struct daemon_view *v)
{
	struct daemon *d = ctx;

	memset(v, 0, sizeof(*v));
	v->tracker = &d->tracker;
	v->ntargets = d->ntargets;
	v->targets = d;
	v->target = view_target_of;
	v->timeline = &d->timeline;
	v->resident = &d->resident;
	v->options = &d->set.options;
	v->sym = d->sym;
	v->py = d->py;
	v->start_ns = d->start_ns;
	ingest_figures(&d->ingest, &v->daemon);
	v->daemon.loop_busy_max_ns = d->loop_busy_max_ns;
	v->daemon.stack_id_events = d->tracker.stack_id_events;
	v->daemon.stack_ids_unknown = d->tracker.stack_ids_unknown;
	v->daemon.bpf_runs_skipped = probes_runs_skipped(d->skel, NULL, NULL);
	if (d->set.match_what) {
		v->has_match = 1;
		v->match = (struct snap_match){.what = d->set.match_what,
					       .max_targets = (uint64_t)d->set.max_targets,
					       .traced = (uint64_t)targets_matched_now(d),
					       .over_limit = targets_over_limit(d)};
	}
	v->walker = (struct snap_walker){.name = (char *)walker_name(d->set.walker),
					 .reason = d->set.walker_reason,
					 .refused = (uint64_t)d->set.walker_refused};
	v->ring_consumed = ingest_ring_consumed();
	probes_read_lost(d->skel, v->events_lost, MT_LOST_KIND_COUNT);
	if (d->unwind) {
		struct unwind_status us;

		unwind_get_status(d->unwind, &us);
		v->has_unwind = 1;
		v->unwind = (struct snap_unwind){.memory_limit = us.memory_limit,
						 .memory_used = us.memory_used,
						 .table_bytes = us.table_bytes,
						 .tables = us.tables,
						 .modules_without = us.modules_without,
						 .modules_refused = us.modules_refused};
	}
}

static int service_attach(void *ctx, int pid, char *err, size_t errlen)
{
	return target_attach_pid(ctx, pid, err, errlen);
}

static int service_attach_cgroup(void *ctx, const char *what, int unit, char *err, size_t errlen)
{
	struct cgmatch *m = xrealloc(NULL, sizeof(*m));
	char desc[CGPATH_MAX + 16], why[512];

	if (cgmatch_resolve(unit ? NULL : what, unit ? what : NULL, m, why, sizeof(why))) {
		snprintf(err, errlen, "%s %s: %s", unit ? "--unit" : "--cgroup", what, why);
		free(m);
		return -1;
	}
	snprintf(desc, sizeof(desc), "%s %s", unit ? "--unit" : "--cgroup", what);
	return matches_cgroup_start(ctx, m, desc, err, errlen);
}

static int service_detach(void *ctx, int pid, char *err, size_t errlen)
{
	struct daemon *d = ctx;
	struct target_detach *h = target_detach_begin(d, pid, false, err, errlen);

	if (!h)
		return -1;
	ingest_drain(&d->ingest); /* the events made until its probes went */
	target_detach_end(d, h);
	return 0;
}

static void service_reset_peak(void *ctx)
{
	struct daemon *d = ctx;
	uint64_t now = time_monotonic_ns();

	tracker_reset_peak(&d->tracker, now);
	sample_reset_peak(d, now);
	ingest_reset_figures(&d->ingest); /* a new window for the ingest figures too */
	d->loop_busy_max_ns = 0;
	log_msg("peak reset at %llu live bytes", (unsigned long long)d->tracker.totals.live_bytes);
}

static int service_watch(void *ctx, int fd, uint32_t events, enum serve_watch what, uint32_t index)
{
	struct daemon *d = ctx;

	if (!loop_watch(d->epfd, fd, events, TAG_SERVE + (uint32_t)what, index))
		return 0;
	return errno == EEXIST
		   ? loop_rewatch(d->epfd, fd, events, TAG_SERVE + (uint32_t)what, index)
		   : -1;
}

static void service_unwatch(void *ctx, int fd)
{
	struct daemon *d = ctx;

	loop_unwatch(d->epfd, fd);
}

void loop_wire(struct daemon *d, struct service *svc)
{
	*svc = (struct service){.ctx = d,
				.ingest = &d->ingest,
				.view = service_view,
				.attach = service_attach,
				.detach = service_detach,
				.attach_cgroup = service_attach_cgroup,
				.reset_peak = service_reset_peak,
				.watch = service_watch,
				.unwatch = service_unwatch};
	d->ingest.hooks = (struct ingest_hooks){
	    .ctx = d, .control = on_control, .drained = on_drained, .resumed = on_resumed};
	targets_guard_symbolizer(d); /* what it reads of a running process must be current */
}

int loop_realtime(void)
{
	struct sched_param p = {.sched_priority = 1};

	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &p)) {
		log_msg("--realtime: cannot take SCHED_FIFO (%s); draining at normal priority",
			strerror(errno));
		return -1;
	}
	log_msg("draining the ring buffer at real-time priority (SCHED_FIFO 1)");
	return 0;
}

/* ---- the loop ------------------------------------------------------------- */

static void log_skipped(const char *name, uint64_t misses, int i, void *arg)
{
	struct daemon *d = arg;

	if (i >= DAEMON_MAX_PROGRAMS || misses <= d->runs_skipped_logged[i])
		return;
	log_msg("the kernel skipped %llu run%s of program %s (%llu in all): a run of it was "
		"preempted on that CPU; %s",
		(unsigned long long)(misses - d->runs_skipped_logged[i]),
		misses - d->runs_skipped_logged[i] == 1 ? "" : "s", name,
		(unsigned long long)misses,
		!strcmp(name, "on_fork") || !strcmp(name, "on_newtask") ||
			!strcmp(name, "on_exec") || !strcmp(name, "on_exec2")
		    ? "a fork and an exec have two programs each, both are skipped only together"
		    : "what it would have seen is not traced (bpf_runs_skipped)");
	d->runs_skipped_logged[i] = misses;
}

/* Every DRAIN_INTERVAL_NS: drain, sample, move pending targets on, expire clients. */
static void tick(struct daemon *d)
{
	uint64_t now;

	ingest_drain_slice(&d->ingest);
	/* while a request lane reads the core, it does not change */
	if (!ingest_frozen(&d->ingest)) {
		sample_tick(d);
		if (events_execs_unseen(d)) {
			ingest_drain(
			    &d->ingest); /* an exec event queued since is acted on in order */
			events_check_execs(d);
		}
	}
	for (int k = 0; k < d->ntargets && !ingest_frozen(&d->ingest); k++) {
		if (d->targets[k]->phase == LC_RESOLVING)
			events_resolve(d, k, 0);
	}
	now = time_monotonic_ns();
	targets_log_over_limit(d, now);
	if (now >= d->runs_skipped_log_ns) { /* a look a second */
		probes_runs_skipped(d->skel, log_skipped, d);
		d->runs_skipped_log_ns = now + 1000000000ull;
	}
	server_expire(d->server, now);
	metrics_http_tick(d->metrics, now);
	/* the ELF files this step's attaches and resolves shared: closed */
	elfmod_trim_shared();
}

int run_loop(struct daemon *d, int sigfd, int timerfd)
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
				ingest_drain_slice(&d->ingest);
				break;
			case TAG_TIMER:
				if (read(timerfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
					log_msg("timerfd: %s", strerror(errno));
				tick(d);
				break;
			case TAG_SIGNAL:
				if (read(sigfd, &si, sizeof(si)) != sizeof(si))
					break;
				if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM) {
					log_msg("%s: detaching and exiting",
						strsignal((int)si.ssi_signo));
					ingest_drain(&d->ingest);
					return 0;
				}
				break;
			case TAG_PIDFD:
				if ((int)index >= d->ntargets || d->targets[index]->pidfd < 0)
					break;
				ingest_drain(&d->ingest); /* its last events come first */
				if (ingest_frozen(&d->ingest))
					target_pidfd_arm(d, (int)index, 0); /* once caught up */
				else
					target_exited(d, (int)index);
				break;
			case TAG_SERVE + WATCH_LISTEN:
				server_accept(d->server);
				break;
			case TAG_SERVE + WATCH_CLIENT:
				server_client_event(d->server, (int)index, events[i].events);
				break;
			case TAG_SERVE + WATCH_METRICS_LISTEN:
				metrics_http_accept(d->metrics);
				break;
			case TAG_SERVE + WATCH_METRICS_CLIENT:
				metrics_http_client_event(d->metrics, index, events[i].events);
				break;
			case TAG_SERVE + WATCH_WORKER:
				worker_event(server_worker(d->server));
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
