// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A cgroup match's directory and the processes in it (see cgpath.h).
 */
#include "daemon/proc/cgpath.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/util.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static int unescape(const char *s, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '3' &&
		    s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			c = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		}
		if (o + 1 >= outlen)
			return -1;
		out[o++] = c;
	}
	out[o] = 0;
	return 0;
}

int cgpath_find_mount(const char *mountinfo, char *out, size_t outlen)
{
	const char *line = mountinfo;

	while (line && *line) {
		const char *end = strchr(line, '\n'), *sep, *f[5];
		size_t len = end ? (size_t)(end - line) : strlen(line);
		int k = 0;

		/* the fields before " - ": id parent major:minor root mountpoint ... */
		sep = memmem(line, len, " - ", 3);
		if (sep && (size_t)(sep - line) + 3 + 8 <= len &&
		    !strncmp(sep + 3, "cgroup2 ", 8)) {
			const char *p = line;

			while (k < 5 && p < sep) {
				f[k++] = p;
				p = memchr(p, ' ', (size_t)(sep - p));
				if (!p)
					break;
				p++;
			}
			if (k == 5) {
				const char *mp = f[4],
					   *mpend = memchr(mp, ' ', (size_t)(sep - mp) + 1);

				if (!mpend)
					mpend = sep;
				if (!unescape(mp, (size_t)(mpend - mp), out, outlen))
					return 0;
			}
		}
		line = end ? end + 1 : NULL;
	}
	return -1;
}

/* Append component c (len n) to out at *o, with a slash before it. */
static int push(char *out, size_t outlen, size_t *o, const char *c, size_t n)
{
	if (*o + 1 + n + 1 > outlen)
		return -1;
	out[(*o)++] = '/';
	memcpy(out + *o, c, n);
	*o += n;
	out[*o] = 0;
	return 0;
}

int cgpath_relative(const char *mount, const char *path, char *out, size_t outlen, uint32_t *level,
		    char *err, size_t errlen)
{
	size_t ml = strlen(mount), o = 0;
	const char *p = path;

	while (ml > 1 && mount[ml - 1] == '/')
		ml--;
	if (path[0] == '/' && !strncmp(path, mount, ml) && (path[ml] == '/' || !path[ml]))
		p = path + ml; /* under the mount */
	else if (path[0] == '/' && !strncmp(path, "/sys/fs/cgroup", 14) &&
		 (path[14] == '/' || !path[14])) {
		snprintf(err, errlen, "%s is not in the cgroup v2 hierarchy (mounted at %s)", path,
			 mount);
		return -1;
	}
	*level = 0;
	if (outlen < 2)
		return -1;
	out[0] = 0;
	while (*p) {
		const char *c;
		size_t n;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		c = p;
		n = strcspn(p, "/");
		p += n;
		if (n == 1 && c[0] == '.')
			continue;
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			snprintf(err, errlen, "%s: a cgroup path without '..', please", path);
			return -1;
		}
		if (push(out, outlen, &o, c, n)) {
			snprintf(err, errlen, "%s: too long", path);
			return -1;
		}
		(*level)++;
	}
	if (!o)
		strcpy(out, "/");
	return 0;
}

int cgpath_of_proc(const char *text, char *out, size_t outlen)
{
	const char *line = text;

	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		if (len >= 3 && !strncmp(line, "0::", 3)) {
			if (len - 3 + 1 > outlen || len == 3)
				return -1;
			memcpy(out, line + 3, len - 3);
			out[len - 3] = 0;
			return 0;
		}
		line = end ? end + 1 : NULL;
	}
	return -1;
}

int cgpath_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (!strcmp(dir, "/"))
		return path[0] == '/';
	return !strncmp(path, dir, n) && (path[n] == 0 || path[n] == '/');
}

int cgpath_unit_dir(const char *name, char *out, size_t outlen, char *err, size_t errlen)
{
	static const char *const suffixes[] = {".service", ".scope", ".slice",	".socket",
					       ".mount",   ".swap",  ".target", ".timer"};
	size_t n = strlen(name);
	int has = 0;

	if (!n || strchr(name, '/')) {
		snprintf(err, errlen, "--unit takes a unit's name (nginx.service, say)");
		return -1;
	}
	for (size_t k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); k++) {
		size_t s = strlen(suffixes[k]);

		has |= n > s && !strcmp(name + n - s, suffixes[k]);
	}
	if (snprintf(out, outlen, "%s%s", name, has ? "" : ".service") >= (int)outlen) {
		snprintf(err, errlen, "--unit %s: too long", name);
		return -1;
	}
	return 0;
}

