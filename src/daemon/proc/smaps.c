// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * /proc/PID/smaps (see smaps.h): a maps line per mapping, parsed by
 * procmaps.c's parser, then "Key: value kB" lines and the VmFlags line
 * that belong to it.
 */
#include "daemon/proc/smaps.h"
#include "daemon/proc/procmaps.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A mapping's own line starts with hexadecimal digits and a '-'. */
static int is_header(const char *p, const char *end)
{
	while (p < end && is_hex(*p))
		p++;
	return p < end && *p == '-';
}

/* "Key:   123 kB" into bytes; 0, or -1 when the line is not of that form. */
static int field_kb(const char *p, const char *end, const char *key, uint64_t *out)
{
	size_t k = strlen(key);
	uint64_t v = 0;
	int digits = 0;

	if ((size_t)(end - p) <= k || memcmp(p, key, k) || p[k] != ':')
		return -1;
	for (p += k + 1; p < end && *p == ' '; p++)
		;
	for (; p < end && *p >= '0' && *p <= '9'; p++, digits++) {
		if (v > UINT64_MAX / 10 / 1024)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (!digits)
		return -1;
	*out = v * 1024;
	return 0;
}

static void vm_flags(const char *p, const char *end, struct smap *m)
{
	static const struct {
		char code[3];
		uint32_t flag;
	} codes[] = {{"io", SMAP_IO},	{"pf", SMAP_PFNMAP}, {"um", SMAP_UFFD},
		     {"uw", SMAP_UFFD}, {"ui", SMAP_UFFD},   {"sh", SMAP_SHARED}};

	for (p += 8; p + 1 < end; p++) {
		if (p[0] == ' ')
			continue;
		for (size_t i = 0; i < ARRAY_SIZE(codes); i++)
			if (p[0] == codes[i].code[0] && p[1] == codes[i].code[1] &&
			    (p + 2 == end || p[2] == ' '))
				m->flags |= codes[i].flag;
		while (p < end && *p != ' ')
			p++;
	}
}

static int header(const char *p, const char *end, struct smap *m)
{
	struct proc_maps one = {0};
	const struct map_entry *e;
	const char *name;

	if (procmaps_parse(p, (size_t)(end - p), &one) || one.n != 1) {
		procmaps_free(&one);
		return -1;
	}
	e = &one.v[0];
	memset(m, 0, sizeof(*m));
	m->start = e->start;
	m->end = e->end;
	if (e->perms[0] == 'r')
		m->flags |= SMAP_READ;
	if (e->perms[1] == 'w')
		m->flags |= SMAP_WRITE;
	if (e->perms[3] == 's')
		m->flags |= SMAP_SHARED;
	name = e->path ? e->path : "";
	snprintf(m->name, sizeof(m->name), "%s", name);
	if (e->inode)
		m->flags |= SMAP_FILE;
	else if (!strcmp(name, "[vvar]") || !strcmp(name, "[vvar_vclock]") ||
		 !strcmp(name, "[vdso]") || !strcmp(name, "[vsyscall]"))
		m->flags |= SMAP_SPECIAL;
	else if (*name)
		m->flags |= SMAP_NAMEDANON;
	procmaps_free(&one);
	return 0;
}

int smaps_parse(const char *text, size_t len, struct smaps *out)
{
	const char *p = text, *end = text + len;
	size_t cap = 0;

	memset(out, 0, sizeof(*out));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		struct smap *m = out->n ? &out->v[out->n - 1] : NULL;

		if (is_header(p, e)) {
			if (out->n == cap) {
				struct smap *v;

				cap = cap ? 2 * cap : 64;
				v = realloc(out->v, cap * sizeof(*v));
				if (!v) {
					smaps_free(out);
					errno = ENOMEM;
					return -1;
				}
				out->v = v;
			}
			if (header(p, e, &out->v[out->n]) ||
			    (out->n && out->v[out->n].start < out->v[out->n - 1].end)) {
				smaps_free(out);
				errno = EINVAL;
				return -1;
			}
			out->n++;
		} else if (m && (size_t)(e - p) >= 8 && !memcmp(p, "VmFlags:", 8)) {
			vm_flags(p, e, m);
		} else if (m) {
			/* the fields a scan uses; any other line is ignored */
			if (field_kb(p, e, "Rss", &m->rss) && field_kb(p, e, "Swap", &m->swap))
				field_kb(p, e, "Anonymous", &m->anon);
		} else if (p != e) {
			smaps_free(out);
			errno = EINVAL;
			return -1;
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

int smaps_read(int pid, struct smaps *m)
{
	char path[64];
	struct buf b = {0};
	ssize_t n;
	int fd, rc;

	snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		buf_reserve(&b, 65536);
		n = read(fd, b.data + b.len, b.cap - b.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		b.len += (size_t)n;
	}
	rc = n < 0 ? -errno : 0;
	close(fd);
	if (!rc && smaps_parse((const char *)b.data, b.len, m))
		rc = -errno;
	buf_free(&b);
	return rc;
}

void smaps_free(struct smaps *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}
