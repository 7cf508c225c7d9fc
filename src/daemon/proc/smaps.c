// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Parser of /proc/PID/smaps (smaps.h). A line is either a mapping's maps
 * line ("start-end perms offset dev inode [path]", procmaps.c reads it) or
 * one of its fields ("Key: value"); the four figures kept must each come
 * once per mapping, as sizes in kB (rss.c reads those).
 */
#include "daemon/proc/smaps.h"
#include "daemon/proc/rss.h"
#include "common/util.h"
#include "common/search.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *key;
	size_t offset;
} figures[] = {
    {"Rss", offsetof(struct smaps_entry, rss)},
    {"Pss", offsetof(struct smaps_entry, pss)},
    {"Anonymous", offsetof(struct smaps_entry, anonymous)},
    {"Swap", offsetof(struct smaps_entry, swap)},
};

#define ALL_FIGURES ((1u << ARRAY_SIZE(figures)) - 1)

/* "VmFlags: rd wr mr mw me ac sd": the two-letter codes a reader of the memory minds. */
static void take_vmflags(struct smaps_entry *e, const char *p, size_t n)
{
	static const struct {
		char code[3];
		uint32_t flag;
	} codes[] = {{"io", SMAPS_VM_IO},   {"pf", SMAPS_VM_PFNMAP}, {"um", SMAPS_VM_UFFD},
		     {"uw", SMAPS_VM_UFFD}, {"ui", SMAPS_VM_UFFD},   {"sh", SMAPS_VM_SHARED}};
	const char *end = p + n;

	for (p += 8; p + 1 < end; p++) {
		if (*p == ' ')
			continue;
		for (size_t i = 0; i < ARRAY_SIZE(codes); i++)
			if (p[0] == codes[i].code[0] && p[1] == codes[i].code[1] &&
			    (p + 2 == end || p[2] == ' '))
				e->vmflags |= codes[i].flag;
		while (p < end && *p != ' ')
			p++;
	}
}

/* A field line of the current mapping: a figure kept, or a line skipped. */
static int take_field(struct smaps_entry *e, unsigned *seen, const char *line, size_t n,
		      size_t keylen)
{
	if (keylen == 7 && !memcmp(line, "VmFlags", 7)) {
		take_vmflags(e, line, n);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(figures); i++) {
		if (strlen(figures[i].key) != keylen || memcmp(figures[i].key, line, keylen))
			continue;
		if (*seen & (1u << i))
			return -1;
		if (rss_kb_value(line + keylen + 1, n - keylen - 1,
				 (uint64_t *)((char *)e + figures[i].offset)))
			return -1;
		*seen |= 1u << i;
	}
	return 0;
}

/* Whether the last mapping read has its four figures; says which it lacks. */
static int mapping_done(const struct smaps *m, unsigned seen, char *err, size_t errlen)
{
	const struct smaps_entry *e = &m->v[m->n - 1];

	for (size_t i = 0; i < ARRAY_SIZE(figures); i++) {
		if (!(seen & (1u << i))) {
			snprintf(err, errlen, "smaps: mapping %zu (%llx-%llx) has no %s line", m->n,
				 (unsigned long long)e->map.start, (unsigned long long)e->map.end,
				 figures[i].key);
			return -1;
		}
	}
	return 0;
}

int smaps_parse(const char *text, size_t len, struct smaps *m, char *err, size_t errlen)
{
	const char *p = text, *end = text + len;
	unsigned seen = ALL_FIGURES, lineno = 0;
	size_t cap = 0;

	m->v = NULL;
	m->n = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p), keylen;

		lineno++;
		if ((keylen = rss_field_key(p, n))) {
			if (!m->n) {
				snprintf(err, errlen, "smaps: line %u: a field before any mapping",
					 lineno);
				goto fail;
			}
			if (take_field(&m->v[m->n - 1], &seen, p, n, keylen)) {
				snprintf(err, errlen,
					 "smaps: line %u: %.*s is not a size in kB, or comes twice",
					 lineno, (int)keylen, p);
				goto fail;
			}
		} else if (n) {
			struct smaps_entry *e;

			if (m->n && mapping_done(m, seen, err, errlen))
				goto fail;
			if (m->n == cap) {
				cap = cap ? cap * 2 : 64;
				m->v = xrealloc(m->v, cap * sizeof(*m->v));
			}
			e = &m->v[m->n];
			memset(e, 0, sizeof(*e));
			if (procmaps_parse_line(p, n, &e->map)) {
				free(e->map.path);
				snprintf(err, errlen,
					 "smaps: line %u is neither a mapping nor a field", lineno);
				goto fail;
			}
			m->n++;
			seen = 0;
			if (m->n > 1 && e->map.start < m->v[m->n - 2].map.end) {
				snprintf(
				    err, errlen,
				    "smaps: line %u: mapping %llx-%llx overlaps or precedes the "
				    "one before",
				    lineno, (unsigned long long)e->map.start,
				    (unsigned long long)e->map.end);
				goto fail;
			}
		}
		p = nl ? nl + 1 : end;
	}
	if (m->n && mapping_done(m, seen, err, errlen))
		goto fail;
	return 0;
fail:
	smaps_free(m);
	return -1;
}

int smaps_read(int pid, struct smaps *m, char *err, size_t errlen)
{
	char path[64];
	struct buf b = {0};
	int rc;

	m->v = NULL;
	m->n = 0;
	snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	rc = procmaps_read_text(path, &b);
	if (rc) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(-rc));
	} else if (!b.len) {
		snprintf(err, errlen, "cannot read %s: empty (the process has no memory)", path);
		rc = -ESRCH;
	} else if (smaps_parse((const char *)b.data, b.len, m, err, errlen)) {
		rc = -EINVAL;
	}
	buf_free(&b);
	return rc;
}

long smaps_find(const struct smaps *m, uint64_t addr)
{
	/* the first mapping starting above addr; the one before may hold it */
	size_t lo = SEARCH_FIRST(0, m->n, m->v[mid].map.start > addr);

	if (lo == 0 || addr >= m->v[lo - 1].map.end)
		return -1;
	return (long)(lo - 1);
}

void smaps_free(struct smaps *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].map.path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}
