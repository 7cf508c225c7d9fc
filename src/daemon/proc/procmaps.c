// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Parser for /proc/PID/maps; see procmaps.h. A line is
 *   start-end perms offset major:minor inode [spaces path[ (deleted)]]
 * Paths may contain spaces; the kernel escapes newlines in them, so one line
 * is one mapping.
 */
#include "daemon/proc/procmaps.h"
#include "common/util.h"
#include "common/search.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DELETED_SUFFIX " (deleted)"
/* Re-reads when the maps changed under a read() and came out inconsistent. */
#define READ_ATTEMPTS 3

struct cursor {
	const char *p;
	const char *end;
};

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A hexadecimal number of 1 to max_digits digits. */
static int take_hex(struct cursor *c, int max_digits, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 0, d;

	while (c->p < c->end && (d = hex_digit(*c->p)) >= 0) {
		if (++digits > max_digits)
			return -1;
		v = v << 4 | (uint64_t)d;
		c->p++;
	}
	if (!digits)
		return -1;
	*out = v;
	return 0;
}

static int take_decimal(struct cursor *c, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 0;

	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		uint64_t d = (uint64_t)(*c->p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
		digits++;
		c->p++;
	}
	if (!digits)
		return -1;
	*out = v;
	return 0;
}

static int take_char(struct cursor *c, char want)
{
	if (c->p >= c->end || *c->p != want)
		return -1;
	c->p++;
	return 0;
}

/* Four characters, each from its own set: "r-", "w-", "x-", "ps". */
static int take_perms(struct cursor *c, char perms[5])
{
	static const char *const allowed[4] = {"r-", "w-", "x-", "ps"};
	int i;

	if (c->end - c->p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		if (!c->p[i] || !strchr(allowed[i], c->p[i]))
			return -1;
		perms[i] = c->p[i];
	}
	perms[4] = '\0';
	c->p += 4;
	return 0;
}

/* The path is the rest of the line after the inode and its padding. */
static int take_path(struct cursor *c, struct map_entry *e)
{
	size_t len, suffix = sizeof(DELETED_SUFFIX) - 1;

	if (c->p == c->end)
		return 0;
	if (take_char(c, ' '))
		return -1;
	while (c->p < c->end && *c->p == ' ')
		c->p++;
	len = (size_t)(c->end - c->p);
	if (!len)
		return 0;
	if (memchr(c->p, '\0', len))
		return -1;
	if (len > suffix && !memcmp(c->p + len - suffix, DELETED_SUFFIX, suffix)) {
		e->deleted = 1;
		len -= suffix;
	}
	e->path = malloc(len + 1);
	if (!e->path)
		return -1;
	memcpy(e->path, c->p, len);
	e->path[len] = '\0';
	return 0;
}

int procmaps_parse_line(const char *line, size_t len, struct map_entry *e)
{
	struct cursor c = {line, line + len};
	uint64_t major, minor;

	memset(e, 0, sizeof(*e));
	if (take_hex(&c, 16, &e->start) || take_char(&c, '-') || take_hex(&c, 16, &e->end) ||
	    take_char(&c, ' ') || take_perms(&c, e->perms) || take_char(&c, ' ') ||
	    take_hex(&c, 16, &e->offset) || take_char(&c, ' ') || take_hex(&c, 8, &major) ||
	    take_char(&c, ':') || take_hex(&c, 8, &minor) || take_char(&c, ' ') ||
	    take_decimal(&c, &e->inode))
		return -1;
	if (e->start >= e->end)
		return -1;
	e->dev_major = (uint32_t)major;
	e->dev_minor = (uint32_t)minor;
	return take_path(&c, e);
}

