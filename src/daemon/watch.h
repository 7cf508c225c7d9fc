/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * How the daemon's top parts (main.c, targets.c, events.c) put their file descriptors
 * into the one epoll set the event loop (loop.c) waits on: the data of each
 * is tag << 32 | index, and the loop dispatches on the tag. Serving's parts
 * watch theirs through the service (serve/service.h), which the loop makes
 * of these. A leaf: it includes no other part.
 */
#ifndef MEMTRACE_DAEMON_WATCH_H
#define MEMTRACE_DAEMON_WATCH_H

#include <stdint.h>
#include <sys/epoll.h>

/* How often the ring buffer is drained at the latest. */
#define DRAIN_INTERVAL_NS (10 * 1000 * 1000)

enum loop_tag {
	TAG_RINGBUF = 1,
	TAG_SIGNAL,
	TAG_TIMER,
	TAG_PIDFD,
	TAG_SERVE, /* TAG_SERVE + enum serve_watch: what serving watches (serve/service.h) */
};

/* Watch fd for events (EPOLLIN, EPOLLOUT) under tag and index; 0 or -1 (errno). */
static inline int loop_watch(int epfd, int fd, uint32_t events, uint32_t tag, uint32_t index)
{
	struct epoll_event ev = {.events = events, .data.u64 = (uint64_t)tag << 32 | index};

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* Change what fd is watched for, or under which index. */
static inline int loop_rewatch(int epfd, int fd, uint32_t events, uint32_t tag, uint32_t index)
{
	struct epoll_event ev = {.events = events, .data.u64 = (uint64_t)tag << 32 | index};

	return epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev);
}

static inline void loop_unwatch(int epfd, int fd)
{
	epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
}

#endif
