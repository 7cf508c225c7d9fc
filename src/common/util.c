// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Small helpers every program uses; see util.h.
 */
#include "common/util.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

const char *util_progname = "memtrace";

void log_msg(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", util_progname, line);
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t time_monotonic_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t time_realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

int util_thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
	pthread_attr_setschedparam(&attr, &(struct sched_param){.sched_priority = 0});
	rc = pthread_create(t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

uint64_t time_thread_cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static void *check_alloc(void *p)
{
	if (!p) {
		log_msg("out of memory");
		abort();
	}
	return p;
}

void *xmalloc(size_t n)
{
	return check_alloc(malloc(n ? n : 1));
}

void *xcalloc(size_t n, size_t size)
{
	return check_alloc(calloc(n ? n : 1, size ? size : 1));
}

void *xrealloc(void *p, size_t n)
{
	return check_alloc(realloc(p, n ? n : 1));
}

char *xstrdup(const char *s)
{
	return check_alloc(strdup(s));
}

void buf_reserve(struct buf *b, size_t extra)
{
	size_t cap;

	if (b->len + extra <= b->cap)
		return;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + extra)
		cap *= 2;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
}

void buf_put(struct buf *b, const void *p, size_t n)
{
	buf_reserve(b, n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	/* formatted once where it fits (most often), twice where it does not */
	buf_reserve(b, 64);
	va_start(ap, fmt);
	n = vsnprintf((char *)b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= b->cap - b->len) {
		buf_reserve(b, (size_t)n + 1);
		va_start(ap, fmt);
		vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

void buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

ssize_t read_small_file(const char *path, char *buf, size_t cap)
{
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n = read(fd, buf + len, cap - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == cap - 1) {
			err = -EFBIG;
			break;
		}
	}
	close(fd);
	buf[len] = '\0';
	return err ? err : (ssize_t)len;
}
