// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Pointers the kernel keeps for a process (see kroots.h): one line of text
 * per epoll registration or timer, a hexadecimal value in a known place.
 */
#include "daemon/proc/kroots.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void add(struct kroots *k, uint64_t v)
{
	if (!v)
		return;
	if (k->n == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 64;
		k->v = xrealloc(k->v, k->cap * sizeof(*k->v));
	}
	k->v[k->n++] = v;
}

/* The hexadecimal number after key (and spaces) in [p, end), if any. */
static int hex_after(const char *p, const char *end, const char *key, uint64_t *out)
{
	size_t k = strlen(key);
	uint64_t v = 0;
	int digits = 0;

	for (; p + k <= end; p++)
		if (!memcmp(p, key, k))
			break;
	if (p + k > end)
		return -1;
	for (p += k; p < end && *p == ' '; p++)
		;
	for (; p < end && digits < 16; p++, digits++) {
		int d = *p >= '0' && *p <= '9'	 ? *p - '0'
			: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
			: *p >= 'A' && *p <= 'F' ? *p - 'A' + 10
						 : -1;

		if (d < 0)
			break;
		v = v << 4 | (uint64_t)d;
	}
	if (!digits)
		return -1;
	*out = v;
	return 0;
}

/* Each line of text starting with prefix: the number after key, to out. */
static void each_line(const char *text, size_t len, const char *prefix, const char *key,
		      struct kroots *out)
{
	const char *p = text, *end = text + len;
	size_t np = strlen(prefix);

	if (!len)
		return;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		uint64_t v;

		if ((size_t)(e - p) > np && !memcmp(p, prefix, np) && !hex_after(p, e, key, &v))
			add(out, v);
		p = nl ? nl + 1 : end;
	}
}

void kroots_parse_epoll(const char *text, size_t len, struct kroots *out)
{
	each_line(text, len, "tfd:", "data:", out);
}

void kroots_parse_timers(const char *text, size_t len, struct kroots *out)
{
	/* "signal: 14/00007f0123456789": the value after the signal number */
	each_line(text, len, "signal:", "/", out);
}

/* A small /proc file into buf (at most cap - 1 bytes); its length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	ssize_t n;

	if (fd < 0)
		return -1;
	while (got + 1 < cap && (n = read(fd, buf + got, cap - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	return (ssize_t)got;
}

int kroots_read(int pid, struct kroots *out)
{
	/* the scan thread's alone (scans run one at a time): made once, not during
	 * every stop; an epoll set of 20 000 descriptors fits */
	static char buf[1 << 20];
	char path[64];
	struct dirent *de;
	ssize_t n;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%.16s", pid, de->d_name);
		n = read_small(path, buf, sizeof(buf));
		if (n > 0 && memmem(buf, (size_t)n, "tfd:", 4))
			kroots_parse_epoll(buf, (size_t)n, out);
	}
	closedir(d);
	snprintf(path, sizeof(path), "/proc/%d/timers", pid);
	n = read_small(path, buf, sizeof(buf));
	if (n > 0)
		kroots_parse_timers(buf, (size_t)n, out);
	return 0;
}

void kroots_free(struct kroots *k)
{
	free(k->v);
	memset(k, 0, sizeof(*k));
}