static int compare_start(const void *a, const void *b)
{
	const struct map_entry *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * Sort, drop exact repeats (a read racing with mmap can list a mapping
 * twice), and refuse overlaps, which a consistent listing never has.
 */
static int normalize(struct proc_maps *m)
{
	size_t i, kept = 0;

	for (i = 1; i < m->n; i++) {
		if (m->v[i].start < m->v[i - 1].start) {
			qsort(m->v, m->n, sizeof(m->v[0]), compare_start);
			break;
		}
	}
	for (i = 0; i < m->n; i++) {
		struct map_entry *prev = kept ? &m->v[kept - 1] : NULL;

		if (prev && prev->start == m->v[i].start && prev->end == m->v[i].end) {
			free(m->v[i].path);
			continue;
		}
		if (prev && m->v[i].start < prev->end) {
			/* Keep the array consistent for procmaps_free(). */
			for (; i < m->n; i++)
				m->v[kept++] = m->v[i];
			m->n = kept;
			return -1;
		}
		m->v[kept++] = m->v[i];
	}
	m->n = kept;
	return 0;
}

int procmaps_parse(const char *text, size_t len, struct proc_maps *m)
{
	const char *p = text, *end;
	size_t cap = 0;
	int err = EINVAL;

	m->v = NULL;
	m->n = 0;
	if (!len)
		return 0;
	end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = nl ? nl : end;

		if (m->n == cap) {
			size_t new_cap = cap ? cap * 2 : 64;
			struct map_entry *v = realloc(m->v, new_cap * sizeof(*v));

			if (!v) {
				err = ENOMEM;
				goto fail;
			}
			m->v = v;
			cap = new_cap;
		}
		if (procmaps_parse_line(p, (size_t)(line_end - p), &m->v[m->n])) {
			free(m->v[m->n].path);
			goto fail;
		}
		m->n++;
		p = nl ? nl + 1 : end;
	}
	if (normalize(m))
		goto fail;
	return 0;
fail:
	procmaps_free(m);
	errno = err;
	return -1;
}

/* The whole file in one buffer; maps files report size 0, so read to EOF. */
int procmaps_read_text(const char *path, struct buf *b)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;

		buf_reserve(b, 65536);
		n = read(fd, b->data + b->len, b->cap - b->len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		b->len += (size_t)n;
	}
	close(fd);
	return err;
}

int procmaps_read(int pid, struct proc_maps *m)
{
	char path[64];
	int attempt, err = -EINVAL;

	m->v = NULL;
	m->n = 0;
	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	for (attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
		struct buf b = {0};

		err = procmaps_read_text(path, &b);
		if (!err && procmaps_parse((const char *)b.data, b.len, m))
			err = -errno;
		buf_free(&b);
		if (err != -EINVAL)
			break;
	}
	return err;
}

const struct map_entry *procmaps_find(const struct proc_maps *m, uint64_t addr)
{
	/* the first entry starting above addr; the one before may hold it */
	size_t lo = SEARCH_FIRST(0, m->n, m->v[mid].start > addr);

	if (lo == 0 || addr >= m->v[lo - 1].end)
		return NULL;
	return &m->v[lo - 1];
}

int procmaps_is_file(const struct map_entry *e)
{
	return e->path && e->path[0] == '/' && e->inode != 0;
}

int procmaps_open_file(int pid, const struct map_entry *e, char *why, size_t whylen)
{
	snprintf(why, whylen, "no way to open it");
	for (int i = 0; i < 3; i++) {
		char path[PATH_MAX + 64];
		struct stat st;
		int fd;

		if (i == 0)
			snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid,
				 e->start, e->end);
		else if (e->deleted || !e->path)
			break;
		else if (i == 1)
			snprintf(path, sizeof(path), "/proc/%d/root%s", pid, e->path);
		else
			snprintf(path, sizeof(path), "%s", e->path);
		/* O_NONBLOCK: a FIFO or device at the path must not hang the loop */
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0) {
			if (i == 0)
				snprintf(why, whylen, "cannot open: %s", strerror(errno));
			continue;
		}
		if (!fstat(fd, &st) && st.st_ino == e->inode)
			return fd;
		close(fd);
		snprintf(why, whylen, "the file was replaced");
	}
	return -1;
}

void procmaps_free(struct proc_maps *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}