/* Breadth-first, the shallowest directory named name below root/rel; its
 * path relative to root into out. At most depth levels down. */
static int find_dir(const char *root, const char *name, char *out, size_t outlen)
{
	char **queue = NULL;
	size_t head = 0, n = 0, cap = 0;
	int found = -1;

	queue = xrealloc(queue, sizeof(*queue) * (cap = 64));
	queue[n++] = xstrdup("");
	while (head < n && found) {
		char *rel = queue[head++], dir[CGPATH_MAX];
		struct dirent *de;
		DIR *d;

		if (snprintf(dir, sizeof(dir), "%s%s", root, rel) >= (int)sizeof(dir) ||
		    !(d = opendir(dir))) {
			free(rel);
			continue;
		}
		while (found && (de = readdir(d))) {
			char sub[CGPATH_MAX];

			if (de->d_type != DT_DIR || de->d_name[0] == '.')
				continue;
			if (snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name) >=
			    (int)sizeof(sub))
				continue;
			if (!strcmp(de->d_name, name)) {
				snprintf(out, outlen, "%s", sub);
				found = 0;
				break;
			}
			if (n == cap)
				queue = xrealloc(queue, sizeof(*queue) * (cap *= 2));
			queue[n++] = xstrdup(sub);
		}
		closedir(d);
		free(rel);
	}
	while (head < n)
		free(queue[head++]);
	free(queue);
	return found;
}

/* A small /proc file's text, NUL-terminated, or NULL. */
static char *read_small(const char *path)
{
	size_t len = 0, cap = 4096;
	char *buf = xrealloc(NULL, cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0) {
		free(buf);
		return NULL;
	}
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (len + 1 == cap) {
			if (cap >= (1u << 22))
				break;
			buf = xrealloc(buf, cap *= 2);
		}
	}
	close(fd);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[len] = 0;
	return buf;
}

int cgmatch_resolve(const char *path, const char *unit, struct cgmatch *m, char *err, size_t errlen)
{
	char *mi = read_small("/proc/self/mountinfo"), full[2 * CGPATH_MAX], rel[CGPATH_MAX];
	struct statfs sfs;
	struct stat st;

	memset(m, 0, sizeof(*m));
	if (!mi || cgpath_find_mount(mi, m->mount, sizeof(m->mount))) {
		free(mi);
		snprintf(err, errlen, "this host has no cgroup v2 hierarchy mounted");
		return -1;
	}
	free(mi);
	if (unit) {
		char dir[256];

		if (cgpath_unit_dir(unit, dir, sizeof(dir), err, errlen))
			return -1;
		if (find_dir(m->mount, dir, rel, sizeof(rel))) {
			snprintf(err, errlen, "unit %s has no cgroup under %s (is it running?)",
				 dir, m->mount);
			return -1;
		}
		path = rel;
	}
	if (cgpath_relative(m->mount, path, m->path, sizeof(m->path), &m->level, err, errlen))
		return -1;
	snprintf(full, sizeof(full), "%s%s", m->mount, strcmp(m->path, "/") ? m->path : "");
	if (stat(full, &st)) {
		snprintf(err, errlen, "no such cgroup (%s does not exist)", full);
		return -1;
	}
	if (!S_ISDIR(st.st_mode) || statfs(full, &sfs) || sfs.f_type != CGROUP2_SUPER_MAGIC) {
		snprintf(err, errlen, "%s is not a cgroup v2 directory", full);
		return -1;
	}
	m->id = st.st_ino;
	return 0;
}

int cgmatch_has_pid(const struct cgmatch *m, int pid)
{
	char file[64], path[CGPATH_MAX], *text;
	int in;

	snprintf(file, sizeof(file), "/proc/%d/cgroup", pid);
	text = read_small(file);
	in = text && !cgpath_of_proc(text, path, sizeof(path)) && cgpath_under(path, m->path);
	free(text);
	return in;
}
