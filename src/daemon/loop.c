// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The event loop: one thread, one epoll set over the ring buffer, the drain
 * timer, signals, each target's pidfd, and the clients of the socket and
 * the metrics endpoint. Nothing blocks in it; the timer drains the ring
 * buffer every DRAIN_INTERVAL_NS and moves pending targets on.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/exec.h"
#include "daemon/ingest.h"
#include "daemon/loop.h"
#include "daemon/sample.h"
#include "daemon/watch.h"
#include "daemon/targets.h"
#include "daemon/serve/metrics_http.h"
#include "daemon/serve/server.h"
#include "daemon/serve/worker.h"
#include "common/util.h"

/* Every DRAIN_INTERVAL_NS: drain, sample, move pending targets on, expire clients. */
static void tick(struct daemon *d)
{
	uint64_t now;

	ingest_drain_slice(d);
	/* while the request worker reads the core, it does not change */
	if (!worker_frozen(server_worker(d->server))) {
		sample_tick(d);
		if (execs_unseen(d)) {
			ingest_drain(d); /* an exec event queued since is acted on in order */
			check_execs(d);
		}
	}
	for (int k = 0; k < d->ntargets && !worker_frozen(server_worker(d->server)); k++) {
		if (d->targets[k].resolve_pending && d->targets[k].state == SNAP_TARGET_ATTACHED)
			target_resolve(d, k);
	}
	now = time_monotonic_ns();
	targets_log_over_limit(d, now);
	server_expire(d->server, now);
	metrics_http_tick(d->metrics, now);
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
				ingest_drain_slice(d);
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
					ingest_drain(d);
					return 0;
				}
				break;
			case TAG_LISTEN:
				server_accept(d->server);
				break;
			case TAG_CLIENT:
				server_client_event(d->server, (int)index, events[i].events);
				break;
			case TAG_METRICS_LISTEN:
				metrics_http_accept(d->metrics);
				break;
			case TAG_METRICS_CLIENT:
				metrics_http_client_event(d->metrics, index, events[i].events);
				break;
			case TAG_PIDFD:
				if ((int)index >= d->ntargets || d->targets[index].pidfd < 0)
					break;
				ingest_drain(d); /* its last events come first */
				if (worker_frozen(server_worker(d->server)))
					target_pidfd_arm(d, (int)index, 0); /* at the thaw */
				else
					target_exited(d, (int)index);
				break;
			case TAG_WORKER:
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
