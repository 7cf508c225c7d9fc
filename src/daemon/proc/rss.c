// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Parsing /proc/PID/status and /proc/PID/smaps_rollup into the resident
 * figures (rss.h). Which key of which file holds a figure is the MT_RESIDENT
 * table's: a figure is added there, not here. Reading is one open and a
 * read into a buffer on the stack per file: the sampler (sampler.c) calls it
 * once per target per sample.
 */
#include "daemon/proc/rss.h"
#include "common/util.h"
#include "daemon/proc/procmaps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int rss_kb_value(const char *v, size_t len, uint64_t *bytes)
{
	const char *p = v, *end = v + len;
	uint64_t kb = 0;
	int digits = 0;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	for (; p < end && *p >= '0' && *p <= '9'; p++, digits++) {
		uint64_t d = (uint64_t)(*p - '0');

		if (kb > (UINT64_MAX / 1024 - d) / 10)
			return -1; /* kB that do not fit in 64 bits of bytes */
		kb = kb * 10 + d;
	}
	if (!digits || end - p != 3 || memcmp(p, " kB", 3))
		return -1;
	*bytes = kb * 1024;
	return 0;
}

size_t rss_field_key(const char *line, size_t len)
{
	size_t n = 0;

	while (n < len &&
	       ((line[n] >= 'a' && line[n] <= 'z') || (line[n] >= 'A' && line[n] <= 'Z') ||
		(line[n] >= '0' && line[n] <= '9') || line[n] == '_'))
		n++;
	return n && n < len && line[n] == ':' ? n : 0;
}

static const char *const source_names[] = {
    [MT_FROM_STATUS] = "status",
    [MT_FROM_ROLLUP] = "smaps_rollup",
};

/* smaps_rollup opens with a maps line for the whole address space, named [rollup]. */
static int rollup_header(const char *line, size_t len)
{
	struct map_entry e;
	int ok;

	if (procmaps_parse_line(line, len, &e))
		return -1;
	ok = e.path && !strcmp(e.path, "[rollup]");
	free(e.path);
	return ok ? 0 : -1;
}

int rss_parse(const char *text, size_t len, enum mt_resident_source src, struct mt_resident *out,
	      char *err, size_t errlen)
{
	const char *p = text, *end = text + len;
	const char *name = source_names[src];
	unsigned seen = 0, lineno = 0;
	struct mt_resident got = *out;

	_Static_assert(MT_NRESIDENT <= 32, "seen is a bit per figure");
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p), keylen;

		lineno++;
		if (lineno == 1 && src == MT_FROM_ROLLUP) {
			if (rollup_header(p, n)) {
				snprintf(err, errlen,
					 "%s: the first line is not its [rollup] header", name);
				return -1;
			}
		} else if ((keylen = rss_field_key(p, n))) {
			for (size_t i = 0; i < MT_NRESIDENT; i++) {
				const struct mt_resident_desc *d = &mt_resident_descs[i];
				uint64_t v;

				if (d->source != src || strlen(d->key) != keylen ||
				    memcmp(d->key, p, keylen))
					continue;
				if (seen & (1u << i)) {
					snprintf(err, errlen, "%s: line %u: a second %s line", name,
						 lineno, d->key);
					return -1;
				}
				if (rss_kb_value(p + keylen + 1, n - keylen - 1, &v)) {
					snprintf(err, errlen, "%s: line %u: %s is not a size in kB",
						 name, lineno, d->key);
					return -1;
				}
				mt_resident_set(&got, i, v);
				seen |= 1u << i;
			}
		} else if (n) {
			snprintf(err, errlen, "%s: line %u is not \"Key: value\"", name, lineno);
			return -1;
		}
		p = nl ? nl + 1 : end;
	}
	for (size_t i = 0; i < MT_NRESIDENT; i++) {
		if (mt_resident_descs[i].source == src && !(seen & (1u << i))) {
			/* a kernel thread or a zombie has no memory, so no VmRSS line */
			snprintf(err, errlen, "%s: no %s line%s", name, mt_resident_descs[i].key,
				 src == MT_FROM_STATUS ? " (the process has no memory)" : "");
			return -1;
		}
	}
	*out = got;
	return 0;
}

int rss_read(int pid, struct mt_resident *out, char *err, size_t errlen)
{
	char path[64], text[RSS_MAX_TEXT];
	struct mt_resident r = {0};

	for (int src = MT_FROM_STATUS; src <= MT_FROM_ROLLUP; src++) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/%d/%s", pid, source_names[src]);
		n = read_small_file(path, text, sizeof(text));
		if (n < 0) {
			snprintf(err, errlen, "cannot read %s: %s", path,
				 n == -EFBIG ? "longer than expected" : strerror((int)-n));
			return (int)n;
		}
		if (!n) { /* the process went between open and read */
			snprintf(err, errlen, "cannot read %s: empty (the process has no memory)",
				 path);
			return -ESRCH;
		}
		if (rss_parse(text, (size_t)n, (enum mt_resident_source)src, &r, err, errlen))
			return -EINVAL;
	}
	*out = r;
	return 0;
}
