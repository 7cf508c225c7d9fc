/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Small helpers every program uses: clocks, checked allocation, logging in
 * the "program: object: reason" form, and a growable byte buffer.
 */
#ifndef MEMTRACE_UTIL_H
#define MEMTRACE_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Program name used as the prefix of every message ("memtraced"). */
extern const char *util_progname;

/* Print "progname: message\n" to stderr. */
void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

uint64_t time_monotonic_ns(void);
uint64_t time_realtime_ns(void);
/*
 * Start fn(arg) on an ordinary thread: SCHED_OTHER whatever the caller's
 * policy (memtraced --realtime), every signal blocked (signals are the event
 * loop's, through its signalfd). 0, or the error pthread_create gave.
 */
int util_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

/* CPU time the calling thread has used. */
uint64_t time_thread_cpu_ns(void);

/* Allocation that aborts with a message on exhaustion (for small, bounded
 * bookkeeping only; tables that can grow large handle ENOMEM themselves). */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

/* Growable byte buffer. */
struct buf {
	uint8_t *data;
	size_t len;
	size_t cap;
};
void buf_reserve(struct buf *b, size_t extra);
void buf_put(struct buf *b, const void *p, size_t n);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_free(struct buf *b);

/* Parse a decimal unsigned integer in [0, max]; returns 0 or -1. */
int parse_u64(const char *s, uint64_t max, uint64_t *out);

/* The whole of a small file (/proc, /sys) in buf, NUL-terminated: its length, or
 * -errno (-EFBIG: it does not fit in cap - 1 bytes). */
ssize_t read_small_file(const char *path, char *buf, size_t cap);

#endif
