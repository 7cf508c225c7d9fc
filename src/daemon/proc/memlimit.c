// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A process's memory cgroup usage and limit (memlimit.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/proc/memlimit.h"

int memlimit_parse(const char *text, uint64_t *out)
{
	char *end;
	unsigned long long v;

	while (*text == ' ')
		text++;
	if (!strncmp(text, "max", 3)) {
		*out = MEMLIMIT_NONE;
		return 0;
	}
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || end == text || (*end && *end != '\n'))
		return -1;
	/* v1 says "no limit" as LONG_MAX rounded down to a page */
	*out = v >= (1ull << 62) ? MEMLIMIT_NONE : (uint64_t)v;
	return 0;
}

static int read_value(const char *path, uint64_t *out)
{
	char buf[64];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return memlimit_parse(buf, out);
}

/* Does a /proc/PID/cgroup controller list ("cpu,memory") name memory? */
static int names_memory(const char *list, size_t len)
{
	for (const char *p = list; p < list + len;) {
		const char *comma = memchr(p, ',', (size_t)(list + len - p));
		size_t n = comma ? (size_t)(comma - p) : (size_t)(list + len - p);

		if (n == 6 && !memcmp(p, "memory", 6))
			return 1;
		p += n + 1;
	}
	return 0;
}

int memlimit_read(int pid, uint64_t *usage, uint64_t *limit, char *err, size_t errlen)
{
	char path[512], line[4096], v1[4096] = "", v2[4096] = "", file[4700];
	int have_v1 = 0, have_v2 = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	if (!(f = fopen(path, "re"))) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		line[strcspn(line, "\n")] = 0;
		if (c2 == c1 + 1 && !have_v2) {
			snprintf(v2, sizeof(v2), "%s", c2 + 1);
			have_v2 = 1;
		} else if (names_memory(c1 + 1, (size_t)(c2 - c1 - 1))) {
			snprintf(v1, sizeof(v1), "%s", c2 + 1);
			have_v1 = 1;
		}
	}
	fclose(f);
	if (have_v1) {
		snprintf(file, sizeof(file), "/sys/fs/cgroup/memory%s/memory.usage_in_bytes", v1);
		if (!read_value(file, usage)) {
			snprintf(file, sizeof(file),
				 "/sys/fs/cgroup/memory%s/memory.limit_in_bytes", v1);
			if (!read_value(file, limit))
				return 0;
		}
	}
	if (have_v2) {
		/* a v2-only host, or the unified hierarchy of a hybrid one */
		static const char *const roots[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};

		for (size_t i = 0; i < 2; i++) {
			snprintf(file, sizeof(file), "%s%s/memory.current", roots[i], v2);
			if (read_value(file, usage))
				continue;
			snprintf(file, sizeof(file), "%s%s/memory.max", roots[i], v2);
			if (!read_value(file, limit))
				return 0;
		}
	}
	snprintf(err, errlen, "pid %d: no memory cgroup figures readable", pid);
	return -1;
}
